package org.hdfsrdma.hadoop;

import org.apache.hadoop.classification.InterfaceAudience;
import org.apache.hadoop.metrics2.MetricsCollector;
import org.apache.hadoop.metrics2.MetricsException;
import org.apache.hadoop.metrics2.MetricsSource;
import org.apache.hadoop.metrics2.MetricsSystem;
import org.apache.hadoop.metrics2.annotation.Metric;
import org.apache.hadoop.metrics2.annotation.Metrics;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.metrics2.lib.MetricsRegistry;
import org.apache.hadoop.metrics2.lib.MutableCounterLong;
import org.apache.hadoop.metrics2.lib.MutableGaugeInt;
import org.apache.hadoop.metrics2.lib.MutableGaugeLong;
import org.apache.hadoop.metrics2.lib.MutableRate;
import org.hdfsrdma.hadoop.DistributionPolicy.Outcome;
import org.hdfsrdma.hadoop.PacketPhaseTimes.Phase;
import org.hdfsrdma.ucx.PoolMetrics;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What this JVM's UCX runtime counted, published through Hadoop's metrics2
 * system as the source {@value #SOURCE_NAME} (record {@value #RECORD_NAME},
 * context {@code dfs}), so that every sink an operator already runs (file,
 * Ganglia, Graphite, JMX exporters) sees the UCX write path next to
 * DataNodeMetrics. In JMX the source is
 * {@code Hadoop:service=<metrics prefix>,name=HdfsRdmaMetrics}, e.g.
 * {@code Hadoop:service=DataNode,name=HdfsRdmaMetrics} in a DataNode. The
 * hand-made bean {@code Hadoop:service=DataNode,name=HdfsRdma}
 * ({@link HdfsRdmaMXBean}) stays as it was, for the check command and the
 * benchmarks.
 *
 * <p><b>Snapshot, not per-packet updates.</b> The counters stay where the
 * data path keeps them (the runtime's AtomicLongs, the phase timers'
 * LongAdders, the pools' and connection table's counters); this source
 * implements {@link MetricsSource#getMetrics} and, each time the metrics
 * system (or a JMX read) takes a snapshot, brings its
 * {@link MutableCounterLong}s and {@link MutableRate}s up to date by the
 * difference since the last snapshot. Why: in Hadoop 2.9 {@code
 * MutableRate.add} is {@code synchronized}, so timing every packet straight
 * into a rate would put one more lock (contended by every receiving thread
 * of a DataNode) on the per-packet path, and a {@code MutableCounterLong}
 * next to the existing counter would be a second atomic write per packet.
 * Fed at snapshot time, the per-packet path keeps exactly the work it had
 * (no lock, no allocation, no configuration read), and the numbers here are
 * the very numbers the bean, the totals line and the tests read. A rate's
 * packet count and nanosecond sum are two reads of two adders, not one
 * atomic pair: a packet timed between them lands in the next interval.
 *
 * <p>Phase rates exist only for the side whose
 * {@code dfs.client.rdma.packet-timers.enabled} or
 * {@code dfs.datanode.rdma.packet-timers.enabled} is on (the runtime reads
 * these once, when it starts); without timers nothing is measured, so
 * nothing is published rather than zeros.
 *
 * <p>One source per JVM, as there is one runtime: registered when the
 * runtime starts (and again when a DataNode starts in a JVM whose metrics
 * system was shut down and restarted under a running runtime, as
 * MiniDFSCluster does), unregistered when the runtime closes. A JVM whose
 * metrics system never starts (a plain {@code hdfs dfs -put}) keeps the
 * source registered but unpublished: this class never initialises the
 * metrics system itself, because the first {@code initialize} of a JVM
 * fixes its prefix and configuration for good, and that belongs to the
 * host process (a DataNode, a YARN task), not to a library inside it.
 */
@InterfaceAudience.Private
@Metrics(about = "hdfs-rdma: what the UCX write path carried in this JVM",
    context = "dfs")
public final class HdfsRdmaMetrics implements MetricsSource {

  private static final Logger LOG =
      LoggerFactory.getLogger(HdfsRdmaMetrics.class);

  /** The metrics2 source name, also the JMX bean's {@code name=}. */
  public static final String SOURCE_NAME = "HdfsRdmaMetrics";

  /** The record name sinks print after the context: {@code dfs.HdfsRdma}. */
  public static final String RECORD_NAME = "HdfsRdma";

  /** Suffix of every phase rate's name: the values are nanoseconds. */
  static final String NANOS = "Nanos";

  final MetricsRegistry registry = new MetricsRegistry(RECORD_NAME);

  @Metric("Data bytes (checksums excluded) this JVM's DataNodes fetched"
      + " over UCX")
  MutableCounterLong dataBytesFetched;
  @Metric("Of those, data bytes fetched from the DataNode feeding them"
      + " (chain, hybrid) rather than from the client")
  MutableCounterLong dataBytesFetchedFromDataNodes;
  @Metric("Data bytes this JVM's DataNodes offered the DataNode they feed"
      + " (chain, hybrid)")
  MutableCounterLong dataBytesForwarded;
  @Metric("Packets this JVM's DataNodes fetched over UCX")
  MutableCounterLong packetsFetched;
  @Metric("Client block replicas received with their packets over UCX")
  MutableCounterLong blocksOverUcx;
  @Metric("Client block replicas received with their packets on the socket")
  MutableCounterLong blocksOverTcp;
  @Metric("UCX messages the DataNodes refused (malformed, forged, stale)")
  MutableCounterLong rejectedMessages;
  @Metric("UCX messages dropped before any handler (unknown id, oversized,"
      + " rendezvous)")
  MutableCounterLong strayMessages;
  @Metric("Hellos received: UCX connections clients opened to this JVM")
  MutableCounterLong clientHellos;
  @Metric("Client UCX connections closed for idleness")
  MutableCounterLong idleConnectionsClosed;
  @Metric("Landing buffer requests that had to wait for a free buffer")
  MutableCounterLong landingPoolWaits;
  @Metric("Landing buffer requests that timed out waiting")
  MutableCounterLong landingPoolTimeouts;
  @Metric("Data bytes this JVM's HDFS clients sent as UCX descriptors")
  MutableCounterLong dataBytesSent;
  @Metric("UCX connections this JVM's clients opened to DataNodes")
  MutableCounterLong clientConnects;
  @Metric("Descriptor sends that waited for room in a DataNode's UCX"
      + " receive queue")
  MutableCounterLong queuedSends;
  @Metric("Client packet buffer requests that had to wait for a free buffer")
  MutableCounterLong clientPoolWaits;
  @Metric("Client packet buffer requests that timed out (those packets went"
      + " on the heap, over TCP)")
  MutableCounterLong clientPoolTimeouts;
  @Metric("Client pipelines whose DataNodes all fetched by get from the"
      + " client")
  MutableCounterLong pipelinesFanOut;
  @Metric("Client pipelines where each DataNode fetched by get from the one"
      + " before it")
  MutableCounterLong pipelinesChain;
  @Metric("Client pipelines where the client fed the first DataNodes and"
      + " those fed the rest")
  MutableCounterLong pipelinesHybrid;
  @Metric("Client pipelines left on TCP because some DataNode's gets would"
      + " have been emulated by the client's CPU (UCX over tcp)")
  MutableCounterLong pipelinesTcpEmulatedGets;
  @Metric("Client pipelines left on TCP because UCX could not reach some"
      + " DataNode")
  MutableCounterLong pipelinesTcpUnreachable;
  @Metric("UCX connections from clients open now")
  MutableGaugeInt clientConnections;
  @Metric("Blocks being received over UCX now (open sessions)")
  MutableGaugeInt openSessions;
  @Metric("Bytes the DataNode landing pool has registered with UCX")
  MutableGaugeLong landingPoolRegisteredBytes;
  @Metric("Bytes of the DataNode landing pool in use")
  MutableGaugeLong landingPoolInUseBytes;
  @Metric("Bytes the client packet pool has registered with UCX")
  MutableGaugeLong clientPoolRegisteredBytes;
  @Metric("Bytes of the client packet pool in use")
  MutableGaugeLong clientPoolInUseBytes;

  private final UcxRuntime runtime;
  /** Per phase (by ordinal): its rate, or null when that side is untimed. */
  private final MutableRate[] rates = new MutableRate[Phase.values().length];
  private final long[] lastCounts = new long[rates.length];
  private final long[] lastNanos = new long[rates.length];

  HdfsRdmaMetrics(UcxRuntime runtime) {
    this.runtime = runtime;
    for (Phase p : Phase.values()) {
      boolean client = isClientPhase(p);
      PacketPhaseTimes times = client ? runtime.clientTimes()
          : runtime.dataNodeTimes();
      if (times != null) {
        rates[p.ordinal()] = registry.newRate(rateName(p),
            (client ? "Client" : "DataNode") + " nanoseconds per packet in "
                + p.label(), false);
      }
    }
  }

  /**
   * The rate's name for a phase: its label in CamelCase plus
   * {@value #NANOS}, e.g. {@code dn-get-wait} gives {@code DnGetWaitNanos},
   * published as {@code DnGetWaitNanosNumOps} (packets) and
   * {@code DnGetWaitNanosAvgTime} (mean nanoseconds per packet over the
   * last interval), as DataNodeMetrics' {@code FlushNanos}.
   */
  static String rateName(Phase phase) {
    StringBuilder name = new StringBuilder();
    for (String word : phase.label().split("-")) {
      name.append(Character.toUpperCase(word.charAt(0)))
          .append(word.substring(1));
    }
    return name.append(NANOS).toString();
  }

  static boolean isClientPhase(Phase phase) {
    return phase.label().startsWith("client-");
  }

  @Override
  public synchronized void getMetrics(MetricsCollector collector,
      boolean all) {
    update();
    registry.snapshot(collector.addRecord(registry.info()), all);
  }

  /**
   * Brings every metric up to the runtime's counters. Takes no lock of the
   * runtime itself (the metrics timer holds the metrics system's lock
   * here, and the runtime's close takes that lock to unregister): only the
   * pools' and the session table's own locks, briefly, as the bean does.
   */
  private void update() {
    advance(dataBytesFetched, runtime.totalFetched());
    advance(packetsFetched, runtime.packetsFetched());
    advance(blocksOverUcx, runtime.blocksOverUcx());
    advance(blocksOverTcp, runtime.blocksOverTcp());
    advance(rejectedMessages, runtime.rejectedMessages());
    advance(strayMessages, runtime.worker().strayMessages()
        + runtime.worker().oversizedMessages());
    advance(clientHellos, runtime.connections().hellos());
    advance(idleConnectionsClosed, runtime.connections().closedIdle());
    advance(dataBytesSent, runtime.dataBytesSent());
    advance(clientConnects, runtime.endpointConnects());
    advance(queuedSends, runtime.queuedSends());
    advance(dataBytesFetchedFromDataNodes,
        runtime.totalFetchedFromDataNodes());
    advance(dataBytesForwarded, runtime.totalForwarded());
    advance(pipelinesFanOut, runtime.pipelines(Outcome.FAN_OUT));
    advance(pipelinesChain, runtime.pipelines(Outcome.CHAIN));
    advance(pipelinesHybrid, runtime.pipelines(Outcome.HYBRID));
    advance(pipelinesTcpEmulatedGets,
        runtime.pipelines(Outcome.TCP_EMULATED_GETS));
    advance(pipelinesTcpUnreachable,
        runtime.pipelines(Outcome.TCP_UNREACHABLE));
    clientConnections.set(runtime.connections().size());
    openSessions.set(runtime.sessions().size());

    RegisteredBufferPool landing = runtime.landingPoolIfCreated();
    if (landing != null) {
      PoolMetrics m = landing.metrics();
      advance(landingPoolWaits, m.waits());
      advance(landingPoolTimeouts, m.timeouts());
      landingPoolRegisteredBytes.set(m.registeredBytes());
      landingPoolInUseBytes.set(m.inUseBytes());
    }
    RegisteredBufferPool client = runtime.clientPoolIfCreated();
    if (client != null) {
      PoolMetrics m = client.metrics();
      advance(clientPoolWaits, m.waits());
      advance(clientPoolTimeouts, m.timeouts());
      clientPoolRegisteredBytes.set(m.registeredBytes());
      clientPoolInUseBytes.set(m.inUseBytes());
    }

    PacketPhaseTimes times = runtime.phaseTimes();
    for (Phase p : Phase.values()) {
      int i = p.ordinal();
      MutableRate rate = rates[i];
      if (rate == null) {
        continue;
      }
      long count = times.count(p);
      long nanos = times.nanos(p);
      if (count > lastCounts[i]) {
        rate.add(count - lastCounts[i], nanos - lastNanos[i]);
        lastCounts[i] = count;
        lastNanos[i] = nanos;
      }
    }
  }

  /** Raises a counter to {@code total}; the runtime's counters only grow. */
  private static void advance(MutableCounterLong counter, long total) {
    long delta = total - counter.value();
    if (delta > 0) {
      counter.incr(delta);
    }
  }

  /**
   * Registers this source with the JVM's metrics system under
   * {@value #SOURCE_NAME}, unless it is registered there already. A stale
   * source of that name (a runtime that was never closed) is replaced, so
   * the name stays {@value #SOURCE_NAME} instead of MiniDFSCluster's
   * {@code HdfsRdmaMetrics-1}. Metrics never stop the data path: a failure
   * is logged and the runtime goes on.
   */
  void register() {
    synchronized (HdfsRdmaMetrics.class) {
      try {
        MetricsSystem ms = DefaultMetricsSystem.instance();
        MetricsSource current = ms.getSource(SOURCE_NAME);
        if (current == this) {
          return;
        }
        if (current != null) {
          ms.unregisterSource(SOURCE_NAME);
        }
        ms.register(SOURCE_NAME, null, this);
      } catch (MetricsException | IllegalStateException e) {
        LOG.warn("hdfs-rdma: metrics source {} not registered: {}",
            SOURCE_NAME, e.toString());
      }
    }
  }

  /** Removes this source from the metrics system, if it is registered. */
  void unregister() {
    synchronized (HdfsRdmaMetrics.class) {
      try {
        MetricsSystem ms = DefaultMetricsSystem.instance();
        if (ms.getSource(SOURCE_NAME) == this) {
          ms.unregisterSource(SOURCE_NAME);
        }
      } catch (MetricsException e) {
        LOG.warn("hdfs-rdma: metrics source {} not unregistered: {}",
            SOURCE_NAME, e.toString());
      }
    }
  }
}
