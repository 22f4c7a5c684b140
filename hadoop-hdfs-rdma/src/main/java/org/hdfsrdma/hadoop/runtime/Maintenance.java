package org.hdfsrdma.hadoop.runtime;

import java.io.Closeable;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import org.hdfsrdma.hadoop.util.RateLimitedLog;
import org.hdfsrdma.ucx.DaemonThreads;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The runtime's housekeeping thread: periodic sweeps (idle connections,
 * idle regions) and delayed releases (landing buffers a fed DataNode may
 * still read). A task that throws is counted and logged, rate-limited, and
 * does not stop the others.
 */
public final class Maintenance implements Closeable {

  private static final Logger LOG = LoggerFactory.getLogger(Maintenance.class);

  private final ScheduledExecutorService executor;
  private final RateLimitedLog failures = RateLimitedLog.of(LOG);
  private final Runnable onFailure;

  /** @param onFailure counts a task that threw */
  Maintenance(Runnable onFailure) {
    this.onFailure = onFailure;
    this.executor = Executors.newSingleThreadScheduledExecutor(
        r -> DaemonThreads.newThread(r, "hdfs-rdma-maintenance"));
  }

  /** Runs {@code task} every {@code periodMs}, from one period on. */
  public void every(long periodMs, Runnable task) {
    executor.scheduleWithFixedDelay(guarded(task), periodMs, periodMs,
        TimeUnit.MILLISECONDS);
  }

  /**
   * Runs {@code task} once, after {@code delayMs}; not at all once the
   * runtime is closing (whatever the task would free closes with it).
   */
  public void later(long delayMs, Runnable task) {
    try {
      executor.schedule(guarded(task), delayMs, TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException closing) {
      LOG.debug("hdfs-rdma: runtime closing, task dropped");
    }
  }

  private Runnable guarded(Runnable task) {
    return () -> {
      try {
        task.run();
      } catch (Throwable t) {
        onFailure.run();
        failures.warn("hdfs-rdma maintenance task failed: " + t);
      }
    };
  }

  /** Stops the thread; pending tasks are dropped. Idempotent. */
  @Override
  public void close() {
    executor.shutdownNow();
  }
}
