package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assume.assumeTrue;

import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.test.GenericTestUtils;
import org.hdfsrdma.hadoop.sender.SendMemory;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.StatusSlots;
import org.hdfsrdma.ucx.UcxContext;
import org.hdfsrdma.ucx.UcxEndpoint;
import org.hdfsrdma.ucx.UcxLibrary;
import org.hdfsrdma.ucx.UcxWorker;
import org.junit.Test;

/**
 * A DataStreamer that retires its send memory (a send to a dead DataNode
 * never ended) or ends with it, drops it: the memory stays until UCX ended
 * that send, which then writes its status into it. Real UCX: the
 * descriptor goes over shared memory to a second worker of this JVM that
 * nobody progresses after the connect, so it stays queued until the
 * endpoint closes.
 */
public class TestSendMemory {

  @Test(timeout = 120_000)
  public void testDroppedMemoryStaysUntilItsQueuedSendEnds()
      throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    UcxContext context = new UcxContext(UcxContext.Options.defaults()
        .withUcxConfig("TLS", "^tcp"));
    UcxWorker sender = null;
    UcxWorker stalled = null;
    UcxEndpoint endpoint = null;
    try {
      sender = new UcxWorker(context, "writer").start();
      stalled = new UcxWorker(context, "stalled-datanode");
      CompletableFuture<UcxEndpoint> connected = UcxEndpoint.connect(sender,
          stalled.address(), "stalled-datanode", 30_000);
      while (!connected.isDone()) {
        stalled.progress();
        Thread.sleep(1);
      }
      endpoint = connected.get();

      SendMemory memory = new SendMemory(sender, 4, 1);
      int entry = -1;
      for (int i = 0; i < 100_000 && entry < 0; i++) {
        int e = memory.entry(i % memory.ringSize(), 0);
        StatusSlots slots = memory.ringStatus();
        if (!slots.inProgress(e) && endpoint.send(memory.ringAddress(e),
            PacketDescriptor.LENGTH, slots.address(e)) != 0) {
          entry = e;
        }
      }
      assertEquals("a queued send", true, entry >= 0 && memory.inUse());
      WeakReference<SendMemory> memoryGone =
          new WeakReference<SendMemory>(memory);
      WeakReference<ByteBuffer> ringGone =
          new WeakReference<ByteBuffer>(memory.ring());
      WeakReference<StatusSlots> slotsGone =
          new WeakReference<StatusSlots>(memory.ringStatus());
      memory = null;

      final UcxWorker w = sender;
      GenericTestUtils.waitFor(() -> {
        System.gc();
        return memoryGone.get() == null && w.orphanedOperationMemory() == 1;
      }, 20, 30_000);
      System.gc();
      assertNotNull("the descriptors of a queued send were freed",
          ringGone.get());
      assertNotNull("the status slot of a queued send was freed",
          slotsGone.get());

      endpoint.close();
      GenericTestUtils.waitFor(() -> {
        System.gc();
        return w.orphanedOperationMemory() == 0 && ringGone.get() == null
            && slotsGone.get() == null;
      }, 20, 30_000);
    } finally {
      if (endpoint != null) {
        endpoint.close();
      }
      if (stalled != null) {
        stalled.close();
      }
      if (sender != null) {
        sender.close();
      }
      context.close();
    }
  }
}
