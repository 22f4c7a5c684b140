package org.hdfsrdma.hadoop.datanode;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.hadoop.hdfs.server.datanode.UcxPacketReceiver;
import org.apache.hadoop.hdfs.server.datanode.UcxReceiverHooks;
import org.hdfsrdma.hadoop.UcxTestClient;
import org.hdfsrdma.hadoop.metrics.UcxDataNodeMetrics;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.junit.Test;

/**
 * A block receiver allocates nothing per packet on its thread, by the
 * JVM's own count of the thread's allocated bytes over the last 1,000 of
 * 3,000 packets a sender thread describes (under 8 bytes a packet allowed:
 * one object per packet would be 16 at least): packets read directly from
 * a same-JVM client with the block's socket watched, packets fetched by
 * get over tcp (none read directly), and a DataNode that feeds the next
 * (one thread receives each packet, offers it to the fed DataNode's
 * session in this JVM, receives it there from the landing buffer and acks
 * it; every landing buffer back after its ack, every byte counted as
 * forwarded and as fetched from a DataNode). Measured: 0 bytes read
 * directly and by get; feeding 672, 0 and 1,608 in three runs (DESIGN.md
 * section 4a).
 */
public class TestReceiveAllocation extends ReceivePathTestBase {

  /**
   * A thread that describes {@code total} packets, of {@code tokens} in
   * turn, to the current session, never more than 16 ahead of
   * {@code received}; what it throws goes to {@code failure}.
   */
  private Thread sender(final int total, final long[] tokens,
      final AtomicLong received, final AtomicReference<Throwable> failure) {
    return new Thread(() -> {
      try {
        for (int p = 0; p < total; p++) {
          while (p - received.get() >= 16) {
            java.util.concurrent.locks.LockSupport.parkNanos(20_000);
          }
          describe(client, tokens[p % tokens.length], p, 0);
        }
      } catch (Throwable t) {
        failure.set(t);
      }
    }, "test-sender");
  }

  /**
   * The same-host path allocates nothing per packet on the receiving
   * thread: over 1,000 packets, with a sender on another thread keeping
   * descriptors coming, the receiving thread's allocated bytes (the JVM's
   * own count) stay within a small constant per packet, every byte read
   * directly. With the block's socket watched, as a DataNode's receiver
   * runs.
   */
  @Test(timeout = 300_000)
  public void testDirectPathAllocatesNothingPerPacket() throws Exception {
    start();
    try (SocketPair socket = new SocketPair()) {
      assertAllocatesNothingPerPacket(16, socket, true);
    }
  }

  /**
   * The get path allocates nothing per packet on the receiving thread
   * either: packets in another worker's memory (UCX's tcp transport, gets
   * emulated, four in flight) are fetched into landing buffers and copied
   * out, none read directly.
   */
  @Test(timeout = 300_000)
  public void testGetPathAllocatesNothingPerPacket() throws Exception {
    startTcp(true);
    assertAllocatesNothingPerPacket(8, null, false);
  }

  /**
   * Receives 3,000 packets of {@code buffers} client buffers on this thread
   * while a sender thread describes them, checking every packet's first
   * and last data bytes without allocating; asserts this thread allocated
   * under 8 bytes per packet over the last 1,000 (any object is at least
   * 16 bytes: one per packet would show), and which way the bytes came.
   */
  private void assertAllocatesNothingPerPacket(int buffers, SocketPair socket,
      boolean direct) throws Exception {
    final int warmUp = 2_000;
    final int measured = 1_000;
    final int total = warmUp + measured;
    UcxBlockSession s = open(64);
    final long[] tokens = new long[buffers];
    final byte[] firstByte = new byte[buffers];
    final byte[] lastByte = new byte[buffers];
    for (int b = 0; b < buffers; b++) {
      tokens[b] = client.fill(AT, CHECKSUMS + DATA, b);
      firstByte[b] = UcxTestClient.pattern(b, CHECKSUMS);
      lastByte[b] = UcxTestClient.pattern(b, CHECKSUMS + DATA - 1);
    }
    announce(tokens[0]);
    final AtomicLong received = new AtomicLong();
    final AtomicReference<Throwable> senderFailure =
        new AtomicReference<Throwable>();
    Thread sender = sender(total, tokens, received, senderFailure);
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long self = Thread.currentThread().getId();
    InputStream in = socket == null ? null : socket.in;
    UcxPacketReceiver r = receiver(s, socket);
    long allocated = -1;
    try {
      sender.start();
      long before = 0;
      for (int p = 0; p < total; p++) {
        if (p == warmUp) {
          before = threads.getThreadAllocatedBytes(self);
        }
        r.receiveNextPacket(in);
        ByteBuffer data = r.getDataSlice();
        int b = p % buffers;
        if (r.getHeader().getSeqno() != p || data.remaining() != DATA
            || data.get(0) != firstByte[b]
            || data.get(DATA - 1) != lastByte[b]) {
          throw new AssertionError("packet " + p + " wrong");
        }
        UcxReceiverHooks.written(r);
        received.incrementAndGet();
      }
      allocated = threads.getThreadAllocatedBytes(self) - before;
      sender.join(30_000);
      assertNull(senderFailure.get());
      assertEquals(direct, s.region(1).isDirect());
    } finally {
      r.close();
      sender.join(30_000);
      for (long t : tokens) {
        client.pool.release(t);
      }
    }
    assertEquals((long) total * DATA, fetched());
    assertEquals("bytes read directly", direct ? (long) total * DATA : 0,
        dataNode.metrics().get(UcxDataNodeMetrics.READ_DIRECTLY));
    System.out.println("receiving thread allocated " + allocated
        + " bytes over " + measured + " packets "
        + (direct ? "read directly" : "fetched by get"));
    assertTrue("the receiving thread allocated " + allocated + " bytes for "
        + measured + " packets", allocated >= 0 && allocated < 8L * measured);
  }

