package org.hdfsrdma.ucx;

import static org.junit.Assume.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/** Shared helpers of the bridge tests. */
final class UcxTestUtils {

  /** UCX_TLS sets the tests run with: sockets only, and shared memory. */
  static final String TLS_TCP = "tcp";
  /** The product's default: every transport but tcp. */
  static final String TLS_SHM = "^tcp";

  static final long TIMEOUT_MS = 30_000;

  private UcxTestUtils() {
  }

  /** Skips the test, saying why, where the UCX libraries cannot load. */
  static void assumeUcx() {
    assumeTrue("UCX native libraries unavailable: "
        + UcxLibrary.unavailableReason(), UcxLibrary.isAvailable());
  }

  static UcxContext.Options options(String tls) {
    return UcxContext.Options.defaults().withUcxConfig("TLS", tls);
  }

  /** Fills {@code length} bytes at the buffer's start with a seeded pattern. */
  static void fill(ByteBuffer buffer, int length, long seed) {
    for (int i = 0; i < length; i++) {
      buffer.put(i, pattern(seed, i));
    }
  }

  /** Index of the first byte that differs from the pattern, or -1. */
  static int firstMismatch(ByteBuffer buffer, int length, long seed) {
    for (int i = 0; i < length; i++) {
      if (buffer.get(i) != pattern(seed, i)) {
        return i;
      }
    }
    return -1;
  }

  static byte pattern(long seed, int i) {
    long x = seed * 0x9E3779B97F4A7C15L + i;
    x ^= x >>> 29;
    return (byte) (x * 0xBF58476D1CE4E5B9L >>> 56);
  }

  /** Waits for a condition, failing after {@code ms}. */
  static void waitFor(BooleanSupplier condition, long ms, String what)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out after " + ms + " ms waiting for "
            + what);
      }
      Thread.sleep(5);
    }
  }

  /** {@link #waitFor} without the checked exception. */
  static void waitForUnchecked(BooleanSupplier condition, long ms,
      String what) {
    try {
      waitFor(condition, ms, what);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted waiting for " + what);
    }
  }

  /** Open file descriptors of this process. */
  static int openFileDescriptors() {
    String[] fds = new File("/proc/self/fd").list();
    return fds == null ? -1 : fds.length;
  }

  /** CPU time a thread used so far, in nanoseconds. */
  static long cpuNanos(Thread t) {
    return ManagementFactory.getThreadMXBean().getThreadCpuTime(t.getId());
  }

  static String hex(byte[] bytes) {
    StringBuilder sb = new StringBuilder(bytes.length * 2);
    for (byte b : bytes) {
      sb.append(Character.forDigit((b >> 4) & 0xF, 16))
          .append(Character.forDigit(b & 0xF, 16));
    }
    return sb.toString();
  }

  static byte[] unhex(String s) {
    byte[] bytes = new byte[s.length() / 2];
    for (int i = 0; i < bytes.length; i++) {
      bytes[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
    }
    return bytes;
  }

  /**
   * Sends as the write path does (UcxStreamerState.send): a send UCX had to
   * queue is awaited at once, progressing the worker from this thread, for
   * at most {@code deadlineMs}; past it the caller gets an IOException
   * instead of a hang.
   *
   * @throws IOException when the endpoint refused the send, the send failed
   *     or the deadline passed
   */
  static void sendAsWritePath(UcxEndpoint endpoint, long address, int length,
      StatusSlots slots, int slot, long deadlineMs) throws IOException {
    int rc = endpoint.send(address, length, slots.address(slot));
    if (rc == 0) {
      return;
    }
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(deadlineMs);
    while (slots.inProgress(slot)) {
      if (endpoint.worker().progress() == 0) {
        Thread.yield();
      }
      if (System.nanoTime() > deadline) {
        throw new IOException("a message to " + endpoint.peer()
            + " was not sent in " + deadlineMs + " ms");
      }
    }
    int status = slots.status(slot);
    if (status < 0) {
      throw new IOException("a message to " + endpoint.peer() + " failed: "
          + StatusSlots.describe(status));
    }
  }
}
