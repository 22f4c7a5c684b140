package org.hdfsrdma.hadoop.metrics;

import java.util.Collections;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.hadoop.classification.InterfaceAudience;
import org.apache.hadoop.metrics2.MetricsCollector;
import org.apache.hadoop.metrics2.MetricsSource;
import org.apache.hadoop.metrics2.annotation.Metrics;
import org.apache.hadoop.metrics2.lib.MetricsRegistry;
import org.apache.hadoop.metrics2.lib.MutableCounterLong;
import org.apache.hadoop.metrics2.lib.MutableGaugeInt;
import org.apache.hadoop.metrics2.lib.MutableGaugeLong;
import org.hdfsrdma.ucx.PoolMetrics;

/**
 * What this JVM's UCX runtime did as a whole, as the metrics2 source
 * {@value #SOURCE_NAME} (record {@value #SOURCE_NAME}, context {@code
 * dfs}); in a DataNode's JMX {@code Hadoop:service=DataNode,name=HdfsRdma}.
 * Its client side: data sent as descriptors, connections, pipelines by
 * outcome, the packet pool, the client phase timers. Its UCX worker, which
 * every DataNode of the JVM shares: messages refused or stray, hellos,
 * client connections, open sessions, the landing pool, callbacks that
 * failed. What each DataNode received is its own source,
 * {@link UcxDataNodeMetrics}.
 *
 * <p>Counted where it happens (a stream's {@link WriterCounters} slot per
 * packet, an atomic per pipeline, the pools' and tables' own counters) and
 * brought into the metrics2 counters at snapshot time.
 *
 * <p>A JVM whose metrics system never starts (a plain {@code hdfs dfs
 * -put}) keeps the source registered but unpublished; such a JVM's totals
 * reach its log and {@code hdfsrdma.stats.file} instead ({@link Totals}).
 */
@InterfaceAudience.Private
@Metrics(about = "hdfs-rdma: this JVM's UCX runtime and its clients",
    context = "dfs")
public final class UcxJvmMetrics implements MetricsSource {

  /** The metrics2 source and record name, the JMX bean's {@code name=}. */
  public static final String SOURCE_NAME = "HdfsRdma";


  /** Slot counters of a client stream, by index. */
  public static final int SENT_BYTES = 0;
  public static final int QUEUED_SENDS = 1;

  /** What the runtime reads off its UCX resources at snapshot time. */
  public interface Gauges {
    /** Messages dropped before any handler. */
    long strayMessages();

    /** Exceptions that escaped a UCX callback or progress task. */
    long callbackFailures();

    /** UCX connections this JVM's clients opened. */
    long clientConnects();

    /** The client packet pool's counters, or null before it exists. */
    PoolMetrics clientPool();

    /** The DataNode landing pool's counters, or null before it exists. */
    PoolMetrics landingPool();

    /** Which UCX transports carried this JVM's connections and reads. */
    String transports();
  }

  /** What the JVM's DataNode side (if any) reads off its tables. */
  public interface ServerGauges {
    long rejectedMessages();

    long clientHellos();

    long idleConnectionsClosed();

    int clientConnections();

    int openSessions();
  }

  private final Gauges gauges;
  private volatile ServerGauges server;
  private final PacketPhaseTimes clientTimes;
  private final WriterCounters perPacket = new WriterCounters(2);
  private final List<UcxDataNodeMetrics> dataNodes =
      new CopyOnWriteArrayList<UcxDataNodeMetrics>();
  private final AtomicLong[] pipelines =
      new AtomicLong[PipelineOutcome.values().length];

  private final MetricsRegistry registry = new MetricsRegistry(SOURCE_NAME)
      .setContext("dfs");
  private final MutableCounterLong dataBytesSent = registry.newCounter(
      "DataBytesSent", "Data bytes this JVM's HDFS clients sent as UCX"
          + " descriptors", 0L);
  private final MutableCounterLong queuedSends = registry.newCounter(
      "QueuedSends", "Descriptor sends that waited for room in a DataNode's"
          + " UCX receive queue", 0L);
  private final MutableCounterLong clientConnects = registry.newCounter(
      "ClientConnects", "UCX connections this JVM's clients opened to"
          + " DataNodes", 0L);
  private final MutableCounterLong rejectedMessages = registry.newCounter(
      "RejectedMessages", "UCX messages this JVM's DataNodes refused"
          + " (malformed, forged, stale, for no open session)", 0L);
  private final MutableCounterLong strayMessages = registry.newCounter(
      "StrayMessages", "UCX messages dropped before any handler (unknown"
          + " id, oversized, rendezvous)", 0L);
  private final MutableCounterLong clientHellos = registry.newCounter(
      "ClientHellos", "Hellos received: UCX connections clients opened to"
          + " this JVM", 0L);
  private final MutableCounterLong idleConnectionsClosed =
      registry.newCounter("IdleConnectionsClosed", "Client UCX connections"
          + " closed for opening no block in time", 0L);
  private final MutableCounterLong callbackFailures = registry.newCounter(
      "CallbackFailures", "Exceptions that escaped a UCX callback or a task"
          + " on the progress thread (counted, logged, never rethrown)", 0L);
  private final MutableGaugeInt clientConnections = registry.newGauge(
      "ClientConnections", "UCX connections from clients known now", 0);
  private final MutableGaugeInt openSessions = registry.newGauge(
      "OpenSessions", "Blocks being received over UCX now", 0);
  private final PoolGauges clientPool = new PoolGauges(registry,
      "ClientPool", "client packet pool");
  private final PoolGauges landingPool = new PoolGauges(registry,
      "LandingPool", "DataNode landing pool");
  private final PhaseRates rates;
  private final ClientReads reads = new ClientReads(registry);

