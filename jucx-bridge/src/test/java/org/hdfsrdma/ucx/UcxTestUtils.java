package org.hdfsrdma.ucx;

import static org.junit.Assume.assumeTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/** Shared helpers of the bridge tests. */
final class UcxTestUtils {

  /** UCX_TLS sets the tests run with: sockets only, and shared memory. */
  static final String TLS_TCP = "tcp";
  static final String TLS_SHM = "posix,sysv,cma,tcp";

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

  static InetSocketAddress loopbackPort0() {
    return new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
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

  /** Writes a descriptor for the first {@code length} bytes of a buffer. */
  static PacketDescriptor describe(RegisteredBuffer packet, int length,
      long seqno, ByteBuffer into) {
    return new PacketDescriptor().wrap(into, 0, into.capacity()).encode(
        42L, 1073741825L, 1001L, seqno, seqno * packet.capacity(), (short) 0,
        packet.regionId(), packet.regionAddress(), packet.regionLength(),
        packet.address(), 0, length, packet.remoteKey());
  }

  /** A handler that queues what arrives, for tests to take. */
  static final class QueueingHandler implements DescriptorHandler {
    final BlockingQueue<Object[]> received = new LinkedBlockingQueue<Object[]>();
    final BlockingQueue<MalformedDescriptorException> rejected =
        new LinkedBlockingQueue<MalformedDescriptorException>();

    @Override
    public void onDescriptor(UcxConnection from, PacketDescriptor descriptor) {
      received.add(new Object[] {from, descriptor});
    }

    @Override
    public void onMalformed(UcxConnection from,
        MalformedDescriptorException error) {
      rejected.add(error);
    }

    Object[] take() throws InterruptedException {
      Object[] next = received.poll(TIMEOUT_MS, TimeUnit.MILLISECONDS);
      if (next == null) {
        throw new AssertionError("no descriptor arrived in " + TIMEOUT_MS
            + " ms");
      }
      return next;
    }

    MalformedDescriptorException takeRejected() throws InterruptedException {
      MalformedDescriptorException e =
          rejected.poll(TIMEOUT_MS, TimeUnit.MILLISECONDS);
      if (e == null) {
        throw new AssertionError("no rejection arrived in " + TIMEOUT_MS
            + " ms");
      }
      return e;
    }
  }

  /** The connection ran on tcp alone, as UCX_TLS=tcp asked. */
  static void assertOnlyTcp(TransportReport report) {
    org.junit.Assert.assertTrue("UCX described the endpoint: "
        + NativeIntrospection.unavailableReason(), report.isKnown());
    org.junit.Assert.assertEquals(report.raw(),
        java.util.Collections.singleton("tcp"), report.transports());
  }

  /** A shared-memory transport carried part of the connection. */
  static void assertSharedMemory(TransportReport report) {
    org.junit.Assert.assertTrue("UCX described the endpoint: "
        + NativeIntrospection.unavailableReason(), report.isKnown());
    org.junit.Assert.assertTrue(report.raw(), report.usesSharedMemory());
  }

  /** Polls {@code check} until true or the timeout; like Hadoop's waitFor. */
  static void waitFor(BooleanSupplier check, long intervalMs, long timeoutMs)
      throws InterruptedException {
    long deadline = System.currentTimeMillis() + timeoutMs;
    while (!check.getAsBoolean()) {
      if (System.currentTimeMillis() > deadline) {
        throw new AssertionError("condition not met within " + timeoutMs
            + " ms");
      }
      Thread.sleep(intervalMs);
    }
  }
}
