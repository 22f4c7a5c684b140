package org.hdfsrdma.hadoop;

import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;

/**
 * {@code GenericTestUtils.waitFor} for the tests that also run on later
 * Hadoop lines ({@code dev-support/hadoop-tests.sh RELEASE project}): these
 * classes are compiled once, against 2.9.2, whose {@code waitFor} takes
 * Guava's {@code Supplier}; Hadoop 3 changed it to the JDK's, so a call
 * compiled against one line does not link on the other.
 */
public final class WaitFor {

  private WaitFor() {
  }

  /**
   * Polls {@code check} every {@code intervalMs} until it holds.
   *
   * @throws TimeoutException if it still does not after {@code timeoutMs}
   */
  public static void waitFor(BooleanSupplier check, long intervalMs,
      long timeoutMs) throws TimeoutException, InterruptedException {
    long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
    while (!check.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        throw new TimeoutException("Timed out waiting for condition ("
            + timeoutMs + " ms)");
      }
      Thread.sleep(intervalMs);
    }
  }
}
