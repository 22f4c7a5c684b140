package org.hdfsrdma.ucx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import org.junit.After;
import org.junit.Before;
import org.junit.Test;
import org.openucx.jucx.UcxUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A peer JVM dies (kill -9) or freezes (SIGSTOP) in the middle of a
 * session: the survivor sees an IOException naming the peer within a
 * bounded time, never hangs, stays healthy, and serves a new peer.
 *
 * <p>How fast a dead peer shows depends on the transport. Over tcp the
 * socket's reset is immediate. Over shared memory nothing breaks: UCX
 * notices the dead process at its next keepalive round of the endpoint,
 * {@code UCX_KEEPALIVE_INTERVAL} (20 s by default; the product does not
 * change it), so the clients here set it to 1 s. Until then sends to a
 * dead getter fill its FIFO and then queue; the write path's send deadline
 * ({@link UcxTestUtils#sendAsWritePath}) bounds that wait in any case.
 */
public class TestPeerFailure {

  private static final Logger LOG =
      LoggerFactory.getLogger(TestPeerFailure.class);
  /** The packets an exposer here cycles through: buffer i, seqno i. */
  private static final int RING = 8;
  private static final int SIZE = 64 * 1024;
  private static final long WAIT_MS = 30_000;
  /** How long a dead peer may take to show (keepalive 1 s, loaded host). */
  private static final long DETECTION_MS = 10_000;

  @Before
  public void checkUcx() {
    UcxTestUtils.assumeUcx();
  }

  @After
  public void killPeers() {
    PeerProcess.killAll();
  }

  // ------------------------------------------------- getter killed

  @Test(timeout = 180_000)
  public void testGetterKilledWhileTheExposerSendsOverSharedMemory()
      throws Exception {
    getterKilledWhileSending(UcxTestUtils.TLS_SHM);
  }

  @Test(timeout = 180_000)
  public void testGetterKilledWhileTheExposerSendsOverTcp()
      throws Exception {
    getterKilledWhileSending(UcxTestUtils.TLS_TCP);
  }

  /**
   * This JVM is the client, sending descriptors as fast as the DataNode
   * JVM takes them; the DataNode is killed. The client's endpoint fails
   * with an IOException naming the DataNode, the endpoint cache drops it,
   * and the same worker serves a new DataNode.
   */
  private void getterKilledWhileSending(String tls) throws Exception {
    try (Client client = new Client(tls)) {
      UcxEndpoint first;
      long seqno = 0;
      try (PeerProcess dataNode = PeerProcess.getter(tls)) {
        first = client.cache.get(dataNode.address(), "datanode-1")
            .get(WAIT_MS, TimeUnit.MILLISECONDS);
        client.announce(first);
        for (; seqno < 2 * RING; seqno++) {
          client.describe(first, seqno, WAIT_MS);
        }
        for (int i = 0; i < 2 * RING; i++) {
          assertTrue(dataNode.expectLine(WAIT_MS).startsWith("VERIFIED "));
        }
        assertEquals(1, client.cache.size());
        // Keep sending while the DataNode dies.
        dataNode.kill();
        long killed = System.nanoTime();
        IOException seen = null;
        while (seen == null) {
          try {
            client.describe(first, seqno++, DETECTION_MS);
          } catch (IOException e) {
            seen = e;
          }
          assertTrue("the dead DataNode went unnoticed for "
              + DETECTION_MS + " ms", System.nanoTime() - killed
              < TimeUnit.MILLISECONDS.toNanos(2 * DETECTION_MS));
        }
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed);
        LOG.info("{}: kill -9 of the DataNode seen after {} ms and {} more"
            + " sends: {}", tls, ms, seqno - 2 * RING, seen.toString());
        assertTrue("seen after " + ms + " ms", ms < DETECTION_MS);
        UcxTestUtils.waitFor(() -> !first.isUsable(), DETECTION_MS,
            "the endpoint to fail");
        IOException why = first.failure();
        assertTrue(String.valueOf(why), why instanceof UcxOperationException
            && why.getMessage().contains("datanode-1"));
        try {
          client.describe(first, seqno, WAIT_MS);
          fail("sent to a dead DataNode");
        } catch (UcxOperationException e) {
          assertTrue(e.getMessage(), e.getMessage().contains(
              "send of a message with peer datanode-1 failed: the connection"
              + " failed"));
        }
        UcxTestUtils.waitFor(() -> client.cache.size() == 0, WAIT_MS,
            "the cache to drop the dead endpoint");
      }
      assertTrue(client.worker.isRunning());
      assertTrue(client.worker.progressThread().isAlive());

      try (PeerProcess dataNode = PeerProcess.getter(tls)) {
        UcxEndpoint second = client.cache.get(dataNode.address(),
            "datanode-2").get(WAIT_MS, TimeUnit.MILLISECONDS);
        assertNotSame(first, second);
        client.announce(second);
        for (long s = 0; s < RING; s++) {
          client.describe(second, s, WAIT_MS);
        }
        for (int s = 0; s < RING; s++) {
          assertEquals("VERIFIED " + s + " " + SIZE + (tls.equals(
              UcxTestUtils.TLS_TCP) ? " get" : " direct"),
              dataNode.expectLine(WAIT_MS));
        }
      }
      assertEquals(2, client.cache.connectCount());
    }
  }

  // ------------------------------------------------- exposer killed

  /**
   * This JVM is the DataNode; the client is killed after it announced a
   * region and sent descriptors, before the DataNode read them.
   *
   * <p>Intended behaviour: the DataNode still reads those packets, and
   * gets the bytes the client wrote. The region's SysV segment stays
   * attached by this process (UCX created it already marked for removal:
   * it goes with the last detach, the release of the region), and a
   * client writes a packet completely before it sends its descriptor, so
   * the bytes read are the packet the descriptor promised. Whether a block
   * whose client died is kept is for HDFS to decide (pipeline recovery),
   * as with stock TCP, where the bytes already received are also written.
   */
  @Test(timeout = 180_000)
  public void testExposerKilledAfterSendingDescriptorsOverSharedMemory()
      throws Exception {
    int[] sizes = {1, 4096, SIZE, 1 << 20};
    try (TestGetter getter = new TestGetter(UcxTestUtils.TLS_SHM,
        new RemoteRegion.Policy(id -> false, false))) {
      UcxWorker.Driver driver = getter.worker.registerDriver();
      try {
        PacketDescriptor[] ds = new PacketDescriptor[sizes.length];
        try (PeerProcess client = PeerProcess.exposer(UcxTestUtils.TLS_SHM,
            getter.worker.address(), sizes)) {
          for (int i = 0; i < sizes.length; i++) {
            ds[i] = getter.next(driver, WAIT_MS);
          }
          client.kill();
        }
        RemoteRegion region = getter.regions.get(1);
        assertTrue(region.isDirect());
        for (int i = 0; i < sizes.length; i++) {
          assertEquals(i, ds[i].seqno());
          byte[] bytes = getter.read(ds[i]);
          assertEquals(sizes[i], bytes.length);
          assertEquals("packet " + i + " of the dead client", -1,
              UcxTestUtils.firstMismatch(ByteBuffer.wrap(bytes), sizes[i],
                  i));
        }
        assertTrue(getter.worker.isRunning());

        // A new client: its region replaces the dead one's, whose segment
        // then goes for good.
        int deadSegment = segmentOf(region);
        long[] facts = new long[6];
        assertEquals(0, NativeUcx.shmStat(deadSegment, facts));
        assertEquals("attached by this process alone", 1, facts[4]);
        try (PeerProcess client = PeerProcess.exposer(UcxTestUtils.TLS_SHM,
            getter.worker.address(), sizes)) {
          for (int i = 0; i < sizes.length; i++) {
            PacketDescriptor d = getter.next(driver, WAIT_MS);
            assertNotSame(region, getter.regions.get(1));
            assertEquals(-1, UcxTestUtils.firstMismatch(ByteBuffer.wrap(
                getter.read(d)), sizes[i], i));
          }
        }
        assertTrue("the dead client's segment outlived its last reader",
            NativeUcx.shmStat(deadSegment, new long[6]) != 0);
        assertTrue(getter.rejections.toString(),
            getter.rejections.isEmpty());
      } finally {
        getter.worker.unregisterDriver(driver);
      }
    }
  }

  /**
   * Over tcp nothing is mapped: a get after the client died fails with an
   * IOException within a bounded time, and the DataNode serves a new
   * client.
   */
  @Test(timeout = 180_000)
  public void testExposerKilledAfterSendingDescriptorsOverTcp()
      throws Exception {
    int[] sizes = {4096, SIZE};
    try (TestGetter getter = new TestGetter(UcxTestUtils.TLS_TCP);
         RegisteredBufferPool landing = new RegisteredBufferPool(
             getter.context, "landing", SIZE, SIZE, SIZE, true)) {
      StatusSlots slots = new StatusSlots(1);
      UcxWorker.Driver driver = getter.worker.registerDriver();
      try {
        PacketDescriptor d;
        UcxEndpoint back;
        try (PeerProcess client = PeerProcess.exposer(UcxTestUtils.TLS_TCP,
            getter.worker.address(), sizes)) {
          d = getter.next(driver, WAIT_MS);
          getter.next(driver, WAIT_MS);
          UcxTestUtils.waitFor(() -> getter.back != null, WAIT_MS,
              "the endpoint back to the client");
          back = getter.back;
          client.kill();
        }
        long killed = System.nanoTime();
        try {
          getter.fetch(driver, d, landing, slots, DETECTION_MS);
          fail("read a packet of a dead client over tcp");
        } catch (IOException e) {
          LOG.info("tcp: get from a dead client failed after {} ms: {}",
              TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed),
              e.toString());
          assertTrue(e.getMessage(), e.getMessage().contains(
              "with peer exposer") || e.getMessage().contains("from exposer"));
        }
        UcxTestUtils.waitFor(() -> !back.isUsable(), DETECTION_MS,
            "the endpoint back to fail");
        assertTrue(getter.worker.isRunning());
        landing.assertNoLeaks();

        try (PeerProcess client = PeerProcess.exposer(UcxTestUtils.TLS_TCP,
            getter.worker.address(), sizes)) {
          UcxTestUtils.waitFor(() -> getter.back != back, WAIT_MS,
              "a new endpoint back");
          for (int i = 0; i < sizes.length; i++) {
            PacketDescriptor next = getter.next(driver, WAIT_MS);
            assertEquals(-1, UcxTestUtils.firstMismatch(ByteBuffer.wrap(
                getter.fetch(driver, next, landing, slots, WAIT_MS)),
                sizes[i], i));
          }
        }
      } finally {
        getter.worker.unregisterDriver(driver);
      }
    }
  }

  /**
   * Gets started back to back while the exposer dies and another thread
   * progresses the worker. UCX 1.13 marks an endpoint whose peer failed,
   * discards its lanes and calls its error callback inside one progress
   * call; a get started on it after that crashed the JVM (SIGSEGV in
   * ucp_get_nbx: one CI run of the test above in about twenty, fixed in UCX
   * by openucx/ucx#11629). Every get must start before the failure or be
   * refused with an IOException, and the JVM live on.
   */
  @Test(timeout = 180_000)
  public void testGetsStartedWhileTheExposerDiesNeverCrash()
      throws Exception {
    int[] sizes = {4096};
    for (int round = 0; round < 3; round++) {
      try (TestGetter getter = new TestGetter(UcxTestUtils.TLS_TCP);
           RegisteredBufferPool landing = new RegisteredBufferPool(
               getter.context, "landing", SIZE, SIZE, SIZE, true)) {
        StatusSlots slots = new StatusSlots(1);
        UcxWorker.Driver driver = getter.worker.registerDriver();
        long token = landing.acquire(WAIT_MS);
        final java.util.concurrent.atomic.AtomicBoolean stop =
            new java.util.concurrent.atomic.AtomicBoolean();
        Thread progress = new Thread(() -> {
          while (!stop.get()) {
            getter.worker.progress();
          }
        }, "test-progress");
        long started = 0;
        try {
          try (PeerProcess client = PeerProcess.exposer(
              UcxTestUtils.TLS_TCP, getter.worker.address(), sizes)) {
            PacketDescriptor d = getter.next(driver, WAIT_MS);
            UcxTestUtils.waitFor(() -> getter.back != null, WAIT_MS,
                "the endpoint back to the client");
            UcxEndpoint back = getter.back;
            final java.util.concurrent.atomic.AtomicLong gets =
                new java.util.concurrent.atomic.AtomicLong();
            final java.util.concurrent.atomic.AtomicReference<Object> end =
                new java.util.concurrent.atomic.AtomicReference<Object>();
            Thread getting = new Thread(() -> {
              long deadline = System.nanoTime()
                  + TimeUnit.MILLISECONDS.toNanos(DETECTION_MS + WAIT_MS);
              try {
                while (System.nanoTime() < deadline) {
                  getter.get(d, landing, token, slots, 0);
                  gets.incrementAndGet();
                }
                end.set("no get was refused");
              } catch (IOException refused) {
                end.set(back.isUsable() ? refused : "refused");
              } catch (Throwable t) {
                end.set(t);
              }
            }, "test-gets");
            progress.start();
            getting.start();
            UcxTestUtils.waitFor(() -> gets.get() > 100 || end.get() != null,
                WAIT_MS, "gets under way");
            client.kill();
            getting.join(DETECTION_MS + WAIT_MS);
            started = gets.get();
            assertEquals("gets end refused once the connection failed",
                "refused", String.valueOf(end.get()));
            assertFalse(back.isUsable());
            assertTrue("gets were under way when the client died", started
                > 100);
          }
          LOG.info("round {}: {} gets started before the failure", round,
              started);
        } finally {
          stop.set(true);
          progress.join(WAIT_MS);
          // Gets purged with the endpoint end; then the buffer is free.
          getter.worker.drive(driver, () -> !slots.inProgress(0),
              TimeUnit.MILLISECONDS.toNanos(WAIT_MS));
          landing.release(token);
          getter.worker.unregisterDriver(driver);
        }
        assertTrue(getter.worker.isRunning());
      }
    }
  }

  // ------------------------------------------------- getter frozen

  /**
   * The DataNode JVM freezes (SIGSTOP) while the client sends. Its FIFO
   * fills, then UCX queues the client's send; the client awaits it as the
   * write path does, with a deadline, and gets an IOException when the
   * deadline passes instead of hanging. The frozen DataNode, continued,
   * takes the queued message and everything is read intact.
   */
  @Test(timeout = 180_000)
  public void testFrozenGetterDoesNotHangTheExposer() throws Exception {
    long deadlineMs = 2_000;
    try (Client client = new Client(UcxTestUtils.TLS_SHM);
         PeerProcess dataNode = PeerProcess.getter(UcxTestUtils.TLS_SHM)) {
      UcxEndpoint e = client.cache.get(dataNode.address(), "datanode")
          .get(WAIT_MS, TimeUnit.MILLISECONDS);
      client.announce(e);
      client.describe(e, 0, WAIT_MS);
      assertTrue(dataNode.expectLine(WAIT_MS).startsWith("VERIFIED 0 "));
      dataNode.signal("STOP");
      long sent = 1;
      long stopped = System.nanoTime();
      IOException timedOut = null;
      try {
        while (timedOut == null) {
          try {
            client.describe(e, sent, deadlineMs);
            sent++;
          } catch (IOException ex) {
            timedOut = ex;
          }
          assertTrue("still sending to a frozen DataNode after " + sent
              + " messages", sent < 100_000);
        }
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stopped);
        LOG.info("shm: {} sends went into a frozen DataNode's queue; the"
            + " next gave up after {} ms: {}", sent, ms, timedOut.toString());
        assertTrue(timedOut.getMessage(), timedOut.getMessage().contains(
            "a message to datanode was not sent in " + deadlineMs + " ms"));
        assertTrue("gave up after " + ms + " ms", ms < deadlineMs + 8_000);
        if (UcxRelease.sharedMemoryProfile().endsWith(
            " UCX_MM_FIFO_SIZE=256")) {
          // The library's receive queue, not UCX's 64 entries, less the
          // few the connection's own messages hold.
          assertTrue(sent + " sends before the queue was full",
              sent > 240 && sent <= 256);
        }
        assertTrue("a send was queued, not refused", client.queued());
        assertTrue("a frozen peer is not a dead one", e.isUsable());
        assertTrue(client.worker.isRunning());
      } finally {
        dataNode.signal("CONT");
      }
      // Continued, the DataNode takes everything, the queued one last.
      UcxTestUtils.waitFor(() -> !client.queued(), WAIT_MS,
          "the queued send to complete");
      assertEquals(0, client.lastStatus());
      for (long s = 1; s <= sent; s++) {
        String line = dataNode.expectLine(WAIT_MS);
        assertEquals("VERIFIED " + (s % RING) + " " + SIZE + " direct",
            line);
      }
    }
  }

  // ---------------------------------------------------------- helpers

  /** The SysV segment a direct region reads. */
  private static int segmentOf(RemoteRegion region) {
    assertTrue(region.toString(), region.isDirect());
    // The reader is this process's attachment; the kernel knows it by
    // address only, so look the segment up among this process's
    // attachments in /proc/self/maps ("SYSV<key> ... <shmid>").
    long start = UcxUtils.getAddress(region.reader());
    try {
      for (String line : java.nio.file.Files.readAllLines(
          java.nio.file.Paths.get("/proc/self/maps"))) {
        String[] f = line.trim().split("\\s+");
        String[] range = f[0].split("-");
        long lo = Long.parseUnsignedLong(range[0], 16);
        long hi = Long.parseUnsignedLong(range[1], 16);
        if (start >= lo && start < hi && f.length >= 6
            && f[5].startsWith("/SYSV")) {
          return Integer.parseInt(f[4]);
        }
      }
    } catch (IOException ex) {
      throw new AssertionError(ex);
    }
    throw new AssertionError("no SysV mapping holds 0x"
        + Long.toHexString(start));
  }

  /**
   * A client's side: worker, a ring of exposed packets (buffer i holds the
   * pattern of seqno i), an endpoint cache that greets every new peer, and
   * sends as the write path makes them.
   */
  private static final class Client implements Closeable {
    final UcxContext context;
    final UcxWorker worker;
    final RegisteredBufferPool pool;
    final EndpointCache cache;
    final long[] tokens = new long[RING];
    final ByteBuffer messages = ByteBuffer.allocateDirect(4096);
    final StatusSlots slots = new StatusSlots(RING);
    private int next;
    private int last = -1;

    Client(String tls) throws Exception {
      context = new UcxContext(UcxTestUtils.options(tls)
          .withUcxConfig("KEEPALIVE_INTERVAL", "1s"));
      worker = new UcxWorker(context, "client").start();
      pool = new RegisteredBufferPool(context, "exposed", SIZE,
          (long) SIZE * RING, (long) SIZE * RING, true);
      cache = new EndpointCache(worker, WAIT_MS, worker.address());
      for (int i = 0; i < RING; i++) {
        tokens[i] = pool.acquire(1000);
        UcxTestUtils.fill(pool.buffer(tokens[i]), SIZE, i);
      }
    }

    void announce(UcxEndpoint e) throws IOException {
      RegionAnnouncement a = new RegionAnnouncement().wrap(messages, 0,
          messages.capacity()).encode(7L, 1, pool.regionAddress(0),
              pool.regionLength(0), pool.regionKey(0));
      send(e, 0, a.length(), WAIT_MS);
    }

    /** Describes ring buffer {@code seqno % RING} under {@code seqno}. */
    void describe(UcxEndpoint e, long seqno, long deadlineMs)
        throws IOException {
      int i = (int) (seqno % RING);
      // One message buffer per slot: a queued send keeps its bytes.
      int offset = 1024 + (next % RING) * PacketDescriptor.LENGTH;
      new PacketDescriptor().wrap(messages, offset).encode(7L, 1073741825L,
          1001L, i, (long) i * SIZE, 0, 1, pool.address(tokens[i]), 0, SIZE);
      send(e, offset, PacketDescriptor.LENGTH, deadlineMs);
    }

    private void send(UcxEndpoint e, int offset, int length, long deadlineMs)
        throws IOException {
      int slot = next++ % RING;
      if (slots.inProgress(slot)) {
        throw new IOException("slot " + slot + " still in use");
      }
      last = slot;
      UcxTestUtils.sendAsWritePath(e, UcxUtils.getAddress(messages) + offset,
          length, slots, slot, deadlineMs);
    }

    /** Whether the last send is still queued in UCX. */
    boolean queued() {
      return last >= 0 && slots.inProgress(last);
    }

    int lastStatus() {
      return slots.status(last);
    }

    @Override
    public void close() {
      cache.close();
      for (long t : tokens) {
        pool.release(t);
      }
      pool.close();
      worker.close();
      context.close();
    }
  }
}
