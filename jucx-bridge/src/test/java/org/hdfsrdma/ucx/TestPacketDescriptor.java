package org.hdfsrdma.ucx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32;

import org.junit.Test;

/**
 * The packet descriptor's wire layout and structural validation, without
 * UCX. The layout is pinned with literal offsets, so that a change of the
 * format shows here and not only between two builds on the wire.
 */
public class TestPacketDescriptor {

  private static final long ADDRESS = 0x7f0012345000L;

  private static PacketDescriptor sample(ByteBuffer buffer, int offset) {
    return new PacketDescriptor().wrap(buffer, offset).encode(
        0x1122334455667788L, 1073741825L, 1001L, 5L, 5L * 65536,
        PacketDescriptor.FLAG_LAST_PACKET_IN_BLOCK, 3, ADDRESS, 512, 65024);
  }

  @Test(timeout = 10_000)
  public void testRoundTripAtAnOffset() throws Exception {
    ByteBuffer buffer = ByteBuffer.allocateDirect(256);
    PacketDescriptor d = sample(buffer, 16).validate(PacketDescriptor.LENGTH);
    assertEquals(16, d.offset());
    assertEquals(0x1122334455667788L, d.session());
    assertEquals(1073741825L, d.blockId());
    assertEquals(1001L, d.generationStamp());
    assertEquals(5L, d.seqno());
    assertEquals(5L * 65536, d.offsetInBlock());
    assertTrue(d.isLastPacketInBlock());
    assertFalse(d.isSyncBlock());
    assertEquals(3, d.regionId());
    assertEquals(ADDRESS, d.address());
    assertEquals(512, d.checksumLength());
    assertEquals(65024, d.dataLength());
    assertEquals(65536L, d.packetLength());
    // The bytes around the message are not touched.
    for (int i = 0; i < 16; i++) {
      assertEquals(0, buffer.get(i));
    }
    for (int i = 16 + PacketDescriptor.LENGTH; i < 256; i++) {
      assertEquals(0, buffer.get(i));
    }

    // Copied elsewhere, it is the same message.
    ByteBuffer other = ByteBuffer.allocate(PacketDescriptor.LENGTH);
    d.copyTo(other, 0);
    PacketDescriptor copy = new PacketDescriptor().wrap(other, 0)
        .validate(PacketDescriptor.LENGTH);
    assertEquals(d.seqno(), copy.seqno());
    assertEquals(d.address(), copy.address());

    // One descriptor per getter: a new session, resealed, still valid.
    d.withSession(99L).validate(PacketDescriptor.LENGTH);
    assertEquals(99L, d.session());
    assertEquals(5L, d.seqno());
  }

  @Test(timeout = 10_000)
  public void testLayoutIsBigEndianAtFixedOffsets() {
    ByteBuffer b = ByteBuffer.allocate(PacketDescriptor.LENGTH);
    new PacketDescriptor().wrap(b, 0).encode(0x0102030405060708L,
        0x1112131415161718L, 0x2122232425262728L, 0x3132333435363738L,
        0x4142434445464748L, PacketDescriptor.FLAG_SYNC_BLOCK, 0x61626364,
        0x5152535455565758L, 0x09080706, 0x0a0b0c0d);
    assertEquals(72, PacketDescriptor.LENGTH);
    assertEquals('H', b.get(0));
    assertEquals('R', b.get(1));
    assertEquals('M', b.get(2));
    assertEquals('A', b.get(3));
    assertEquals(0, b.get(4));
    assertEquals(2, b.get(5)); // version 2
    assertEquals(2, b.get(6)); // type: packet descriptor
    assertEquals(2, b.get(7)); // flags: sync block
    assertEquals(0x0102030405060708L, b.getLong(8));
    assertEquals(0x01, b.get(8)); // most significant byte first
    assertEquals(0x1112131415161718L, b.getLong(16));
    assertEquals(0x2122232425262728L, b.getLong(24));
    assertEquals(0x3132333435363738L, b.getLong(32));
    assertEquals(0x4142434445464748L, b.getLong(40));
    assertEquals(0x5152535455565758L, b.getLong(48));
    assertEquals(0x09080706, b.getInt(56));
    assertEquals(0x0a0b0c0d, b.getInt(60));
    assertEquals(0x61626364, b.getInt(64));
    CRC32 crc = new CRC32();
    crc.update(b.array(), 0, 68);
    assertEquals((int) crc.getValue(), b.getInt(68));
  }

  @Test(timeout = 10_000)
  public void testWrapRefusesLittleEndianAndShortBuffers() {
    try {
      new PacketDescriptor().wrap(ByteBuffer.allocate(128)
          .order(ByteOrder.LITTLE_ENDIAN), 0);
      fail("wrapped a little-endian buffer");
    } catch (IllegalArgumentException expected) {
      // Byte order is part of the format.
    }
    try {
      new PacketDescriptor().wrap(ByteBuffer.allocate(100), 29);
      fail("wrapped past the end");
    } catch (IndexOutOfBoundsException expected) {
      // 29 + 72 > 100.
    }
    try {
      new PacketDescriptor().wrap(ByteBuffer.allocate(100), -1);
      fail("wrapped at a negative offset");
    } catch (IndexOutOfBoundsException expected) {
      // Nothing before the buffer.
    }
  }

