package org.hdfsrdma.hadoop;

import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.hadoop.metrics2.AbstractMetric;
import org.apache.hadoop.metrics2.MetricsRecord;
import org.apache.hadoop.metrics2.impl.MetricsCollectorImpl;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.hdfsrdma.hadoop.metrics.ClientOutcomes;
import org.hdfsrdma.hadoop.metrics.UcxDataNodeMetrics;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;

/**
 * What the DataNodes that served on this JVM's current UCX runtime
 * counted, read from their metrics sources ({@link UcxDataNodeMetrics}):
 * totals over all of them, and per DataNode by its display name
 * (host:port, which is the transfer address in a MiniDFSCluster). Zero
 * when no runtime runs; a new runtime starts from zero. And what this
 * JVM's clients counted, as its metrics source publishes it.
 */
public final class UcxCounters {

  private UcxCounters() {
  }

  private static List<UcxDataNodeMetrics> all() {
    UcxRuntime r = UcxRuntime.current();
    return r == null ? Collections.<UcxDataNodeMetrics>emptyList()
        : r.metrics().dataNodes();
  }

  private static long total(int counter) {
    long n = 0;
    for (UcxDataNodeMetrics m : all()) {
      n += m.get(counter);
    }
    return n;
  }

  public static long blocksOverUcx() {
    long n = 0;
    for (UcxDataNodeMetrics m : all()) {
      n += m.blocksOverUcx();
    }
    return n;
  }

  /** Of {@link #blocksOverUcx}, those whose descriptors came on the socket. */
  public static long blocksWithSocketDescriptors() {
    long n = 0;
    for (UcxDataNodeMetrics m : all()) {
      n += m.socketDescriptorBlocks();
    }
    return n;
  }

  public static long blocksOverTcp() {
    long n = 0;
    for (UcxDataNodeMetrics m : all()) {
      n += m.blocksOverTcp();
    }
    return n;
  }

  /** Data bytes every DataNode fetched over UCX. */
  public static long dataBytesFetched() {
    return total(UcxDataNodeMetrics.FETCHED_BYTES);
  }

  /** Of those, fetched from the DataNode feeding them. */
  public static long dataBytesFetchedFromDataNodes() {
    return total(
        UcxDataNodeMetrics.FETCHED_FROM_DATANODES);
  }

  /** Data bytes DataNodes offered the DataNodes they feed. */
  public static long dataBytesForwarded() {
    return total(UcxDataNodeMetrics.FORWARDED_BYTES);
  }

  /** Of those, read directly from a same-host client's shared memory. */
  public static long dataBytesReadDirectly() {
    return total(UcxDataNodeMetrics.READ_DIRECTLY);
  }

  public static long packetsFetched() {
    return total(UcxDataNodeMetrics.PACKETS_FETCHED);
  }

  /** Counter {@code counter} of each DataNode, by host:port. */
  public static Map<String, Long> byDataNode(int counter) {
    Map<String, Long> values = new TreeMap<String, Long>();
    for (UcxDataNodeMetrics m : all()) {
      String name = m.sourceName()
          .substring(UcxDataNodeMetrics.SOURCE_PREFIX.length());
      int dash = name.lastIndexOf('-');
      String dataNode = name.substring(0, dash) + ":"
          + name.substring(dash + 1);
      Long before = values.get(dataNode);
      values.put(dataNode, (before == null ? 0 : before) + m.get(counter));
    }
    return values;
  }

  /** Data bytes each DataNode fetched over UCX, by host:port. */
  public static Map<String, Long> dataBytesFetchedByDataNode() {
    return byDataNode(UcxDataNodeMetrics.FETCHED_BYTES);
  }

  /**
   * A counter of this JVM's client source ({@link ClientOutcomes}), as a
   * metrics snapshot reads it.
   */
  public static long clientMetric(String name) {
    MetricsCollectorImpl collector = new MetricsCollectorImpl();
    DefaultMetricsSystem.instance().getSource(ClientOutcomes.SOURCE_NAME)
        .getMetrics(collector, true);
    for (MetricsRecord record : collector.getRecords()) {
      for (AbstractMetric metric : record.metrics()) {
        if (metric.name().equals(name)) {
          return metric.value().longValue();
        }
      }
    }
    throw new AssertionError("no metric " + name + " in "
        + ClientOutcomes.SOURCE_NAME);
  }
}