  /**
   * A DataNode that feeds the next one (chain) allocates nothing per packet
   * either: one thread receives each packet for DataNode k, offers it to
   * DataNode k+1's session in this JVM, receives it there from k's landing
   * buffer, and acks it as k's PacketResponder would; over 1,000 packets
   * the thread's allocated bytes stay within a small constant per packet,
   * and every landing buffer comes back.
   */
  @Test(timeout = 300_000)
  public void testFeedingAllocatesNothingPerPacket() throws Exception {
    start();
    final int buffers = 16;
    final int warmUp = 2_000;
    final int measured = 1_000;
    final int total = warmUp + measured;
    UcxBlockSession upstream = open(64);
    long fedId;
    do {
      fedId = random.nextLong();
    } while (fedId == 0 || fedId == session);
    UcxBlockSession fed = DataNodeServer.of(runtime).sessions().open(fedId,
        BLOCK, STAMP,
        PACKET_SIZE, 64, 64, "fed test block");
    RegisteredBufferPool landing = runtime.pools().landing();
    long landingInUse = landing.metrics().inUseBytes();
    final long[] tokens = new long[buffers];
    for (int b = 0; b < buffers; b++) {
      tokens[b] = client.fill(AT, CHECKSUMS + DATA, b);
    }
    announce(tokens[0]);
    final AtomicLong received = new AtomicLong();
    final AtomicReference<Throwable> senderFailure =
        new AtomicReference<Throwable>();
    Thread sender = sender(total, tokens, received, senderFailure);
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long self = Thread.currentThread().getId();
    fedDataNode = UcxDataNode.start(new Object(), "127.0.0.1:50011", conf,
        runtime);
    UcxPacketReceiver first = receiver(upstream, null);
    PacketForwarder forwarder = new PacketForwarder(dataNode,
        "127.0.0.1:50011", runtime.workerAddress(), fedId, BLOCK, STAMP,
        "test block fed on");
    first.fetcher().feed(forwarder);
    UcxPacketReceiver second = receiver(fedDataNode, fed, null);
    long allocated = -1;
    try {
      sender.start();
      long before = 0;
      for (int p = 0; p < total; p++) {
        if (p == warmUp) {
          before = threads.getThreadAllocatedBytes(self);
        }
        receive(first);
        first.mirrorPacketTo(null);
        receive(second);
        ByteBuffer data = second.getDataSlice();
        int b = p % buffers;
        if (second.getHeader().getSeqno() != p || data.remaining() != DATA
            || data.get(0) != UcxTestClient.pattern(b, CHECKSUMS)
            || data.get(DATA - 1)
                != UcxTestClient.pattern(b, CHECKSUMS + DATA - 1)) {
          throw new AssertionError("packet " + p + " wrong");
        }
        UcxReceiverHooks.written(first);
        UcxReceiverHooks.written(second);
        UcxReceiverHooks.downstreamAcked(first, p);
        received.incrementAndGet();
      }
      allocated = threads.getThreadAllocatedBytes(self) - before;
      sender.join(30_000);
      assertNull(senderFailure.get());
      assertEquals("every landing buffer back after its ack", landingInUse,
          landing.metrics().inUseBytes());
    } finally {
      second.close();
      first.close();
      sender.join(30_000);
      for (long t : tokens) {
        client.pool.release(t);
      }
    }
    assertEquals((long) total * DATA, fedDataNode.metrics().get(
        UcxDataNodeMetrics.FETCHED_FROM_DATANODES));
    assertEquals((long) total * DATA, dataNode.metrics().get(
        UcxDataNodeMetrics.FORWARDED_BYTES));
    System.out.println("feeding thread allocated " + allocated
        + " bytes over " + measured + " packets");
    assertTrue("the feeding thread allocated " + allocated + " bytes for "
        + measured + " packets", allocated >= 0 && allocated < 8L * measured);
  }
}
