package org.hdfsrdma.hadoop;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Collections;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import javax.management.ObjectName;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.apache.hadoop.metrics2.util.MBeans;
import org.apache.hadoop.util.ShutdownHookManager;
import org.hdfsrdma.ucx.EndpointCache;
import org.hdfsrdma.ucx.RegionAnnouncement;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.RemoteRegion;
import org.hdfsrdma.ucx.UcxContext;
import org.hdfsrdma.ucx.UcxEndpoint;
import org.hdfsrdma.ucx.UcxUnavailableException;
import org.hdfsrdma.ucx.UcxWorker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import com.google.common.cache.Cache;
import com.google.common.cache.CacheBuilder;
import com.google.common.cache.RemovalListener;
import com.google.common.cache.RemovalNotification;

/**
 * The UCX resources of this JVM, shared by every HDFS client and DataNode
 * in it: one context, one thread-safe worker, the client's endpoints, the
 * DataNode's sessions and client connections, the regions it reads, and
 * the registered buffer pools (created on first use).
 *
 * <p>There is no UCX listening socket: a DataNode's worker address travels
 * inside Hadoop's authenticated writeBlock reply, so only a peer that passed
 * Hadoop's own checks learns it, and with UCX's tcp transport off (the
 * default) nothing of UCX is reachable from the network at all (DESIGN.md,
 * "Threat model").
 *
 * <p>One worker per JVM: a DataNode serves all its blocks from it, and with
 * two workers in one process UCX 1.13 can trip an assertion on socket
 * descriptor reuse (see jucx-bridge's README). The first configuration
 * seen sets the JVM-wide settings (transports, pools); later ones are
 * ignored.
 */
public final class UcxRuntime implements Closeable {

  private static final Logger LOG = LoggerFactory.getLogger(UcxRuntime.class);

  /** Below FileSystem's (10): runs after open files were closed. */
  static final int SHUTDOWN_HOOK_PRIORITY = 1;

  /** Regions read directly stay mapped this long after their last use. */
  private static final long REGION_IDLE_SECONDS = 30;

  private static UcxRuntime instance;

  private final RdmaConf conf;
  private final UcxContext context;
  private final UcxWorker worker;
  private final EndpointCache endpoints;
  private final SessionTable sessions;
  private final UcxConnections connections;
  private final byte[] workerAddress;
  private final boolean networkRdma;
  /** UCX has a shared-memory transport (same-host peers). */
  private final boolean sharedMemory;
  /** UCX runs its tcp transport (only with dfs.rdma.ucx.allow-tcp). */
  private final boolean tcp;
  private final RemoteRegion.Policy regionPolicy;
  private final Cache<ByteBuffer, RemoteRegion> directRegions;
  private final ScheduledExecutorService maintenance;
  private volatile RegisteredBufferPool landingPool;
  private volatile RegisteredBufferPool clientPool;
  private final AtomicLong dataBytesSent = new AtomicLong();
  private final AtomicLong queuedSends = new AtomicLong();
  private final AtomicLong packetsFetched = new AtomicLong();
  private final AtomicLong rejectedMessages = new AtomicLong();
  private final PacketPhaseTimes phaseTimes = new PacketPhaseTimes();
  private ObjectName bean;
  private final HdfsRdmaMetrics metrics;
  private final AtomicLong blocksOverUcx = new AtomicLong();
  private final AtomicLong blocksOverTcp = new AtomicLong();
  private final AtomicLong[] pipelines =
      new AtomicLong[DistributionPolicy.Outcome.values().length];
  private final ConcurrentHashMap<String, AtomicLong> dataBytesFetched =
      new ConcurrentHashMap<String, AtomicLong>();
  private final Object ingestLock = new Object();
  private double ingestBytesPerSecond;
  /** Of those, the bytes fetched from another DataNode (chain, hybrid). */
  private final ConcurrentHashMap<String, AtomicLong> fetchedFromDataNodes =
      new ConcurrentHashMap<String, AtomicLong>();
  /** Data bytes a DataNode offered the next one from its landing buffers. */
  private final ConcurrentHashMap<String, AtomicLong> dataBytesForwarded =
      new ConcurrentHashMap<String, AtomicLong>();
  private final Set<UcxEndpoint> transportsNoted =
      Collections.newSetFromMap(new ConcurrentHashMap<UcxEndpoint, Boolean>());
  private final Set<String> transportsSeen =
      Collections.newSetFromMap(new ConcurrentHashMap<String, Boolean>());
  private static final Set<String> LOGGED =
      Collections.newSetFromMap(new ConcurrentHashMap<String, Boolean>());

