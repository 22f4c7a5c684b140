package org.hdfsrdma.ucx;

import static org.hdfsrdma.ucx.UcxTestUtils.TIMEOUT_MS;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import org.junit.Before;
import org.junit.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A thousand connections opened, used and closed: no thread, file
 * descriptor or registered memory is left behind on either side, and every
 * close is idempotent.
 */
public class TestConnectCloseCycles {

  private static final Logger LOG =
      LoggerFactory.getLogger(TestConnectCloseCycles.class);
  private static final int CYCLES = 1000;

  @Before
  public void checkUcx() {
    UcxTestUtils.assumeUcx();
  }

  private static int openFileDescriptors() {
    String[] fds = new File("/proc/self/fd").list();
    return fds == null ? -1 : fds.length;
  }

  @Test(timeout = 300_000)
  public void testThousandConnectCloseCycles() throws Exception {
    UcxTestUtils.QueueingHandler handler = new UcxTestUtils.QueueingHandler();
    try (UcxContext context = new UcxContext(
        UcxTestUtils.options(UcxTestUtils.TLS_TCP))) {
      // One worker plays both sides, as one worker per JVM does in the
      // product: with two workers in a process, UCX 1.13 can trip an
      // assertion when a closed socket's descriptor number is reused by the
      // other worker while an event for it is still queued (async.c:643).
      try (UcxWorker server = new UcxWorker(context, "both-sides");
           RegisteredBufferPool exposed = new RegisteredBufferPool(context,
               "exposed", 4096, 4096, 4096, true);
           RegisteredBufferPool landing = new RegisteredBufferPool(context,
               "landing", 4096, 4096, 4096, true)) {
        server.setDescriptorHandler(handler);
        server.start();
        UcxWorker client = server;
        UcxListener listener = UcxListener.open(server,
            UcxTestUtils.loopbackPort0(), c -> { })
            .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        RegisteredBuffer packet = exposed.acquire(TIMEOUT_MS);
        RegisteredBuffer target = landing.acquire(TIMEOUT_MS);
        ByteBuffer message = ByteBuffer.allocateDirect(
            PacketDescriptor.MAX_LENGTH);
        UcxTestUtils.fill(packet.buffer(), 4096, 3);
        PacketDescriptor d = UcxTestUtils.describe(packet, 4096, 3, message);

        int threadsBefore = 0;
        int fdsBefore = 0;
        long start = System.nanoTime();
        for (int i = 0; i < CYCLES; i++) {
          if (i == 10) {
            // Measure after UCX's lazy one-time set-up (async thread etc.).
            threadsBefore = Thread.activeCount();
            fdsBefore = openFileDescriptors();
          }
          UcxConnection c = UcxConnection.connect(client, listener.address())
              .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
          c.sendDescriptor(d, TIMEOUT_MS).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
          Object[] got = handler.take();
          UcxConnection accepted = (UcxConnection) got[0];
          accepted.get((PacketDescriptor) got[1], target, TIMEOUT_MS)
              .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
          c.close();
          c.close();
          accepted.close();
          accepted.close();
        }
        long ms = (System.nanoTime() - start) / 1_000_000;
        final int threadLimit = threadsBefore + 1;
        UcxTestUtils.waitFor(() -> Thread.activeCount() <= threadLimit, 50,
            10_000);
        int fdsAfter = openFileDescriptors();
        LOG.info("{} connect/get/close cycles in {} ms ({} us each); threads"
            + " {} -> {}, file descriptors {} -> {}", CYCLES, ms,
            ms * 1000 / CYCLES, threadsBefore, Thread.activeCount(), fdsBefore,
            fdsAfter);
        assertTrue("file descriptors leaked: " + fdsBefore + " -> " + fdsAfter,
            fdsAfter <= fdsBefore + 8);
        assertEquals(1, exposed.metrics().registrations());
        assertEquals(1, landing.metrics().registrations());
        assertEquals(CYCLES, listener.acceptedCount());
        packet.release();
        target.release();
        exposed.assertNoLeaks();
        landing.assertNoLeaks();
        listener.close();
        listener.close();
      }
      assertEquals("workers and registrations all released", 0,
          context.openDependents());
    }
  }

  /** Workers, pools and contexts close in any state, any number of times. */
  @Test(timeout = 60_000)
  public void testCloseIsIdempotentEverywhere() throws Exception {
    UcxContext context = new UcxContext(UcxContext.Options.defaults());
    UcxWorker neverStarted = new UcxWorker(context, "never-started");
    UcxWorker started = new UcxWorker(context, "started").start();
    RegisteredBufferPool pool = new RegisteredBufferPool(context, "p", 4096,
        4096, 4096, true);
    pool.acquire(1000).release();
    EndpointCache cache = new EndpointCache(started);
    UcxListener listener = UcxListener.open(started,
        UcxTestUtils.loopbackPort0(), c -> { }).get(TIMEOUT_MS,
            TimeUnit.MILLISECONDS);
    UcxConnection connection = cache.get(listener.address())
        .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
    for (int i = 0; i < 2; i++) {
      cache.close();
      connection.close();
      listener.close();
      pool.close();
      started.close();
      neverStarted.close();
    }
    assertEquals(0, context.openDependents());
    context.close();
    context.close();
    // Work handed to a closed worker fails instead of hanging.
    assertTrue(started.call(() -> 1).isCompletedExceptionally());
    PacketDescriptor d = new PacketDescriptor().wrap(ByteBuffer.allocate(
        256), 0, 256).encode(1, 2, 3, 4, 0, (short) 0, 0, 0x10000, 4096,
            0x10000, 0, 100, new byte[] {1});
    assertTrue(connection.get(d, 0x20000, 4096, 10)
        .isCompletedExceptionally());
  }
}
