package org.apache.hadoop.hdfs.server.datanode;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;
import static org.junit.Assume.assumeTrue;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.apache.hadoop.net.SocketInputStream;
import org.apache.hadoop.test.GenericTestUtils;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.hadoop.UcxCounters;
import org.hdfsrdma.hadoop.UcxTestClient;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.datanode.DataNodeInternals;
import org.hdfsrdma.hadoop.datanode.DataNodeServer;
import org.hdfsrdma.hadoop.datanode.PacketFetcher;
import org.hdfsrdma.hadoop.datanode.PacketForwarder;
import org.hdfsrdma.hadoop.datanode.SessionTable;
import org.hdfsrdma.hadoop.datanode.UcxBlockSession;
import org.hdfsrdma.hadoop.datanode.UcxDataNode;
import org.hdfsrdma.hadoop.datanode.UcxPathException;
import org.hdfsrdma.hadoop.metrics.PacketPhaseTimes.Phase;
import org.hdfsrdma.hadoop.metrics.PacketPhaseTimes;
import org.hdfsrdma.hadoop.metrics.UcxDataNodeMetrics;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.RemoteRegion;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

import com.google.common.util.concurrent.Uninterruptibles;

/**
 * The DataNode's UCX packet source over real UCX, fed by a real client-side
 * sender ({@link UcxTestClient}: an endpoint made through the endpoint
 * cache, hello first, region announcements and 72-byte descriptors from
 * registered memory) into this JVM's real {@link SessionTable} and
 * {@link UcxBlockSession}: packets are presented as Hadoop's socket
 * PacketReceiver presents them; every descriptor that breaks the session's
 * rules fails the block at once with an IOException saying why, and
 * nothing of it is read; the block's socket is watched while waiting; on
 * tcp the packets are fetched with gets, ahead of the reader, into landing
 * buffers that all come back; and the same-host path allocates nothing per
 * packet.
 *
 * <p>The sender sends as {@code UcxStreamerState} does; the receiver reads
 * through a {@code PacketFetcher}. Packets of every size are presented with
 * Hadoop's header and checksum and data slices of one reused heap array,
 * heartbeats, sync and last packets too.
 *
 * <p>The rules, each broken in turn (the IOException names the block and the
 * rule, and the refusal is counted): a seqno that does not increase, a packet
 * after the last one, a descriptor outside its region or in an unannounced one,
 * a region announced twice or with bounds beyond its shared segment, the wrong
 * block or generation stamp, a packet larger than agreed, more than
 * max-queued-packets unread, a descriptor from another endpoint than the
 * session's. Messages for no open session are dropped without harm to the
 * block.
 *
 * <p>The watched socket: its end of stream fails the wait at once; packet bytes
 * on it before any UCX packet switch the block to stock reading and mirroring,
 * byte for byte, and after UCX packets they fail it. A wait with no packet
 * times out after the get timeout.
 *
 * <p>Over tcp, with {@code dfs.datanode.rdma.allow-emulated-gets} (without it
 * the region is refused), packets are fetched by gets three ahead of the
 * reader, and every landing buffer comes back, also when the block is given up
 * with gets in flight; the wake-up race runs 150 blocks. The allocation tests
 * allow under 8 bytes per packet over 1,000 packets, same host and by get
 * (measured: 0 both ways).
 */
public class TestUcxPacketReceiver {

  private static final long BLOCK = 1073741825L;
  private static final long STAMP = 1001L;
  /** The client's write packet size, which the session agrees to. */
  private static final int PACKET_SIZE = 64 * 1024;
  /** A full packet of Hadoop's defaults: 126 chunks of 512 + 4 bytes. */
  private static final int CHUNKS = 126;
  private static final int CHECKSUMS = 4 * CHUNKS;
  private static final int DATA = 512 * CHUNKS;
  /** Where UcxDFSPacket puts a packet's checksums in its buffer. */
  private static final int AT = PacketHeader.PKT_MAX_HEADER_LEN;
  private static final String DN = "127.0.0.1:50010";

