package org.hdfsrdma.ucx;

import static org.hdfsrdma.ucx.UcxTestUtils.TIMEOUT_MS;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.mockito.ArgumentMatchers.any;
import static org.mockito.Mockito.doAnswer;
import static org.mockito.Mockito.doThrow;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.timeout;
import static org.mockito.Mockito.times;
import static org.mockito.Mockito.verify;
import static org.mockito.Mockito.when;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.Before;
import org.junit.Test;
import org.openucx.jucx.UcxException;
import org.openucx.jucx.ucp.UcpWorker;

/**
 * Faults real UCX does not produce on demand: nothing that goes wrong on a
 * progress thread escapes it or stops it.
 */
public class TestProgressThreadFaults {

  @Before
  public void checkUcx() {
    UcxTestUtils.assumeUcx();
  }

  /** ucp_worker_wait and ucp_worker_progress failing (EINTR, EBADF...). */
  @Test(timeout = 60_000)
  public void testFailingWaitAndProgressDoNotStopTheThread()
      throws Exception {
    UcpWorker ucp = mock(UcpWorker.class);
    AtomicInteger waits = new AtomicInteger();
    doAnswer(invocation -> {
      if (waits.incrementAndGet() <= 3) {
        throw new UcxException("ucp_worker_wait failed: Interrupted");
      }
      Thread.sleep(5);
      return null;
    }).when(ucp).waitForEvents();
    when(ucp.progress()).thenThrow(new UcxException("progress failed"))
        .thenReturn(0);
    try (UcxContext context = new UcxContext(UcxContext.Options.defaults())) {
      UcxWorker worker = new UcxWorker(context, "faulty", ucp).start();
      try {
        UcxTestUtils.waitFor(() -> waits.get() > 3, 5, 10_000);
        assertEquals(Integer.valueOf(7), worker.call(() -> 7)
            .get(TIMEOUT_MS, TimeUnit.MILLISECONDS));
        // A task that throws fails its own future, not the thread.
        assertTrue(worker.call(() -> {
          throw new IllegalStateException("task bug");
        }).handle((v, e) -> e instanceof IllegalStateException)
            .get(TIMEOUT_MS, TimeUnit.MILLISECONDS));
        assertTrue(worker.progressThread().isAlive());
      } finally {
        worker.close();
      }
      verify(ucp).close();
    }
  }

  /** A descriptor handler with a bug: later descriptors still arrive. */
  @Test(timeout = 60_000)
  public void testThrowingDescriptorHandler() throws Exception {
    DescriptorHandler handler = mock(DescriptorHandler.class);
    doThrow(new RuntimeException("handler bug")).doNothing()
        .when(handler).onDescriptor(any(), any());
    try (UcxContext context = new UcxContext(
             UcxTestUtils.options(UcxTestUtils.TLS_TCP));
         UcxWorker worker = new UcxWorker(context, "both");
         RegisteredBufferPool pool = new RegisteredBufferPool(context, "p",
             4096, 4096, 4096, true)) {
      worker.setDescriptorHandler(handler);
      worker.start();
      UcxListener listener = UcxListener.open(worker,
          UcxTestUtils.loopbackPort0(), c -> { })
          .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
      UcxConnection connection = UcxConnection.connect(worker,
          listener.address()).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
      try (RegisteredBuffer packet = pool.acquire(TIMEOUT_MS)) {
        ByteBuffer message = ByteBuffer.allocateDirect(
            PacketDescriptor.MAX_LENGTH);
        PacketDescriptor d = UcxTestUtils.describe(packet, 100, 1, message);
        for (int i = 0; i < 2; i++) {
          connection.sendDescriptor(d, TIMEOUT_MS)
              .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        }
      }
      verify(handler, timeout(TIMEOUT_MS).times(2)).onDescriptor(any(), any());
      assertEquals(2, worker.descriptorsReceived());
      assertTrue(worker.isRunning());
    }
  }
}
