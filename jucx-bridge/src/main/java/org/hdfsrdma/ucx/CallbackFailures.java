package org.hdfsrdma.ucx;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.LongSupplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What happens to an exception that reaches one of a worker's callbacks,
 * its tasks or its progress thread: it is counted, and the thread goes on.
 * Nothing may throw there: UCX's callbacks run inside its progress call, on
 * whichever thread progresses (a DataNode's BlockReceiver, the worker's own
 * progress thread), and a progress thread that dies leaves the worker
 * without the progress gets over tcp need.
 *
 * <p>The first failure of each {@link Kind} is logged with its stack trace;
 * later ones at most one line per kind every {@value #REPORT_INTERVAL_S} s,
 * saying how many went unlogged meanwhile, so that a handler failing per
 * packet cannot fill the disk. The counts are what the write path publishes
 * as a metric ({@link UcxWorker#callbackFailures()}).
 *
 * <p>One per worker: the failures happen on its threads and the log names
 * it (the product runs one worker per JVM). Recording allocates nothing
 * and takes no lock unless it logs; it never throws, not even when logging
 * or the exception's own {@code toString} fails.
 */
final class CallbackFailures {

  private static final Logger LOG =
      LoggerFactory.getLogger(CallbackFailures.class);

  /** The longest a kind of failure goes without a line, while it recurs. */
  static final long REPORT_INTERVAL_S = 10;
  private static final long REPORT_INTERVAL_NANOS =
      TimeUnit.SECONDS.toNanos(REPORT_INTERVAL_S);

  /** Where a failure was caught. */
  enum Kind {
    MESSAGE_HANDLER("the message handler"),
    TASK("a task on the progress thread"),
    PROGRESS("a callback inside UCX's progress"),
    PROGRESS_LOOP("the progress loop"),
    PROGRESS_THREAD("the progress thread (it ends)"),
    ENDPOINT_ERROR_HANDLER("an endpoint's error handler"),
    CLOSE_LISTENER("an endpoint's close listener");

    private final String description;

    Kind(String description) {
      this.description = description;
    }

    @Override
    public String toString() {
      return description;
    }
  }

  private static final int KINDS = Kind.values().length;

  private final String worker;
  private final LongSupplier clock;
  private final AtomicLongArray counts = new AtomicLongArray(KINDS);
  /** Per kind: when its last line was logged. */
  private final AtomicLongArray lastLine = new AtomicLongArray(KINDS);
  /** Per kind: its count as of its last line. */
  private final AtomicLongArray countAtLastLine = new AtomicLongArray(KINDS);

  /** Failures of the worker named {@code worker}. */
  CallbackFailures(String worker) {
    this(worker, System::nanoTime);
  }

  /** With {@code clock} (nanoseconds) instead of System.nanoTime, for tests. */
  CallbackFailures(String worker, LongSupplier clock) {
    this.worker = worker;
    this.clock = clock;
  }

  /** Counts {@code failure}, caught at a site of {@code kind}; never throws. */
  void record(Kind kind, Throwable failure) {
    try {
      int k = kind.ordinal();
      long count = counts.incrementAndGet(k);
      long now = clock.getAsLong();
      if (count == 1) {
        lastLine.set(k, now);
        countAtLastLine.set(k, 1);
        LOG.error("UCX worker {}: {} threw; it is counted and the thread"
            + " goes on (later failures of this kind: one line at most every"
            + " {} s)", worker, kind, REPORT_INTERVAL_S, failure);
        return;
      }
      long last = lastLine.get(k);
      if (now - last < REPORT_INTERVAL_NANOS
          || !lastLine.compareAndSet(k, last, now)) {
        return;
      }
      long unlogged = count - countAtLastLine.getAndSet(k, count) - 1;
      LOG.warn("UCX worker {}: {} threw again: {} ({} more not logged since"
          + " the last line; {} in all)", worker, kind, failure, unlogged,
          count);
    } catch (Throwable loggingFailed) {
      // The count stands; there is nowhere safer to say more.
    }
  }

  /** Failures of one kind so far. */
  long count(Kind kind) {
    return counts.get(kind.ordinal());
  }

  /** Failures of every kind so far. */
  long total() {
    long sum = 0;
    for (int k = 0; k < KINDS; k++) {
      sum += counts.get(k);
    }
    return sum;
  }
}