  private final Random random = new Random();
  private Configuration conf;
  private UcxRuntime runtime;
  /** The DataNode receiving, and one it feeds (chain). */
  private UcxDataNode dataNode;
  private UcxDataNode fedDataNode;
  private UcxTestClient client;
  private UcxTestClient intruder;
  private long session;

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
  private void start() throws Exception {
    runtime = UcxRuntime.get(conf);
    dataNode = UcxDataNode.start(new Object(), DN, conf, runtime);
    client = UcxTestClient.sameJvm(runtime, PACKET_SIZE);
  }

  /**
   * Opens a block's session under a new id ({@link #session}), as every
   * pipeline has its own: a message still in flight for an earlier one
   * must not count for it.
   */
  private UcxBlockSession open(int maxQueued) throws IOException {
    do {
      session = random.nextLong();
    } while (session == 0);
    return DataNodeServer.of(runtime).sessions().open(session, BLOCK, STAMP,
        PACKET_SIZE,
        maxQueued, 64, "test block " + Long.toHexString(session));
  }

  /** A receiver on this thread, reading {@code s}, watching {@code socket}. */
  private UcxPacketReceiver receiver(UcxBlockSession s, SocketPair socket) {
    return receiver(dataNode, s, socket);
  }

  /** The same for DataNode {@code d}. */
  private static UcxPacketReceiver receiver(UcxDataNode d, UcxBlockSession s,
      SocketPair socket) {
    return new UcxPacketReceiver(new PacketFetcher(s, d,
        socket == null ? null : UcxDataNodeWrite.watchable(socket.channel)),
        null);
  }

  private static void receive(UcxPacketReceiver r) throws IOException {
    r.receiveNextPacket((InputStream) null);
  }

  /** Describes a full packet of {@code token} as the client does. */
  private void describe(UcxTestClient c, long token, long seqno, int flags)
      throws IOException {
    c.describe(session, BLOCK, STAMP, seqno, seqno * DATA, flags,
        UcxTestClient.sessionRegionId(c.pool.regionId(token)),
        c.pool.address(token) + AT, CHECKSUMS, DATA);
  }

  /** Describes a packet without bytes (heartbeat, empty last or sync). */
  private void describeEmpty(long seqno, long offsetInBlock, int flags)
      throws IOException {
    client.describe(session, BLOCK, STAMP, seqno, offsetInBlock, flags, 0,
        0, 0, 0);
  }

  private void announce(long token) throws IOException {
    client.announce(session, UcxTestClient.sessionRegionId(
        client.pool.regionId(token)), token);
  }

  private long fetched() {
    return dataNode.metrics().dataBytesFetched();
  }

