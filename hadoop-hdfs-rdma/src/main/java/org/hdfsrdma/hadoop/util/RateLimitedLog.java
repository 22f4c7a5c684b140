package org.hdfsrdma.hadoop.util;

import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;

/**
 * A warning that a peer can provoke at will, logged at most once per
 * interval with the number of occurrences it suppressed since: hostile
 * input must not fill the log. Thread-safe.
 */
public final class RateLimitedLog {

  private final Logger log;
  private final long intervalNanos;
  private long lastNanos;
  private long suppressed;
  private boolean logged;

  /** One line per peer-provokable condition per this interval, at most. */
  public static final long INTERVAL_MS = 10_000;

  /** One line per {@link #INTERVAL_MS} at most. */
  public static RateLimitedLog of(Logger log) {
    return new RateLimitedLog(log, INTERVAL_MS);
  }

  RateLimitedLog(Logger log, long intervalMs) {
    this.log = log;
    this.intervalNanos = TimeUnit.MILLISECONDS.toNanos(intervalMs);
  }

  /** Logs {@code message} at WARN unless one was logged lately. */
  public synchronized void warn(String message) {
    long now = System.nanoTime();
    if (logged && now - lastNanos < intervalNanos) {
      suppressed++;
      return;
    }
    log.warn(message + (suppressed == 0 ? "" : " (and " + suppressed
        + " more like it in the last "
        + TimeUnit.NANOSECONDS.toSeconds(intervalNanos) + " s)"));
    logged = true;
    lastNanos = now;
    suppressed = 0;
  }
}
