package org.hdfsrdma.ucx;

import static org.hdfsrdma.ucx.UcxTestUtils.TIMEOUT_MS;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.Before;
import org.junit.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A peer JVM dies (kill -9) or freezes (SIGSTOP): the survivor sees
 * IOExceptions naming the peer within a bounded time, never hangs, stays
 * healthy, and works with the restarted peer.
 */
public class TestPeerFailure {

  private static final Logger LOG = LoggerFactory.getLogger(TestPeerFailure.class);
  private static final int SIZE = 4 * 1024 * 1024;
  private static final int PACKETS = 4;
  /** How long a dead peer may take to show as failed operations. */
  private static final long DETECTION_MS = 15_000;

  @Before
  public void checkUcx() {
    UcxTestUtils.assumeUcx();
  }

  @Test(timeout = 240_000)
  public void testClientKilledWhileGetsInFlightOverTcp() throws Exception {
    killClientWhileGetting(UcxTestUtils.TLS_TCP);
  }

  @Test(timeout = 240_000)
  public void testClientKilledWhileGetsInFlightOverSharedMemory()
      throws Exception {
    killClientWhileGetting(UcxTestUtils.TLS_SHM);
  }

  /** This JVM is the DataNode; the client it fetches from is killed. */
  private void killClientWhileGetting(String tls) throws Exception {
    int[] sizes = new int[PACKETS];
    Arrays.fill(sizes, SIZE);
    UcxTestUtils.QueueingHandler handler = new UcxTestUtils.QueueingHandler();
    try (UcxContext context = new UcxContext(UcxTestUtils.options(tls));
         UcxWorker worker = new UcxWorker(context, "survivor");
         RegisteredBufferPool landing = new RegisteredBufferPool(context,
             "landing", SIZE, SIZE, (long) SIZE * 16, true)) {
      worker.setDescriptorHandler(handler);
      worker.setMaxPacketBytes(SIZE);
      worker.start();
      UcxListener listener = UcxListener.open(worker,
          UcxTestUtils.loopbackPort0(), c -> { })
          .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
      int port = listener.address().getPort();
      UcxConnection first;
      try (PeerProcess client = PeerProcess.expose(port, tls, true, sizes)) {
        List<PacketDescriptor> descriptors = new ArrayList<PacketDescriptor>();
        Object[] got = null;
        for (int i = 0; i < PACKETS; i++) {
          got = handler.take();
          descriptors.add((PacketDescriptor) got[1]);
        }
        first = (UcxConnection) got[0];
        List<RegisteredBuffer> targets = new ArrayList<RegisteredBuffer>();
        for (int i = 0; i < 16; i++) {
          targets.add(landing.acquire(TIMEOUT_MS));
        }
        first.get(descriptors.get(0), targets.get(0), TIMEOUT_MS)
            .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        List<CompletableFuture<Void>> inFlight =
            new ArrayList<CompletableFuture<Void>>();
        for (int i = 0; i < 16; i++) {
          inFlight.add(first.get(descriptors.get(i % PACKETS), targets.get(i),
              120_000));
        }
        client.kill();
        long killed = System.nanoTime();
        int failed = 0;
        for (CompletableFuture<Void> f : inFlight) {
          try {
            f.get(DETECTION_MS, TimeUnit.MILLISECONDS);
          } catch (ExecutionException e) {
            failed++;
            assertTrue("IOException naming the peer: " + e.getCause(),
                e.getCause() instanceof UcxOperationException
                && e.getCause().getMessage().contains(first.peer()));
          }
        }
        // Whatever completed before the kill, a get after it must fail.
        try {
          first.get(descriptors.get(1), targets.get(1), 120_000)
              .get(DETECTION_MS, TimeUnit.MILLISECONDS);
          fail("a get from a killed client succeeded");
        } catch (ExecutionException e) {
          assertTrue(e.getCause() instanceof UcxOperationException);
        }
        LOG.info("{}: kill -9 of the client seen within {} ms; {} of 16"
            + " in-flight gets failed, the rest completed first", tls,
            (System.nanoTime() - killed) / 1_000_000, failed);
        assertFalse(first.isUsable());
        for (RegisteredBuffer b : targets) {
          b.release();
        }
      }
      assertTrue("worker still running", worker.isRunning());

      // A restarted client connects again and is served.
      try (PeerProcess client = PeerProcess.expose(port, tls, true, sizes);
           RegisteredBuffer b = landing.acquire(TIMEOUT_MS)) {
        Object[] got = handler.take();
        UcxConnection second = (UcxConnection) got[0];
        assertNotSame(first, second);
        PacketDescriptor d = (PacketDescriptor) got[1];
        second.get(d, b, TIMEOUT_MS).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        assertEquals(-1, UcxTestUtils.firstMismatch(b.buffer(), SIZE,
            d.seqno()));
        for (int i = 1; i < PACKETS; i++) {
          handler.take();
        }
      }
      landing.assertNoLeaks();
    }
  }