  @Test(timeout = 10_000)
  public void testEverySingleBitFlipIsRejected() {
    ByteBuffer b = ByteBuffer.allocate(PacketDescriptor.LENGTH);
    PacketDescriptor d = new PacketDescriptor();
    for (int bit = 0; bit < PacketDescriptor.LENGTH * 8; bit++) {
      sample(b, 0);
      b.put(bit / 8, (byte) (b.get(bit / 8) ^ (1 << (bit % 8))));
      try {
        d.wrap(b, 0).validate(PacketDescriptor.LENGTH);
        fail("a flip of bit " + bit + " went unnoticed");
      } catch (MalformedMessageException expected) {
        // The CRC32 catches every single-bit error, or a field check does.
      }
    }
  }

  @Test(timeout = 10_000)
  public void testTruncatedAndOversizedMessages() {
    ByteBuffer b = ByteBuffer.allocate(256);
    sample(b, 0);
    for (int length : new int[] {0, 1, 8, 71, 73, 144,
        UcxWorker.MAX_MESSAGE_BYTES}) {
      expectRejected(b, length, "packet descriptor of " + length
          + " bytes, expected 72");
    }
  }

  @Test(timeout = 10_000)
  public void testHeaderFieldsAreChecked() {
    expectRejected(0, 4, 0x48524D42, "bad message magic 0x48524d42");
    expectRejected(4, 2, 1, "unsupported message version 1");
    expectRejected(4, 2, 3, "unsupported message version 3");
    expectRejected(6, 1, RegionAnnouncement.TYPE, "message of type 1 where"
        + " type 2 was expected");
    expectRejected(6, 1, HelloMessage.TYPE, "message of type 3");
  }

  @Test(timeout = 10_000)
  public void testReservedFlagBitsAreRejected() {
    for (int bit = 3; bit < 8; bit++) {
      expectRejected(7, 1, 1 << bit, String.format(
          "unknown descriptor flags 0x%02x", 1 << bit));
    }
    // The known flags together are fine (last, sync, forwarded).
    ByteBuffer b = ByteBuffer.allocate(PacketDescriptor.LENGTH);
    sample(b, 0);
    b.put(7, (byte) 7);
    PacketDescriptor d = new PacketDescriptor().wrap(b, 0).seal();
    try {
      d.validate(PacketDescriptor.LENGTH);
    } catch (MalformedMessageException e) {
      throw new AssertionError("known flags rejected", e);
    }
    assertTrue(d.isLastPacketInBlock() && d.isSyncBlock());
  }

  @Test(timeout = 10_000)
  public void testFieldRangesAreChecked() {
    expectRejected(56, 4, -1, "negative length: checksums -1");
    expectRejected(60, 4, Integer.MIN_VALUE, "negative length");
    expectRejected(40, 8, -1, "negative offset in block -1");
    // An empty packet names no region and no address.
    ByteBuffer b = ByteBuffer.allocate(PacketDescriptor.LENGTH);
    new PacketDescriptor().wrap(b, 0).encode(1, 2, 3, 4, 0, 0, 5, 0, 0, 0);
    expectRejected(b, PacketDescriptor.LENGTH, "an empty packet names"
        + " region 5");
    new PacketDescriptor().wrap(b, 0).encode(1, 2, 3, 4, 0, 0, 0, 0x1000, 0,
        0);
    expectRejected(b, PacketDescriptor.LENGTH, "at 0x1000");
    // A heartbeat (no bytes, no region) is valid.
    new PacketDescriptor().wrap(b, 0).encode(1, 2, 3, -1, 0, 0, 0, 0, 0, 0);
    try {
      assertEquals(0L, new PacketDescriptor().wrap(b, 0)
          .validate(PacketDescriptor.LENGTH).packetLength());
    } catch (MalformedMessageException e) {
      throw new AssertionError("a heartbeat descriptor was rejected", e);
    }
    // Lengths add up without overflow.
    new PacketDescriptor().wrap(b, 0).encode(1, 2, 3, 4, 0, 0, 1, 0x1000,
        Integer.MAX_VALUE, Integer.MAX_VALUE);
    assertEquals(2L * Integer.MAX_VALUE,
        new PacketDescriptor().wrap(b, 0).packetLength());
  }

  @Test(timeout = 10_000)
  public void testTypeOf() {
    ByteBuffer b = ByteBuffer.allocate(PacketDescriptor.LENGTH);
    sample(b, 0);
    assertEquals(PacketDescriptor.TYPE, PacketDescriptor.typeOf(b,
        PacketDescriptor.LENGTH));
    assertEquals(PacketDescriptor.TYPE, PacketDescriptor.typeOf(b, 8));
    assertEquals(-1, PacketDescriptor.typeOf(b, 7));
    assertEquals(-1, PacketDescriptor.typeOf(b, 0));
  }

  /**
   * Overwrites one field of a valid descriptor, reseals its CRC, and
   * expects validate to name the problem.
   */
  private static void expectRejected(int offset, int width, long value,
      String message) {
    ByteBuffer b = ByteBuffer.allocate(PacketDescriptor.LENGTH);
    sample(b, 0);
    if (width == 8) {
      b.putLong(offset, value);
    } else if (width == 4) {
      b.putInt(offset, (int) value);
    } else if (width == 2) {
      b.putShort(offset, (short) value);
    } else {
      b.put(offset, (byte) value);
    }
    new PacketDescriptor().wrap(b, 0).seal();
    expectRejected(b, PacketDescriptor.LENGTH, message);
  }

  private static void expectRejected(ByteBuffer b, int length,
      String message) {
    try {
      new PacketDescriptor().wrap(b, 0).validate(length);
      fail("accepted a descriptor that should fail with: " + message);
    } catch (MalformedMessageException e) {
      assertTrue("\"" + e.getMessage() + "\" should say \"" + message
          + "\"", e.getMessage().contains(message));
    }
  }
}
