package org.hdfsrdma.hadoop.metrics;

import java.util.concurrent.atomic.LongAdder;

import org.apache.hadoop.metrics2.lib.MetricsRegistry;
import org.apache.hadoop.metrics2.lib.MutableCounterLong;

/**
 * What this JVM's block readers took over UCX (DESIGN.md section 9), part
 * of the JVM's source ({@link UcxJvmMetrics#reads}): the bytes of stock
 * packets read straight from a same-host DataNode's shared memory or
 * fetched with gets, the reads DataNodes answered, those that fell back to
 * stock packets (and the buffers among those causes that failed their
 * checksums after a get), the offers left unanswered (served stock), and
 * the reads that offered nothing because their DataNode was backed off. Readers
 * add without a lock; snapshots bring the metrics2 counters up to date.
 */
public final class ClientReads {

  private final LongAdder bytesRead = new LongAdder();
  private final LongAdder bytesReadDirectly = new LongAdder();
  private final LongAdder readsAnswered = new LongAdder();
  private final LongAdder readsFellBack = new LongAdder();
  private final LongAdder buffersFailedVerification = new LongAdder();
  private final LongAdder readsStock = new LongAdder();
  private final LongAdder readsWithheld = new LongAdder();

  private final MutableCounterLong bytesReadMetric;
  private final MutableCounterLong bytesReadDirectlyMetric;
  private final MutableCounterLong readsAnsweredMetric;
  private final MutableCounterLong readsFellBackMetric;
  private final MutableCounterLong buffersFailedVerificationMetric;
  private final MutableCounterLong readsStockMetric;
  private final MutableCounterLong readsWithheldMetric;

  ClientReads(MetricsRegistry registry) {
    bytesReadMetric = registry.newCounter("ReadBytesOverUcx", "Bytes of"
        + " stock packets (headers, checksums, data) this JVM's readers"
        + " took from DataNodes' memory over UCX", 0L);
    bytesReadDirectlyMetric = registry.newCounter("ReadBytesReadDirectly",
        "Of ReadBytesOverUcx, those read from a same-host DataNode's shared"
            + " memory rather than by UCX get", 0L);
    readsAnsweredMetric = registry.newCounter("ReadsOverUcx", "Block reads"
        + " a DataNode answered with UCX", 0L);
    readsFellBackMetric = registry.newCounter("ReadsFellBack", "Of those,"
        + " reads UCX could not carry, continued with stock packets", 0L);
    buffersFailedVerificationMetric = registry.newCounter(
        "ReadBuffersFailedVerification", "Buffers that gets brought with a"
            + " chunk failing its checksum: read again as stock packets,"
            + " each a fallback of ReadsFellBack", 0L);
    readsStockMetric = registry.newCounter("ReadOffersServedStock", "Block"
        + " reads that offered UCX and were served stock", 0L);
    readsWithheldMetric = registry.newCounter("ReadOffersWithheld", "Block"
        + " reads that would have offered UCX but stayed stock: their"
        + " DataNode's UCX reads fell back twice within"
        + " dfs.client.rdma.unreachable-retry-ms", 0L);
  }

  /** A buffer of {@code bytes} taken, directly or with a get. */
  public void read(long bytes, boolean directly) {
    bytesRead.add(bytes);
    if (directly) {
      bytesReadDirectly.add(bytes);
    }
  }

  /** A DataNode answered an offer: the read goes over UCX. */
  public void answered() {
    readsAnswered.increment();
  }

  /** UCX failed an answered read: the rest came as stock packets. */
  public void fellBack() {
    readsFellBack.increment();
  }

  /**
   * A buffer a get brought failed its checksums: the read falls back
   * ({@link #fellBack}) to have it again as stock packets.
   */
  public void failedVerification() {
    buffersFailedVerification.increment();
  }

  /** A DataNode left an offer unanswered: the read is served stock. */
  public void stock() {
    readsStock.increment();
  }

  /** A read offered nothing: its DataNode is backed off UCX reads. */
  public void withheld() {
    readsWithheld.increment();
  }

  /** Bytes of stock packets (headers, checksums, data) taken over UCX. */
  public long bytesRead() {
    return bytesRead.sum();
  }

  /** Of {@link #bytesRead}, those read from a same-host DataNode's memory. */
  public long bytesReadDirectly() {
    return bytesReadDirectly.sum();
  }

  public long readsAnswered() {
    return readsAnswered.sum();
  }

  public long readsFellBack() {
    return readsFellBack.sum();
  }

  public long buffersFailedVerification() {
    return buffersFailedVerification.sum();
  }

  public long readsStock() {
    return readsStock.sum();
  }

  public long readsWithheld() {
    return readsWithheld.sum();
  }

  /** Brings the metrics2 counters up to the totals; under the source's lock. */
  void update() {
    Sources.advance(bytesReadMetric, bytesRead());
    Sources.advance(bytesReadDirectlyMetric, bytesReadDirectly());
    Sources.advance(readsAnsweredMetric, readsAnswered());
    Sources.advance(readsFellBackMetric, readsFellBack());
    Sources.advance(buffersFailedVerificationMetric,
        buffersFailedVerification());
    Sources.advance(readsStockMetric, readsStock());
    Sources.advance(readsWithheldMetric, readsWithheld());
  }
}
