package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;
import static org.junit.Assume.assumeTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.apache.hadoop.test.GenericTestUtils;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RegisteredBuffer;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.UcxConnection;
import org.hdfsrdma.ucx.UcxContext;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * The DataNode's UCX packet source over real UCX: a client connection of
 * the same JVM's runtime sends descriptors, the receiver fetches the
 * packets and presents them as Hadoop's PacketReceiver would.
 */
public class TestUcxPacketReceiver {

  private static final long BLOCK = 1073741825L;
  private static final long STAMP = 1001L;
  private static final long SESSION = 0x5EED5EEDL;
  private static final int CHECKSUMS = 4 * 128;
  private static final int DATA = 64 * 1024;

  private UcxRuntime runtime;
  private UcxContext clientContext;
  private RegisteredBufferPool exposed;
  private RegisteredBuffer packet;
  private UcxConnection client;
  private ByteBuffer message;

  @Before
  public void setUp() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    runtime = UcxRuntime.get(new Configuration());
    InetSocketAddress listener = runtime.listen();
    client = runtime.endpoints().get(listener).get(30, TimeUnit.SECONDS);
    clientContext = new UcxContext(UcxContext.Options.defaults());
    exposed = new RegisteredBufferPool(clientContext, "client", 128 * 1024,
        128 * 1024, 128 * 1024, true);
    packet = exposed.acquire(1000);
    message = ByteBuffer.allocateDirect(PacketDescriptor.MAX_LENGTH);
  }

  @After
  public void tearDown() {
    if (packet != null) {
      packet.release();
      exposed.assertNoLeaks();
      exposed.close();
      clientContext.close();
    }
    UcxRuntime.shutdown();
  }

  /** Fills the packet and sends its descriptor under the given identity. */
  private void send(long session, long block, long seqno, int checksums,
      int data, short flags) throws Exception {
    ByteBuffer b = packet.buffer();
    for (int i = 0; i < checksums + data; i++) {
      b.put(i, (byte) (seqno * 31 + i));
    }
    new PacketDescriptor().wrap(message, 0, message.capacity()).encode(
        session, block, STAMP, seqno, Math.max(seqno, 0) * DATA, flags,
        packet.regionId(),
        packet.regionAddress(), packet.regionLength(), packet.address(),
        checksums, data, packet.remoteKey());
    client.sendDescriptor(new PacketDescriptor().wrap(message, 0,
        PacketDescriptor.encodedLength(packet.remoteKey().length)), 30_000)
        .get(30, TimeUnit.SECONDS);
  }

  private UcxPacketReceiver receiver(UcxBlockSession session, long timeoutMs) {
    return new UcxPacketReceiver(session, runtime.landingPool(), timeoutMs,
        4, null, n -> runtime.countFetched("test", n), () -> { }, c -> { },
        null);
  }

  @Test(timeout = 60_000)
  public void testPacketsArriveAsFromASocket() throws Exception {
    UcxBlockSession session = runtime.sessions().open(SESSION, BLOCK, STAMP,
        16, "test block");
    UcxPacketReceiver receiver = receiver(session, 30_000);
    try {
      for (long seqno = 0; seqno < 3; seqno++) {
        send(SESSION, BLOCK, seqno, CHECKSUMS, DATA, (short) 0);
        receiver.receiveNextPacket((java.io.InputStream) null);
        PacketHeader h = receiver.getHeader();
        assertEquals(seqno, h.getSeqno());
        assertEquals(seqno * DATA, h.getOffsetInBlock());
        assertEquals(DATA, h.getDataLen());
        assertEquals(4 + CHECKSUMS + DATA, h.getPacketLen());
        assertFalse(h.isLastPacketInBlock());
        ByteBuffer checksums = receiver.getChecksumSlice();
        ByteBuffer data = receiver.getDataSlice();
        assertEquals(CHECKSUMS, checksums.capacity());
        assertEquals(DATA, data.capacity());
        for (int i = 0; i < CHECKSUMS; i++) {
          assertEquals((byte) (seqno * 31 + i), checksums.get(i));
        }
        for (int i = 0; i < DATA; i++) {
          assertEquals((byte) (seqno * 31 + CHECKSUMS + i), data.get(i));
        }
        // BlockReceiver writes the slices through array().
        assertEquals(CHECKSUMS, data.arrayOffset());
      }
      // A heartbeat needs no get; the last packet ends the block.
      send(SESSION, BLOCK, -1, 0, 0, (short) 0);
      receiver.receiveNextPacket((java.io.InputStream) null);
      assertEquals(-1, receiver.getHeader().getSeqno());
      send(SESSION, BLOCK, 3, 0, 0, PacketDescriptor.FLAG_LAST_PACKET_IN_BLOCK);
      receiver.receiveNextPacket((java.io.InputStream) null);
      assertTrue(receiver.getHeader().isLastPacketInBlock());
      assertEquals(3L * (CHECKSUMS + DATA), receiver.bytesFetched());
      assertEquals(Long.valueOf(3L * DATA),
          runtime.dataBytesFetched().get("test"));
      try {
        receiver.receiveNextPacket((java.io.InputStream) null);
        fail("a packet after the last one");
      } catch (IOException expected) {
        // As Hadoop's PacketReceiver refuses it.
      }
    } finally {
      receiver.close();
    }
    assertEquals(0, runtime.sessions().size());
  }

  @Test(timeout = 60_000)
  public void testStrangersAreDroppedAndTheReceiverTimesOut()
      throws Exception {
    UcxBlockSession session = runtime.sessions().open(SESSION, BLOCK, STAMP,
        16, "test block");
    UcxPacketReceiver receiver = receiver(session, 500);
    try {
      long dropped = runtime.sessions().droppedCount();
      send(SESSION + 1, BLOCK, 0, CHECKSUMS, DATA, (short) 0); // no session
      send(SESSION, BLOCK + 1, 0, CHECKSUMS, DATA, (short) 0); // other block
      GenericTestUtils.waitFor(
          () -> runtime.sessions().droppedCount() == dropped + 2, 10, 10_000);
      try {
        receiver.receiveNextPacket((java.io.InputStream) null);
        fail("received a stranger's packet");
      } catch (SocketTimeoutException expected) {
        assertTrue(expected.getMessage().contains("test block"));
      }
    } finally {
      receiver.close();
    }
  }

  @Test(timeout = 60_000)
  public void testOutOfOrderPacketsFailTheBlock() throws Exception {
    UcxBlockSession session = runtime.sessions().open(SESSION, BLOCK, STAMP,
        16, "test block");
    UcxPacketReceiver receiver = receiver(session, 30_000);
    try {
      send(SESSION, BLOCK, 5, CHECKSUMS, DATA, (short) 0);
      receiver.receiveNextPacket((java.io.InputStream) null);
      send(SESSION, BLOCK, 4, CHECKSUMS, DATA, (short) 0);
      try {
        receiver.receiveNextPacket((java.io.InputStream) null);
        fail("accepted packet 4 after packet 5");
      } catch (IOException expected) {
        assertTrue(expected.getMessage().contains("after packet 5"));
      }
    } finally {
      receiver.close();
    }
  }

  @Test(timeout = 60_000)
  public void testClosedConnectionFailsTheWaitingReceiver() throws Exception {
    UcxBlockSession session = runtime.sessions().open(SESSION, BLOCK, STAMP,
        16, "test block");
    UcxPacketReceiver receiver = receiver(session, 30_000);
    try {
      send(SESSION, BLOCK, 0, CHECKSUMS, DATA, (short) 0);
      receiver.receiveNextPacket((java.io.InputStream) null);
      GenericTestUtils.waitFor(() -> session.boundConnection() != null, 10,
          10_000);
      session.boundConnection().close();
      long start = System.nanoTime();
      try {
        receiver.receiveNextPacket((java.io.InputStream) null);
        fail("received from a closed connection");
      } catch (IOException expected) {
        assertTrue(expected.getMessage(),
            expected.getMessage().contains("closed while receiving"));
      }
      assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(10));
    } finally {
      receiver.close();
    }
  }

  @Test(timeout = 60_000)
  public void testSessionsCannotCollide() throws Exception {
    try (UcxBlockSession session = runtime.sessions().open(SESSION, BLOCK,
        STAMP, 16, "first")) {
      try {
        runtime.sessions().open(SESSION, BLOCK, STAMP, 16, "second");
        fail("two sessions with one id");
      } catch (IOException expected) {
        assertTrue(expected.getMessage().contains("first"));
      }
    }
    assertEquals(0, runtime.sessions().size());
  }

  @Test(timeout = 60_000)
  public void testGetsOfArrivedPacketsOverlapTheReceiver() throws Exception {
    final int packets = 8;
    RegisteredBufferPool many = new RegisteredBufferPool(clientContext,
        "client-many", 128 * 1024, packets * 128 * 1024L,
        packets * 128 * 1024L, true);
    RegisteredBuffer[] buffers = new RegisteredBuffer[packets];
    PacketPhaseTimes times = new PacketPhaseTimes();
    UcxBlockSession session = runtime.sessions().open(SESSION, BLOCK, STAMP,
        16, "test block");
    UcxPacketReceiver receiver = new UcxPacketReceiver(session,
        runtime.landingPool(), 30_000, 4, null,
        n -> runtime.countFetched("test", n), () -> { }, c -> { }, times);
    long landingInUse = runtime.landingPool().metrics().inUseBytes();
    int landingBuffer = runtime.landingPool().bufferSize();
    try {
      for (int p = 0; p < packets; p++) {
        buffers[p] = many.acquire(1000);
        ByteBuffer b = buffers[p].buffer();
        for (int i = 0; i < CHECKSUMS + DATA; i++) {
          b.put(i, (byte) (p * 7 + i));
        }
        ByteBuffer m = ByteBuffer.allocateDirect(PacketDescriptor.MAX_LENGTH);
        short flags = p == packets - 1
            ? PacketDescriptor.FLAG_LAST_PACKET_IN_BLOCK : 0;
        new PacketDescriptor().wrap(m, 0, m.capacity()).encode(SESSION, BLOCK,
            STAMP, p, (long) p * DATA, flags, buffers[p].regionId(),
            buffers[p].regionAddress(), buffers[p].regionLength(),
            buffers[p].address(), CHECKSUMS, DATA, buffers[p].remoteKey());
        client.sendDescriptor(new PacketDescriptor().wrap(m, 0,
            PacketDescriptor.encodedLength(buffers[p].remoteKey().length)),
            30_000).get(30, TimeUnit.SECONDS);
      }
      GenericTestUtils.waitFor(() -> session.queued() == packets, 10,
          10_000);
      for (int p = 0; p < packets; p++) {
        receiver.receiveNextPacket((java.io.InputStream) null);
        if (p == 0) {
          // The next three packets' gets hold landing buffers meanwhile.
          assertEquals(landingInUse + 3L * landingBuffer,
              runtime.landingPool().metrics().inUseBytes());
        }
        // Type NULL: nothing to check in these patterns, the phase is timed.
        UcxPacketReceiver.verifyChunkedSums(receiver, DataChecksum
            .newDataChecksum(DataChecksum.Type.NULL, 512),
            receiver.getDataSlice(), receiver.getChecksumSlice(), "test");
        UcxPacketReceiver.written(receiver);
        assertEquals(p, receiver.getHeader().getSeqno());
        ByteBuffer data = receiver.getDataSlice();
        for (int i = 0; i < DATA; i += 1024) {
          assertEquals((byte) (p * 7 + CHECKSUMS + i), data.get(i));
        }
      }
      assertTrue(receiver.getHeader().isLastPacketInBlock());
      assertEquals(landingInUse, runtime.landingPool().metrics().inUseBytes());
      assertEquals(packets, times.count(PacketPhaseTimes.Phase.GET_LATENCY));
      assertEquals(packets, times.count(PacketPhaseTimes.Phase.VERIFY));
      assertEquals(packets, times.count(PacketPhaseTimes.Phase.DISK));
      assertTrue(times.nanos(PacketPhaseTimes.Phase.GET_LATENCY) > 0);
    } finally {
      receiver.close();
      for (RegisteredBuffer b : buffers) {
        if (b != null) {
          b.release();
        }
      }
      many.assertNoLeaks();
      many.close();
    }
  }

  /** A connected pair of loopback sockets, the DataNode's end as Hadoop's. */
  private static final class SocketPair implements java.io.Closeable {
    final java.nio.channels.SocketChannel upstream;
    final java.nio.channels.SocketChannel accepted;
    final org.apache.hadoop.net.SocketInputStream channel;
    final java.io.DataInputStream in;

    SocketPair() throws IOException {
      try (java.nio.channels.ServerSocketChannel server =
          java.nio.channels.ServerSocketChannel.open()) {
        server.bind(new InetSocketAddress("127.0.0.1", 0));
        upstream = java.nio.channels.SocketChannel.open(
            server.getLocalAddress());
        accepted = server.accept();
      }
      channel = new org.apache.hadoop.net.SocketInputStream(accepted, 30_000);
      in = new java.io.DataInputStream(
          new java.io.BufferedInputStream(channel, 4096));
    }

    @Override
    public void close() throws IOException {
      upstream.close();
      accepted.close();
    }
  }

  @Test(timeout = 60_000)
  public void testClosedSocketFailsTheWaitAtOnce() throws Exception {
    UcxBlockSession session = runtime.sessions().open(SESSION, BLOCK, STAMP,
        16, "test block");
    try (SocketPair socket = new SocketPair()) {
      UcxPacketReceiver receiver = new UcxPacketReceiver(session,
          runtime.landingPool(), 30_000, 4, socket.channel, n -> { },
          () -> { }, c -> { }, null);
      try {
        socket.upstream.close();
        long start = System.nanoTime();
        try {
          receiver.receiveNextPacket(socket.in);
          fail("waited on a closed socket");
        } catch (java.io.EOFException expected) {
          assertTrue(expected.getMessage(),
              expected.getMessage().contains("closed its connection"));
        }
        assertTrue("not the 30 s get timeout",
            System.nanoTime() - start < TimeUnit.SECONDS.toNanos(10));
      } finally {
        receiver.close();
      }
    }
    assertEquals(0, runtime.sessions().size());
  }

  /** A stock packet as DataStreamer writes it to the socket. */
  private static byte[] socketPacket(long seqno, byte fill, boolean last) {
    int checksums = 4;
    int data = 512;
    PacketHeader h = new PacketHeader(4 + checksums + data, seqno * data,
        seqno, last, data, false);
    ByteBuffer b = ByteBuffer.allocate(h.getSerializedSize() + checksums
        + data);
    h.putInBuffer(b);
    for (int i = 0; i < checksums + data; i++) {
      b.put(fill);
    }
    return b.array();
  }

  @Test(timeout = 60_000)
  public void testPacketsOnTheSocketAreReadAndMirroredAsStock()
      throws Exception {
    UcxBlockSession session = runtime.sessions().open(SESSION, BLOCK, STAMP,
        16, "test block");
    final int[] fallbacks = {0};
    try (SocketPair socket = new SocketPair()) {
      UcxPacketReceiver receiver = new UcxPacketReceiver(session,
          runtime.landingPool(), 30_000, 4, socket.channel, n -> { },
          () -> fallbacks[0]++, c -> { }, null);
      try {
        byte[] first = socketPacket(0, (byte) 7, false);
        byte[] second = socketPacket(1, (byte) 9, true);
        socket.upstream.write(ByteBuffer.wrap(first));
        socket.upstream.write(ByteBuffer.wrap(second));
        java.io.ByteArrayOutputStream mirrored =
            new java.io.ByteArrayOutputStream();
        java.io.DataOutputStream mirror =
            new java.io.DataOutputStream(mirrored);

        receiver.receiveNextPacket(socket.in);
        assertTrue(receiver.isOverSocket());
        assertEquals(0, receiver.getHeader().getSeqno());
        assertEquals(512, receiver.getDataSlice().remaining());
        assertEquals(7, receiver.getDataSlice().get(0));
        receiver.mirrorPacketTo(mirror);
        receiver.receiveNextPacket(socket.in);
        assertEquals(1, receiver.getHeader().getSeqno());
        assertTrue(receiver.getHeader().isLastPacketInBlock());
        assertEquals(9, receiver.getDataSlice().get(511));
        receiver.mirrorPacketTo(mirror);
        mirror.flush();

        byte[] both = new byte[first.length + second.length];
        System.arraycopy(first, 0, both, 0, first.length);
        System.arraycopy(second, 0, both, first.length, second.length);
        org.junit.Assert.assertArrayEquals(both, mirrored.toByteArray());
        assertEquals(1, fallbacks[0]);
        assertEquals("the UCX session is given up", 0,
            runtime.sessions().size());
      } finally {
        receiver.close();
      }
    }
  }
}
