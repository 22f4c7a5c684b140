package org.hdfsrdma.ucx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.junit.After;
import org.junit.Before;
import org.junit.Test;
import org.openucx.jucx.UcxUtils;

/**
 * Memory that a queued send points into outlives the object that owned it
 * until the send ends. Real UCX: a worker sends over shared memory to a
 * second worker of this JVM that nobody progresses after the connect, so
 * its sends stay queued until the endpoint is closed, which ends them with
 * UCS_ERR_CANCELED, written into their status slots.
 *
 * <p>Without the worker keeping it, the collector frees the slots of a
 * queued send, and the send's end writes into freed memory: a first
 * version of this class that also dropped the slots of a queued send
 * without registering them died of a HotSpot internal error in its next
 * full GC, once the endpoint closed (exit code 134, the exit code CI saw
 * from a writer JVM whose DataNode was killed mid-block). With
 * {@link UcxWorker#keepWhileInFlight} disabled, the first test here fails.
 */
public class TestInFlightMemory {

  private static final long WAIT_MS = 30_000;

  private UcxContext context;
  private UcxWorker sender;
  private UcxWorker stalled;
  private UcxEndpoint endpoint;

  @Before
  public void connect() throws Exception {
    UcxTestUtils.assumeUcx();
    context = new UcxContext(UcxTestUtils.options(UcxTestUtils.TLS_SHM));
    sender = new UcxWorker(context, "sender").start();
    stalled = new UcxWorker(context, "stalled");
    CompletableFuture<UcxEndpoint> connected = UcxEndpoint.connect(sender,
        stalled.address(), "stalled", WAIT_MS);
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
    while (!connected.isDone() && System.nanoTime() < deadline) {
      stalled.progress();
      Thread.sleep(1);
    }
    endpoint = connected.get(1, TimeUnit.SECONDS);
  }

  @After
  public void close() {
    if (endpoint != null) {
      endpoint.close();
    }
    if (stalled != null) {
      stalled.close();
    }
    if (sender != null) {
      sender.close();
    }
    if (context != null) {
      context.close();
    }
  }

  /** Sends from {@code message} until UCX queues a send on slot 0. */
  private void queueSend(ByteBuffer message, StatusSlots slots)
      throws Exception {
    for (int i = 0; i < 100_000; i++) {
      if (endpoint.send(UcxUtils.getAddress(message), 64,
          slots.address(0)) != 0) {
        return;
      }
    }
    throw new AssertionError("no send was queued");
  }

  private static void collectUntil(BooleanSupplier condition, String what)
      throws InterruptedException {
    UcxTestUtils.waitFor(() -> {
      System.gc();
      return condition.getAsBoolean();
    }, WAIT_MS, what);
  }

  /** What a DataStreamer's send memory does: register, send, be dropped. */
  private static final class Owner {
    final ByteBuffer message = ByteBuffer.allocateDirect(256);
    final StatusSlots slots = new StatusSlots(1);
  }

  @Test(timeout = 120_000)
  public void testMemoryOfADroppedOwnerStaysUntilItsSendEnds()
      throws Exception {
    Owner owner = new Owner();
    sender.keepWhileInFlight(owner, owner.message, owner.slots);
    queueSend(owner.message, owner.slots);
    WeakReference<Owner> ownerGone = new WeakReference<Owner>(owner);
    WeakReference<ByteBuffer> messageGone =
        new WeakReference<ByteBuffer>(owner.message);
    WeakReference<StatusSlots> slotsGone =
        new WeakReference<StatusSlots>(owner.slots);
    owner = null;

    collectUntil(() -> ownerGone.get() == null
        && sender.orphanedOperationMemory() == 1,
        "the owner to go and its memory to be kept");
    for (int i = 0; i < 5; i++) {
      System.gc();
      Thread.sleep(20);
    }
    StatusSlots slots = slotsGone.get();
    assertNotNull("the slots of a queued send were collected", slots);
    assertNotNull("the bytes of a queued send were collected",
        messageGone.get());
    assertTrue(slots.inProgress(0));
    slots = null;

    // Closing the endpoint ends the send; then the memory may go.
    endpoint.close();
    collectUntil(() -> sender.orphanedOperationMemory() == 0
        && slotsGone.get() == null && messageGone.get() == null,
        "the memory to go once its send ended");
    assertEquals(0, sender.inFlightMemory().registered());
  }

  /** Owners that go with nothing in progress leave nothing behind. */
  @Test(timeout = 120_000)
  public void testIdleOwnersLeaveNothingBehind() throws Exception {
    for (int i = 0; i < 1000; i++) {
      Owner idle = new Owner();
      sender.keepWhileInFlight(idle, idle.message, idle.slots);
    }
    collectUntil(() -> sender.inFlightMemory().registered() == 0,
        "idle owners to be forgotten");
    assertEquals(0, sender.orphanedOperationMemory());
  }
}
