package org.hdfsrdma.ucx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * The registered buffer pool over real UCX allocations: leases are long
 * tokens (buffer index and generation) over a lock-free free list.
 */
public class TestRegisteredBufferPool {

  private static final int BUFFER = 64 * 1024;
  private static final long SLAB = 4 * BUFFER;
  private static final long CAP = 2 * SLAB;

  private UcxContext context;
  private ExecutorService executor;

  @Before
  public void setUp() throws Exception {
    UcxTestUtils.assumeUcx();
    context = new UcxContext(UcxTestUtils.options(UcxTestUtils.TLS_SHM));
    executor = Executors.newCachedThreadPool();
  }

  @After
  public void tearDown() {
    if (executor != null) {
      executor.shutdownNow();
    }
    if (context != null) {
      assertEquals("every slab deregistered", 0, context.openDependents());
      context.close();
    }
  }

  @Test(timeout = 60_000)
  public void testSlabsAreAllocatedOnDemandUpToTheCap() throws Exception {
    try (RegisteredBufferPool pool = new RegisteredBufferPool(context, "t",
        BUFFER, SLAB, CAP, true)) {
      assertEquals(0, pool.metrics().registeredBytes());
      assertEquals(0, pool.regionCount());
      assertEquals(0, context.openDependents());
      long[] held = new long[8];
      Set<Long> addresses = new HashSet<Long>();
      for (int i = 0; i < 8; i++) {
        held[i] = pool.acquire(1000);
        assertFalse(pool.isReleased(held[i]));
        ByteBuffer b = pool.buffer(held[i]);
        assertEquals(BUFFER, b.capacity());
        assertTrue(b.isDirect());
        b.putLong(0, i);
        b.putLong(BUFFER - 8, i);
        assertTrue(addresses.add(pool.address(held[i])));
        // The second slab is added only when the first is used up.
        assertEquals(i < 4 ? 1 : 2, pool.regionCount());
        assertEquals(i < 4 ? SLAB : CAP, pool.metrics().registeredBytes());
        int region = pool.regionId(held[i]);
        long offset = pool.address(held[i]) - pool.regionAddress(region);
        assertTrue(offset >= 0 && offset + BUFFER <= pool.regionLength(region));
        assertEquals(0, offset % BUFFER);
      }
      assertEquals(2, context.openDependents());
      assertEquals(RegisteredBufferPool.NO_LEASE, pool.tryAcquire());
      for (int i = 0; i < 8; i++) {
        assertEquals("buffers do not overlap", i, pool.buffer(held[i])
            .getLong(0));
        assertEquals(i, pool.buffer(held[i]).getLong(BUFFER - 8));
      }
      PoolMetrics m = pool.metrics();
      assertEquals(CAP, m.registeredBytes());
      assertEquals(2, m.registrations());
      assertEquals(CAP, m.inUseBytes());
      assertEquals(8, m.outstandingLeases());
      assertEquals(8, m.acquisitions());
      assertNotEquals(pool.regionId(held[0]), pool.regionId(held[7]));
      for (long t : held) {
        pool.release(t);
      }
      assertEquals(0, pool.metrics().inUseBytes());
      assertEquals(CAP, pool.metrics().peakInUseBytes());
      // Reuse registers nothing new.
      long again = pool.acquire(1000);
      assertTrue(addresses.contains(pool.address(again)));
      pool.release(again);
      assertEquals(2, pool.metrics().registrations());
      pool.assertNoLeaks();
    }
  }

  @Test(timeout = 10_000)
  public void testSizesMustNest() {
    long[][] bad = {{0, SLAB, CAP}, {BUFFER, BUFFER / 2, CAP},
        {BUFFER, SLAB + 1, CAP}, {BUFFER, SLAB, SLAB / 2},
        {BUFFER, SLAB, SLAB + BUFFER}};
    for (long[] b : bad) {
      try {
        new RegisteredBufferPool(context, "bad", (int) b[0], b[1], b[2],
            false);
        fail("accepted buffer " + b[0] + ", slab " + b[1] + ", cap " + b[2]);
      } catch (IllegalArgumentException expected) {
        // Buffers tile slabs, slabs tile the cap.
      }
    }
  }