  /** A pool's four metrics, named with a common prefix. */
  private static final class PoolGauges {
    final MutableCounterLong waits;
    final MutableCounterLong timeouts;
    final MutableGaugeLong registered;
    final MutableGaugeLong inUse;

    PoolGauges(MetricsRegistry r, String prefix, String what) {
      waits = r.newCounter(prefix + "Waits", "Buffer requests of the " + what
          + " that waited for a free buffer", 0L);
      timeouts = r.newCounter(prefix + "Timeouts", "Buffer requests of the "
          + what + " that timed out waiting", 0L);
      registered = r.newGauge(prefix + "RegisteredBytes", "Bytes the " + what
          + " has registered with UCX", 0L);
      inUse = r.newGauge(prefix + "InUseBytes", "Bytes of the " + what
          + " in use", 0L);
    }

    void update(PoolMetrics m) {
      if (m != null) {
        Sources.advance(waits, m.waits());
        Sources.advance(timeouts, m.timeouts());
        registered.set(m.registeredBytes());
        inUse.set(m.inUseBytes());
      }
    }
  }

  /**
   * @param gauges where the runtime's own counts are read
   * @param clientTimes the client's phase timers, or null when off
   */
  public UcxJvmMetrics(Gauges gauges, PacketPhaseTimes clientTimes) {
    this.gauges = gauges;
    this.clientTimes = clientTimes;
    for (PipelineOutcome o : PipelineOutcome.values()) {
      pipelines[o.ordinal()] = new AtomicLong();
    }
    this.rates = clientTimes == null ? null
        : new PhaseRates(registry, clientTimes, true);
  }

  /** The JVM's DataNode side started: publish its tables' counts too. */
  public void serve(ServerGauges serverGauges) {
    this.server = serverGauges;
  }

  /** A DataNode started serving on this runtime. */
  public void add(UcxDataNodeMetrics dataNode) {
    dataNodes.add(dataNode);
  }

  /** Every DataNode that served on this runtime, running or stopped. */
  public List<UcxDataNodeMetrics> dataNodes() {
    return Collections.unmodifiableList(dataNodes);
  }

  /** Per-packet counter {@code counter} of all those DataNodes, summed. */
  public long dataNodeTotal(int counter) {
    long sum = 0;
    for (UcxDataNodeMetrics m : dataNodes) {
      sum += m.get(counter);
    }
    return sum;
  }

  /** A client stream's own per-packet counters; close with the stream. */
  public WriterCounters.Slot openStream() {
    return perPacket.open();
  }

  /**
   * Counts a client pipeline by what became of it: for this runtime (the
   * totals line) and for the JVM ({@link ClientOutcomes}, which publishes
   * the counts).
   */
  public void countPipeline(PipelineOutcome outcome) {
    pipelines[outcome.ordinal()].incrementAndGet();
    ClientOutcomes.count(outcome);
  }

  /** Client pipelines this runtime set up with that outcome. */
  public long pipelines(PipelineOutcome outcome) {
    return pipelines[outcome.ordinal()].get();
  }

  /** Data bytes this JVM's clients sent as descriptors. */
  public long dataBytesSent() {
    return perPacket.sum(SENT_BYTES);
  }

  /** Sends that waited for room in a DataNode's receive queue. */
  public long queuedSends() {
    return perPacket.sum(QUEUED_SENDS);
  }

  /** UCX messages this JVM's DataNodes refused. */
  public long rejectedMessages() {
    ServerGauges s = server;
    return s == null ? 0 : s.rejectedMessages();
  }

  /** What this JVM's block readers took over UCX. */
  public ClientReads reads() {
    return reads;
  }

  /** The client's phase timers, or null when they are off. */
  public PacketPhaseTimes clientTimes() {
    return clientTimes;
  }

  /** The runtime's gauges (transports, pools), for the totals. */
  Gauges gauges() {
    return gauges;
  }

  @Override
  public synchronized void getMetrics(MetricsCollector collector,
      boolean all) {
    Sources.advance(dataBytesSent, dataBytesSent());
    Sources.advance(queuedSends, queuedSends());
    Sources.advance(clientConnects, gauges.clientConnects());
    Sources.advance(strayMessages, gauges.strayMessages());
    Sources.advance(callbackFailures, gauges.callbackFailures());
    ServerGauges s = server;
    if (s != null) {
      Sources.advance(rejectedMessages, s.rejectedMessages());
      Sources.advance(clientHellos, s.clientHellos());
      Sources.advance(idleConnectionsClosed, s.idleConnectionsClosed());
      clientConnections.set(s.clientConnections());
      openSessions.set(s.openSessions());
    }
    reads.update();
    clientPool.update(gauges.clientPool());
    landingPool.update(gauges.landingPool());
    if (rates != null) {
      rates.update();
    }
    registry.tag("Transports", "UCX transports of this JVM's connections"
        + " and reads", gauges.transports(), true);
    registry.snapshot(collector.addRecord(registry.info()), all);
  }

  /** Publishes this source (the runtime started, a DataNode started). */
  public void register() {
    Sources.register(SOURCE_NAME, this);
  }

  /** Withdraws this source (the runtime closed). */
  public void unregister() {
    Sources.unregister(SOURCE_NAME, this);
  }
}
