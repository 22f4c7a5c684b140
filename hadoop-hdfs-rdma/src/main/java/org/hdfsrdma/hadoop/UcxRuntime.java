package org.hdfsrdma.hadoop;

import java.io.Closeable;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.Collections;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import javax.management.ObjectName;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketReceiver;
import org.apache.hadoop.metrics2.util.MBeans;
import org.apache.hadoop.net.NetUtils;
import org.apache.hadoop.util.ShutdownHookManager;
import org.hdfsrdma.ucx.EndpointCache;
import org.hdfsrdma.ucx.RegisteredBuffer;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.UcxConnection;
import org.hdfsrdma.ucx.UcxContext;
import org.hdfsrdma.ucx.UcxListener;
import org.hdfsrdma.ucx.UcxUnavailableException;
import org.hdfsrdma.ucx.UcxWorker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The UCX resources of this JVM, shared by every HDFS client and DataNode
 * in it: one context, one worker with its progress thread, one endpoint
 * cache, the session table, and (created on first use) the DataNode
 * listener and the registered buffer pools.
 *
 * <p>One worker per JVM: a DataNode serves all its blocks from it, and
 * with two workers in one process UCX 1.13 can trip an assertion on socket
 * descriptor reuse (see jucx-bridge's README). The first configuration
 * seen sets the JVM-wide settings; later ones are ignored.
 */
public final class UcxRuntime implements Closeable {

  private static final Logger LOG = LoggerFactory.getLogger(UcxRuntime.class);
  private static final long LISTEN_TIMEOUT_MS = 30_000;

  private static UcxRuntime instance;

  private final Configuration conf;
  private final UcxContext context;
  private final UcxWorker worker;
  private final EndpointCache endpoints;
  private final SessionTable sessions = new SessionTable();
  private UcxListener listener;
  private RegisteredBufferPool landingPool;
  private RegisteredBufferPool clientPool;
  private RegisteredBufferPool anchorPool;
  private RegisteredBuffer anchor;
  private final AtomicLong dataBytesSent = new AtomicLong();
  private final AtomicLong packetsFetched = new AtomicLong();
  private final PacketPhaseTimes phaseTimes = new PacketPhaseTimes();
  private final boolean clientTimers;
  private final boolean dataNodeTimers;
  private ObjectName bean;
  private final AtomicLong blocksOverUcx = new AtomicLong();
  private final AtomicLong blocksOverTcp = new AtomicLong();
  private final ConcurrentHashMap<String, AtomicLong> dataBytesFetched =
      new ConcurrentHashMap<String, AtomicLong>();
  private final Set<UcxConnection> transportsNoted =
      Collections.newSetFromMap(new ConcurrentHashMap<UcxConnection, Boolean>());
  private final Set<String> transportsSeen =
      Collections.newSetFromMap(new ConcurrentHashMap<String, Boolean>());
  private static final Set<String> LOGGED =
      Collections.newSetFromMap(new ConcurrentHashMap<String, Boolean>());

  private UcxRuntime(Configuration conf) throws UcxUnavailableException {
    this.conf = conf;
    this.clientTimers = conf.getBoolean(
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_PACKET_TIMERS_ENABLED_KEY,
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_PACKET_TIMERS_ENABLED_DEFAULT);
    this.dataNodeTimers = conf.getBoolean(
        HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_PACKET_TIMERS_ENABLED_KEY,
        HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_PACKET_TIMERS_ENABLED_DEFAULT);
    String problem = HadoopVersionCheck.problem();
    if (problem != null) {
      throw new UcxUnavailableException(problem);
    }
    UcxContext.Options options = UcxContext.Options.defaults();
    String tls = conf.getTrimmed(HdfsRdmaConfigKeys.DFS_RDMA_UCX_TLS_KEY,
        HdfsRdmaConfigKeys.DFS_RDMA_UCX_TLS_DEFAULT);
    if (!tls.isEmpty()) {
      options = options.withUcxConfig("TLS", tls);
    }
    UcxContext ctx = new UcxContext(options);
    UcxWorker w = null;
    try {
      w = new UcxWorker(ctx, "hdfs-rdma");
      w.setMaxPacketBytes(PacketReceiver.MAX_PACKET_SIZE);
      w.setDescriptorHandler(sessions);
      w.start();
    } catch (UcxUnavailableException | RuntimeException e) {
      if (w != null) {
        w.close();
      }
      ctx.close();
      throw e;
    }
    this.context = ctx;
    this.worker = w;
    this.endpoints = new EndpointCache(w);
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
      // Defaults come from the KEY_DEFAULT constants: adding
      // hdfs-rdma-default.xml as a resource here would put it after
      // hdfs-site.xml and override the operator's settings.
      instance = new UcxRuntime(new Configuration(conf));
      LOG.info("UCX runtime started (UCX {})",
          org.hdfsrdma.ucx.NativeIntrospection.loadedUcxVersion());
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

  /** Below FileSystem's (10): runs after open files were closed. */
  static final int SHUTDOWN_HOOK_PRIORITY = 1;

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

  /** The DataNode listener's address, or null before {@link #listen()}. */
  public synchronized InetSocketAddress listenerAddress() {
    return listener == null ? null : listener.address();
  }

  /** Closes the runtime (tests and JVM shutdown); a later get() rebuilds. */
  public static synchronized void shutdown() {
    if (instance != null) {
      instance.close();
      instance = null;
    }
  }

  public UcxWorker worker() {
    return worker;
  }

  public EndpointCache endpoints() {
    return endpoints;
  }

  public SessionTable sessions() {
    return sessions;
  }

  /**
   * The JVM's UCX listener for DataNodes, bound on first call to
   * {@code dfs.datanode.rdma.address}. DataNodes of one JVM share it: a
   * descriptor finds its block through the session table, not the port.
   */
  public synchronized InetSocketAddress listen() throws IOException {
    if (listener == null) {
      InetSocketAddress bind = NetUtils.createSocketAddr(conf.getTrimmed(
          HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ADDRESS_KEY,
          HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ADDRESS_DEFAULT));
      try {
        listener = UcxListener.open(worker, bind, c -> { })
            .get(LISTEN_TIMEOUT_MS, TimeUnit.MILLISECONDS);
      } catch (Exception e) {
        throw new IOException("cannot listen for UCX on " + bind + ": "
            + e.getMessage(), e);
      }
      if (bean == null) {
        bean = MBeans.register("DataNode", "HdfsRdma", new Bean());
      }
    }
    return listener.address();
  }

  /**
   * Tests: the listener stops accepting connections while DataNodes keep
   * committing its address, as when a firewall blocks the UCX port.
   */
  synchronized void stopAcceptingForTesting() {
    listener.close();
  }

  /** Bytes registered at a time by the DataNode's landing pool. */
  private static final long LANDING_SLAB_BYTES = 4L * 1024 * 1024;

  /** The DataNode side's registered memory that gets land in. */
  public synchronized RegisteredBufferPool landingPool() {
    if (landingPool == null) {
      int buffer = conf.getInt(
          HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_PACKET_BUFFER_BYTES_KEY,
          HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_PACKET_BUFFER_BYTES_DEFAULT);
      landingPool = pool("datanode-landing", buffer, LANDING_SLAB_BYTES,
          conf.getLong(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_POOL_MAX_BYTES_KEY,
              HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_POOL_MAX_BYTES_DEFAULT));
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
          conf.getLong(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_POOL_SLAB_BYTES_KEY,
              HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_POOL_SLAB_BYTES_DEFAULT),
          conf.getLong(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_POOL_MAX_BYTES_KEY,
              HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_POOL_MAX_BYTES_DEFAULT));
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

  /** How long a writer waits for a registered packet buffer. */
  public long clientBufferWaitMs() {
    return conf.getLong(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_BUFFER_WAIT_MS_KEY,
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_BUFFER_WAIT_MS_DEFAULT);
  }

  /**
   * A small registered buffer held for the JVM's life: the region that
   * descriptors of packets without bytes (heartbeats, empty end-of-block
   * and sync packets) name, since a descriptor always names a region.
   */
  public synchronized RegisteredBuffer anchor() throws IOException {
    if (anchor == null) {
      anchorPool = new RegisteredBufferPool(context, "anchor", 4096, 4096,
          4096, false);
      anchor = anchorPool.acquire(1000);
    }
    return anchor;
  }

  /**
   * Logs, once per connection, which UCX transports carry it, and keeps the
   * summary for {@link #reportTotals}.
   */
  public void noteTransports(UcxConnection connection) {
    if (transportsNoted.add(connection)) {
      connection.transports().thenAccept(report -> {
        transportsSeen.add(report.toString());
        LOG.info("hdfs-rdma: UCX to {}: {}", connection.peer(), report);
      });
    }
  }

  /**
   * A DataNode of this JVM received a block from a client: over UCX (its
   * packets never crossed the socket) or over TCP.
   */
  public void countReceivedBlock(boolean overUcx) {
    (overUcx ? blocksOverUcx : blocksOverTcp).incrementAndGet();
  }

  /**
   * A block counted as received over UCX came over the socket after all
   * (the client could not reach a UCX listener of its pipeline).
   */
  public void recountBlockOverTcp() {
    blocksOverUcx.decrementAndGet();
    blocksOverTcp.incrementAndGet();
  }

  /** Client blocks this JVM's DataNodes received with packets by UCX get. */
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
   * The phase timers of this JVM's clients, or null when
   * {@code dfs.client.rdma.packet-timers.enabled} is off.
   */
  public PacketPhaseTimes clientTimes() {
    return clientTimers ? phaseTimes : null;
  }

  /**
   * The phase timers of this JVM's DataNodes, or null when
   * {@code dfs.datanode.rdma.packet-timers.enabled} is off.
   */
  public PacketPhaseTimes dataNodeTimes() {
    return dataNodeTimers ? phaseTimes : null;
  }

  /** Data bytes a DataNode of this JVM fetched by get, in one packet. */
  public void countFetched(String dataNode, long dataBytes) {
    packetsFetched.incrementAndGet();
    AtomicLong counter = dataBytesFetched.get(dataNode);
    if (counter == null) {
      dataBytesFetched.putIfAbsent(dataNode, new AtomicLong());
      counter = dataBytesFetched.get(dataNode);
    }
    counter.addAndGet(dataBytes);
  }

  /** Data bytes fetched by get, by DataNode transfer address. */
  public Map<String, Long> dataBytesFetched() {
    Map<String, Long> copy = new TreeMap<String, Long>();
    for (Map.Entry<String, AtomicLong> e : dataBytesFetched.entrySet()) {
      copy.put(e.getKey(), e.getValue().get());
    }
    return copy;
  }

  /**
   * Logs what this JVM moved over UCX, and appends it to the file named by
   * the system property {@code hdfsrdma.stats.file} when set (test runs sum
   * these lines over their JVMs).
   */
  void reportTotals() {
    long fetched = 0;
    for (long n : dataBytesFetched().values()) {
      fetched += n;
    }
    String line = "ucx-data-bytes-sent=" + dataBytesSent() + " "
        + "ucx-data-bytes-fetched=" + fetched + " transports="
        + String.join(";", transportsSeen).replace(' ', '_')
        + " blocks-over-ucx=" + blocksOverUcx() + " blocks-over-tcp="
        + blocksOverTcp() + " packets-fetched=" + packetsFetched.get();
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

  /** The JMX view of this runtime; see {@link HdfsRdmaMXBean}. */
  private final class Bean implements HdfsRdmaMXBean {

    @Override
    public long getDataBytesFetched() {
      long fetched = 0;
      for (long n : dataBytesFetched().values()) {
        fetched += n;
      }
      return fetched;
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
    public String getListenerAddress() {
      InetSocketAddress a = listenerAddress();
      return a == null ? "" : NetUtils.getHostPortString(a);
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

  private synchronized RegisteredBufferPool landingPoolIfCreated() {
    return landingPool;
  }

  @Override
  public synchronized void close() {
    if (bean != null) {
      MBeans.unregister(bean);
      bean = null;
    }
    endpoints.close();
    worker.close();
    if (landingPool != null) {
      landingPool.close();
    }
    if (clientPool != null) {
      clientPool.close();
    }
    if (anchor != null) {
      anchor.release();
      anchorPool.close();
    }
    context.close();
  }
}