  @Test(timeout = 60_000)
  public void testExhaustionTimesOutWithAClearError() throws Exception {
    try (RegisteredBufferPool pool = new RegisteredBufferPool(context,
        "small", BUFFER, SLAB, SLAB, true)) {
      long[] held = new long[4];
      for (int i = 0; i < 4; i++) {
        held[i] = pool.acquire(1000);
      }
      assertEquals(RegisteredBufferPool.NO_LEASE, pool.tryAcquire());
      long start = System.nanoTime();
      try {
        pool.acquire(300);
        fail("acquired past the cap");
      } catch (PoolExhaustedException e) {
        assertEquals("registered buffer pool small exhausted: " + SLAB
            + " of " + SLAB + " bytes in use, none released within 300 ms",
            e.getMessage());
      }
      long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertTrue("waited " + waited + " ms", waited >= 290);
      PoolMetrics m = pool.metrics();
      assertEquals(1, m.timeouts());
      assertEquals(1, m.waits());
      assertEquals(1, m.registrations());
      for (long t : held) {
        pool.release(t);
      }
      pool.assertNoLeaks();
    }
  }

  @Test(timeout = 60_000)
  public void testWaitersAreServedOnRelease() throws Exception {
    try (RegisteredBufferPool pool = new RegisteredBufferPool(context, "w",
        BUFFER, SLAB, SLAB, true)) {
      long[] held = new long[4];
      for (int i = 0; i < 4; i++) {
        held[i] = pool.acquire(1000);
      }
      Future<Long> first = executor.submit(() -> pool.acquire(30_000));
      Future<Long> second = executor.submit(() -> pool.acquire(30_000));
      UcxTestUtils.waitFor(() -> pool.metrics().waits() == 2, 10_000,
          "two waiting acquirers");
      long address2 = pool.address(held[2]);
      pool.release(held[2]);
      pool.release(held[0]);
      long a = first.get(10, TimeUnit.SECONDS);
      long b = second.get(10, TimeUnit.SECONDS);
      Set<Long> served = new HashSet<Long>();
      served.add(pool.address(a));
      served.add(pool.address(b));
      assertTrue(served.contains(address2));
      assertEquals(2, served.size());
      assertEquals(0, pool.metrics().timeouts());
      pool.release(a);
      pool.release(b);
      pool.release(held[1]);
      pool.release(held[3]);
      pool.assertNoLeaks();
    }
  }

  @Test(timeout = 60_000)
  public void testAnInterruptedWaiterGivesUp() throws Exception {
    try (RegisteredBufferPool pool = new RegisteredBufferPool(context, "i",
        BUFFER, SLAB, SLAB, true)) {
      long[] held = new long[4];
      for (int i = 0; i < 4; i++) {
        held[i] = pool.acquire(1000);
      }
      AtomicReference<Thread> waiter = new AtomicReference<Thread>();
      Future<Throwable> result = executor.submit(() -> {
        waiter.set(Thread.currentThread());
        try {
          pool.acquire(60_000);
          return null;
        } catch (Throwable t) {
          return t;
        }
      });
      UcxTestUtils.waitFor(() -> pool.metrics().waits() == 1, 10_000,
          "a waiting acquirer");
      waiter.get().interrupt();
      Throwable t = result.get(10, TimeUnit.SECONDS);
      assertTrue(String.valueOf(t), t instanceof InterruptedIOException);
      for (long h : held) {
        pool.release(h);
      }
      pool.assertNoLeaks();
    }
  }

  @Test(timeout = 60_000)
  public void testReleaseIsIdempotentAndStaleTokensAreInert()
      throws Exception {
    try (RegisteredBufferPool pool = new RegisteredBufferPool(context, "s",
        BUFFER, SLAB, SLAB, true)) {
      long first = pool.acquire(1000);
      long address = pool.address(first);
      pool.release(first);
      pool.release(first);
      assertTrue(pool.isReleased(first));
      assertEquals(0, pool.metrics().inUseBytes());
      // The buffer goes to the next acquirer under a new generation; the
      // stale token can neither free it nor reach its memory.
      long second = pool.acquire(1000);
      assertEquals(address, pool.address(second));
      assertNotEquals(first, second);
      pool.release(first);
      assertFalse(pool.isReleased(second));
      assertEquals(BUFFER, pool.metrics().inUseBytes());
      expectStale(pool, first);
      // Forged tokens are inert too.
      for (long forged : new long[] {RegisteredBufferPool.NO_LEASE,
          (long) Integer.MAX_VALUE, 1L << 40 | 3, second + (1L << 32),
          second ^ 1}) {
        pool.release(forged);
        assertTrue(pool.isReleased(forged));
      }
      assertFalse(pool.isReleased(second));
      assertEquals(1, pool.metrics().outstandingLeases());
      pool.release(second);
      expectStale(pool, second);
      pool.assertNoLeaks();
    }
  }

