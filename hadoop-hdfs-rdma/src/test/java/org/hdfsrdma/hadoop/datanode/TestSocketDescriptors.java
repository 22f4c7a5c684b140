package org.hdfsrdma.hadoop.datanode;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.hadoop.hdfs.server.datanode.UcxPacketReceiver;
import org.apache.hadoop.hdfs.server.datanode.UcxReceiverHooks;
import org.apache.hadoop.test.GenericTestUtils;
import org.hdfsrdma.hadoop.UcxTestClient;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.junit.Test;

/**
 * A block whose descriptors come on its socket ({@link SocketDescriptors}),
 * over real UCX with a same-JVM client that announces its regions over UCX
 * and writes each descriptor on a real loopback socket, as
 * {@code DescriptorSender} does: packets are presented byte for byte from
 * the client's registered memory and their descriptors passed on to the
 * mirror unchanged; a descriptor ahead of its region's announcement waits
 * for it; and every way a socket descriptor can be wrong (structure, block,
 * range, order, a region never announced, a session named, descriptors over
 * UCX for the same block) fails the block's UCX path with a message naming
 * the block, where the DataNode asks its client to continue over TCP; so do
 * most of 300 random forgeries, and the rest are presented from inside the
 * announced region. The receiving thread allocates nothing per packet.
 */
public class TestSocketDescriptors extends ReceivePathTestBase {

  private final PacketDescriptor encoder = new PacketDescriptor();

  /** A receiver taking the descriptors the client offered on the socket. */
  private UcxPacketReceiver onSocket(UcxBlockSession s, SocketPair socket) {
    return new UcxPacketReceiver(new PacketFetcher(s, dataNode,
        UcxReceiverHooks.watchable(socket.channel), true), null);
  }

  /** One descriptor as the client writes it on the socket. */
  private byte[] frame(long blockId, long seqno, int flags, int regionId,
      long address, int checksums, int data) {
    ByteBuffer b = ByteBuffer.allocate(PacketDescriptor.LENGTH);
    encoder.wrap(b, 0).encode(0, blockId, STAMP, seqno, seqno * DATA, flags,
        regionId, address, checksums, data);
    return b.array();
  }

  /** The descriptor of a full packet of {@code token}, as the client's. */
  private byte[] frame(long token, long seqno) {
    return frame(BLOCK, seqno, 0, regionOf(token), client.pool.address(token)
        + AT, CHECKSUMS, DATA);
  }

  private int regionOf(long token) {
    return UcxTestClient.sessionRegionId(client.pool.regionId(token));
  }

  /** What a test does with a block whose descriptors come on its socket. */
  private interface OnBlock {
    void run(UcxBlockSession s, SocketPair socket, UcxPacketReceiver r,
        long token) throws Exception;
  }

  /**
   * Runs {@code body} on a new block read from its socket, with one
   * client buffer holding the pattern of {@code seed}; closes the
   * receiver, the socket and the buffer after it.
   */
  private void onBlock(long seed, OnBlock body) throws Exception {
    UcxBlockSession s = open(16);
    long token = client.fill(AT, CHECKSUMS + DATA, seed);
    try (SocketPair socket = new SocketPair()) {
      UcxPacketReceiver r = onSocket(s, socket);
      try {
        body.run(s, socket, r, token);
      } finally {
        r.close();
      }
    } finally {
      client.pool.release(token);
    }
  }

  private static void write(SocketPair socket, byte[]... frames)
      throws IOException {
    for (byte[] f : frames) {
      ByteBuffer b = ByteBuffer.wrap(f);
      while (b.hasRemaining()) {
        socket.upstream.write(b);
      }
    }
  }

