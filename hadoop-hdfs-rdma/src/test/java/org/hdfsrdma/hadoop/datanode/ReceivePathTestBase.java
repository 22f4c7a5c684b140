package org.hdfsrdma.hadoop.datanode;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;
import static org.junit.Assume.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.Random;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.apache.hadoop.hdfs.server.datanode.UcxPacketReceiver;
import org.apache.hadoop.hdfs.server.datanode.UcxReceiverHooks;
import org.hdfsrdma.hadoop.UcxTestClient;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Before;

/**
 * What the receive path's tests share: this JVM's UCX runtime with one
 * DataNode's side ({@link #start}, or on UCX's tcp transport with a client
 * of its own, {@link #startTcp}), a client that sends as
 * {@code UcxStreamerState} does ({@link UcxTestClient}: an endpoint made
 * through the endpoint cache, hello first, region announcements and 72-byte
 * descriptors from registered memory), a block session opened in the real
 * {@link SessionTable} under a new id per block, and a receiver that reads
 * it on the test's thread through a {@link PacketFetcher} and Hadoop's
 * PacketReceiver API ({@link UcxPacketReceiver}). Each test ends with every
 * session closed.
 */
public abstract class ReceivePathTestBase {

  protected static final long BLOCK = 1073741825L;
  protected static final long STAMP = 1001L;
  /** The client's write packet size, which the session agrees to. */
  protected static final int PACKET_SIZE = 64 * 1024;
  /** A full packet of Hadoop's defaults: 126 chunks of 512 + 4 bytes. */
  protected static final int CHUNKS = 126;
  protected static final int CHECKSUMS = 4 * CHUNKS;
  protected static final int DATA = 512 * CHUNKS;
  /** Where UcxDFSPacket puts a packet's checksums in its buffer. */
  protected static final int AT = PacketHeader.PKT_MAX_HEADER_LEN;
  protected static final String DN = "127.0.0.1:50010";

  protected final Random random = new Random();
  protected Configuration conf;
  protected UcxRuntime runtime;
  /** The DataNode receiving, and one it feeds (chain). */
  protected UcxDataNode dataNode;
  protected UcxDataNode fedDataNode;
  protected UcxTestClient client;
  protected UcxTestClient intruder;
  protected long session;

  @Before
  public void setUp() {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    UcxRuntime.shutdown();
    conf = new Configuration();
    conf.setLong(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_GET_TIMEOUT_MS_KEY,
        30_000);
  }

  @After
  public void tearDown() {
    try {
      if (runtime != null) {
        assertEquals("every session closed", 0,
            DataNodeServer.of(runtime).sessions().size());
      }
    } finally {
      // Each side closes its endpoints while the other still answers, so
      // that no close waits out a flush to a peer that is gone.
      if (runtime != null) {
        DataNodeInternals.closeConnections(runtime);
      }
      for (UcxDataNode d : new UcxDataNode[] {dataNode, fedDataNode}) {
        if (d != null) {
          d.stop();
        }
      }
      if (intruder != null) {
        intruder.close();
      }
      if (client != null) {
        client.close();
      }
      UcxRuntime.shutdown();
    }
  }

  /** Starts the JVM's runtime with {@link #conf} and a same-JVM client. */
  protected void start() throws Exception {
    runtime = UcxRuntime.get(conf);
    dataNode = UcxDataNode.start(new Object(), DN, conf, runtime);
    client = UcxTestClient.sameJvm(runtime, PACKET_SIZE);
  }

  /** The runtime and a client of its own, both on UCX's tcp transport. */
  protected void startTcp(boolean allowEmulatedGets) throws Exception {
    conf.set(HdfsRdmaConfigKeys.DFS_RDMA_UCX_TLS_KEY, "tcp");
    conf.setBoolean(HdfsRdmaConfigKeys.DFS_RDMA_UCX_ALLOW_TCP_KEY, true);
    conf.setBoolean(
        HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ALLOW_EMULATED_GETS_KEY,
        allowEmulatedGets);
    conf.setInt(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_GETS_IN_FLIGHT_KEY, 4);
    runtime = UcxRuntime.get(conf);
    dataNode = UcxDataNode.start(new Object(), DN, conf, runtime);
    client = UcxTestClient.separate("tcp", runtime.workerAddress(),
        AT + PACKET_SIZE, 8);
  }

