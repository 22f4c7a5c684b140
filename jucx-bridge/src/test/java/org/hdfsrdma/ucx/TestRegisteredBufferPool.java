package org.hdfsrdma.ucx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/** The registered buffer pool over real UCX registrations. */
public class TestRegisteredBufferPool {

  private static final int BUFFER = 64 * 1024;
  private static final long SLAB = 4 * BUFFER;
  private static final long CAP = 2 * SLAB;

  private UcxContext context;

  @Before
  public void setUp() throws Exception {
    UcxTestUtils.assumeUcx();
    context = new UcxContext(UcxContext.Options.defaults());
  }

  @After
  public void tearDown() {
    if (context != null) {
      assertEquals("every registration released", 0,
          context.openDependents());
      context.close();
    }
  }

  @Test(timeout = 60_000)
  public void testSlabsAreRegisteredOnDemandUpToTheCap() throws Exception {
    try (RegisteredBufferPool pool = new RegisteredBufferPool(context, "t",
        BUFFER, SLAB, CAP, true)) {
      assertEquals(0, pool.metrics().registeredBytes());
      List<RegisteredBuffer> held = new ArrayList<RegisteredBuffer>();
      for (int i = 0; i < 8; i++) {
        RegisteredBuffer b = pool.acquire(1000);
        assertEquals(BUFFER, b.capacity());
        assertTrue(b.buffer().isDirect());
        b.buffer().putLong(0, i); // the memory is writable
        held.add(b);
      }
      PoolMetrics m = pool.metrics();
      assertEquals(CAP, m.registeredBytes());
      assertEquals(2, m.registrations());
      assertEquals(CAP, m.inUseBytes());
      assertEquals(8, m.outstandingLeases());
      assertNotEquals(held.get(0).regionId(), held.get(7).regionId());
      for (RegisteredBuffer b : held) {
        b.release();
      }
      assertEquals(0, pool.metrics().inUseBytes());
      assertEquals(CAP, pool.metrics().peakInUseBytes());
      // Reuse registers nothing new.
      pool.acquire(1000).release();
      assertEquals(2, pool.metrics().registrations());
      pool.assertNoLeaks();
    }
  }

