package org.apache.hadoop.hdfs.server.datanode;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;

import org.hdfsrdma.hadoop.UcxCounters;
import org.hdfsrdma.hadoop.UcxTestClient;
import org.hdfsrdma.hadoop.datanode.DataNodeServer;
import org.hdfsrdma.hadoop.datanode.ReceivePathTestBase;
import org.hdfsrdma.hadoop.datanode.SocketPair;
import org.hdfsrdma.hadoop.datanode.UcxBlockSession;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.junit.Test;

/**
 * {@link UcxPacketReceiver}, Hadoop's PacketReceiver API over a
 * {@code PacketFetcher}, over real UCX with a same-JVM client whose
 * packets the DataNode reads directly: packets are presented as Hadoop's
 * socket PacketReceiver presents them, a header and checksum and data
 * slices of one heap array (checksums first), the array and the slices
 * reused while packets keep their size; nine packets of every size (from
 * none to a full 64 KiB packet, at any address of the region), heartbeats,
 * sync and last packets too. A packet after the last one fails the block,
 * which counts once as received over UCX. A block whose client sends it
 * over the socket after all (two stock packets, before any over UCX) is
 * read by a stock PacketReceiver and mirrored byte for byte, and counts as
 * received over TCP.
 *
 * <p>The rest of the receive path is tested in
 * {@code org.hdfsrdma.hadoop.datanode}, on the same set-up
 * ({@link ReceivePathTestBase}): the session's rules, the wait for a
 * descriptor, fetching by get, and allocation per packet.
 */
public class TestUcxPacketReceiver extends ReceivePathTestBase {

  @Test(timeout = 120_000)
  public void testPacketsArePresentedAsFromASocket() throws Exception {
    start();
    long blocksOverUcx = UcxCounters.blocksOverUcx();
    UcxBlockSession s = open(16);
    UcxPacketReceiver r = receiver(s, null);
    long[] tokens = new long[3];
    try {
      for (int p = 0; p < tokens.length; p++) {
        tokens[p] = client.fill(AT, CHECKSUMS + DATA, p);
      }
      announce(tokens[0]);
      byte[] array = null;
      ByteBuffer dataSlice = null;
      for (int p = 0; p < tokens.length; p++) {
        describe(client, tokens[p], p, 0);
        receive(r);
        assertPacket(r, p, p);
        // Same-host memory is read straight into the heap buffer, which
        // is reused, as are the slices while packets keep their size.
        if (p == 0) {
          array = r.getDataSlice().array();
          dataSlice = r.getDataSlice();
        }
        assertSame(array, r.getDataSlice().array());
        assertSame(dataSlice, r.getDataSlice());
      }
      assertTrue("read directly", s.region(1).isDirect());

      // A heartbeat, an hsync'ed empty packet, then the empty last packet.
      describeEmpty(-1, 0, 0);
      receive(r);
      assertEquals(-1, r.getHeader().getSeqno());
      assertEquals(0, r.getHeader().getDataLen());
      assertEquals(4, r.getHeader().getPacketLen());
      assertEquals(0, r.getDataSlice().remaining());
      assertEquals(0, r.getChecksumSlice().remaining());
      describeEmpty(3, 3L * DATA, PacketDescriptor.FLAG_SYNC_BLOCK);
      receive(r);
      assertEquals(3, r.getHeader().getSeqno());
      assertTrue(r.getHeader().getSyncBlock());
      assertFalse(r.getHeader().isLastPacketInBlock());
      describeEmpty(4, 3L * DATA, PacketDescriptor.FLAG_LAST_PACKET_IN_BLOCK);
      receive(r);
      assertEquals(4, r.getHeader().getSeqno());
      assertEquals(3L * DATA, r.getHeader().getOffsetInBlock());
      assertTrue(r.getHeader().isLastPacketInBlock());

      assertEquals(3L * (CHECKSUMS + DATA), r.fetcher().bytesFetched());
      assertEquals(6, r.fetcher().packetsReceived());
      assertEquals("the runtime counts data bytes per DataNode", 3L * DATA,
          fetched());
      try {
        receive(r);
        fail("a packet after the last one");
      } catch (IOException expected) {
        assertTrue(expected.getMessage(),
            expected.getMessage().contains("after the last packet"));
      }
    } finally {
      r.close();
      for (long t : tokens) {
        client.pool.release(t);
      }
    }
    assertEquals(blocksOverUcx + 1, UcxCounters.blocksOverUcx());
    assertEquals(0, DataNodeServer.of(runtime).sessions().size());
  }

