package org.hdfsrdma.hadoop.util;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import org.junit.Test;

/**
 * A reason is logged once, then at most once an interval, never lost.
 *
 * <p>After the first time, a reason is logged at most once per 10 minutes,
 * with the count held back since, and never silent for good. A JVM keeps
 * at most {@code LogOnce.MAX_KEYS} (1,024) reasons; forgotten ones log
 * again.
 */
public class TestLogOnce {

  private static final long MINUTE = 60_000_000_000L;

  @Test(timeout = 10_000)
  public void testRecurringReasonLoggedAgainWithItsCount() {
    String key = "test-recurring " + System.nanoTime();
    long t = 1_000 * MINUTE;
    assertEquals("stays on TCP", LogOnce.due(key, "stays on TCP", t,
        10 * MINUTE));
    for (int i = 1; i <= 5; i++) {
      assertNull(LogOnce.due(key, "stays on TCP", t + i * MINUTE,
          10 * MINUTE));
    }
    assertEquals("stays on TCP (again; held back 5 times since it was last"
        + " logged)", LogOnce.due(key, "stays on TCP", t + 10 * MINUTE,
        10 * MINUTE));
    assertNull(LogOnce.due(key, "x", t + 11 * MINUTE, 10 * MINUTE));
    // Hours later, after the count was reported: logged again all the same.
    assertEquals("stays on TCP (again; held back 1 time since it was last"
        + " logged)", LogOnce.due(key, "stays on TCP", t + 300 * MINUTE,
        10 * MINUTE));
    assertEquals("stays on TCP (again)", LogOnce.due(key, "stays on TCP",
        t + 600 * MINUTE, 10 * MINUTE));
    LogOnce.forget(key);
    assertEquals("m", LogOnce.due(key, "m", t + 601 * MINUTE, 10 * MINUTE));
  }

  @Test(timeout = 10_000)
  public void testKeysAreBoundedAndForgottenOnesLogAgain() {
    String prefix = "test-bounded " + System.nanoTime() + " ";
    for (int i = 0; i < 3 * LogOnce.MAX_KEYS; i++) {
      assertEquals("m" + i, LogOnce.due(prefix + i, "m" + i, 0, MINUTE));
      assertTrue(LogOnce.keys() <= LogOnce.MAX_KEYS);
    }
    // The first keys were forgotten: seen again, they log again.
    assertEquals("m0", LogOnce.due(prefix + 0, "m0", 1, MINUTE));
  }
}
