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
        4, null, n -> runtime.countFetched("test", n), () -> { }, null);
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
}
