/**
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *     http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS,
 * WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and
 * limitations under the License.
 */
package org.apache.hadoop.hdfs;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.BufferOverflowException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.util.Arrays;
import java.util.Random;

import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.UcxContext;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.AfterClass;
import org.junit.Assume;
import org.junit.Before;
import org.junit.BeforeClass;
import org.junit.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * UcxDFSPacket against stock DFSPacket, in real UCX-registered memory: the
 * same writes must give the same bytes on the wire (TCP fallback) and the
 * same checksums and data in the region a DataNode gets.
 *
 * <p>Over 2,000 random packets: the same bytes from {@code writeTo} (resends
 * included), the same overflow failures, checksums and data contiguous in
 * registered memory at stock's offsets for the descriptor, and
 * {@code DFSClientFaultInjector}'s corruption on both paths as on stock.
 * Release returns the lease once: a stale token reaches nothing, a second
 * release leaves the buffer's next holder alone. Oversize packets, an exhausted
 * pool (after its wait) and a closed pool give heap packets; packets of aborted
 * streams are reclaimed once garbage.
 */
public class TestUcxDFSPacket {

  private static final Logger LOG =
      LoggerFactory.getLogger(TestUcxDFSPacket.class);

  /** Room for the largest packet tested plus its header. */
  private static final int BUFFER =
      64 * 1024 + PacketHeader.PKT_MAX_HEADER_LEN;
  private static final long SLAB = 4L * BUFFER;
  private static final int CHECKSUM_SIZE = 4;

  private static UcxContext context;
  private RegisteredBufferPool pool;

  @BeforeClass
  public static void setUpContext() throws Exception {
    Assume.assumeTrue("UCX cannot be loaded in this JVM, skipping: "
        + UcxLibrary.unavailableReason(), UcxLibrary.isAvailable());
    context = new UcxContext(UcxContext.Options.defaults());
  }

  @AfterClass
  public static void tearDownContext() {
    if (context != null) {
      assertEquals("every registration released", 0,
          context.openDependents());
      context.close();
    }
  }

  @Before
  public void setUp() {
    pool = new RegisteredBufferPool(context, "packets", BUFFER, SLAB, SLAB,
        true);
  }

  @After
  public void tearDown() {
    if (pool != null) {
      try {
        pool.assertNoLeaks();
      } finally {
        pool.close();
      }
    }
  }

  /** One packet's writes, applied alike to a stock and a UCX packet. */
  private static final class Pattern {
    final int packetSize;
    final int chunksPerPkt;
    final int checksumSize;
    final long offsetInBlock;
    final long seqno;
    final boolean last;
    final boolean sync;
    /** Data length of each chunk written; checksums are checksumSize. */
    final int[] chunkLens;
    final byte[] data;
    final byte[] sums;

    Pattern(Random r) {
      int checksumSize = r.nextInt(8) == 0 ? 0 : CHECKSUM_SIZE;
      int bytesPerChecksum = new int[] {1, 17, 512, 1024, 4096, 65536 - 4}
          [r.nextInt(6)];
      int chunk = bytesPerChecksum + checksumSize;
      int chunksPerPkt = Math.max(1, r.nextInt(64 * 1024 / chunk + 1));
      int kind = r.nextInt(10);
      if (kind == 0) {
        // Heartbeat or the empty last packet of a block.
        chunksPerPkt = 0;
      }
      this.chunksPerPkt = chunksPerPkt;
      this.packetSize = chunksPerPkt * chunk;
      this.checksumSize = checksumSize;
      this.offsetInBlock = (long) r.nextInt(1 << 20) * 512;
      this.seqno = kind == 0 && r.nextBoolean()
          ? DFSPacket.HEART_BEAT_SEQNO : r.nextInt(1 << 30);
      this.last = r.nextBoolean();
      this.sync = r.nextBoolean();
      int chunks;
      if (chunksPerPkt == 0) {
        chunks = 0;
      } else if (kind < 5) {
        chunks = chunksPerPkt; // full packet
      } else {
        chunks = r.nextInt(chunksPerPkt + 1); // hflush/hsync, last packet
      }
      chunkLens = new int[chunks];
      int total = 0;
      for (int i = 0; i < chunks; i++) {
        // The last chunk of a file or of an hflush may be partial.
        chunkLens[i] = i == chunks - 1 && r.nextBoolean()
            ? 1 + r.nextInt(bytesPerChecksum) : bytesPerChecksum;
        total += chunkLens[i];
      }
      data = new byte[total];
      r.nextBytes(data);
      sums = new byte[chunks * checksumSize];
      r.nextBytes(sums);
    }

