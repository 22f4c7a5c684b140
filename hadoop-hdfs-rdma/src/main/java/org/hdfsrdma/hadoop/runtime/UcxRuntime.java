package org.hdfsrdma.hadoop.runtime;

import java.io.Closeable;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.hdfsrdma.hadoop.agent.HadoopVersionCheck;
import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.metrics.PacketPhaseTimes;
import org.hdfsrdma.hadoop.metrics.Totals;
import org.hdfsrdma.hadoop.metrics.UcxJvmMetrics;
import org.hdfsrdma.ucx.Closeables;
import org.hdfsrdma.ucx.EndpointCache;
import org.hdfsrdma.ucx.NativeIntrospection;
import org.hdfsrdma.ucx.RemoteRegion;
import org.hdfsrdma.ucx.UcxContext;
import org.hdfsrdma.ucx.UcxEndpoint;
import org.hdfsrdma.ucx.UcxRelease;
import org.hdfsrdma.ucx.UcxUnavailableException;
import org.hdfsrdma.ucx.UcxWorker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The UCX resources of this JVM, shared by every HDFS client and DataNode
 * in it, and their life cycle: one context, one thread-safe worker, the
 * client's endpoints, the registered buffer pools, the housekeeping
 * thread, the JVM's metrics source, and what other parts attach to it (the
 * DataNodes' session table and connections: {@link #extension}). Created
 * on first use, closed at JVM exit after Hadoop's own hooks.
 *
 * <p>There is no UCX listening socket: a DataNode's worker address travels
 * inside Hadoop's authenticated writeBlock reply, so only a peer that passed
 * Hadoop's own checks learns it, and with UCX's tcp transport off (the
 * default) nothing of UCX is reachable from the network at all (DESIGN.md,
 * "Threat model").
 *
 * <p>One worker for the DataNode side: a DataNode serves all its blocks
 * from it, and with two workers in one process UCX 1.13 can trip an
 * assertion on socket descriptor reuse (see jucx-bridge's README). Client
 * streams send on {@linkplain ClientLanes lanes}: lane 0 is this same
 * worker, and only {@code dfs.client.rdma.workers} above 1 adds workers,
 * when concurrent streams need them. The first configuration seen sets the
 * JVM-wide settings (transports, pools, lanes); later ones are ignored.
 */
public final class UcxRuntime implements Closeable {

  private static final Logger LOG = LoggerFactory.getLogger(UcxRuntime.class);

  /** Written under the class's lock; read without it ({@link #current}). */
  private static volatile UcxRuntime instance;
  /** How often regions left unused are unmapped. */
  private static final long REGION_SWEEP_MS = 1000;

  private final RdmaConf conf;
  private final UcxContext context;
  private final UcxTransports transports;
  private final BufferPools pools;
  private final UcxWorker worker;
  private final byte[] workerAddress;
  private final byte[] workerDigest;
  private final String sharedMemoryProfile;
  private final EndpointCache endpoints;
  private final ClientLanes lanes;
  private final Maintenance maintenance;
  private final RegionCache regions;
  private final AtomicLong maintenanceFailures = new AtomicLong();
  private final UcxJvmMetrics metrics;
  /** Attached parts, in order of attachment; closed in reverse. */
  private final Map<Class<?>, Closeable> extensions =
      new LinkedHashMap<Class<?>, Closeable>();
  private final TransportNotes transportNotes = new TransportNotes();
  private final NodeBackoff nodeBackoff = new NodeBackoff();
  private final IngestRates ingestRates = new IngestRates();
  /** This JVM's DataNodes' host markers ({@link LocalDataNodeMarker}). */
  private final Set<String> ownMarkers = ConcurrentHashMap.newKeySet();
  private boolean closed;

  private UcxRuntime(Configuration configuration)
      throws UcxUnavailableException {
    this.conf = new RdmaConf(configuration);
    String problem = HadoopVersionCheck.problem();
    if (problem != null) {
      throw new UcxUnavailableException(problem);
    }
    // The shared-memory receive queues keep UCX's default depth: a sender
    // indexes its peer's queue with its own configured depth (UCX 1.13,
    // uct_mm_ep), so peers that disagree lose messages and hang. Every
    // JVM on a host must run with the same UCX_*_FIFO_SIZE (DESIGN.md).
    UcxContext.Options options = UcxContext.Options.defaults();
    if (!conf.ucxTls().isEmpty()) {
      options = options.withUcxConfig("TLS", conf.ucxTls());
    }
    UcxContext ctx = new UcxContext(options);
    this.sharedMemoryProfile = UcxRelease.sharedMemoryProfile();
    BufferPools p = null;
    UcxWorker w = null;
    EndpointCache e = null;
    ClientLanes l = null;
    Maintenance m = null;
    try {
      Set<String> resources = ctx.resources();
      String tcp = UcxTransports.tcpRefusal(resources, conf);
      if (tcp != null) {
        throw new UcxUnavailableException(tcp);
      }
      this.transports = new UcxTransports(resources);
      p = new BufferPools(ctx, conf, PacketHeader.PKT_MAX_HEADER_LEN);
      w = new UcxWorker(ctx, "hdfs-rdma");
      this.workerAddress = w.address();
      this.workerDigest = sha256(workerAddress);
      w.start();
      e = new EndpointCache(w, conf.connectTimeoutMs(), workerAddress);
      // Lane 0 is this worker; further lanes are made by streams that
      // need them.
      l = new ClientLanes(conf.clientWorkers(), ctx, conf.connectTimeoutMs(),
          w, e);
      m = new Maintenance(maintenanceFailures::incrementAndGet);
      // A client, a DataNode feeding the next (chain) or a DataNode serving
      // a read, in this very JVM (MiniDFSCluster), exposes memory this JVM
      // reads; no other memory of this process.
      this.regions = new RegionCache(new RemoteRegion.Policy(p::ownsSegment,
          conf.dataNodeAllowEmulatedGets()), transportNotes);
      m.every(REGION_SWEEP_MS, regions::sweep);
      this.metrics = new UcxJvmMetrics(
          new RuntimeGauges(w, l, e, p, maintenanceFailures, transportNotes),
          conf.clientTimers() ? new PacketPhaseTimes() : null);
    } catch (UcxUnavailableException | RuntimeException | Error failure) {
      Closeables.closeAfterFailure(failure, m, l, e, w, p, ctx);
      throw failure;
    }
    this.context = ctx;
    this.pools = p;
    this.worker = w;
    this.endpoints = e;
    this.lanes = l;
    this.maintenance = m;
  }

  /**
   * This JVM's runtime, created on first call.
   *
   * @throws UcxUnavailableException when UCX cannot be used here (no UCX
   *     libraries, another Hadoop release, UCX refusing the settings)
   */
  public static synchronized UcxRuntime get(Configuration conf)
      throws UcxUnavailableException {
    if (instance == null) {
      instance = new UcxRuntime(conf);
      instance.metrics.register();
      LOG.info("UCX runtime started (UCX {}, transports {}, client workers"
          + " up to {})", NativeIntrospection.loadedUcxVersion(),
          instance.conf.ucxTls().isEmpty() ? "all" : instance.conf.ucxTls(),
          instance.lanes.capacity());
      final UcxRuntime started = instance;
      ExitHook.install(conf, () -> {
        Totals.report(started.metrics);
        closeAtExit(started);
      });
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
  public static UcxRuntime current() {
    return instance;
  }

  /** Closes the runtime (tests and JVM shutdown); a later get() rebuilds. */
  public static synchronized void shutdown() {
    if (instance != null) {
      UcxRuntime r = instance;
      instance = null;
      r.close();
    }
  }

  /** The settings this runtime was created with (JVM-wide ones apply). */
  public RdmaConf conf() {
    return conf;
  }

  /**
   * The runtime's own worker: the DataNode side's, and client lane 0's
   * ({@link #clientLanes}).
   */
  public UcxWorker worker() {
    return worker;
  }

  /** The workers client streams send on; lane 0 is {@link #worker}. */
  public ClientLanes clientLanes() {
    return lanes;
  }

  /** Which transports this JVM's UCX has. */
  public UcxTransports transports() {
    return transports;
  }

  /** The JVM's registered memory. */
  public BufferPools pools() {
    return pools;
  }

  /** The regions this JVM reads from (DataNodes' gets, clients' reads). */
  public RegionCache regions() {
    return regions;
  }

  /** The housekeeping thread. */
  public Maintenance maintenance() {
    return maintenance;
  }

  /** The JVM's metrics source: client side and the shared worker. */
  public UcxJvmMetrics metrics() {
    return metrics;
  }

  /**
   * This JVM's UCX worker address: what a DataNode puts in its commit so
   * that its client can connect.
   */
  public byte[] workerAddress() {
    return workerAddress.clone();
  }

  /**
   * A SHA-256 digest of {@link #workerAddress()}: the worker's identity
   * where the address itself (hundreds of bytes) is too long to carry.
   */
  public byte[] workerDigest() {
    return workerDigest.clone();
  }

  private static byte[] sha256(byte[] bytes) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(bytes);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("no SHA-256 in this JVM", e);
    }
  }

  /**
   * This JVM's UCX release and shared-memory settings, which a peer on
   * this host must share to exchange messages through shared memory
   * ({@link Reach#sharedMemoryRefusal}).
   */
  public String sharedMemoryProfile() {
    return sharedMemoryProfile;
  }

  /**
   * The part of type {@code type} attached to this runtime, attached by
   * {@code create} on first call: the DataNodes' shared tables live as long
   * as the runtime and close before its worker, without the runtime
   * knowing them.
   *
   * @throws IllegalStateException when the runtime is closed
   */
  public synchronized <T extends Closeable> T extension(Class<T> type,
      Function<UcxRuntime, T> create) {
    if (closed) {
      throw new IllegalStateException("the UCX runtime is closed");
    }
    Closeable e = extensions.get(type);
    if (e == null) {
      e = create.apply(this);
      extensions.put(type, e);
    }
    return type.cast(e);
  }

  /**
   * The part of type {@code type} if one was attached, else null;
   * attaches nothing.
   */
  public synchronized <T extends Closeable> T attached(Class<T> type) {
    return type.cast(extensions.get(type));
  }

  /**
   * The connection to a DataNode's worker from the runtime's own worker
   * (cached; client lane 0, and DataNodes feeding DataNodes), with this
   * JVM's hello sent first (the DataNode connects back with it). A client
   * stream connects through its lane ({@link ClientLane#connect}).
   */
  public CompletableFuture<UcxEndpoint> connect(byte[] address, String peer) {
    return endpoints.get(address, peer);
  }

  /**
   * Logs, once per connection, which UCX transports carry it (call once
   * the connection is up, outside UCX's callbacks), and keeps it for the
   * metrics and the totals.
   */
  public void noteConnected(UcxEndpoint e) {
    transportNotes.connected(e);
  }

  /** Notes a way this JVM's DataNodes read packets, for the same. */
  public void noteTransport(String how) {
    transportNotes.add(how);
  }

  /** The DataNodes this JVM's clients keep off UCX for a while. */
  public NodeBackoff nodeBackoff() {
    return nodeBackoff;
  }

  /** The ingest rates DataNodes committed to this JVM's clients. */
  public IngestRates ingestRates() {
    return ingestRates;
  }

  /** The names of the host markers this JVM's DataNodes hold. */
  Set<String> ownMarkers() {
    return ownMarkers;
  }

  /**
   * Closes every resource: the metrics source first (outside this
   * runtime's lock: the metrics timer holds the metrics system's lock
   * while it reads the runtime), the housekeeping thread (its tasks use
   * the rest), then in reverse order of creation: attached parts, the
   * client lanes the streams made (newest first), the runtime's endpoints,
   * its worker, the pools, the context. Idempotent.
   */
  @Override
  public void close() {
    metrics.unregister();
    List<AutoCloseable> order = new ArrayList<AutoCloseable>();
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      order.add(maintenance);
      List<Closeable> attached = new ArrayList<Closeable>(extensions.values());
      Collections.reverse(attached);
      order.addAll(attached);
    }
    order.add(regions);
    order.add(lanes);
    order.add(endpoints);
    order.add(worker);
    order.add(pools);
    order.add(context);
    Closeables.closeAll(order.toArray(new AutoCloseable[0]));
  }
}
