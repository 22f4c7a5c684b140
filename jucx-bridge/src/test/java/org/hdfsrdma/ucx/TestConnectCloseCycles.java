package org.hdfsrdma.ucx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;

import org.junit.Before;
import org.junit.Test;
import org.openucx.jucx.UcxUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A thousand sessions opened, used and closed, as the write path makes
 * them: connect by worker address, hello (the DataNode connects back),
 * announce a region, read a packet of it (directly on shared memory, with
 * a get over tcp), close both endpoints. Threads, file descriptors, SysV
 * mappings and the context's open workers and registrations stay where
 * they were, and every close() may be called again.
 *
 * <p>Both sides run in this JVM, so what either leaks shows here. (A
 * client that never says hello leaves UCX's receiving endpoint of its
 * connection on the DataNode, with the socket or the mappings of the
 * client's shared memory it holds, until the client process dies: UCX
 * 1.13 tears that endpoint down only on a peer failure, and the write path
 * always connects back.)
 */
public class TestConnectCloseCycles {

  private static final Logger LOG =
      LoggerFactory.getLogger(TestConnectCloseCycles.class);
  private static final int CYCLES = 300;
  /** Cycles before the baseline: UCX sets some things up lazily. */
  private static final int WARM_UP = 10;
  private static final int SIZE = 4096;
  private static final long WAIT_MS = 30_000;
  /**
   * How long the SysV mapping count must stay put to count as settled:
   * longer than an idle progress thread's sleep.
   */
  private static final long SETTLE_MS = 500;

  @Before
  public void checkUcx() {
    UcxTestUtils.assumeUcx();
  }

  /**
   * The product's transports: a client worker and a DataNode worker, the
   * packet read directly from the client's segment.
   */
  @Test(timeout = 600_000)
  public void testThousandSessionsOverSharedMemory() throws Exception {
    sessions(UcxTestUtils.TLS_SHM);
  }

  /** Over tcp, with gets over the endpoint back. */
  @Test(timeout = 600_000)
  public void testThousandSessionsOverTcp() throws Exception {
    sessions(UcxTestUtils.TLS_TCP);
  }

  /**
   * A client worker and a DataNode worker, {@link #CYCLES} sessions
   * between them, then everything closed twice.
   */
  private void sessions(String tls) throws Exception {
    try (UcxContext clientContext = new UcxContext(UcxTestUtils.options(
            tls))) {
      UcxWorker client = new UcxWorker(clientContext, "client").start();
      RegisteredBufferPool exposed = new RegisteredBufferPool(clientContext,
          "exposed", SIZE, SIZE, SIZE, true);
      TestGetter getter = new TestGetter(tls, new RemoteRegion.Policy(
          exposed::ownsSegment, true));
      cycles(tls, getter, client, exposed);
      assertEquals("the client's worker and slab", 2,
          clientContext.openDependents());
      closeTwice(getter, client, exposed);
      assertEquals(0, clientContext.openDependents());
      assertEquals(0, getter.context.openDependents());
    }
  }