    DFSPacket stock() throws IOException {
      return fill(new DFSPacket(
          new byte[PacketHeader.PKT_MAX_HEADER_LEN + packetSize],
          chunksPerPkt, offsetInBlock, seqno, checksumSize, last));
    }

    UcxDFSPacket ucx(RegisteredBufferPool pool) throws IOException {
      return (UcxDFSPacket) fill(new UcxDFSPacket(pool, pool.acquire(1000),
          packetSize, chunksPerPkt, offsetInBlock, seqno, checksumSize,
          last));
    }

    /** As DFSOutputStream.writeChunk: checksum, data, count, per chunk. */
    private DFSPacket fill(DFSPacket p) throws IOException {
      int off = 0;
      for (int i = 0; i < chunkLens.length; i++) {
        p.writeChecksum(sums, i * checksumSize, checksumSize);
        p.writeData(data, off, chunkLens[i]);
        p.incNumChunks();
        off += chunkLens[i];
      }
      p.setSyncBlock(sync);
      return p;
    }

    @Override
    public String toString() {
      return "packetSize " + packetSize + ", chunksPerPkt " + chunksPerPkt
          + ", checksumSize " + checksumSize + ", chunks "
          + Arrays.toString(chunkLens) + ", seqno " + seqno + ", last "
          + last + ", sync " + sync;
    }
  }

