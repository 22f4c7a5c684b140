package org.hdfsrdma.ucx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;
import static org.mockito.Mockito.doThrow;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.times;
import static org.mockito.Mockito.verify;
import static org.mockito.Mockito.when;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.Before;
import org.junit.Test;
import org.openucx.jucx.UcxException;
import org.openucx.jucx.UcxUtils;
import org.openucx.jucx.ucp.UcpMemory;

/**
 * Every resource of the bridge closes once, however often and from however
 * many threads close() is called (JUCX's own close fails the second time,
 * and a second release would unbalance the context's count of open workers
 * and registrations); a construction that fails leaves nothing behind.
 */
public class TestClosingResources {

  private static final long WAIT_MS = 30_000;
  private static final int SIZE = 4096;

  @Before
  public void checkUcx() {
    UcxTestUtils.assumeUcx();
  }

  /**
   * Closes {@code resource} from two threads at once, then again from this
   * one; fails with whatever a close threw.
   */
  private static void closeFromTwoThreadsThenAgain(AutoCloseable resource)
      throws Exception {
    CountDownLatch start = new CountDownLatch(1);
    List<Throwable> thrown = new ArrayList<Throwable>();
    List<Thread> closers = new ArrayList<Thread>();
    for (int i = 0; i < 2; i++) {
      Thread t = new Thread(() -> {
        try {
          start.await();
          resource.close();
        } catch (Throwable e) {
          synchronized (thrown) {
            thrown.add(e);
          }
        }
      }, "closer-" + i);
      t.start();
      closers.add(t);
    }
    start.countDown();
    for (Thread t : closers) {
      t.join(WAIT_MS);
      assertFalse(t.getName() + " still closing " + resource, t.isAlive());
    }
    if (!thrown.isEmpty()) {
      throw new AssertionError("closing " + resource + " threw",
          thrown.get(0));
    }
    resource.close();
  }

  @Test(timeout = 120_000)
  public void testEveryResourceClosesOnceFromTwoThreads() throws Exception {
    UcxContext context = new UcxContext(UcxTestUtils.options(
        UcxTestUtils.TLS_SHM));
    UcxWorker exposer = new UcxWorker(context, "exposer").start();
    UcxWorker getter = new UcxWorker(context, "getter").start();
    UcxEndpoint endpoint = UcxEndpoint.connect(exposer, getter.address(),
        "getter", WAIT_MS).get(WAIT_MS, TimeUnit.MILLISECONDS);
    EndpointCache cache = new EndpointCache(exposer, WAIT_MS, null);
    UcxEndpoint cached = cache.get(getter.address(), "getter")
        .get(WAIT_MS, TimeUnit.MILLISECONDS);
    // The cache counts what its connections sent, closed ones included.
    ByteBuffer message = ByteBuffer.allocateDirect(64);
    UcxTestUtils.sendAsWritePath(cached, UcxUtils.getAddress(message), 16,
        new StatusSlots(1), 0, WAIT_MS);
    assertEquals(1, cache.messagesSent());
    RegisteredBufferPool pool = new RegisteredBufferPool(context, "pool",
        SIZE, SIZE, SIZE, true);
    pool.release(pool.acquire(1000));
    RegisteredSlab slab = RegisteredSlab.allocate(context, 0, SIZE, "slab");
    assertEquals("two workers and two slabs", 4, context.openDependents());

    closeFromTwoThreadsThenAgain(cache);
    assertFalse(cached.isUsable());
    assertEquals(0, cache.size());
    assertEquals("counted once after its connection closed", 1,
        cache.messagesSent());
    closeFromTwoThreadsThenAgain(endpoint);
    assertFalse(endpoint.isUsable());
    assertTrue(endpoint.closedFuture().isDone());
    closeFromTwoThreadsThenAgain(pool);
    closeFromTwoThreadsThenAgain(slab);
    assertEquals("two workers", 2, context.openDependents());
    closeFromTwoThreadsThenAgain(exposer);
    closeFromTwoThreadsThenAgain(getter);
    assertFalse(exposer.isRunning());
    assertFalse(getter.isRunning());
    assertEquals(0, context.openDependents());
    closeFromTwoThreadsThenAgain(context);
    assertEquals(0, context.openDependents());
  }

  /** A worker the closed context cannot make: nothing opened, nothing left. */
  @Test(timeout = 60_000)
  public void testAWorkerThatCannotBeMadeLeavesNothing() throws Exception {
    UcxContext context = new UcxContext(UcxTestUtils.options(
        UcxTestUtils.TLS_TCP));
    new UcxWorker(context, "warm-up").close();
    context.close();
    int fds = UcxTestUtils.openFileDescriptors();
    int threads = Thread.activeCount();
    try {
      new UcxWorker(context, "too late");
      fail("a closed context made a worker");
    } catch (UcxUnavailableException expected) {
      assertTrue(expected.getMessage(), expected.getMessage()
          .contains("too late"));
    }
    RegisteredBufferPool pool = new RegisteredBufferPool(context, "too late",
        SIZE, SIZE, SIZE, false);
    try {
      pool.tryAcquire();
      fail("a closed context registered a slab");
    } catch (IllegalStateException expected) {
      assertEquals(0, pool.metrics().registrations());
    }
    pool.close();
    assertEquals(0, context.openDependents());
    assertEquals(fds, UcxTestUtils.openFileDescriptors());
    assertEquals(threads, Thread.activeCount());
  }

  /** Memory UCX mapped but whose key it cannot pack (mocked). */
  private static UcpMemory memoryWithoutKey() {
    UcpMemory memory = mock(UcpMemory.class);
    when(memory.getRemoteKeyBuffer()).thenThrow(
        new UcxException("no remote key"));
    return memory;
  }

  /** Fails unless making a slab over {@code memory} throws UCX's failure. */
  private static void assertNoSlabOver(UcxContext context, UcpMemory memory) {
    try {
      new RegisteredSlab(context, 0, memory, "pool");
      fail("a slab without a key was made");
    } catch (UcxException expected) {
      assertEquals("no remote key", expected.getMessage());
    }
  }

  /**
   * A slab UCX mapped but cannot describe (a fault real UCX does not
   * produce: mocked) is deregistered and no longer counted.
   */
  @Test(timeout = 60_000)
  public void testASlabThatCannotBeDescribedIsDeregistered()
      throws Exception {
    try (UcxContext context = new UcxContext(UcxTestUtils.options(
        UcxTestUtils.TLS_TCP))) {
      UcpMemory memory = memoryWithoutKey();
      assertNoSlabOver(context, memory);
      verify(memory, times(1)).deregister();
      assertEquals(0, context.openDependents());
    }
  }

  /**
   * A slab UCX refuses to deregister stays counted, so that the context is
   * not cleaned up under it (UCX aborts the process then); mocked.
   */
  @Test(timeout = 60_000)
  public void testASlabUcxWillNotDeregisterStaysCounted() throws Exception {
    UcxContext context = new UcxContext(UcxTestUtils.options(
        UcxTestUtils.TLS_TCP));
    UcpMemory memory = memoryWithoutKey();
    doThrow(new UcxException("busy")).when(memory).deregister();
    assertNoSlabOver(context, memory);
    assertEquals(1, context.openDependents());
    context.close();
  }
}