  /**
   * The client dies after sending descriptors and before the DataNode's
   * first get of them: the DataNode meets the client's remote key only
   * after its shared-memory segments are gone. The get fails with an
   * IOException; nothing crashes.
   */
  @Test(timeout = 240_000)
  public void testFirstGetAfterTheClientDied() throws Exception {
    String tls = UcxTestUtils.TLS_SHM;
    int[] sizes = {SIZE, SIZE};
    UcxTestUtils.QueueingHandler handler = new UcxTestUtils.QueueingHandler();
    try (UcxContext context = new UcxContext(UcxTestUtils.options(tls));
         UcxWorker worker = new UcxWorker(context, "survivor");
         RegisteredBufferPool landing = new RegisteredBufferPool(context,
             "landing", SIZE, SIZE, (long) SIZE * 2, true)) {
      worker.setDescriptorHandler(handler);
      worker.setMaxPacketBytes(SIZE);
      worker.start();
      UcxListener listener = UcxListener.open(worker,
          UcxTestUtils.loopbackPort0(), c -> { })
          .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
      Object[] got;
      try (PeerProcess client = PeerProcess.expose(
          listener.address().getPort(), tls, true, sizes)) {
        got = handler.take();
        handler.take();
        client.kill();
      }
      UcxConnection from = (UcxConnection) got[0];
      try (RegisteredBuffer target = landing.acquire(TIMEOUT_MS)) {
        from.get((PacketDescriptor) got[1], target, 10_000)
            .get(DETECTION_MS, TimeUnit.MILLISECONDS);
        fail("a first get from a dead client succeeded");
      } catch (ExecutionException e) {
        assertTrue(String.valueOf(e.getCause()),
            e.getCause() instanceof java.io.IOException);
      }
      assertTrue("worker still running", worker.isRunning());
      landing.assertNoLeaks();
    }
  }

  /**
   * This JVM is the client; the DataNode it sends to is killed and comes
   * back on the same port: the endpoint cache drops the dead connection
   * and connects again.
   */
  @Test(timeout = 240_000)
  public void testDataNodeKilledAndRestarted() throws Exception {
    String tls = UcxTestUtils.TLS_SHM;
    int port = PeerProcess.freePort();
    InetSocketAddress address = new InetSocketAddress(
        InetAddress.getLoopbackAddress(), port);
    ByteBuffer message = ByteBuffer.allocateDirect(PacketDescriptor.MAX_LENGTH);
    try (UcxContext context = new UcxContext(UcxTestUtils.options(tls));
         UcxWorker worker = new UcxWorker(context, "client");
         RegisteredBufferPool exposed = new RegisteredBufferPool(context,
             "exposed", 1 << 20, 1 << 20, 1 << 20, true);
         EndpointCache cache = new EndpointCache(worker);
         RegisteredBuffer packet = exposed.acquire(TIMEOUT_MS)) {
      worker.start();
      UcxTestUtils.fill(packet.buffer(), 1 << 20, 7);
      UcxConnection first;
      try (PeerProcess dataNode = PeerProcess.serve(port, tls, true)) {
        first = cache.get(address).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        first.sendDescriptor(UcxTestUtils.describe(packet, 1 << 20, 7,
            message), TIMEOUT_MS).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        assertEquals("VERIFIED 7 1048576", dataNode.nextLine(TIMEOUT_MS));
        dataNode.kill();
      }
      UcxTestUtils.waitFor(() -> !first.isUsable(), 50, DETECTION_MS);
      assertTrue(first.failure() instanceof UcxOperationException);
      try (PeerProcess dataNode = PeerProcess.serve(port, tls, true)) {
        UcxConnection second = cache.get(address)
            .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        assertNotSame(first, second);
        second.sendDescriptor(UcxTestUtils.describe(packet, 1 << 20, 7,
            message), TIMEOUT_MS).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        assertEquals("VERIFIED 7 1048576", dataNode.nextLine(TIMEOUT_MS));
      }
      assertEquals(2, cache.connectCount());
    }
  }

  /**
   * A frozen client never serves the get (over tcp the owner must
   * progress): the deadline fails it with a timeout naming the peer, the
   * connection is closed so a late completion cannot touch the buffer, and
   * the DataNode's worker carries on.
   */
  @Test(timeout = 240_000)
  public void testFrozenClientTimesOut() throws Exception {
    String tls = UcxTestUtils.TLS_TCP;
    UcxTestUtils.QueueingHandler handler = new UcxTestUtils.QueueingHandler();
    try (UcxContext context = new UcxContext(UcxTestUtils.options(tls));
         UcxWorker worker = new UcxWorker(context, "survivor");
         RegisteredBufferPool landing = new RegisteredBufferPool(context,
             "landing", SIZE, SIZE, SIZE, true)) {
      worker.setDescriptorHandler(handler);
      worker.setMaxPacketBytes(SIZE);
      worker.start();
      UcxListener listener = UcxListener.open(worker,
          UcxTestUtils.loopbackPort0(), c -> { })
          .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
      try (PeerProcess client = PeerProcess.expose(
               listener.address().getPort(), tls, true, SIZE);
           RegisteredBuffer b = landing.acquire(TIMEOUT_MS)) {
        Object[] got = handler.take();
        UcxConnection connection = (UcxConnection) got[0];
        client.signal("STOP");
        try {
          long start = System.nanoTime();
          try {
            connection.get((PacketDescriptor) got[1], b, 2_000)
                .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            fail("a get from a frozen client succeeded");
          } catch (ExecutionException e) {
            assertTrue("timeout naming the peer: " + e.getCause(),
                e.getCause() instanceof UcxTimeoutException
                && e.getCause().getMessage().contains(connection.peer()));
          }
          long ms = (System.nanoTime() - start) / 1_000_000;
          assertTrue("deadline honoured: " + ms + " ms", ms < 10_000);
          assertFalse(connection.isUsable());
        } finally {
          client.signal("CONT");
        }
      }
      assertTrue(worker.isRunning());
      landing.assertNoLeaks();
    }
  }
}