  private void cycles(String tls, TestGetter getter, UcxWorker client,
      RegisteredBufferPool exposed) throws Exception {
    RegisteredBufferPool landing = new RegisteredBufferPool(getter.context,
        "landing", SIZE, SIZE, SIZE, true);
    long packet = exposed.acquire(1000);
    UcxTestUtils.fill(exposed.buffer(packet), SIZE, 3);
    ByteBuffer messages = ByteBuffer.allocateDirect(4096);
    long messagesAddress = UcxUtils.getAddress(messages);
    StatusSlots slots = new StatusSlots(3);
    StatusSlots getSlot = new StatusSlots(1);
    byte[] getterAddress = getter.worker.address();
    int hello = HelloMessage.encodedLength(client.address().length);
    new HelloMessage().wrap(messages, 0, hello).encode(client.address());
    int announcement = new RegionAnnouncement().wrap(messages, 1024,
        1024).encode(7L, 1, exposed.regionAddress(0),
            exposed.regionLength(0), exposed.regionKey(0)).length();
    new PacketDescriptor().wrap(messages, 2048).encode(7L, 1, 1, 3, 0, 0, 1,
        exposed.address(packet), 0, SIZE);

    int threadsBefore = 0;
    int tasksBefore = 0;
    int fdsBefore = 0;
    int attachmentsBefore = 0;
    int dependentsBefore = 0;
    long start = System.nanoTime();
    UcxWorker.Driver driver = getter.worker.registerDriver();
    try {
      for (int i = 0; i < CYCLES; i++) {
        long t0 = System.nanoTime();
        if (i == WARM_UP) {
          // First: it waits for the last session's endpoints to go.
          attachmentsBefore = settledSysvAttachments();
          threadsBefore = threadCount();
          tasksBefore = osThreads();
          fdsBefore = UcxTestUtils.openFileDescriptors();
          dependentsBefore = getter.context.openDependents();
        }
        UcxEndpoint e = UcxEndpoint.connect(client, getterAddress, "getter",
            WAIT_MS).get(WAIT_MS, TimeUnit.MILLISECONDS);
        UcxTestUtils.sendAsWritePath(e, messagesAddress, hello, slots, 0,
            WAIT_MS);
        UcxTestUtils.sendAsWritePath(e, messagesAddress + 1024, announcement,
            slots, 1, WAIT_MS);
        UcxTestUtils.sendAsWritePath(e, messagesAddress + 2048,
            PacketDescriptor.LENGTH, slots, 2, WAIT_MS);
        long t1 = System.nanoTime();
        PacketDescriptor d = getter.next(driver, WAIT_MS);
        long t2 = System.nanoTime();
        assertTrue(getter.worker.drive(driver, () -> getter.back != null,
            TimeUnit.MILLISECONDS.toNanos(WAIT_MS)));
        long t3 = System.nanoTime();
        byte[] bytes = getter.fetch(driver, d, landing, getSlot, WAIT_MS);
        assertEquals("cycle " + i, -1, UcxTestUtils.firstMismatch(
            ByteBuffer.wrap(bytes), SIZE, 3));
        long t4 = System.nanoTime();
        e.close();
        e.close();
        assertFalse(e.isUsable());
        getter.closeBacks();
        getter.regions.remove(1).release();
        assertTrue(getter.rejections.toString(), getter.rejections.isEmpty());
        long t5 = System.nanoTime();
        if (t5 - t0 > 500_000_000L) {
          LOG.info("{}: slow cycle {}: connect+send {} ms, next {} ms, back {}"
              + " ms, fetch {} ms, close {} ms", tls, i, (t1 - t0) / 1000000,
              (t2 - t1) / 1000000, (t3 - t2) / 1000000, (t4 - t3) / 1000000,
              (t5 - t4) / 1000000);
        }
      }
    } finally {
      getter.worker.unregisterDriver(driver);
    }
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    final int threadLimit = threadsBefore;
    UcxTestUtils.waitFor(() -> threadCount() <= threadLimit, 10_000,
        "threads back to " + threadLimit + " (now " + threadCount() + ")");
    int attachmentsAfter = settledSysvAttachments();
    int fdsAfter = UcxTestUtils.openFileDescriptors();
    int tasksAfter = osThreads();
    LOG.info("{}: {} sessions in {} ms ({} us each); Java threads {} -> {},"
        + " OS threads {} -> {}, file descriptors {} -> {}, SysV mappings {}"
        + " -> {}", tls, CYCLES, ms, ms * 1000 / CYCLES, threadsBefore,
        threadCount(), tasksBefore,
        tasksAfter, fdsBefore, fdsAfter, attachmentsBefore,
        attachmentsAfter);
    // The JIT's compiler threads come and go; UCX threads would pile up.
    assertTrue("OS threads: " + tasksBefore + " -> " + tasksAfter,
        tasksAfter <= tasksBefore + 4);
    // A few descriptors of UCX's own (the async thread's wake-up pipe and
    // the like) may come and go; a leak per session would be ~300.
    assertTrue("file descriptors leaked: " + fdsBefore + " -> " + fdsAfter,
        fdsAfter <= fdsBefore + 4);
    assertTrue("SysV mappings leaked: " + attachmentsBefore + " -> "
        + attachmentsAfter, attachmentsAfter <= attachmentsBefore);
    assertEquals("workers and registrations", dependentsBefore,
        getter.context.openDependents());
    assertEquals(1, exposed.metrics().registrations());
    assertTrue("gets land in one slab", landing.metrics().registrations() <= 1);
    exposed.release(packet);
    exposed.assertNoLeaks();
    landing.assertNoLeaks();
    landing.close();
    landing.close();
  }

