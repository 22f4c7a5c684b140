package org.hdfsrdma.hadoop.util;

import java.util.Collections;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Log lines a JVM needs once: why a writer stays on TCP, which shape a
 * pipeline head got. A busy client would otherwise repeat the same reason
 * for every stream it opens. Keys are what makes two reasons different;
 * the set only grows with the distinct reasons seen (a handful per JVM).
 */
public final class LogOnce {

  private static final Logger LOG = LoggerFactory.getLogger(LogOnce.class);

  private static final Set<String> LOGGED =
      Collections.newSetFromMap(new ConcurrentHashMap<String, Boolean>());

  private LogOnce() {
  }

  /** Logs {@code message} at INFO the first time {@code key} is seen. */
  public static void info(String key, String message) {
    if (LOGGED.add(key)) {
      LOG.info(message);
    }
  }

  /** Logs {@code message} at WARN the first time {@code key} is seen. */
  public static void warn(String key, String message) {
    if (LOGGED.add(key)) {
      LOG.warn(message);
    }
  }

  /** Lets {@code key}'s message be logged again (tests). */
  public static void forget(String key) {
    LOGGED.remove(key);
  }
}