  @Test(timeout = 60_000)
  public void testPacketsAndTheirDescriptorsPassedOn() throws Exception {
    start();
    UcxBlockSession s = open(16);
    long a = client.fill(AT, CHECKSUMS + DATA, 11);
    long b = client.fill(AT, CHECKSUMS + DATA, 12);
    long blocksBefore = dataNode.metrics().socketDescriptorBlocks();
    try (SocketPair socket = new SocketPair()) {
      UcxPacketReceiver r = onSocket(s, socket);
      ByteArrayOutputStream mirror = new ByteArrayOutputStream();
      byte[] last = frame(BLOCK, 2, PacketDescriptor.FLAG_LAST_PACKET_IN_BLOCK,
          0, 0, 0, 0);
      try {
        announce(a);
        if (regionOf(b) != regionOf(a)) {
          announce(b);
        }
        write(socket, frame(a, 0), frame(b, 1), last);
        long before = fetched();
        r.receiveNextPacket(socket.in);
        assertPacket(r, 0, 11);
        r.mirrorPacketTo(new DataOutputStream(mirror));
        r.receiveNextPacket(socket.in);
        assertPacket(r, 1, 12);
        r.mirrorPacketTo(new DataOutputStream(mirror));
        r.receiveNextPacket(socket.in);
        assertTrue(r.getHeader().isLastPacketInBlock());
        assertEquals(0, r.getHeader().getDataLen());
        r.mirrorPacketTo(new DataOutputStream(mirror));
        assertEquals("both packets read from the client's memory",
            2L * DATA, fetched() - before);
        assertTrue(s.descriptorsOnSocket());
        ByteArrayOutputStream expected = new ByteArrayOutputStream();
        expected.write(frame(a, 0));
        expected.write(frame(b, 1));
        expected.write(last);
        assertArrayEquals("the descriptors, passed on unchanged",
            expected.toByteArray(), mirror.toByteArray());
      } finally {
        r.close();
      }
    } finally {
      client.pool.release(a);
      client.pool.release(b);
    }
    assertEquals("counted as a block with its descriptors on the socket",
        blocksBefore + 1, dataNode.metrics().socketDescriptorBlocks());
  }

  @Test(timeout = 60_000)
  public void testDescriptorWaitsForItsRegion() throws Exception {
    start();
    onBlock(13, (s, socket, r, a) -> {
      write(socket, frame(a, 0));
      Thread announcer = new Thread(() -> {
        try {
          Thread.sleep(200);
          announce(a);
        } catch (Exception e) {
          throw new AssertionError(e);
        }
      });
      announcer.start();
      r.receiveNextPacket(socket.in);
      announcer.join();
      assertPacket(r, 0, 13);
    });
  }

  @Test(timeout = 60_000)
  public void testRegionNeverAnnounced() throws Exception {
    conf.setLong(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_GET_TIMEOUT_MS_KEY,
        500);
    start();
    onBlock(14, (s, socket, r, a) -> {
      write(socket, frame(a, 0));
      long start = System.nanoTime();
      expectRefusal(r, socket, s, "was not announced in 500 ms");
      assertTrue(System.nanoTime() - start
          >= TimeUnit.MILLISECONDS.toNanos(450));
    });
  }

  /** Each wrong descriptor on its own block, after one good packet. */
  @Test(timeout = 120_000)
  public void testWrongDescriptorsFailTheBlock() throws Exception {
    // How long a descriptor waits for a region that never comes.
    conf.setLong(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_GET_TIMEOUT_MS_KEY,
        500);
    start();
    long a = client.fill(AT, CHECKSUMS + DATA, 15);
    try {
      String[] rules = {"malformed descriptor", "descriptor for block",
          "lies outside", "after packet 0", "not announced in 500 ms",
          "names a session"};
      for (int rule = 0; rule < rules.length; rule++) {
        UcxBlockSession s = open(16);
        try (SocketPair socket = new SocketPair()) {
          UcxPacketReceiver r = onSocket(s, socket);
          try {
            announce(a);
            write(socket, frame(a, 0));
            r.receiveNextPacket(socket.in);
            assertPacket(r, 0, 15);
            byte[] bad;
            switch (rule) {
            case 0:
              bad = frame(a, 1);
              bad[20] ^= 1; // the CRC no longer matches
              break;
            case 1:
              bad = frame(BLOCK + 1, 1, 0, regionOf(a),
                  client.pool.address(a) + AT, CHECKSUMS, DATA);
              break;
            case 2:
              bad = frame(BLOCK, 1, 0, regionOf(a), client.pool.address(a)
                  + client.pool.regionLength(client.pool.regionId(a)),
                  CHECKSUMS, DATA);
              break;
            case 3:
              bad = frame(a, 0);
              break;
            case 4:
              bad = frame(BLOCK, 1, 0, regionOf(a) + 1,
                  client.pool.address(a) + AT, CHECKSUMS, DATA);
              break;
            default:
              bad = frame(a, 1);
              encoder.wrap(ByteBuffer.wrap(bad), 0).withSession(session);
              break;
            }
            write(socket, bad);
            expectRefusal(r, socket, s, rules[rule]);
          } finally {
            r.close();
          }
        }
      }
    } finally {
      client.pool.release(a);
    }
  }

