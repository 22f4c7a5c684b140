package org.hdfsrdma.hadoop.client;

import java.nio.ByteBuffer;

/**
 * Faults a test injects into UCX reads that real UCX does not produce on
 * demand, as Hadoop's {@code DFSClientFaultInjector} does for its client:
 * the product calls a no-op instance, a test installs its own.
 */
public class ReadFaultInjector {

  private static volatile ReadFaultInjector instance =
      new ReadFaultInjector();

  /** The injector in force. */
  public static ReadFaultInjector get() {
    return instance;
  }

  /** Installs {@code injector} (a test's; null restores the no-op one). */
  public static void set(ReadFaultInjector injector) {
    instance = injector == null ? new ReadFaultInjector() : injector;
  }

  /**
   * A get of a UCX read brought {@code length} bytes into {@code landed}
   * (from its position 0), before they are verified.
   */
  public void landed(ByteBuffer landed, int length) {
  }
}