  private static void expectStale(RegisteredBufferPool pool, long token) {
    try {
      pool.buffer(token);
      fail("buffer() of a released token");
    } catch (IllegalStateException expected) {
      assertEquals("buffer used after release", expected.getMessage());
    }
    try {
      pool.address(token);
      fail("address() of a released token");
    } catch (IllegalStateException expected) {
      // No memory for stale tokens.
    }
    try {
      pool.regionId(token);
      fail("regionId() of a released token");
    } catch (IllegalStateException expected) {
      // No region either.
    }
  }

  @Test(timeout = 60_000)
  public void testLeakReportNamesWhereEachLeaseWasTaken() throws Exception {
    try (RegisteredBufferPool pool = new RegisteredBufferPool(context,
        "leaky", BUFFER, SLAB, SLAB, true);
         RegisteredBufferPool quiet = new RegisteredBufferPool(context,
             "quiet", BUFFER, SLAB, SLAB, false)) {
      long kept = pool.acquire(1000);
      long leaked = leakOneBuffer(pool);
      pool.release(kept);
      List<String> leaks = pool.outstandingLeases();
      assertEquals(leaks.toString(), 1, leaks.size());
      assertTrue(leaks.get(0), leaks.get(0).startsWith("region 0 offset "));
      assertTrue(leaks.get(0), leaks.get(0).contains(" acquired at "
          + TestRegisteredBufferPool.class.getName() + ".leakOneBuffer("));
      try {
        pool.assertNoLeaks();
        fail("leak not reported");
      } catch (IllegalStateException e) {
        assertTrue(e.getMessage(), e.getMessage().startsWith(
            "pool leaky leaked 1 buffer(s): [region 0 offset "));
        assertTrue(e.getMessage(), e.getMessage().contains("leakOneBuffer"));
      }
      pool.release(leaked);
      pool.assertNoLeaks();

      // Without sites the report still says which buffer.
      long t = quiet.acquire(1000);
      assertEquals("[region 0 offset 0]", quiet.outstandingLeases()
          .toString());
      quiet.release(t);
      quiet.assertNoLeaks();
    }
  }

  private static long leakOneBuffer(RegisteredBufferPool pool)
      throws Exception {
    return pool.acquire(1000);
  }

  @Test(timeout = 60_000)
  public void testCloseWithLeasesOutstanding() throws Exception {
    RegisteredBufferPool pool = new RegisteredBufferPool(context, "closing",
        BUFFER, SLAB, CAP, true);
    long[] first = new long[4];
    for (int i = 0; i < 4; i++) {
      first[i] = pool.acquire(1000);
    }
    long inSecond = pool.acquire(1000);
    pool.release(first[1]);
    for (int i : new int[] {0, 2, 3}) {
      pool.release(first[i]);
    }
    // Slab 0 is free, slab 1 holds one lease.
    Future<Throwable> waiter;
    try (RegisteredBufferPool other = new RegisteredBufferPool(context, "x",
        BUFFER, SLAB, SLAB, false)) {
      // A waiter on a closing pool is told so (another pool: this one has
      // free buffers).
      long[] all = new long[4];
      for (int i = 0; i < 4; i++) {
        all[i] = other.acquire(1000);
      }
      waiter = executor.submit(() -> {
        try {
          other.acquire(60_000);
          return null;
        } catch (Throwable t) {
          return t;
        }
      });
      UcxTestUtils.waitFor(() -> other.metrics().waits() == 1, 10_000,
          "a waiting acquirer");
      other.close();
      Throwable t = waiter.get(10, TimeUnit.SECONDS);
      assertTrue(String.valueOf(t), t instanceof IllegalStateException
          && t.getMessage().contains("closed"));
      for (long a : all) {
        other.release(a);
      }
    }

    assertEquals("the other pool's slab went with its last lease", 2,
        context.openDependents());
    pool.close();
    pool.close();
    // Only the slab with a lease stays: its memory is still the holder's.
    assertEquals(SLAB, pool.metrics().registeredBytes());
    assertEquals(1, context.openDependents());
    pool.buffer(inSecond).putLong(BUFFER - 8, 42L);
    assertEquals(42L, pool.buffer(inSecond).getLong(BUFFER - 8));
    try {
      pool.acquire(10);
      fail("acquired from a closed pool");
    } catch (IllegalStateException expected) {
      assertEquals("buffer pool closing is closed", expected.getMessage());
    }
    try {
      pool.tryAcquire();
      fail("tryAcquire on a closed pool");
    } catch (IllegalStateException expected) {
      // Closed pools hand out nothing.
    }
    pool.release(inSecond);
    pool.release(inSecond);
    assertEquals(0, pool.metrics().registeredBytes());
    assertEquals(0, context.openDependents());
    pool.assertNoLeaks();
  }