  @Test(timeout = 60_000)
  public void testUcxDescriptorForASocketBlockFailsIt() throws Exception {
    start();
    onBlock(16, (s, socket, r, a) -> {
      announce(a);
      write(socket, frame(a, 0));
      r.receiveNextPacket(socket.in);
      assertPacket(r, 0, 16);
      describe(client, a, 1, 0);
      client.flush();
      GenericTestUtils.waitFor(() -> s.failure() != null, 10, 10_000);
      write(socket, frame(a, 1));
      expectRefusal(r, socket, s, "over UCX for a block whose descriptors"
          + " come on its socket");
    });
  }

  /**
   * Offered on the socket, sent over UCX (a DataNode of the pipeline did
   * not take them on its socket): the block takes them from UCX.
   */
  @Test(timeout = 60_000)
  public void testOfferedButSentOverUcx() throws Exception {
    start();
    UcxBlockSession s = open(16);
    long a = client.fill(AT, CHECKSUMS + DATA, 17);
    long b = client.fill(AT, CHECKSUMS + DATA, 18);
    try (SocketPair socket = new SocketPair()) {
      UcxPacketReceiver r = onSocket(s, socket);
      try {
        announce(a);
        if (regionOf(b) != regionOf(a)) {
          announce(b);
        }
        describe(client, a, 0, 0);
        describe(client, b, 1, 0);
        r.receiveNextPacket(socket.in);
        assertPacket(r, 0, 17);
        r.receiveNextPacket(socket.in);
        assertPacket(r, 1, 18);
        assertFalse(s.descriptorsOnSocket());
        assertFalse(r.isOverSocket());
      } finally {
        r.close();
      }
    } finally {
      client.pool.release(a);
      client.pool.release(b);
    }
  }

  /** Offered on the socket, stock packets came: read as stock. */
  @Test(timeout = 60_000)
  public void testOfferedButStockPackets() throws Exception {
    start();
    UcxBlockSession s = open(16);
    try (SocketPair socket = new SocketPair()) {
      UcxPacketReceiver r = onSocket(s, socket);
      try {
        write(socket, socketPacket(0, (byte) 7, true));
        r.receiveNextPacket(socket.in);
        assertTrue(r.isOverSocket());
        assertEquals(512, r.getHeader().getDataLen());
        assertEquals(7, r.getDataSlice().get(0));
      } finally {
        r.close();
      }
    }
  }

  /**
   * 300 forged descriptors, each on a block of its own after one good
   * packet: a valid descriptor with random bytes changed, its CRC
   * recomputed two times in three (so that the session's rules, not the
   * CRC, must catch it). Each either passes every rule, and is then
   * presented from inside the announced region, or fails the block's UCX
   * path with a {@link UcxPathException} naming the block; nothing else
   * is thrown and no wait outlasts the 500 ms region timeout.
   */
  @Test(timeout = 300_000)
  public void testForgedDescriptors() throws Exception {
    conf.setLong(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_GET_TIMEOUT_MS_KEY,
        500);
    start();
    long a = client.fill(AT, CHECKSUMS + DATA, 19);
    long base = client.pool.regionAddress(client.pool.regionId(a));
    long end = base + client.pool.regionLength(client.pool.regionId(a));
    int refused = 0;
    try {
      for (int i = 0; i < 300; i++) {
        UcxBlockSession s = open(16);
        try (SocketPair socket = new SocketPair()) {
          UcxPacketReceiver r = onSocket(s, socket);
          try {
            announce(a);
            write(socket, frame(a, 0));
            r.receiveNextPacket(socket.in);
            byte[] forged = frame(a, 1);
            for (int n = 1 + random.nextInt(4); n > 0; n--) {
              forged[random.nextInt(PacketDescriptor.CRC_OFFSET)] =
                  (byte) random.nextInt(256);
            }
            if (random.nextInt(3) > 0) {
              encoder.wrap(ByteBuffer.wrap(forged), 0).seal();
            }
            write(socket, forged);
            try {
              r.receiveNextPacket(socket.in);
              encoder.wrap(ByteBuffer.wrap(forged), 0);
              long length = encoder.packetLength();
              assertTrue("presented from inside the region",
                  length == 0 || encoder.address() >= base
                      && encoder.address() + length <= end);
            } catch (UcxPathException e) {
              assertTrue(e.getMessage(),
                  e.getMessage().contains(s.description()));
              refused++;
            }
          } finally {
            r.close();
          }
        }
      }
    } finally {
      client.pool.release(a);
    }
    assertTrue("most forgeries refused: " + refused, refused > 150);
  }

