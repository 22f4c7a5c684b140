package org.hdfsrdma.hadoop.metrics;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

import org.apache.hadoop.classification.InterfaceAudience;
import org.apache.hadoop.metrics2.MetricsCollector;
import org.apache.hadoop.metrics2.MetricsSource;
import org.apache.hadoop.metrics2.annotation.Metrics;
import org.apache.hadoop.metrics2.lib.MetricsRegistry;
import org.apache.hadoop.metrics2.lib.MutableCounterLong;

/**
 * What became of this JVM's client pipelines, by outcome: over UCX (fan
 * out, chain, hybrid), or on TCP and why. Published as metrics2 source
 * {@link #SOURCE_NAME} from a client's first pipeline that asked for UCX
 * ({@code dfs.client.rdma.enabled}) for the rest of the JVM's life, UCX
 * started or not: the reasons a client stays on TCP (UCX unavailable,
 * protection, policy) are the ones where no UCX runtime exists to count
 * them. Counted once per pipeline set-up, never per packet.
 */
@InterfaceAudience.Private
@Metrics(context = "dfs")
public final class ClientOutcomes implements MetricsSource {

  /** The source's name in metrics2 (JMX: Hadoop:service=...,name=...). */
  public static final String SOURCE_NAME = "HdfsRdmaClient";

  private static final ClientOutcomes JVM = new ClientOutcomes();

  private final AtomicLongArray counts =
      new AtomicLongArray(PipelineOutcome.values().length);
  private final AtomicLong stripedStreamers = new AtomicLong();

  private final MetricsRegistry registry = new MetricsRegistry(SOURCE_NAME)
      .setContext("dfs");
  private final MutableCounterLong[] counters =
      new MutableCounterLong[PipelineOutcome.values().length];
  private final MutableCounterLong stripedStreamersOverTcp =
      registry.newCounter("StripedStreamersOverTcp", "DataStreamers of"
          + " erasure-coded (striped) files this JVM left on Hadoop's TCP"
          + " path", 0L);

  private ClientOutcomes() {
    for (PipelineOutcome o : PipelineOutcome.values()) {
      counters[o.ordinal()] = registry.newCounter(o.metric(),
          "Client pipelines: " + o.label(), 0L);
    }
  }

  /** Counts one pipeline of this JVM by its outcome. */
  public static void count(PipelineOutcome outcome) {
    JVM.counts.incrementAndGet(outcome.ordinal());
    JVM.registerOnce();
  }

  /** This JVM's pipelines with {@code outcome} so far. */
  public static long pipelines(PipelineOutcome outcome) {
    return JVM.counts.get(outcome.ordinal());
  }

  /**
   * A DataStreamer of an erasure-coded file was left on Hadoop's TCP
   * path; returns how many this JVM has left so far.
   */
  public static long countStripedStreamer() {
    long n = JVM.stripedStreamers.incrementAndGet();
    JVM.registerOnce();
    return n;
  }

  /** DataStreamers of erasure-coded files this JVM left on TCP. */
  public static long stripedStreamersOverTcp() {
    return JVM.stripedStreamers.get();
  }

  /**
   * Publishes this source unless the metrics system holds it: also after
   * the system was shut down and started again (a DataNode restarted in
   * the same JVM), which drops every source. Once per pipeline set-up.
   */
  private void registerOnce() {
    Sources.register(SOURCE_NAME, this);
  }

  @Override
  public synchronized void getMetrics(MetricsCollector collector,
      boolean all) {
    for (PipelineOutcome o : PipelineOutcome.values()) {
      Sources.advance(counters[o.ordinal()], counts.get(o.ordinal()));
    }
    Sources.advance(stripedStreamersOverTcp, stripedStreamers.get());
    registry.snapshot(collector.addRecord(registry.info()), all);
  }
}