  /**
   * Closes everything twice, then checks that work handed to the closed
   * worker fails at once instead of hanging.
   */
  private static void closeTwice(TestGetter getter, UcxWorker client,
      RegisteredBufferPool exposed) throws Exception {
    byte[] getterAddress = getter.worker.address();
    EndpointCache cache = new EndpointCache(client, WAIT_MS, null);
    UcxEndpoint last = cache.get(getterAddress, "getter")
        .get(WAIT_MS, TimeUnit.MILLISECONDS);
    for (int i = 0; i < 2; i++) {
      cache.close();
      last.close();
      exposed.close();
      client.close();
      getter.close();
    }
    assertFalse(client.isRunning());
    assertEquals(0, client.progress());
    client.signal();
    UcxWorker.Driver d = client.registerDriver();
    long start = System.nanoTime();
    assertFalse(client.drive(d, () -> false, TimeUnit.SECONDS.toNanos(30)));
    assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5));
    client.unregisterDriver(d);
    client.unregisterDriver(d);
    try {
      client.execute(() -> { });
      fail("a task was taken by a closed worker");
    } catch (IllegalStateException expected) {
      // Closed workers take no work.
    }
    try {
      last.send(0x1000, 1, new StatusSlots(1).address(0));
      fail("sent on a closed endpoint");
    } catch (IOException expected) {
      assertTrue(expected.getMessage(), expected.getMessage().contains(
          "the connection is closed"));
    }
    assertTrue(cache.get(getterAddress, "getter").isCompletedExceptionally());
  }

  private static int osThreads() {
    String[] tasks = new java.io.File("/proc/self/task").list();
    return tasks == null ? -1 : tasks.length;
  }

  private static int threadCount() {
    return ManagementFactory.getThreadMXBean().getThreadCount();
  }

  /**
   * {@link #sysvAttachments()} once the endpoints closed last are gone. UCX
   * 1.13 destroys a closed endpoint's transport endpoints, and with them its
   * mappings of the peer's segments, on a later progress of the worker
   * (ucp_worker_discard_uct_ep), so a count taken right after a close may
   * still include the last session's (up to 4 here, both sides in this
   * JVM). Waits until the count stays put for {@link #SETTLE_MS}, at most
   * {@link #WAIT_MS}.
   */
  private static int settledSysvAttachments()
      throws IOException, InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
    long settle = TimeUnit.MILLISECONDS.toNanos(SETTLE_MS);
    int count = sysvAttachments();
    long since = System.nanoTime();
    while (System.nanoTime() - since < settle
        && System.nanoTime() < deadline) {
      Thread.sleep(10);
      int now = sysvAttachments();
      if (now != count) {
        count = now;
        since = System.nanoTime();
      }
    }
    return count;
  }

  /** This process's SysV shared-memory mappings. */
  private static int sysvAttachments() throws IOException {
    int n = 0;
    for (String line : Files.readAllLines(Paths.get("/proc/self/maps"))) {
      if (line.contains("/SYSV")) {
        n++;
      }
    }
    return n;
  }
}