  @Test(timeout = 60_000)
  public void testExhaustionTimesOutWithAClearError() throws Exception {
    try (RegisteredBufferPool pool = new RegisteredBufferPool(context,
        "small", BUFFER, SLAB, SLAB, true)) {
      List<RegisteredBuffer> held = new ArrayList<RegisteredBuffer>();
      for (int i = 0; i < 4; i++) {
        held.add(pool.acquire(1000));
      }
      long start = System.nanoTime();
      try {
        pool.acquire(300);
        fail("acquired past the cap");
      } catch (PoolExhaustedException e) {
        assertTrue(e.getMessage(), e.getMessage().contains("exhausted")
            && e.getMessage().contains("small"));
      }
      assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(290));
      assertEquals(1, pool.metrics().timeouts());
      for (RegisteredBuffer b : held) {
        b.release();
      }
    }
  }

  @Test(timeout = 60_000)
  public void testWaiterGetsAReleasedBuffer() throws Exception {
    try (RegisteredBufferPool pool = new RegisteredBufferPool(context, "w",
        BUFFER, SLAB, SLAB, true)) {
      List<RegisteredBuffer> held = new ArrayList<RegisteredBuffer>();
      for (int i = 0; i < 4; i++) {
        held.add(pool.acquire(1000));
      }
      ExecutorService executor = Executors.newSingleThreadExecutor();
      try {
        Future<RegisteredBuffer> waiter = executor.submit(
            () -> pool.acquire(30_000));
        UcxTestUtils.waitFor(() -> pool.metrics().waits() == 1, 10, 10_000);
        held.get(2).release();
        RegisteredBuffer got = waiter.get(10, TimeUnit.SECONDS);
        assertEquals(held.get(2).address(), got.address());
        got.release();
      } finally {
        executor.shutdownNow();
      }
      for (RegisteredBuffer b : held) {
        b.release();
      }
      pool.assertNoLeaks();
    }
  }

  @Test(timeout = 60_000)
  public void testReleaseIsIdempotentAndStaleLeasesCannotFreeOthers()
      throws Exception {
    try (RegisteredBufferPool pool = new RegisteredBufferPool(context, "i",
        BUFFER, SLAB, SLAB, true)) {
      RegisteredBuffer first = pool.acquire(1000);
      long address = first.address();
      first.release();
      first.release();
      first.close();
      assertEquals(0, pool.metrics().inUseBytes());
      // The slot goes to the next acquirer; the stale lease cannot free it.
      RegisteredBuffer second = pool.acquire(1000);
      assertEquals(address, second.address());
      first.release();
      assertEquals(BUFFER, pool.metrics().inUseBytes());
      try {
        first.buffer();
        fail("used a released buffer");
      } catch (IllegalStateException expected) {
        // A released lease gives no access.
      }
      second.release();
    }
  }

  @Test(timeout = 60_000)
  public void testLeakCheckNamesTheAcquirer() throws Exception {
    RegisteredBufferPool pool = new RegisteredBufferPool(context, "leaky",
        BUFFER, SLAB, SLAB, true);
    RegisteredBuffer leaked = pool.acquire(1000);
    try {
      pool.assertNoLeaks();
      fail("leak not reported");
    } catch (IllegalStateException e) {
      assertTrue(e.getMessage(), e.getMessage().contains(
          "testLeakCheckNamesTheAcquirer"));
    }
    // Closing with a lease keeps its slab mapped until the lease goes.
    pool.close();
    pool.close();
    assertEquals(SLAB, pool.metrics().registeredBytes());
    leaked.buffer().putInt(0, 42);
    leaked.release();
    assertEquals(0, pool.metrics().registeredBytes());
    try {
      pool.acquire(10);
      fail("acquired from a closed pool");
    } catch (IllegalStateException expected) {
      // Closed pools hand out nothing.
    }
  }

  /**
   * Eight threads hammer a pool of four buffers: the cap holds, waiters are
   * served as buffers come back, and no buffer is ever held twice.
   */
  @Test(timeout = 120_000)
  public void testCapHoldsUnderConcurrency() throws Exception {
    try (RegisteredBufferPool pool = new RegisteredBufferPool(context, "c",
        BUFFER, SLAB, SLAB, false)) {
      int threads = 8;
      ExecutorService executor = Executors.newFixedThreadPool(threads);
      CountDownLatch start = new CountDownLatch(1);
      AtomicLong maxInUse = new AtomicLong();
      AtomicLong corrupt = new AtomicLong();
      List<Future<Integer>> results = new ArrayList<Future<Integer>>();
      try {
        for (int t = 0; t < threads; t++) {
          final long id = t;
          results.add(executor.submit(() -> {
            start.await();
            int done = 0;
            for (int i = 0; i < 1000; i++) {
              try (RegisteredBuffer b = pool.acquire(30_000)) {
                maxInUse.accumulateAndGet(pool.metrics().inUseBytes(),
                    Math::max);
                b.buffer().putLong(0, id);
                Thread.yield();
                if (b.buffer().getLong(0) != id) {
                  corrupt.incrementAndGet();
                }
              }
              done++;
            }
            return done;
          }));
        }
        start.countDown();
        for (Future<Integer> f : results) {
          assertEquals(Integer.valueOf(1000), f.get(100, TimeUnit.SECONDS));
        }
      } finally {
        executor.shutdownNow();
      }
      PoolMetrics m = pool.metrics();
      assertTrue("in use " + maxInUse.get(), maxInUse.get() <= SLAB);
      assertEquals(SLAB, m.registeredBytes());
      assertTrue(m.peakInUseBytes() <= SLAB);
      assertEquals("two holders never shared a buffer", 0, corrupt.get());
      assertEquals(0, m.inUseBytes());
      assertEquals(8 * 1000, m.acquisitions());
      pool.assertNoLeaks();
    }
  }
}