  @Test(timeout = 120_000)
  public void testPacketsOfEverySize() throws Exception {
    start();
    UcxBlockSession s = open(16);
    UcxPacketReceiver r = receiver(s, null);
    long token = client.fill(0, client.pool.bufferSize(), 42);
    try {
      announce(token);
      int[][] sizes = {{4, 1}, {4, 512}, {0, 7}, {8, 1024}, {CHECKSUMS, DATA},
          {CHECKSUMS, DATA}, {4, 513}, {PACKET_SIZE - 1, 1}, {0, 0}};
      long offset = 0;
      for (int p = 0; p < sizes.length; p++) {
        int sums = sizes[p][0];
        int data = sizes[p][1];
        int at = p * 3; // any address in the region
        client.describe(session, BLOCK, STAMP, p, offset, 0,
            sums + data == 0 ? 0 : UcxTestClient.sessionRegionId(
                client.pool.regionId(token)),
            sums + data == 0 ? 0 : client.pool.address(token) + at, sums,
            data);
        receive(r);
        assertEquals(offset, r.getHeader().getOffsetInBlock());
        assertEquals(data, r.getHeader().getDataLen());
        assertEquals(sums, r.getChecksumSlice().remaining());
        assertEquals(data, r.getDataSlice().remaining());
        for (int i = 0; i < sums; i++) {
          assertEquals(UcxTestClient.pattern(42, at + i),
              r.getChecksumSlice().get(i));
        }
        for (int i = 0; i < data; i++) {
          assertEquals(UcxTestClient.pattern(42, at + sums + i),
              r.getDataSlice().get(i));
        }
        offset += data;
      }
      assertEquals(offset, fetched());
    } finally {
      r.close();
      client.pool.release(token);
    }
  }

  @Test(timeout = 60_000)
  public void testPacketsOnTheSocketAreReadAndMirroredAsStock()
      throws Exception {
    start();
    long overTcp = UcxCounters.blocksOverTcp();
    long overUcx = UcxCounters.blocksOverUcx();
    UcxBlockSession s = open(16);
    try (SocketPair socket = new SocketPair()) {
      UcxPacketReceiver r = receiver(s, socket);
      try {
        byte[] first = socketPacket(0, (byte) 7, false);
        byte[] second = socketPacket(1, (byte) 9, true);
        socket.upstream.write(ByteBuffer.wrap(first));
        socket.upstream.write(ByteBuffer.wrap(second));
        ByteArrayOutputStream mirrored = new ByteArrayOutputStream();
        DataOutputStream mirror = new DataOutputStream(mirrored);

        r.receiveNextPacket(socket.in);
        assertTrue(r.isOverSocket());
        assertEquals(0, r.getHeader().getSeqno());
        assertEquals(512, r.getDataSlice().remaining());
        assertEquals(4, r.getChecksumSlice().remaining());
        assertEquals(7, r.getDataSlice().get(0));
        r.mirrorPacketTo(mirror);
        r.receiveNextPacket(socket.in);
        assertEquals(1, r.getHeader().getSeqno());
        assertTrue(r.getHeader().isLastPacketInBlock());
        assertEquals(9, r.getDataSlice().get(511));
        r.mirrorPacketTo(mirror);
        mirror.flush();

        byte[] both = new byte[first.length + second.length];
        System.arraycopy(first, 0, both, 0, first.length);
        System.arraycopy(second, 0, both, first.length, second.length);
        assertArrayEquals("mirrored byte for byte", both,
            mirrored.toByteArray());
        assertEquals("nothing over UCX", 0, r.fetcher().bytesFetched());
        assertEquals(0, fetched());
      } finally {
        r.close();
      }
    }
    assertEquals(0, DataNodeServer.of(runtime).sessions().size());
    assertEquals(overTcp + 1, UcxCounters.blocksOverTcp());
    assertEquals(overUcx, UcxCounters.blocksOverUcx());
  }
}