  private UcxRuntime(Configuration configuration)
      throws UcxUnavailableException {
    this.conf = new RdmaConf(configuration);
    for (int i = 0; i < pipelines.length; i++) {
      pipelines[i] = new AtomicLong();
    }
    String problem = HadoopVersionCheck.problem();
    if (problem != null) {
      throw new UcxUnavailableException(problem);
    }
    // The shared-memory receive queues keep UCX's default depth: a sender
    // indexes its peer's queue with its own configured depth (UCX 1.13,
    // uct_mm_ep), so peers that disagree lose messages and hang. Every
    // JVM on a host must run with the same UCX_*_FIFO_SIZE (DESIGN.md).
    UcxContext.Options options = UcxContext.Options.defaults();
    if (!conf.ucxTls.isEmpty()) {
      options = options.withUcxConfig("TLS", conf.ucxTls);
    }
    UcxContext ctx = new UcxContext(options);
    UcxWorker w = null;
    try {
      Set<String> resources = ctx.resources();
      String tcp = tcpRefusal(resources, conf);
      if (tcp != null) {
        throw new UcxUnavailableException(tcp);
      }
      this.networkRdma = hasNetworkRdma(resources);
      this.sharedMemory = hasTransport(resources, "sysv/", "posix/");
      this.tcp = hasTransport(resources, "tcp/");
      w = new UcxWorker(ctx, "hdfs-rdma");
      this.workerAddress = w.address();
      this.sessions = new SessionTable(this);
      w.setMessageHandler(sessions);
      w.start();
    } catch (UcxUnavailableException | RuntimeException e) {
      if (w != null) {
        w.close();
      }
      ctx.close();
      throw e;
    } catch (Exception e) {
      w.close();
      ctx.close();
      throw new UcxUnavailableException("UCX worker did not start: " + e, e);
    }
    this.context = ctx;
    this.worker = w;
    this.endpoints = new EndpointCache(w, conf.clientConnectTimeoutMs,
        workerAddress);
    this.connections = new UcxConnections(w, conf.clientConnectTimeoutMs,
        conf.dataNodeUnboundConnectionTimeoutMs);
    // A client, or a DataNode feeding the next (chain), in this very JVM
    // (MiniDFSCluster) exposes these; no other memory of this process.
    this.regionPolicy = new RemoteRegion.Policy(shmid -> {
      RegisteredBufferPool c = clientPool;
      RegisteredBufferPool l = landingPool;
      return c != null && c.ownsSegment(shmid)
          || l != null && l.ownsSegment(shmid);
    }, conf.dataNodeAllowEmulatedGets);
    this.directRegions = CacheBuilder.newBuilder()
        .expireAfterAccess(REGION_IDLE_SECONDS, TimeUnit.SECONDS)
        .removalListener(new RemovalListener<ByteBuffer, RemoteRegion>() {
          @Override
          public void onRemoval(
              RemovalNotification<ByteBuffer, RemoteRegion> n) {
            n.getValue().release();
          }
        }).build();
    this.maintenance = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "hdfs-rdma-maintenance");
      t.setDaemon(true);
      return t;
    });
    maintenance.scheduleWithFixedDelay(this::maintain, 1, 1,
        TimeUnit.SECONDS);
    this.metrics = new HdfsRdmaMetrics(this);
  }

  private static boolean hasTransport(Set<String> resources,
      String... prefixes) {
    for (String r : resources) {
      for (String p : prefixes) {
        if (r.startsWith(p)) {
          return true;
        }
      }
    }
    return false;
  }

  /** Whether UCX found RDMA hardware (InfiniBand/RoCE transports). */
  static boolean hasNetworkRdma(Set<String> resources) {
    for (String r : resources) {
      if (r.matches("(rc|dc|ud)_(verbs|mlx5)/.*")) {
        return true;
      }
    }
    return false;
  }

  /**
   * Why this JVM must not start UCX with these transports, or null. UCX's
   * tcp transport listens on a port any host can connect to, and UCX 1.13
   * dies on malformed input there (a DataNode died within four crafted
   * connections: DESIGN.md, "Threat model"); it takes an operator's
   * explicit word that the network is trusted.
   */
  static String tcpRefusal(Set<String> resources, RdmaConf conf) {
    if (conf.ucxAllowTcp) {
      return null;
    }
    for (String r : resources) {
      if (r.startsWith("tcp/")) {
        return "UCX's tcp transport (" + r + ") is among the transports of "
            + HdfsRdmaConfigKeys.DFS_RDMA_UCX_TLS_KEY + "=" + conf.ucxTls
            + (conf.ucxTls.isEmpty() ? " (UCX_TLS or all)" : "")
            + ": it would accept connections from any host, and UCX dies on"
            + " malformed input there. Exclude tcp (the default ^tcp), or set "
            + HdfsRdmaConfigKeys.DFS_RDMA_UCX_ALLOW_TCP_KEY
            + "=true on a trusted network";
      }
    }
    return null;
  }

  /**
   * This JVM's runtime, created on first call.
   *
   * @throws UcxUnavailableException when UCX cannot be used here (no UCX
   *     libraries, another Hadoop release, UCX refusing the settings); the
   *     reason is also logged once
   */
  public static synchronized UcxRuntime get(Configuration conf)
      throws UcxUnavailableException {
    if (instance == null) {
      instance = new UcxRuntime(conf);
      instance.metrics.register();
      LOG.info("UCX runtime started (UCX {}, transports {})",
          org.hdfsrdma.ucx.NativeIntrospection.loadedUcxVersion(),
          instance.conf.ucxTls.isEmpty() ? "all" : instance.conf.ucxTls);
      final UcxRuntime started = instance;
      // After Hadoop's own hooks (FileSystem.close flushes open streams),
      // report, then close: UCX left open makes the JVM's exit ~0.4 s
      // slower (measured), which an hdfs dfs -put pays on every file.
      final Runnable atExit = () -> {
        started.reportTotals();
        closeAtExit(started);
      };
      ShutdownHookManager.get().addShutdownHook(atExit,
          SHUTDOWN_HOOK_PRIORITY);
      // MiniDFSCluster.shutdown() clears Hadoop's hooks; then this one
      // does the same work (Hadoop's own clean-up was cleared with it).
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        if (!ShutdownHookManager.get().hasShutdownHook(atExit)) {
          atExit.run();
        }
      }, "hdfs-rdma-at-exit"));
    }
    return instance;
  }

  private static synchronized void closeAtExit(UcxRuntime runtime) {
    if (instance == runtime) {
      try {
        shutdown();
      } catch (RuntimeException e) {
        LOG.warn("hdfs-rdma: closing UCX at exit failed: {}", e.toString());
      }
    }
  }

  /** This JVM's runtime if one was started, else null; creates nothing. */
  public static synchronized UcxRuntime current() {
    return instance;
  }

  /** Closes the runtime (tests and JVM shutdown); a later get() rebuilds. */
  public static synchronized void shutdown() {
    if (instance != null) {
      instance.close();
      instance = null;
    }
  }

  /** The settings this runtime was created with (JVM-wide ones apply). */
  public RdmaConf conf() {
    return conf;
  }

  public UcxWorker worker() {
    return worker;
  }

  public SessionTable sessions() {
    return sessions;
  }

  UcxConnections connections() {
    return connections;
  }

  /**
   * This JVM's UCX worker address: what a DataNode puts in its commit so
   * that its client can connect.
   */
  public byte[] workerAddress() {
    return workerAddress.clone();
  }

  /** Whether this JVM's UCX reaches other hosts with hardware RMA. */
  public boolean hasNetworkRdma() {
    return networkRdma;
  }

  /** Whether this JVM's UCX has a shared-memory transport (one host). */
  public boolean hasSharedMemory() {
    return sharedMemory;
  }

  /**
   * Whether this JVM's UCX runs its tcp transport (only with
   * dfs.rdma.ucx.allow-tcp): other hosts reachable, gets emulated.
   */
  public boolean hasTcp() {
    return tcp;
  }

  /** Counts a client pipeline by what became of it. */
  public void countPipeline(DistributionPolicy.Outcome outcome) {
    pipelines[outcome.ordinal()].incrementAndGet();
  }

  /** Client pipelines this JVM set up with that outcome. */
  public long pipelines(DistributionPolicy.Outcome outcome) {
    return pipelines[outcome.ordinal()].get();
  }

  /**
   * The connection to a DataNode's worker (cached), with this client's
   * hello sent first (the DataNode connects back with it).
   */
  public java.util.concurrent.CompletableFuture<UcxEndpoint> connect(
      byte[] address, String peer) {
    return endpoints.get(address, peer);
  }

  /**
   * Logs, once per connection, which UCX transports carry it (call once
   * the connection is up, outside UCX's callbacks).
   */
  public void noteConnected(UcxEndpoint e) {
    if (transportsNoted.add(e)) {
      noteTransports(e);
    }
  }

  /**
   * Opens a region a client announced (inside the message handler, where
   * {@code replyEndpoint} is valid): from the cache when a block already
   * opened the same directly read region, otherwise through every check of
   * {@link RemoteRegion#open}.
   */
  RemoteRegion openRegion(long replyEndpoint, RegionAnnouncement a,
      String block) throws IOException {
    byte[] rkey = a.rkey();
    ByteBuffer key = ByteBuffer.allocate(rkey.length + 16);
    key.put(rkey).putLong(a.regionBase()).putLong(a.regionLength()).flip();
    RemoteRegion cached = directRegions.getIfPresent(key);
    if (cached != null) {
      try {
        return cached.retain();
      } catch (IllegalStateException released) {
        directRegions.invalidate(key);
      }
    }
    RemoteRegion r = RemoteRegion.open(replyEndpoint, a, regionPolicy,
        "the client of " + block);
    if (r.isDirect()) {
      directRegions.put(key, r.retain());
    }
    return r;
  }

  /** Notes how a region is read, for the bean and the totals. */
  void noteRegion(RemoteRegion region) {
    transportsSeen.add(region.isDirect() ? "DataNode reads: shared memory"
        : "DataNode reads: " + region.toString().replaceAll(".*\\((.*)\\)$",
            "$1"));
  }

  /** Bytes registered at a time by the DataNode's landing pool. */
  private static final long LANDING_SLAB_BYTES = 4L * 1024 * 1024;

  /** The DataNode side's registered memory that gets land in. */
  public synchronized RegisteredBufferPool landingPool() {
    if (landingPool == null) {
      landingPool = pool("datanode-landing", conf.dataNodePacketBufferBytes,
          LANDING_SLAB_BYTES, conf.dataNodePoolMaxBytes);
    }
    return landingPool;
  }

  /**
   * The client side's registered memory that packets are written into, with
   * buffers for packets of up to {@code packetSize} bytes (the first
   * stream's dfs.client-write-packet-size sets it for the JVM).
   */
  public synchronized RegisteredBufferPool clientPool(int packetSize) {
    if (clientPool == null) {
      clientPool = pool("client-packets",
          PacketHeader.PKT_MAX_HEADER_LEN + packetSize,
          conf.clientPoolSlabBytes, conf.clientPoolMaxBytes);
    }
    return clientPool;
  }

  /**
   * A pool of {@code buffer}-byte buffers registered in slabs of about
   * {@code slab} bytes, up to about {@code cap} bytes: both rounded down to
   * whole multiples (at least one buffer, one slab), as the pool requires.
   */
  private RegisteredBufferPool pool(String name, int buffer, long slab,
      long cap) {
    long slabBytes = Math.max(buffer, slab / buffer * buffer);
    long capBytes = Math.max(slabBytes, cap / slabBytes * slabBytes);
    return new RegisteredBufferPool(context, name, buffer, slabBytes,
        capBytes, false);
  }

  /** Registers the JMX bean once a DataNode serves UCX in this JVM. */
  synchronized void registerBean() {
    if (bean == null) {
      bean = MBeans.register("DataNode", "HdfsRdma", new Bean());
    }
  }

  /**
   * Registers the metrics2 source {@link HdfsRdmaMetrics} again if the
   * JVM's metrics system lost it: a DataNode's shutdown shuts the metrics
   * system down with every source in it, and in one JVM (MiniDFSCluster)
   * the next DataNode starts under the same runtime. Not under this
   * runtime's lock: registering takes the metrics system's lock, which the
   * metrics timer holds while it reads this runtime.
   */
  void registerMetrics() {
    metrics.register();
  }

  /**
   * Logs, once per connection, which UCX transports carry it, and keeps the
   * summary for {@link #reportTotals}.
   */
  private void noteTransports(UcxEndpoint e) {
    String report = e.transports().toString();
    transportsSeen.add(report);
    LOG.info("hdfs-rdma: UCX to {}: {}", e.peer(), report);
  }

  /**
   * A DataNode of this JVM received a block from a client: over UCX (its
   * packets came by UCX) or over TCP.
   */
  public void countReceivedBlock(boolean overUcx) {
    (overUcx ? blocksOverUcx : blocksOverTcp).incrementAndGet();
  }

  /** Client blocks this JVM's DataNodes received with packets over UCX. */
  public long blocksOverUcx() {
    return blocksOverUcx.get();
  }

  /** Client blocks this JVM's DataNodes received with packets on the socket. */
  public long blocksOverTcp() {
    return blocksOverTcp.get();
  }

  /** Data bytes this JVM's clients sent as descriptors. */
  public void countSent(long dataBytes) {
    dataBytesSent.addAndGet(dataBytes);
  }

  public long dataBytesSent() {
    return dataBytesSent.get();
  }

  /**
   * A client's message waited because a DataNode's receive queue was
   * full: rare when DataNodes drain their queues as they should.
   */
  public void countQueuedSend() {
    queuedSends.incrementAndGet();
  }

  public long queuedSends() {
    return queuedSends.get();
  }

  /** UCX connections this JVM's clients opened to DataNodes. */
  long endpointConnects() {
    return endpoints.connectCount();
  }

  /** A UCX message was refused. */
  void countRejected() {
    rejectedMessages.incrementAndGet();
  }

  /** UCX messages this JVM's DataNodes refused. */
  public long rejectedMessages() {
    return rejectedMessages.get();
  }

  /** Packets this JVM's DataNodes fetched over UCX. */
  long packetsFetched() {
    return packetsFetched.get();
  }

  /** Both sides' phase timers, whether or not they are switched on. */
  PacketPhaseTimes phaseTimes() {
    return phaseTimes;
  }

  /**
   * The phase timers of this JVM's clients, or null when
   * {@code dfs.client.rdma.packet-timers.enabled} is off.
   */
  public PacketPhaseTimes clientTimes() {
    return conf.clientTimers ? phaseTimes : null;
  }

  /**
   * The phase timers of this JVM's DataNodes, or null when
   * {@code dfs.datanode.rdma.packet-timers.enabled} is off.
   */
  public PacketPhaseTimes dataNodeTimes() {
    return conf.dataNodeTimers ? phaseTimes : null;
  }

  /**
   * Data bytes a DataNode of this JVM fetched over UCX, in one packet, from
   * the client or ({@code fromDataNode}) from the DataNode feeding it.
   */
  public void countFetched(String dataNode, long dataBytes,
      boolean fromDataNode) {
    packetsFetched.incrementAndGet();
    add(dataBytesFetched, dataNode, dataBytes);
    if (fromDataNode) {
      add(fetchedFromDataNodes, dataNode, dataBytes);
    }
  }

  /** Data bytes a DataNode of this JVM offered the next one, one packet. */
  public void countForwarded(String dataNode, long dataBytes) {
    add(dataBytesForwarded, dataNode, dataBytes);
  }

  private static void add(ConcurrentHashMap<String, AtomicLong> counters,
      String key, long n) {
    AtomicLong counter = counters.get(key);
    if (counter == null) {
      counters.putIfAbsent(key, new AtomicLong());
      counter = counters.get(key);
    }
    counter.addAndGet(n);
  }

  private static Map<String, Long> snapshot(
      ConcurrentHashMap<String, AtomicLong> counters) {
    Map<String, Long> copy = new TreeMap<String, Long>();
    for (Map.Entry<String, AtomicLong> e : counters.entrySet()) {
      copy.put(e.getKey(), e.getValue().get());
    }
    return copy;
  }

  private static long sum(ConcurrentHashMap<String, AtomicLong> counters) {
    long total = 0;
    for (AtomicLong n : counters.values()) {
      total += n.get();
    }
    return total;
  }

  /** Data bytes fetched over UCX, by DataNode transfer address. */
  public Map<String, Long> dataBytesFetched() {
    return snapshot(dataBytesFetched);
  }

  /**
   * Of {@link #dataBytesFetched}, what each DataNode fetched from the
   * DataNode feeding it (chain, hybrid) rather than from the client.
   */
  public Map<String, Long> dataBytesFetchedFromDataNodes() {
    return snapshot(fetchedFromDataNodes);
  }

  /** Data bytes each DataNode offered the DataNode it feeds. */
  public Map<String, Long> dataBytesForwarded() {
    return snapshot(dataBytesForwarded);
  }

  /** Data bytes fetched over UCX, all of this JVM's DataNodes together. */
  long totalFetched() {
    return sum(dataBytesFetched);
  }

  /** Of those, the bytes fetched from other DataNodes. */
  long totalFetchedFromDataNodes() {
    return sum(fetchedFromDataNodes);
  }

  /** Data bytes this JVM's DataNodes offered the DataNodes they feed. */
  long totalForwarded() {
    return sum(dataBytesForwarded);
  }

  /** Blocks shorter than this say little about a DataNode's ingest rate. */
  private static final long MIN_INGEST_SAMPLE_BYTES = 1L << 20;

  /**
   * A block this JVM's DataNode received over UCX: {@code bytes} took
   * {@code busyNanos} from descriptor to disk write. Its rate enters the
   * DataNode's ingest rate (a moving average, so that it follows disks and
   * links that change), which commits carry to clients.
   */
  void noteIngest(long bytes, long busyNanos) {
    if (bytes < MIN_INGEST_SAMPLE_BYTES || busyNanos <= 0) {
      return;
    }
    double rate = bytes * 1e9 / busyNanos;
    synchronized (ingestLock) {
      ingestBytesPerSecond = ingestBytesPerSecond == 0 ? rate
          : 0.7 * ingestBytesPerSecond + 0.3 * rate;
    }
  }

  /** The DataNodes' measured ingest rate in bytes/s, 0 before a sample. */
  public long ingestBytesPerSecond() {
    synchronized (ingestLock) {
      return (long) ingestBytesPerSecond;
    }
  }

  /**
   * Returns landing buffers to their pool after {@code delayMs}: buffers a
   * DataNode fed the next one from and gave up before that one's ack, which
   * may still be fetching from them (a get cannot be called back).
   */
  void releaseLater(final RegisteredBufferPool pool, final long[] tokens,
      long delayMs) {
    Runnable release = () -> {
      for (long t : tokens) {
        pool.release(t);
      }
    };
    try {
      maintenance.schedule(release, delayMs, TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.RejectedExecutionException closing) {
      // The runtime is closing, and the pool with it.
    }
  }

  /** Once a second: idle connections, idle regions. */
  private void maintain() {
    try {
      connections.sweep();
      directRegions.cleanUp();
    } catch (Throwable t) {
      LOG.warn("hdfs-rdma maintenance failed", t);
    }
  }

  /**
   * Logs what this JVM moved over UCX, and appends it to the file named by
   * the system property {@code hdfsrdma.stats.file} when set (test runs sum
   * these lines over their JVMs).
   */
  void reportTotals() {
    String line = "ucx-data-bytes-sent=" + dataBytesSent() + " "
        + "ucx-data-bytes-fetched=" + totalFetched()
        + " ucx-data-bytes-fetched-from-datanodes="
        + totalFetchedFromDataNodes() + " ucx-data-bytes-forwarded="
        + totalForwarded() + " transports="
        + String.join(";", transportsSeen).replace(' ', '_')
        + " blocks-over-ucx=" + blocksOverUcx() + " blocks-over-tcp="
        + blocksOverTcp() + " packets-fetched=" + packetsFetched.get()
        + " rejected-messages=" + rejectedMessages.get()
        + " queued-sends=" + queuedSends.get();
    for (DistributionPolicy.Outcome o : DistributionPolicy.Outcome.values()) {
      line += " " + o.label() + "=" + pipelines(o);
    }
    for (Map.Entry<String, Long> e : phaseTimes.snapshot().entrySet()) {
      line += " " + e.getKey() + "=" + e.getValue();
    }
    LOG.info("hdfs-rdma totals: {}", line);
    String file = System.getProperty("hdfsrdma.stats.file");
    if (file != null) {
      try (java.io.FileWriter w = new java.io.FileWriter(file, true)) {
        w.write(line + "\n");
      } catch (IOException e) {
        LOG.warn("cannot append UCX totals to {}: {}", file, e.toString());
      }
    }
  }

  /** Logs {@code message} at INFO the first time {@code key} is seen. */
  public static void logOnce(String key, String message) {
    if (LOGGED.add(key)) {
      LOG.info(message);
    }
  }

  /** Lets {@link #logOnce} log {@code key}'s message again (tests). */
  static void forgetLogged(String key) {
    LOGGED.remove(key);
  }

  /** Logs {@code message} at WARN the first time {@code key} is seen. */
  public static void warnOnce(String key, String message) {
    if (LOGGED.add(key)) {
      LOG.warn(message);
    }
  }

  /** The JMX view of this runtime; see {@link HdfsRdmaMXBean}. */
  private final class Bean implements HdfsRdmaMXBean {

    @Override
    public long getDataBytesFetched() {
      return totalFetched();
    }

    @Override
    public long getDataBytesFetchedFromDataNodes() {
      return totalFetchedFromDataNodes();
    }

    @Override
    public long getDataBytesForwarded() {
      return totalForwarded();
    }

    @Override
    public long getPacketsFetched() {
      return packetsFetched.get();
    }

    @Override
    public long getBlocksOverUcx() {
      return blocksOverUcx();
    }

    @Override
    public long getBlocksOverTcp() {
      return blocksOverTcp();
    }

    @Override
    public long getDataBytesSent() {
      return dataBytesSent();
    }

    @Override
    public String getTransports() {
      return String.join("; ", new java.util.TreeSet<String>(transportsSeen));
    }

    @Override
    public long getRejectedMessages() {
      return rejectedMessages.get();
    }

    @Override
    public long getStrayMessages() {
      return worker.strayMessages() + worker.oversizedMessages();
    }

    @Override
    public int getClientConnections() {
      return connections.size();
    }

    @Override
    public long getLandingPoolRegisteredBytes() {
      RegisteredBufferPool p = landingPoolIfCreated();
      return p == null ? 0 : p.metrics().registeredBytes();
    }

    @Override
    public long getLandingPoolInUseBytes() {
      RegisteredBufferPool p = landingPoolIfCreated();
      return p == null ? 0 : p.metrics().inUseBytes();
    }

    @Override
    public Map<String, Long> getPacketPhaseTimes() {
      return phaseTimes.snapshot();
    }
  }

  /** The DataNode landing pool, or null before the first block needs it. */
  RegisteredBufferPool landingPoolIfCreated() {
    return landingPool;
  }

  /** The client packet pool, or null before the first stream needs it. */
  RegisteredBufferPool clientPoolIfCreated() {
    return clientPool;
  }

  /**
   * Closes every resource, in reverse order of creation; first of all takes
   * the metrics source out of the metrics system, outside this runtime's
   * lock (see {@link #registerMetrics}).
   */
  @Override
  public void close() {
    metrics.unregister();
    closeResources();
  }

  private synchronized void closeResources() {
    if (bean != null) {
      MBeans.unregister(bean);
      bean = null;
    }
    maintenance.shutdownNow();
    endpoints.close();
    connections.close();
    directRegions.invalidateAll();
    directRegions.cleanUp();
    worker.close();
    if (landingPool != null) {
      landingPool.close();
    }
    if (clientPool != null) {
      clientPool.close();
    }
    context.close();
  }
}
