package org.hdfsrdma.hadoop.util;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Log lines a busy JVM would otherwise repeat for every stream it opens:
 * why a writer stays on TCP, which shape a pipeline head got. The first
 * time a key is seen its message is logged; after that, at most once per
 * {@link #REPEAT_INTERVAL_MS}, with how often it recurred since, so that a
 * reason that persists is never silent for good (a DataNode that fails a
 * second time, hours later, is logged again). Keys are what makes two
 * reasons different. The JVM keeps at most {@link #MAX_KEYS} of them;
 * beyond that it forgets them all, and each logs again when next seen.
 */
public final class LogOnce {

  private static final Logger LOG = LoggerFactory.getLogger(LogOnce.class);

  /** How often a recurring key's message is logged again, at most. */
  public static final long REPEAT_INTERVAL_MS = 10 * 60 * 1000;
  /** The keys a JVM remembers, at most. */
  public static final int MAX_KEYS = 1024;

  private static final ConcurrentMap<String, Seen> SEEN =
      new ConcurrentHashMap<String, Seen>();

  /** One key's last logging and the recurrences since. */
  private static final class Seen {
    private long loggedNanos;
    private long recurred;

    /** The recurrences to report when it is time to log again, or -1. */
    synchronized long due(long now, long intervalNanos) {
      if (now - loggedNanos < intervalNanos) {
        recurred++;
        return -1;
      }
      long n = recurred;
      recurred = 0;
      loggedNanos = now;
      return n;
    }
  }

  private LogOnce() {
  }

  /** Logs {@code message} at INFO the first time {@code key} is seen. */
  public static void info(String key, String message) {
    String line = due(key, message, System.nanoTime(),
        TimeUnit.MILLISECONDS.toNanos(REPEAT_INTERVAL_MS));
    if (line != null) {
      LOG.info(line);
    }
  }

  /** Logs {@code message} at WARN the first time {@code key} is seen. */
  public static void warn(String key, String message) {
    String line = due(key, message, System.nanoTime(),
        TimeUnit.MILLISECONDS.toNanos(REPEAT_INTERVAL_MS));
    if (line != null) {
      LOG.warn(line);
    }
  }

  /**
   * The line to log for {@code key} at {@code now}, or null while it is
   * held back.
   */
  static String due(String key, String message, long now,
      long intervalNanos) {
    Seen seen = SEEN.get(key);
    if (seen == null) {
      if (SEEN.size() >= MAX_KEYS) {
        SEEN.clear();
      }
      Seen fresh = new Seen();
      seen = SEEN.putIfAbsent(key, fresh);
      if (seen == null) {
        synchronized (fresh) {
          fresh.loggedNanos = now;
        }
        return message;
      }
    }
    long recurred = seen.due(now, intervalNanos);
    if (recurred < 0) {
      return null;
    }
    return message + (recurred == 0 ? " (again)" : " (again; held back "
        + recurred + (recurred == 1 ? " time" : " times")
        + " since it was last logged)");
  }

  /** Lets {@code key}'s message be logged again at once (tests). */
  public static void forget(String key) {
    SEEN.remove(key);
  }

  /** Lets every key's message be logged again at once (tests). */
  public static void forgetAll() {
    SEEN.clear();
  }

  /** The keys remembered now (tests). */
  static int keys() {
    return SEEN.size();
  }
}
