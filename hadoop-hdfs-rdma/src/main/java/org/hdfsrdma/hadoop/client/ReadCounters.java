package org.hdfsrdma.hadoop.client;

import java.io.Closeable;
import java.util.concurrent.atomic.LongAdder;

import org.hdfsrdma.hadoop.runtime.UcxRuntime;

/**
 * What this JVM's block readers took over UCX (DESIGN.md section 9): the
 * bytes of stock packets read straight from a same-host DataNode's shared
 * memory or fetched with gets, the reads the DataNodes answered, and the
 * offers that came back unanswered (served stock). Attached to the runtime
 * ({@link #of}); readers add without a lock.
 */
public final class ReadCounters implements Closeable {

  private final LongAdder bytesRead = new LongAdder();
  private final LongAdder bytesReadDirectly = new LongAdder();
  private final LongAdder readsAnswered = new LongAdder();
  private final LongAdder readsStock = new LongAdder();
  private final LongAdder readsFellBack = new LongAdder();

  /** The counters of {@code runtime}'s readers, attached on first call. */
  public static ReadCounters of(UcxRuntime runtime) {
    return runtime.extension(ReadCounters.class, r -> new ReadCounters());
  }

  /** A buffer of {@code bytes} taken, directly or with a get. */
  void read(long bytes, boolean directly) {
    bytesRead.add(bytes);
    if (directly) {
      bytesReadDirectly.add(bytes);
    }
  }

  /** A DataNode answered an offer: the read goes over UCX. */
  void answered() {
    readsAnswered.increment();
  }

  /** A DataNode left an offer unanswered: the read is served stock. */
  void stock() {
    readsStock.increment();
  }

  /** UCX failed an answered read: the rest came as stock packets. */
  void fellBack() {
    readsFellBack.increment();
  }

  public long readsFellBack() {
    return readsFellBack.sum();
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

  public long readsStock() {
    return readsStock.sum();
  }

  /** Nothing to release: counters only. */
  @Override
  public void close() {
  }
}