  @Test(timeout = 60_000)
  public void testOwnsOnlyItsOwnSegments() throws Exception {
    try (RegisteredBufferPool pool = new RegisteredBufferPool(context, "a",
        BUFFER, SLAB, CAP, false);
         RegisteredBufferPool other = new RegisteredBufferPool(context, "b",
             BUFFER, SLAB, SLAB, false)) {
      long[] t = new long[5];
      for (int i = 0; i < 5; i++) {
        t[i] = pool.acquire(1000);
      }
      long o = other.acquire(1000);
      int[] segments = new int[3];
      segments[0] = shmid(pool.regionKey(0));
      segments[1] = shmid(pool.regionKey(1));
      segments[2] = shmid(other.regionKey(0));
      assertNotEquals(segments[0], segments[1]);
      assertTrue(pool.ownsSegment(segments[0]));
      assertTrue(pool.ownsSegment(segments[1]));
      assertFalse(pool.ownsSegment(segments[2]));
      assertTrue(other.ownsSegment(segments[2]));
      assertFalse(other.ownsSegment(segments[0]));
      assertFalse(pool.ownsSegment(-1));
      for (long x : t) {
        pool.release(x);
      }
      other.release(o);
    }
  }

  private static int shmid(byte[] key) {
    List<PackedRemoteKey.SysvEntry> sysv = TestPackedRemoteKey.sysvOf(key);
    assertEquals(1, sysv.size());
    return sysv.get(0).shmid;
  }

  /**
   * Eight threads hammer a pool of four buffers. Each marks the buffer it
   * holds as its own (a per-buffer owner table and a stamp in the buffer's
   * memory) and checks both before releasing: two leases of one buffer at
   * once would show as a lost claim or an overwritten stamp.
   */
  @Test(timeout = 120_000)
  public void testEightThreadsNeverShareABuffer() throws Exception {
    final int threads = 8;
    final int rounds = 5_000;
    try (RegisteredBufferPool pool = new RegisteredBufferPool(context, "c",
        BUFFER, SLAB, SLAB, false)) {
      long base = firstAddress(pool);
      AtomicIntegerArray owner = new AtomicIntegerArray(4);
      AtomicLong duplicates = new AtomicLong();
      AtomicLong overwritten = new AtomicLong();
      AtomicLong maxInUse = new AtomicLong();
      CountDownLatch start = new CountDownLatch(1);
      List<Future<Integer>> results = new ArrayList<Future<Integer>>();
      for (int t = 0; t < threads; t++) {
        final int me = t + 1;
        results.add(executor.submit(() -> {
          start.await();
          for (int i = 0; i < rounds; i++) {
            long token = (i & 1) == 0 ? pool.acquire(30_000)
                : pool.tryAcquire();
            if (token == RegisteredBufferPool.NO_LEASE) {
              token = pool.acquire(30_000);
            }
            int index = (int) ((pool.address(token) - base) / BUFFER);
            if (!owner.compareAndSet(index, 0, me)) {
              duplicates.incrementAndGet();
            }
            maxInUse.accumulateAndGet(pool.metrics().outstandingLeases(),
                Math::max);
            ByteBuffer b = pool.buffer(token);
            long stamp = ((long) me << 32) | i;
            b.putLong(0, stamp);
            b.putLong(BUFFER / 2, stamp);
            if ((i & 7) == 0) {
              Thread.yield();
            }
            if (b.getLong(0) != stamp || b.getLong(BUFFER / 2) != stamp) {
              overwritten.incrementAndGet();
            }
            if (!owner.compareAndSet(index, me, 0)) {
              duplicates.incrementAndGet();
            }
            pool.release(token);
          }
          return rounds;
        }));
      }
      start.countDown();
      for (Future<Integer> f : results) {
        assertEquals(Integer.valueOf(rounds), f.get(100, TimeUnit.SECONDS));
      }
      PoolMetrics m = pool.metrics();
      assertEquals("two holders claimed one buffer", 0, duplicates.get());
      assertEquals("a stamp was overwritten by another holder", 0,
          overwritten.get());
      assertTrue("in use " + maxInUse.get(), maxInUse.get() <= 4);
      assertTrue(m.peakInUseBytes() <= SLAB);
      assertEquals(SLAB, m.registeredBytes());
      assertEquals(1, m.registrations());
      assertEquals(0, m.inUseBytes());
      assertEquals((long) threads * rounds + 1, m.acquisitions());
      assertEquals(0, m.timeouts());
      pool.assertNoLeaks();
    }
  }

  /** Registers the slab; returns the address of its first buffer. */
  private static long firstAddress(RegisteredBufferPool pool)
      throws Exception {
    long t = pool.acquire(1000);
    long address = pool.address(t);
    assertEquals(pool.regionAddress(0), address);
    pool.release(t);
    return address;
  }
}