  /** Checks the presented packet holds the pattern {@code seed}. */
  private static void assertPacket(UcxPacketReceiver r, long seqno,
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

  // ------------------------------------------------------------ packets

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
  public void testSessionsCannotCollide() throws Exception {
    start();
    try (UcxBlockSession s = open(16)) {
      try {
        DataNodeServer.of(runtime).sessions().open(session, BLOCK + 1, STAMP,
            PACKET_SIZE, 16,
            64, "second");
        fail("two sessions with one id");
      } catch (IOException expected) {
        assertTrue(expected.getMessage(),
            expected.getMessage().contains(s.description()));
      }
      try {
        DataNodeServer.of(runtime).sessions().open(0, BLOCK, STAMP,
            PACKET_SIZE, 16, 64, "zero");
        fail("session id 0");
      } catch (IOException expected) {
      }
      assertEquals(1, DataNodeServer.of(runtime).sessions().size());
    }
    assertEquals(0, DataNodeServer.of(runtime).sessions().size());
  }

  // ------------------------------------------------- descriptors refused

  /**
   * Opens a session, receives one good packet (binding the session to the
   * client's endpoint), runs {@code breakRule}, and expects the receiver's
   * next packet to fail at once with an IOException naming the block and
   * containing {@code expected}, with nothing more read or counted.
   */
  private void assertRefused(String expected, BreakRule breakRule)
      throws Exception {
    UcxBlockSession s = open(8);
    UcxPacketReceiver r = receiver(s, null);
    long good = client.fill(AT, CHECKSUMS + DATA, 1);
    long other = client.fill(AT, CHECKSUMS + DATA, 2);
    try {
      announce(good);
      describe(client, good, 5, 0);
      receive(r);
      assertPacket(r, 5, 1);
      long fetchedBefore = fetched();
      long bytesBefore = r.fetcher().bytesFetched();
      long rejectedBefore = runtime.metrics().rejectedMessages();

      breakRule.run(s, good, other);
      long start = System.nanoTime();
      try {
        receive(r);
        fail("the receiver presented " + r.getHeader() + " after: "
            + expected);
      } catch (IOException e) {
        assertTrue("'" + e.getMessage() + "' lacks '" + expected + "'",
            e.getMessage().contains(expected));
        assertTrue(e.getMessage(),
            e.getMessage().contains(s.description()));
        assertTrue("a UCX failure, for the client to go on over TCP: " + e,
            e instanceof UcxPathException);
        assertFalse("failed by the timeout, not the refusal: " + e,
            e.getMessage().contains("arrived over UCX in"));
      }
      assertTrue("failed at once", System.nanoTime() - start
          < TimeUnit.SECONDS.toNanos(10));
      assertEquals("nothing more fetched", fetchedBefore, fetched());
      assertEquals(bytesBefore, r.fetcher().bytesFetched());
      assertEquals(1, r.fetcher().packetsReceived());
      assertTrue("counted as refused",
          runtime.metrics().rejectedMessages() > rejectedBefore);
      // The block stays failed: a good packet now is refused too.
      long refused = runtime.metrics().rejectedMessages();
      describe(client, good, 6, 0);
      GenericTestUtils.waitFor(
          () -> runtime.metrics().rejectedMessages() > refused,
          10, 30_000);
      try {
        receive(r);
        fail("a failed block presented a packet");
      } catch (IOException e) {
        assertTrue(e.getMessage(), e.getMessage().contains(expected));
      }
      assertEquals(fetchedBefore, fetched());
    } finally {
      r.close();
      client.pool.release(good);
      client.pool.release(other);
    }
  }

  private interface BreakRule {
    void run(UcxBlockSession s, long good, long other) throws Exception;
  }

  @Test(timeout = 120_000)
  public void testOutOfOrderSeqnoFailsTheBlock() throws Exception {
    start();
    assertRefused("packet 4 after packet 5",
        (s, good, other) -> describe(client, other, 4, 0));
    assertRefused("packet 5 after packet 5",
        (s, good, other) -> describe(client, other, 5, 0));
  }

  @Test(timeout = 120_000)
  public void testPacketAfterTheLastFailsTheBlock() throws Exception {
    start();
    assertRefused("packet 7 after the last packet", (s, good, other) -> {
      describeEmpty(6, 6L * DATA, PacketDescriptor.FLAG_LAST_PACKET_IN_BLOCK);
      describe(client, other, 7, 0);
      // The last packet itself is good: a receiver that took it before
      // packet 7 came would rightly present it. Once packet 7 failed the
      // block, nothing more is presented, the last packet included.
      GenericTestUtils.waitFor(() -> s.failure() != null, 10, 30_000);
    });
  }

  @Test(timeout = 120_000)
  public void testDescriptorOutsideItsRegionFailsTheBlock() throws Exception {
    start();
    assertRefused("lies outside", (s, good, other) -> {
      int region = client.pool.regionId(good);
      long end = client.pool.regionAddress(region)
          + client.pool.regionLength(region);
      // The last bytes of the packet past the region's end.
      client.describe(session, BLOCK, STAMP, 6, 6L * DATA, 0,
          UcxTestClient.sessionRegionId(region), end - DATA, CHECKSUMS, DATA);
    });
    assertRefused("lies outside", (s, good, other) -> {
      int region = client.pool.regionId(good);
      client.describe(session, BLOCK, STAMP, 6, 6L * DATA, 0,
          UcxTestClient.sessionRegionId(region),
          client.pool.regionAddress(region) - 1, CHECKSUMS, DATA);
    });
  }

  @Test(timeout = 120_000)
  public void testUnannouncedRegionFailsTheBlock() throws Exception {
    start();
    assertRefused("region 9, which was not announced",
        (s, good, other) -> client.describe(session, BLOCK, STAMP, 6,
            6L * DATA, 0, 9, client.pool.address(other) + AT, CHECKSUMS,
            DATA));
    assertRefused("region 0, which was not announced",
        (s, good, other) -> client.describe(session, BLOCK, STAMP, 6,
            6L * DATA, 0, 0, client.pool.address(other) + AT, CHECKSUMS,
            DATA));
  }

  @Test(timeout = 120_000)
  public void testHostileAnnouncementsFailTheBlock() throws Exception {
    start();
    assertRefused("announced twice",
        (s, good, other) -> announce(other));
    // Bounds beyond the shared segment the key names: the kernel's size
    // of the segment says no before UCX sees the key.
    assertRefused("does not lie inside", (s, good, other) -> {
      int region = client.pool.regionId(good);
      client.announceRaw(session, 7, client.pool.regionAddress(region),
          2 * client.pool.regionLength(region),
          client.pool.regionKey(region));
    });
  }

  @Test(timeout = 120_000)
  public void testWrongBlockOrGenerationStampFailsTheBlock()
      throws Exception {
    start();
    assertRefused("descriptor for block " + (BLOCK + 1) + "_" + STAMP,
        (s, good, other) -> client.describe(session, BLOCK + 1, STAMP, 6,
            6L * DATA, 0, 1, client.pool.address(good) + AT, CHECKSUMS,
            DATA));
    assertRefused("descriptor for block " + BLOCK + "_" + (STAMP - 1),
        (s, good, other) -> client.describe(session, BLOCK, STAMP - 1, 6,
            6L * DATA, 0, 1, client.pool.address(good) + AT, CHECKSUMS,
            DATA));
  }

  @Test(timeout = 120_000)
  public void testOversizedPacketFailsTheBlock() throws Exception {
    start();
    assertRefused("more than the agreed " + PACKET_SIZE,
        (s, good, other) -> client.describe(session, BLOCK, STAMP, 6,
            6L * DATA, 0, 1, client.pool.address(good), 4,
            PACKET_SIZE - 3));
    assertRefused("heartbeat with", (s, good, other) -> client.describe(
        session, BLOCK, STAMP, -1, 0, 0, 1, client.pool.address(good), 4,
        512));
  }

  @Test(timeout = 120_000)
  public void testMoreThanMaxQueuedPacketsFailsTheBlock() throws Exception {
    start();
    UcxBlockSession s = open(8);
    UcxPacketReceiver r = receiver(s, null);
    long token = client.fill(AT, CHECKSUMS + DATA, 3);
    try {
      announce(token);
      for (int p = 0; p < 9; p++) {
        describe(client, token, p, 0);
      }
      GenericTestUtils.waitFor(() -> s.failure() != null, 10, 30_000);
      assertEquals(8, s.queued());
      try {
        receive(r);
        fail("presented a packet of an overrun block");
      } catch (IOException e) {
        assertTrue(e.getMessage(),
            e.getMessage().contains("more than 8 unread packets"));
      }
      assertEquals("nothing read", 0, r.fetcher().bytesFetched());
      assertEquals(0, fetched());
    } finally {
      r.close();
      client.pool.release(token);
    }
  }

  /**
   * A session belongs to the endpoint its first message came on: a
   * descriptor for it from any other endpoint (which could only come from
   * a peer that learned the session id) fails the block, and its packet is
   * not read.
   */
  @Test(timeout = 120_000)
  public void testDescriptorFromAnotherEndpointFailsTheBlock()
      throws Exception {
    start();
    intruder = UcxTestClient.separate("^tcp", runtime.workerAddress(),
        AT + PACKET_SIZE, 1);
    assertRefused("another UCX endpoint", (s, good, other) ->
        // Points at the client's own packet, in the region the session
        // knows: only the endpoint is wrong.
        intruder.describe(session, BLOCK, STAMP, 6, 6L * DATA, 0, 1,
            client.pool.address(good) + AT, CHECKSUMS, DATA));
  }

  @Test(timeout = 120_000)
  public void testStrangersAreDroppedAndTheBlockGoesOn() throws Exception {
    start();
    UcxBlockSession s = open(8);
    UcxPacketReceiver r = receiver(s, null);
    long token = client.fill(AT, CHECKSUMS + DATA, 4);
    try {
      announce(token);
      long rejected = runtime.metrics().rejectedMessages();
      // For no open session: dropped, counted, nobody's block fails.
      client.describe(session + 1, BLOCK, STAMP, 0, 0, 0, 1,
          client.pool.address(token) + AT, CHECKSUMS, DATA);
      client.announce(session - 1, 1, token);
      GenericTestUtils.waitFor(
          () -> runtime.metrics().rejectedMessages() == rejected + 2, 10,
          30_000);
      assertNull(s.failure());
      assertEquals(0, s.queued());
      describe(client, token, 0, 0);
      receive(r);
      assertPacket(r, 0, 4);
      assertEquals(DATA, fetched());
    } finally {
      r.close();
      client.pool.release(token);
    }
  }

  // -------------------------------------------------------------- socket

  /** A connected pair of loopback sockets, the DataNode's end as Hadoop's. */
  private static final class SocketPair implements Closeable {
    final SocketChannel upstream;
    final SocketChannel accepted;
    final SocketInputStream channel;
    final DataInputStream in;

    SocketPair() throws IOException {
      try (ServerSocketChannel server = ServerSocketChannel.open()) {
        server.bind(new InetSocketAddress("127.0.0.1", 0));
        upstream = SocketChannel.open(server.getLocalAddress());
        accepted = server.accept();
      }
      // As DataXceiver's: Hadoop's timeout stream (non-blocking channel).
      channel = new SocketInputStream(accepted, 30_000);
      in = new DataInputStream(new BufferedInputStream(channel, 4096));
    }

    @Override
    public void close() throws IOException {
      upstream.close();
      accepted.close();
    }
  }

  @Test(timeout = 60_000)
  public void testClosedSocketFailsTheWaitAtOnce() throws Exception {
    start();
    UcxBlockSession s = open(16);
    long token = client.fill(AT, CHECKSUMS + DATA, 5);
    try (SocketPair socket = new SocketPair()) {
      UcxPacketReceiver r = receiver(s, socket);
      try {
        announce(token);
        describe(client, token, 0, 0);
        r.receiveNextPacket(socket.in);
        assertPacket(r, 0, 5);
        socket.upstream.close();
        long start = System.nanoTime();
        try {
          r.receiveNextPacket(socket.in);
          fail("waited on a closed socket");
        } catch (EOFException expected) {
          assertTrue(expected.getMessage(),
              expected.getMessage().contains("closed its connection"));
          assertTrue(expected.getMessage(),
              expected.getMessage().contains(s.description()));
        }
        assertTrue("not the 30 s get timeout",
            System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5));
      } finally {
        r.close();
      }
    } finally {
      client.pool.release(token);
    }
    assertEquals(0, DataNodeServer.of(runtime).sessions().size());
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

  @Test(timeout = 60_000)
  public void testSocketBytesAfterUcxPacketsFailTheBlock() throws Exception {
    start();
    UcxBlockSession s = open(16);
    long token = client.fill(AT, CHECKSUMS + DATA, 6);
    try (SocketPair socket = new SocketPair()) {
      UcxPacketReceiver r = receiver(s, socket);
      try {
        announce(token);
        describe(client, token, 0, 0);
        r.receiveNextPacket(socket.in);
        assertPacket(r, 0, 6);
        socket.upstream.write(ByteBuffer.wrap(socketPacket(1, (byte) 1,
            false)));
        try {
          r.receiveNextPacket(socket.in);
          fail("switched to the socket in the middle of a UCX block");
        } catch (IOException expected) {
          assertTrue(expected.getMessage(), expected.getMessage().contains(
              "packet bytes on the socket"));
        }
        assertFalse(r.isOverSocket());
      } finally {
        r.close();
      }
    } finally {
      client.pool.release(token);
    }
  }

  @Test(timeout = 60_000)
  public void testNoPacketTimesOut() throws Exception {
    conf.setLong(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_GET_TIMEOUT_MS_KEY,
        700);
    start();
    // Without and with a socket to watch (both silent).
    for (boolean watched : new boolean[] {false, true}) {
      UcxBlockSession s = open(16);
      try (SocketPair socket = new SocketPair()) {
        UcxPacketReceiver r = receiver(s, watched ? socket : null);
        try {
          long start = System.nanoTime();
          try {
            r.receiveNextPacket(socket.in);
            fail("a packet out of nowhere");
          } catch (UcxPathException expected) {
            assertTrue(expected.getMessage(), expected.getMessage().contains(
                "no packet for " + s.description()));
            assertTrue(expected.getMessage(),
                expected.getMessage().contains("in 700 ms"));
          }
          long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
          assertTrue("timed out after " + ms + " ms", ms >= 650 && ms < 10_000);
        } finally {
          r.close();
        }
      }
    }
  }

  // ----------------------------------------------------- gets over tcp

  /** The runtime and a client of its own, both on UCX's tcp transport. */
  private void startTcp(boolean allowEmulatedGets) throws Exception {
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

  @Test(timeout = 120_000)
  public void testGetsOverTcpRunAheadAndReturnTheirLandingBuffers()
      throws Exception {
    conf.setBoolean(
        HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_PACKET_TIMERS_ENABLED_KEY, true);
    startTcp(true);
    final int packets = 8;
    PacketPhaseTimes times = dataNode.metrics().times();
    RegisteredBufferPool landing = runtime.pools().landing();
    long landingInUse = landing.metrics().inUseBytes();
    UcxBlockSession s = open(16);
    UcxPacketReceiver r = receiver(s, null);
    long[] tokens = new long[packets];
    try {
      for (int p = 0; p < packets; p++) {
        tokens[p] = client.fill(AT, CHECKSUMS + DATA, 100 + p);
      }
      announce(tokens[0]);
      for (int p = 0; p < packets; p++) {
        describe(client, tokens[p], p, 0);
      }
      GenericTestUtils.waitFor(() -> s.queued() == packets, 10, 30_000);
      RemoteRegion region = s.region(1);
      assertNotNull(region);
      assertFalse("tcp: read with gets, not directly", region.isDirect());
      for (int p = 0; p < packets; p++) {
        receive(r);
        if (p == 0) {
          // The next three packets' gets are in flight, each holding a
          // landing buffer.
          assertEquals(landingInUse + 3L * landing.bufferSize(),
              landing.metrics().inUseBytes());
        }
        assertPacket(r, p, 100 + p);
        UcxPacketReceiver.verifyChunkedSums(r, DataChecksum.newDataChecksum(
            DataChecksum.Type.NULL, 512), r.getDataSlice(),
            r.getChecksumSlice(), "test");
        UcxPacketReceiver.written(r);
      }
      assertEquals("every landing buffer back", landingInUse,
          landing.metrics().inUseBytes());
      assertEquals((long) packets * DATA, fetched());
      assertEquals(packets, times.count(Phase.GET_WAIT));
      assertEquals(packets, times.count(Phase.COPY));
      assertEquals(packets, times.count(Phase.VERIFY));
      assertEquals(packets, times.count(Phase.DISK));
      assertEquals(packets, times.count(Phase.DESCRIPTOR_WAIT));
      assertNotNull("gets went over this DataNode's own endpoint back",
          DataNodeInternals.endpointBack(runtime, s.boundEndpoint()));
    } finally {
      r.close();
      for (long t : tokens) {
        client.pool.release(t);
      }
    }
    assertEquals(landingInUse, landing.metrics().inUseBytes());
  }

  /**
   * A receiver asleep in the worker's event wait for a get is woken when
   * another thread (the worker's progress thread sweeping) completes that
   * get: no wait lasts anywhere near the get timeout. Many blocks, because
   * the sweep must win a race: a lost wake-up stalled about one block in
   * thirty until UCX's next keepalive, 20 s later.
   */
  @Test(timeout = 300_000)
  public void testGetWaitsEndWhenTheGetCompletes() throws Exception {
    startTcp(true);
    final int blocks = 150;
    final int packets = 8;
    long[] tokens = new long[packets];
    long slowest = 0;
    try {
      for (int p = 0; p < packets; p++) {
        tokens[p] = client.fill(AT, CHECKSUMS + DATA, 300 + p);
      }
      for (int b = 0; b < blocks; b++) {
        UcxBlockSession s = open(16);
        UcxPacketReceiver r = receiver(s, null);
        try {
          announce(tokens[0]);
          for (int p = 0; p < packets; p++) {
            describe(client, tokens[p], p, 0);
          }
          for (int p = 0; p < packets; p++) {
            long start = System.nanoTime();
            receive(r);
            slowest = Math.max(slowest, System.nanoTime() - start);
            assertEquals(p, r.getHeader().getSeqno());
          }
        } finally {
          r.close();
        }
      }
    } finally {
      for (long t : tokens) {
        client.pool.release(t);
      }
    }
    assertEquals((long) blocks * packets * DATA, fetched());
    assertTrue("a packet took " + TimeUnit.NANOSECONDS.toMillis(slowest)
        + " ms", slowest < TimeUnit.SECONDS.toNanos(5));
  }

  /**
   * A peer keeps its connection for its next block and greets only a new
   * one, so a DataNode must not forget a connection that opened blocks
   * because it idled: the next block would have no endpoint back for its
   * gets (a chain between hosts stalled for the get timeout whenever a
   * feeder came back after the sweep). A connection that never opened a
   * block is still closed after the unbound timeout.
   */
  @Test(timeout = 120_000)
  public void testAConnectionThatOpenedBlocksOutlivesTheUnboundTimeout()
      throws Exception {
    conf.setLong(
        HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_UNBOUND_CONNECTION_TIMEOUT_MS_KEY,
        200);
    startTcp(true);
    intruder = UcxTestClient.separate("tcp", runtime.workerAddress(),
        AT + PACKET_SIZE, 1);
    GenericTestUtils.waitFor(
        () -> DataNodeServer.of(runtime).clientConnections() == 2, 10,
        30_000);
    long[] tokens = new long[2];
    try {
      for (int p = 0; p < tokens.length; p++) {
        tokens[p] = client.fill(AT, CHECKSUMS + DATA, 400 + p);
      }
      long connection = -1;
      for (int block = 0; block < 2; block++) {
        UcxBlockSession s = open(16);
        UcxPacketReceiver r = receiver(s, null);
        try {
          announce(tokens[0]);
          for (int p = 0; p < tokens.length; p++) {
            describe(client, tokens[p], p, 0);
          }
          for (int p = 0; p < tokens.length; p++) {
            receive(r);
            assertPacket(r, p, 400 + p);
            UcxPacketReceiver.written(r);
          }
          assertFalse(s.region(1).isDirect());
          if (block == 0) {
            connection = s.boundEndpoint();
          } else {
            assertEquals("the same connection", connection,
                s.boundEndpoint());
          }
        } finally {
          r.close();
        }
        // Idle well past the timeout, then the sweep.
        final long idleFrom = System.nanoTime();
        GenericTestUtils.waitFor(() -> System.nanoTime() - idleFrom
            > TimeUnit.MILLISECONDS.toNanos(600), 10, 30_000);
        DataNodeInternals.sweepConnections(runtime);
        assertTrue("the connection that opened a block is kept",
            DataNodeInternals.knowsConnection(runtime, connection));
      }
      assertEquals("only the connection that opened no block was closed",
          1, DataNodeServer.of(runtime).idleConnectionsClosed());
      assertEquals(1, DataNodeServer.of(runtime).clientConnections());
      assertEquals(2L * tokens.length * DATA, fetched());
    } finally {
      for (long t : tokens) {
        client.pool.release(t);
      }
    }
  }

  @Test(timeout = 120_000)
  public void testAbandonedGetsReturnTheirLandingBuffersOnClose()
      throws Exception {
    startTcp(true);
    RegisteredBufferPool landing = runtime.pools().landing();
    long landingInUse = landing.metrics().inUseBytes();
    UcxBlockSession s = open(16);
    UcxPacketReceiver r = receiver(s, null);
    long[] tokens = new long[6];
    try {
      for (int p = 0; p < tokens.length; p++) {
        tokens[p] = client.fill(AT, CHECKSUMS + DATA, 200 + p);
      }
      announce(tokens[0]);
      for (int p = 0; p < tokens.length; p++) {
        describe(client, tokens[p], p, 0);
      }
      GenericTestUtils.waitFor(() -> s.queued() == tokens.length, 10,
          30_000);
      receive(r);
      assertPacket(r, 0, 200);
      assertTrue(landing.metrics().inUseBytes() > landingInUse);
    } finally {
      // The block is given up with gets ahead: close waits for them.
      r.close();
      for (long t : tokens) {
        client.pool.release(t);
      }
    }
    assertEquals(landingInUse, landing.metrics().inUseBytes());
  }

  /**
   * A client that stops serving its memory (frozen, not dead: its
   * connection stays up) leaves a get queued past the get timeout. Closing
   * the block then keeps the client's remote key unpacked: UCX may still
   * send that get with it, and a key destroyed under a queued get is a use
   * after free. Thawed, the client serves the get into the landing buffer
   * the receiver kept out of the pool.
   */
  @Test(timeout = 120_000)
  public void testAGetPendingAtCloseKeepsTheClientsRemoteKey()
      throws Exception {
    conf.setLong(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_GET_TIMEOUT_MS_KEY,
        1000);
    startTcp(true);
    UcxBlockSession s = open(16);
    UcxPacketReceiver r = receiver(s, null);
    long token = client.fill(AT, CHECKSUMS + DATA, 400);
    CountDownLatch frozen = new CountDownLatch(1);
    CountDownLatch thaw = new CountDownLatch(1);
    try {
      announce(token);
      describe(client, token, 0, 0);
      // A first packet: the endpoint back to the client is up.
      receive(r);
      assertPacket(r, 0, 400);
      UcxPacketReceiver.written(r);
      RemoteRegion region = s.region(1);
      assertFalse("tcp: read with gets, not directly", region.isDirect());
      // The client's progress thread stops; its tcp transport serves no get.
      client.worker.execute(() -> {
        frozen.countDown();
        Uninterruptibles.awaitUninterruptibly(thaw);
      });
      assertTrue(frozen.await(30, TimeUnit.SECONDS));
      describe(client, token, 1, 0);
      GenericTestUtils.waitFor(() -> s.queued() == 1, 10, 30_000);
      try {
        receive(r);
        fail("a get from a frozen client completed");
      } catch (UcxPathException expected) {
        assertTrue(expected.getMessage(),
            expected.getMessage().contains("did not complete in 1000 ms"));
      }
      r.close();
      // Released, the region would refuse a new reference.
      region.retain();
      region.release();
    } finally {
      thaw.countDown();
      r.close();
      client.pool.release(token);
    }
  }

  @Test(timeout = 120_000)
  public void testEmulatedGetsAreRefusedUnlessAllowed() throws Exception {
    startTcp(false);
    UcxBlockSession s = open(16);
    UcxPacketReceiver r = receiver(s, null);
    long token = client.fill(AT, CHECKSUMS + DATA, 7);
    try {
      announce(token);
      describe(client, token, 0, 0);
      try {
        receive(r);
        fail("read a packet with gets UCX emulates over tcp");
      } catch (IOException expected) {
        assertTrue(expected.getMessage(), expected.getMessage().contains(
            "would be emulated"));
      }
      assertEquals(0, r.fetcher().bytesFetched());
      assertEquals(0, fetched());
    } finally {
      r.close();
      client.pool.release(token);
    }
  }

  // ----------------------------------------------------------- allocation

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
        UcxPacketReceiver.written(r);
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
        UcxPacketReceiver.written(first);
        UcxPacketReceiver.written(second);
        UcxPacketReceiver.downstreamAcked(first, p);
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