  private static byte[] sent(DFSPacket p) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    DataOutputStream stm = new DataOutputStream(out);
    p.writeTo(stm);
    stm.flush();
    return out.toByteArray();
  }

  /** Offset of the packet's checksums in its lease (after prepareForGet). */
  private static int offset(UcxDFSPacket p) {
    return (int) (p.getAddress() - p.pool().address(p.lease()));
  }

  /**
   * What a DataNode's get reads: checksums and data, from registered
   * memory, at the address a descriptor would carry.
   */
  private static byte[] region(UcxDFSPacket p) throws IOException {
    p.prepareForGet();
    ByteBuffer mem = p.pool().buffer(p.lease()).duplicate();
    mem.position(offset(p));
    byte[] bytes = new byte[p.getChecksumLength() + p.getDataLength()];
    mem.get(bytes);
    return bytes;
  }

  @Test(timeout = 120_000)
  public void testWriteToAndGetRegionMatchStock() throws Exception {
    long seed = System.nanoTime();
    LOG.info("seed {}", seed);
    Random r = new Random(seed);
    for (int i = 0; i < 2000; i++) {
      Pattern pattern = new Pattern(r);
      String what = "seed " + seed + ", packet " + i + ": " + pattern;
      DFSPacket stock = pattern.stock();
      UcxDFSPacket ucx = pattern.ucx(pool);
      try {
        assertEquals(what, stock.toString(), ucx.toString());
        assertEquals(what, stock.getLastByteOffsetBlock(),
            ucx.getLastByteOffsetBlock());
        assertEquals(what, stock.getNumChunks(), ucx.getNumChunks());
        assertEquals(what, stock.getMaxChunks(), ucx.getMaxChunks());
        assertEquals(what, stock.isHeartbeatPacket(),
            ucx.isHeartbeatPacket());
        assertEquals(what, stock.isLastPacketInBlock(),
            ucx.isLastPacketInBlock());

        // Alternate whether the get path or the TCP path goes first.
        long address = 0;
        if (r.nextBoolean()) {
          ucx.prepareForGet();
          address = ucx.getAddress();
        }
        byte[] expected = sent(stock);
        assertArrayEquals(what, expected, sent(ucx));
        // A resend after pipeline recovery sends the same bytes again.
        assertArrayEquals(what, sent(stock), sent(ucx));
        assertArrayEquals(what, expected, sent(ucx));

        ucx.prepareForGet();
        if (address != 0) {
          assertEquals(what, address, ucx.getAddress());
        }
        assertEquals(what, pattern.sums.length, ucx.getChecksumLength());
        assertEquals(what, pattern.data.length, ucx.getDataLength());
        assertEquals(what, pattern.offsetInBlock, ucx.offsetInBlock());
        assertEquals(what, pattern.sync, ucx.syncBlock());
        // Stock's layout: checksums moved up against the data area.
        assertEquals(what, PacketHeader.PKT_MAX_HEADER_LEN
            + (pattern.chunksPerPkt - pattern.chunkLens.length)
            * pattern.checksumSize, offset(ucx));
        int length = ucx.getChecksumLength() + ucx.getDataLength();
        int headerLen = expected.length - length;
        assertArrayEquals(what,
            Arrays.copyOfRange(expected, headerLen, expected.length),
            region(ucx));
        byte[] contiguous = new byte[length];
        System.arraycopy(pattern.sums, 0, contiguous, 0, pattern.sums.length);
        System.arraycopy(pattern.data, 0, contiguous, pattern.sums.length,
            pattern.data.length);
        assertArrayEquals(what, contiguous, region(ucx));
        // The header a DataNode rebuilds from a descriptor is stock's.
        PacketHeader header = new PacketHeader();
        header.readFields(ByteBuffer.wrap(expected));
        assertEquals(what, 4 + length, header.getPacketLen());
        assertEquals(what, ucx.getDataLength(), header.getDataLen());
        assertEquals(what, ucx.offsetInBlock(), header.getOffsetInBlock());
        assertEquals(what, ucx.syncBlock(), header.getSyncBlock());
        assertEquals(what, ucx.getSeqno(), header.getSeqno());
        assertEquals(what, stock.toString(), ucx.toString());
      } finally {
        ucx.releaseBuffer(null);
      }
    }
    assertEquals(0, pool.metrics().inUseBytes());
  }

  @Test(timeout = 60_000)
  public void testOverflowFailsAsStock() throws Exception {
    int chunksPerPkt = 2;
    int bytesPerChecksum = 512;
    int packetSize = chunksPerPkt * (bytesPerChecksum + CHECKSUM_SIZE);
    UcxDFSPacket ucx = new UcxDFSPacket(pool, pool.acquire(1000), packetSize,
        chunksPerPkt, 0, 0, CHECKSUM_SIZE, false);
    DFSPacket stock = new DFSPacket(
        new byte[PacketHeader.PKT_MAX_HEADER_LEN + packetSize], chunksPerPkt,
        0, 0, CHECKSUM_SIZE, false);
    try {
      byte[] sums = new byte[3 * CHECKSUM_SIZE];
      byte[] data = new byte[packetSize];
      for (DFSPacket p : new DFSPacket[] {stock, ucx}) {
        // Checksums stop at the data area, data at packetSize past the
        // header room, although the registered buffer is larger.
        expectOverflow(p, true, sums, 3 * CHECKSUM_SIZE);
        p.writeChecksum(sums, 0, 2 * CHECKSUM_SIZE);
        expectOverflow(p, true, sums, CHECKSUM_SIZE);
        expectOverflow(p, false, data, packetSize - 2 * CHECKSUM_SIZE + 1);
        p.writeData(data, 0, packetSize - 2 * CHECKSUM_SIZE);
        expectOverflow(p, false, data, 1);
      }
      assertArrayEquals(sent(stock), sent(ucx));
    } finally {
      ucx.releaseBuffer(null);
    }
  }

  private static void expectOverflow(DFSPacket p, boolean checksum,
      byte[] bytes, int len) throws IOException {
    try {
      if (checksum) {
        p.writeChecksum(bytes, 0, len);
      } else {
        p.writeData(bytes, 0, len);
      }
      fail("wrote " + len + " bytes past the end into " + p);
    } catch (BufferOverflowException expected) {
    }
  }

  /** The injector as TestCrcCorruption sets it, without Mockito. */
  private static final class Corrupter extends DFSClientFaultInjector {
    boolean corrupt;
    boolean uncorrupt;
    int corruptCalls;
    int uncorruptCalls;

    @Override
    public boolean corruptPacket() {
      corruptCalls++;
      return corrupt;
    }

    @Override
    public boolean uncorruptPacket() {
      uncorruptCalls++;
      return uncorrupt;
    }
  }

  @Test(timeout = 60_000)
  public void testFaultInjectionMatchesStock() throws Exception {
    DFSClientFaultInjector saved = DFSClientFaultInjector.get();
    Corrupter injector = new Corrupter();
    DFSClientFaultInjector.set(injector);
    Random r = new Random(42);
    try {
      for (int i = 0; i < 200; i++) {
        Pattern pattern = new Pattern(r);
        String what = "packet " + i + ": " + pattern;
        DFSPacket stock = pattern.stock();
        UcxDFSPacket ucx = pattern.ucx(pool);
        try {
          // Corrupt and undo, corrupt and keep, corrupt again (undoing
          // the kept one), clean: each step as stock, bytes and calls.
          boolean[][] steps = {{true, true}, {true, false}, {true, true},
              {false, false}, {false, true}};
          for (boolean[] step : steps) {
            injector.corrupt = step[0];
            injector.uncorrupt = step[1];
            byte[] expected = sent(stock);
            int calls = injector.corruptCalls;
            assertArrayEquals(what, expected, sent(ucx));
            assertEquals(calls + 1, injector.corruptCalls);
          }
        } finally {
          ucx.releaseBuffer(null);
        }
      }

      // The get path flips the last byte of checksums plus data.
      Pattern pattern;
      do {
        pattern = new Pattern(r);
      } while (pattern.data.length == 0);
      UcxDFSPacket ucx = pattern.ucx(pool);
      try {
        byte[] clean = region(ucx);
        injector.corrupt = true;
        injector.uncorrupt = true;
        assertTrue(ucx.injectCorruptionForGet());
        byte[] corrupted = region(ucx);
        assertEquals((clean[clean.length - 1] ^ 0xff) & 0xff,
            corrupted[corrupted.length - 1] & 0xff);
        assertArrayEquals(Arrays.copyOf(clean, clean.length - 1),
            Arrays.copyOf(corrupted, corrupted.length - 1));
        assertTrue(ucx.undoCorruptionForGet());
        assertArrayEquals(clean, region(ucx));
        injector.corrupt = false;
        assertFalse(ucx.injectCorruptionForGet());
        assertArrayEquals(clean, region(ucx));
      } finally {
        ucx.releaseBuffer(null);
      }
    } finally {
      DFSClientFaultInjector.set(saved);
    }
  }

  @Test(timeout = 60_000)
  public void testReleaseReturnsTheLeaseOnce() throws Exception {
    DFSPacket p = UcxPackets.newPacket(pool, 1000, 512 + CHECKSUM_SIZE, 1,
        0, 0, CHECKSUM_SIZE, false);
    assertTrue(p instanceof UcxDFSPacket);
    UcxDFSPacket ucx = (UcxDFSPacket) p;
    assertEquals(BUFFER, pool.metrics().inUseBytes());
    p.writeChecksum(new byte[CHECKSUM_SIZE], 0, CHECKSUM_SIZE);
    p.writeData(new byte[100], 0, 100);
    p.incNumChunks();
    String before = p.toString();

    p.releaseBuffer(null);
    assertTrue(ucx.isReleased());
    assertTrue(pool.isReleased(ucx.lease()));
    assertEquals(0, pool.metrics().inUseBytes());
    assertEquals(0, pool.metrics().outstandingLeases());
    pool.assertNoLeaks();

    // The stale token reaches nothing.
    try {
      pool.buffer(ucx.lease());
      fail("the released token still names a buffer");
    } catch (IllegalStateException expected) {
    }

    // Twice is harmless, also once the buffer has a new holder (the free
    // list hands the same buffer out again, under a new token).
    DFSPacket next = UcxPackets.newPacket(pool, 1000, 512, 1, 0, 1,
        CHECKSUM_SIZE, false);
    assertTrue(next instanceof UcxDFSPacket);
    long nextLease = ((UcxDFSPacket) next).lease();
    assertEquals("same buffer", (int) ucx.lease(), (int) nextLease);
    assertTrue(nextLease != ucx.lease());
    p.releaseBuffer(null);
    assertFalse(pool.isReleased(nextLease));
    assertEquals(BUFFER, pool.metrics().inUseBytes());
    next.releaseBuffer(null);
    assertTrue(pool.isReleased(nextLease));
    assertEquals(0, pool.metrics().inUseBytes());

    // As stock after release: no more writes, but it still describes itself
    // (ResponseProcessor and the logs read it after the ACK).
    assertEquals(before, p.toString());
    assertEquals(100, p.getLastByteOffsetBlock());
    try {
      p.writeTo(new DataOutputStream(new ByteArrayOutputStream()));
      fail("writeTo after release");
    } catch (ClosedChannelException expected) {
    }
    try {
      p.writeData(new byte[1], 0, 1);
      fail("writeData after release");
    } catch (ClosedChannelException expected) {
    }
    try {
      ucx.prepareForGet();
      fail("prepareForGet after release");
    } catch (ClosedChannelException expected) {
    }
    pool.assertNoLeaks();
  }

  @Test(timeout = 60_000)
  public void testFactoryFallsBackToHeapPackets() throws Exception {
    // Oversize: nothing is leased, no time is spent waiting.
    long start = System.nanoTime();
    assertNull(UcxPackets.newPacket(pool, 10_000,
        BUFFER - PacketHeader.PKT_MAX_HEADER_LEN + 1, 1, 0, 0, CHECKSUM_SIZE,
        false));
    assertTrue(System.nanoTime() - start < 5_000_000_000L);
    assertEquals(0, pool.metrics().acquisitions());

    // The largest packet that fits is registered.
    int fits = BUFFER - PacketHeader.PKT_MAX_HEADER_LEN;
    DFSPacket[] held = new DFSPacket[(int) (SLAB / BUFFER)];
    for (int i = 0; i < held.length; i++) {
      held[i] = UcxPackets.newPacket(pool, 1000, fits, 16, 0, i,
          CHECKSUM_SIZE, false);
      assertTrue(held[i] instanceof UcxDFSPacket);
    }
    try {
      // Exhausted: null after the timeout, not before, not much later.
      start = System.nanoTime();
      assertNull(UcxPackets.newPacket(pool, 300, 1024, 2, 0, 99,
          CHECKSUM_SIZE, false));
      long waitedMs = (System.nanoTime() - start) / 1_000_000;
      assertTrue("waited " + waitedMs + " ms", waitedMs >= 290);
      assertTrue("waited " + waitedMs + " ms", waitedMs < 10_000);
      assertEquals(1, pool.metrics().timeouts());
      assertNull(UcxPackets.newPacket(pool, 0, 1024, 2, 0, 100,
          CHECKSUM_SIZE, false));
    } finally {
      for (DFSPacket p : held) {
        p.releaseBuffer(null);
      }
    }
    DFSPacket again = UcxPackets.newPacket(pool, 0, 1024, 2, 0, 101,
        CHECKSUM_SIZE, false);
    assertTrue(again instanceof UcxDFSPacket);
    again.releaseBuffer(null);

    // A closed pool means heap packets too.
    pool.close();
    assertNull(UcxPackets.newPacket(pool, 0, 1024, 2, 0, 102,
        CHECKSUM_SIZE, false));
  }

  @Test(timeout = 60_000)
  public void testStreamsWithoutUcxGetHeapPackets() throws Exception {
    // No streamer (Hadoop's tests call createPacket on stand-ins) and
    // packets without bytes: stock packets, nothing leased.
    assertNull(UcxPackets.forStream(null, 1024, 2, 0, 0, CHECKSUM_SIZE,
        false));
    assertEquals(0, pool.metrics().acquisitions());
  }

  @Test(timeout = 60_000)
  public void testAbandonedPacketsReturnTheirBuffers() throws Exception {
    int packets = (int) (SLAB / BUFFER);
    for (int i = 0; i < packets; i++) {
      // Dropped unreleased, as an aborted stream drops its current packet.
      assertTrue(UcxPackets.newPacket(pool, 1000, 1024, 2, 0, i,
          CHECKSUM_SIZE, false) instanceof UcxDFSPacket);
    }
    assertEquals(SLAB, pool.metrics().inUseBytes());
    long before = UcxPackets.reclaimedCount();
    org.apache.hadoop.test.GenericTestUtils.waitFor(() -> {
      System.gc();
      UcxPackets.reclaimAbandoned();
      return pool.metrics().inUseBytes() == 0;
    }, 100, 30_000);
    assertEquals(packets, UcxPackets.reclaimedCount() - before);
    // A packet released the normal way is not reclaimed a second time.
    DFSPacket kept = UcxPackets.newPacket(pool, 0, 1024, 2, 0, 99,
        CHECKSUM_SIZE, false);
    kept.releaseBuffer(null);
    kept = null;
    System.gc();
    UcxPackets.reclaimAbandoned();
    assertEquals(packets, UcxPackets.reclaimedCount() - before);
    assertEquals(0, pool.metrics().inUseBytes());
    assertEquals(packets + 1, pool.metrics().acquisitions());
    pool.assertNoLeaks();
  }
}