  /**
   * Opens a block's session under a new id ({@link #session}), as every
   * pipeline has its own: a message still in flight for an earlier one
   * must not count for it.
   */
  protected UcxBlockSession open(int maxQueued) throws IOException {
    do {
      session = random.nextLong();
    } while (session == 0);
    return DataNodeServer.of(runtime).sessions().open(session, BLOCK, STAMP,
        PACKET_SIZE,
        maxQueued, 64, "test block " + Long.toHexString(session));
  }

  /** A receiver on this thread, reading {@code s}, watching {@code socket}. */
  protected UcxPacketReceiver receiver(UcxBlockSession s, SocketPair socket) {
    return receiver(dataNode, s, socket);
  }

  /** The same for DataNode {@code d}. */
  protected static UcxPacketReceiver receiver(UcxDataNode d, UcxBlockSession s,
      SocketPair socket) {
    return new UcxPacketReceiver(new PacketFetcher(s, d,
        socket == null ? null : UcxReceiverHooks.watchable(socket.channel),
        false), null);
  }

  protected static void receive(UcxPacketReceiver r) throws IOException {
    r.receiveNextPacket((InputStream) null);
  }

  /** Describes a full packet of {@code token} as the client does. */
  protected void describe(UcxTestClient c, long token, long seqno, int flags)
      throws IOException {
    c.describe(session, BLOCK, STAMP, seqno, seqno * DATA, flags,
        UcxTestClient.sessionRegionId(c.pool.regionId(token)),
        c.pool.address(token) + AT, CHECKSUMS, DATA);
  }

  /** Describes a packet without bytes (heartbeat, empty last or sync). */
  protected void describeEmpty(long seqno, long offsetInBlock, int flags)
      throws IOException {
    client.describe(session, BLOCK, STAMP, seqno, offsetInBlock, flags, 0,
        0, 0, 0);
  }

  protected void announce(long token) throws IOException {
    client.announce(session, UcxTestClient.sessionRegionId(
        client.pool.regionId(token)), token);
  }

  protected long fetched() {
    return dataNode.metrics().dataBytesFetched();
  }

  /** Checks the presented packet holds the pattern {@code seed}. */
  protected static void assertPacket(UcxPacketReceiver r, long seqno,
      long seed) {
    PacketHeader h = r.getHeader();
    assertEquals(seqno, h.getSeqno());
    assertEquals(seqno * DATA, h.getOffsetInBlock());
    assertEquals(DATA, h.getDataLen());
    assertEquals(4 + CHECKSUMS + DATA, h.getPacketLen());
    assertFalse(h.isLastPacketInBlock());
    assertFalse(h.getSyncBlock());
    ByteBuffer sums = r.getChecksumSlice();
    ByteBuffer data = r.getDataSlice();
    assertEquals(0, sums.position());
    assertEquals(CHECKSUMS, sums.remaining());
    assertEquals(0, data.position());
    assertEquals(DATA, data.remaining());
    for (int i = 0; i < CHECKSUMS; i++) {
      if (sums.get(i) != UcxTestClient.pattern(seed, i)) {
        fail("checksum byte " + i + " of packet " + seqno);
      }
    }
    for (int i = 0; i < DATA; i++) {
      if (data.get(i) != UcxTestClient.pattern(seed, CHECKSUMS + i)) {
        fail("data byte " + i + " of packet " + seqno);
      }
    }
    // BlockReceiver reads and writes the slices through array(): one heap
    // array, checksums first, as Hadoop's PacketReceiver lays them out.
    assertTrue(sums.hasArray() && data.hasArray());
    assertSame(sums.array(), data.array());
    assertEquals(CHECKSUMS, data.arrayOffset() - sums.arrayOffset());
  }

  /** A stock packet as DataStreamer writes it to the socket. */
  protected static byte[] socketPacket(long seqno, byte fill, boolean last) {
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
}