  /**
   * Nothing is allocated per packet on the receiving thread: over the last
   * 1,000 of 3,000 packets whose descriptors a writer thread puts on the
   * socket, each read, checked, presented and passed on to a mirror, the
   * thread's allocated bytes (the JVM's own count) stay under 8 a packet
   * (one object per packet would be 16).
   */
  @Test(timeout = 300_000)
  public void testNothingAllocatedPerPacket() throws Exception {
    start();
    final int warmUp = 2_000;
    final int measured = 1_000;
    final int total = warmUp + measured;
    UcxBlockSession s = open(64);
    final long[] tokens = new long[16];
    for (int b = 0; b < tokens.length; b++) {
      tokens[b] = client.fill(AT, CHECKSUMS + DATA, b);
    }
    announce(tokens[0]);
    for (long t : tokens) {
      assertEquals("one region", regionOf(tokens[0]), regionOf(t));
    }
    final AtomicReference<Throwable> failure = new AtomicReference<>();
    DataOutputStream mirror = new DataOutputStream(new OutputStream() {
      @Override
      public void write(int b) {
      }

      @Override
      public void write(byte[] b, int off, int len) {
      }
    });
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long self = Thread.currentThread().getId();
    long allocated;
    try (SocketPair socket = new SocketPair()) {
      // Written as fast as the socket takes them: a receiver that finds its
      // socket empty blocks in Hadoop's stream, whose selector bookkeeping
      // allocates (as stock's reads do), which is not what is measured.
      ByteBuffer frames = ByteBuffer.allocate(total * PacketDescriptor.LENGTH);
      for (int p = 0; p < total; p++) {
        frames.put(frame(tokens[p % tokens.length], p));
      }
      frames.flip();
      Thread writer = new Thread(() -> {
        try {
          while (frames.hasRemaining()) {
            socket.upstream.write(frames);
          }
        } catch (Throwable t) {
          failure.set(t);
        }
      }, "test-writer");
      UcxPacketReceiver r = onSocket(s, socket);
      try {
        writer.start();
        long before = 0;
        for (int p = 0; p < total; p++) {
          if (p == warmUp) {
            before = threads.getThreadAllocatedBytes(self);
          }
          r.receiveNextPacket(socket.in);
          r.mirrorPacketTo(mirror);
          int b = p % tokens.length;
          if (r.getHeader().getSeqno() != p
              || r.getDataSlice().get(0) != UcxTestClient.pattern(b,
                  CHECKSUMS)) {
            throw new AssertionError("packet " + p + " wrong");
          }
          UcxReceiverHooks.written(r);
        }
        allocated = threads.getThreadAllocatedBytes(self) - before;
        writer.join(30_000);
      } finally {
        r.close();
      }
    } finally {
      for (long t : tokens) {
        client.pool.release(t);
      }
    }
    assertNull(failure.get());
    assertEquals((long) total * DATA, fetched());
    System.out.println("receiving thread allocated " + allocated
        + " bytes over " + measured + " packets with socket descriptors");
    assertTrue("the receiving thread allocated " + allocated + " bytes for "
        + measured + " packets", allocated >= 0 && allocated < 8L * measured);
  }

  private static void expectRefusal(UcxPacketReceiver r, SocketPair socket,
      UcxBlockSession s, String why) throws IOException {
    try {
      r.receiveNextPacket(socket.in);
      fail("took a descriptor that breaks \"" + why + "\"");
    } catch (UcxPathException expected) {
      assertTrue(expected.getMessage(),
          expected.getMessage().contains(why));
      assertTrue(expected.getMessage(),
          expected.getMessage().contains(s.description()));
    }
  }
}
