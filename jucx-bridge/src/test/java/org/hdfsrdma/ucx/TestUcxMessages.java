package org.hdfsrdma.ucx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.Before;
import org.junit.Test;

/**
 * Region announcements and packet descriptors between two workers of one
 * JVM: over the product's transports (everything but tcp) the getter opens
 * the region directly (same-host shared memory); over tcp, allowed here,
 * it reads with UCX gets. Every packet is read byte-exact.
 */
public class TestUcxMessages {

  private static final int[] SIZES = {1, 4096, 65536 + 516, 1 << 20};

  @Before
  public void ucx() {
    UcxTestUtils.assumeUcx();
  }

  /** A getter that may read the exposer's segments (one JVM). */
  private static TestGetter getter(String tls,
      AtomicReference<RegisteredBufferPool> exposed) throws Exception {
    return new TestGetter(tls, new RemoteRegion.Policy(
        id -> exposed.get() != null && exposed.get().ownsSegment(id), true));
  }

  @Test(timeout = 60_000)
  public void sharedMemoryPacketsAreReadThroughTheAnnouncedRegion()
      throws Exception {
    AtomicReference<RegisteredBufferPool> exposed =
        new AtomicReference<RegisteredBufferPool>();
    try (TestGetter getter = getter(UcxTestUtils.TLS_SHM, exposed);
         TestExposer exposer = new TestExposer(UcxTestUtils.TLS_SHM,
             getter.worker.address(), 1 << 20, 8)) {
      exposed.set(exposer.pool);
      long[] tokens = fill(exposer);
      exposer.announce(7L, 1, tokens[0]);
      UcxWorker.Driver driver = getter.worker.registerDriver();
      try {
        for (int i = 0; i < SIZES.length; i++) {
          exposer.describe(7L, 1, tokens[i], SIZES[i], i);
          PacketDescriptor d = getter.next(driver, 10_000);
          assertEquals(i, d.seqno());
          assertTrue("rejections: " + getter.rejections,
              getter.regions.containsKey(1)
              && getter.regions.get(1).isDirect());
          assertEquals(-1, UcxTestUtils.firstMismatch(
              ByteBuffer.wrap(getter.read(d)), SIZES[i], i));
        }
      } finally {
        getter.worker.unregisterDriver(driver);
      }
      assertTrue(getter.rejections.toString(), getter.rejections.isEmpty());
      release(exposer, tokens);
    }
  }

  @Test(timeout = 60_000)
  public void tcpPacketsAreReadWithGets() throws Exception {
    AtomicReference<RegisteredBufferPool> exposed =
        new AtomicReference<RegisteredBufferPool>();
    try (TestGetter getter = getter(UcxTestUtils.TLS_TCP, exposed);
         TestExposer exposer = new TestExposer(UcxTestUtils.TLS_TCP,
             getter.worker.address(), 1 << 20, 8);
         RegisteredBufferPool landing = new RegisteredBufferPool(
             getter.context, "landing", 1 << 20, 1 << 20, 1 << 20, false)) {
      exposed.set(exposer.pool);
      long[] tokens = fill(exposer);
      exposer.announce(7L, 1, tokens[0]);
      StatusSlots slots = new StatusSlots(1);
      UcxWorker.Driver driver = getter.worker.registerDriver();
      try {
        for (int i = 0; i < SIZES.length; i++) {
          exposer.describe(7L, 1, tokens[i], SIZES[i], i);
          PacketDescriptor d = getter.next(driver, 10_000);
          assertTrue("rejections: " + getter.rejections,
              getter.regions.containsKey(1)
              && !getter.regions.get(1).isDirect());
          long token = landing.acquire(1000);
          getter.get(d, landing, token, slots, 0);
          assertTrue(getter.worker.drive(driver, () -> !slots.inProgress(0),
              TimeUnit.SECONDS.toNanos(10)));
          assertEquals(0, slots.status(0));
          assertEquals(-1, UcxTestUtils.firstMismatch(landing.buffer(token),
              SIZES[i], i));
          landing.release(token);
        }
      } finally {
        getter.worker.unregisterDriver(driver);
      }
      release(exposer, tokens);
    }
  }

  @Test(timeout = 60_000)
  public void thisProcesssOwnSegmentsAreRefusedUnlessThePolicyOwnsThem()
      throws Exception {
    try (TestGetter getter = new TestGetter(UcxTestUtils.TLS_SHM);
         TestExposer exposer = new TestExposer(UcxTestUtils.TLS_SHM,
             getter.worker.address(), 4096, 8)) {
      long token = exposer.pool.acquire(1000);
      exposer.announce(7L, 1, token);
      UcxTestUtils.waitFor(() -> !getter.rejections.isEmpty(), 10_000,
          "a rejection");
      assertTrue(getter.rejections.peek(),
          getter.rejections.peek().contains("this process's own memory"));
      assertTrue(getter.regions.isEmpty());
      exposer.pool.release(token);
    }
  }

  private static long[] fill(TestExposer exposer) throws Exception {
    long[] tokens = new long[SIZES.length];
    for (int i = 0; i < SIZES.length; i++) {
      tokens[i] = exposer.pool.acquire(1000);
      UcxTestUtils.fill(exposer.pool.buffer(tokens[i]), SIZES[i], i);
    }
    return tokens;
  }

  private static void release(TestExposer exposer, long[] tokens) {
    for (long t : tokens) {
      exposer.pool.release(t);
    }
    exposer.pool.assertNoLeaks();
  }
}
