package org.hdfsrdma.hadoop.metrics;

import org.apache.hadoop.metrics2.MetricsException;
import org.apache.hadoop.metrics2.MetricsSource;
import org.apache.hadoop.metrics2.MetricsSystem;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.metrics2.lib.MutableCounterLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Registering hdfs-rdma's metrics2 sources under stable names, and feeding
 * their counters at snapshot time.
 *
 * <p>A source is registered under its own name, replacing a stale source
 * of that name (a DataNode restarted in the same JVM, as MiniDFSCluster
 * does), so the JMX name stays the documented one instead of metrics2's
 * {@code name-1}. This never initialises the metrics system: the first
 * {@code initialize} of a JVM fixes its prefix for good, and that belongs
 * to the host process (a DataNode, a YARN task), not to a library inside
 * it. Metrics never stop the data path: a failure is logged and ignored.
 */
final class Sources {

  private static final Logger LOG = LoggerFactory.getLogger(Sources.class);

  private Sources() {
  }

  /** Registers {@code source} as {@code name} unless it is already. */
  static void register(String name, MetricsSource source) {
    synchronized (Sources.class) {
      try {
        MetricsSystem ms = DefaultMetricsSystem.instance();
        MetricsSource current = ms.getSource(name);
        if (current == source) {
          return;
        }
        if (current != null) {
          ms.unregisterSource(name);
        }
        ms.register(name, null, source);
      } catch (MetricsException | IllegalStateException e) {
        LOG.warn("hdfs-rdma: metrics source {} not registered: {}", name,
            e.toString());
      }
    }
  }

  /** Removes {@code source} if it is the one registered as {@code name}. */
  static void unregister(String name, MetricsSource source) {
    synchronized (Sources.class) {
      try {
        MetricsSystem ms = DefaultMetricsSystem.instance();
        if (ms.getSource(name) == source) {
          ms.unregisterSource(name);
        }
      } catch (MetricsException e) {
        LOG.warn("hdfs-rdma: metrics source {} not unregistered: {}", name,
            e.toString());
      }
    }
  }

  /** Raises a counter to {@code total}; the data path's counts only grow. */
  static void advance(MutableCounterLong counter, long total) {
    long delta = total - counter.value();
    if (delta > 0) {
      counter.incr(delta);
    }
  }
}
