package org.hdfsrdma.ucx;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32;

import org.junit.Test;

/**
 * The region announcement's wire layout and structural validation, without
 * UCX; literal offsets pin the format.
 */
public class TestRegionAnnouncement {

  /** A packed remote key as UCX 1.13 writes it for a SysV slab. */
  private static final byte[] KEY = {
    0x0b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0c, 0x0e, (byte) 0x80, 0x09, 0,
    0, 0, (byte) 0xa2, (byte) 0xd8, 0x28, 0x7f, 0, 0, 0};
  private static final long BASE = 0x7f28d8a20000L;
  private static final int LENGTH = RegionAnnouncement.encodedLength(
      KEY.length);

  private static RegionAnnouncement sample(ByteBuffer b, int offset) {
    return new RegionAnnouncement().wrap(b, offset, b.capacity() - offset)
        .encode(0x0102030405060708L, 42, BASE, 4L << 20, KEY);
  }

  @Test(timeout = 10_000)
  public void testRoundTripAtAnOffset() throws Exception {
    ByteBuffer b = ByteBuffer.allocateDirect(512);
    RegionAnnouncement a = sample(b, 24);
    assertEquals(24, a.offset());
    assertEquals(40 + KEY.length + 4, a.length());
    assertEquals(LENGTH, a.length());
    RegionAnnouncement read = new RegionAnnouncement().wrap(b, 24, LENGTH)
        .validate();
    assertEquals(0x0102030405060708L, read.session());
    assertEquals(42, read.regionId());
    assertEquals(BASE, read.regionBase());
    assertEquals(4L << 20, read.regionLength());
    assertEquals(KEY.length, read.rkeyLength());
    assertEquals(24 + 40, read.rkeyOffset());
    assertArrayEquals(KEY, read.rkey());
    // rkey() is a copy: changing it changes nothing on the wire.
    read.rkey()[0] = 0;
    assertArrayEquals(KEY, read.rkey());
    for (int i = 0; i < 24; i++) {
      assertEquals(0, b.get(i));
    }
    for (int i = 24 + LENGTH; i < 512; i++) {
      assertEquals(0, b.get(i));
    }
  }

  @Test(timeout = 10_000)
  public void testLayoutIsBigEndianAtFixedOffsets() {
    ByteBuffer b = ByteBuffer.allocate(LENGTH);
    sample(b, 0);
    assertEquals(0x48524D41, b.getInt(0)); // "HRMA"
    assertEquals(2, b.getShort(4));
    assertEquals(1, b.get(6)); // type: region announcement
    assertEquals(0, b.get(7));
    assertEquals(0x0102030405060708L, b.getLong(8));
    assertEquals(42, b.getInt(16));
    assertEquals(KEY.length, b.getShort(20));
    assertEquals(0, b.getShort(22));
    assertEquals(BASE, b.getLong(24));
    assertEquals(4L << 20, b.getLong(32));
    for (int i = 0; i < KEY.length; i++) {
      assertEquals(KEY[i], b.get(40 + i));
    }
    CRC32 crc = new CRC32();
    crc.update(b.array(), 0, 40 + KEY.length);
    assertEquals((int) crc.getValue(), b.getInt(40 + KEY.length));
  }

  @Test(timeout = 10_000)
  public void testEverySingleBitFlipIsRejected() {
    ByteBuffer b = ByteBuffer.allocate(LENGTH);
    RegionAnnouncement a = new RegionAnnouncement();
    for (int bit = 0; bit < LENGTH * 8; bit++) {
      sample(b, 0);
      b.put(bit / 8, (byte) (b.get(bit / 8) ^ (1 << (bit % 8))));
      try {
        a.wrap(b, 0, LENGTH).validate();
        fail("a flip of bit " + bit + " went unnoticed");
      } catch (MalformedMessageException expected) {
        // CRC32 or a field check.
      }
    }
  }

  @Test(timeout = 10_000)
  public void testTruncatedAndOversizedMessages() {
    ByteBuffer b = ByteBuffer.allocate(RegionAnnouncement.MAX_LENGTH + 64);
    sample(b, 0);
    // Shorter than the smallest announcement (a 1-byte key).
    for (int length : new int[] {0, 8, 40, 44}) {
      expectRejected(b, length, "region announcement of " + length
          + " bytes, outside 45.." + RegionAnnouncement.MAX_LENGTH);
    }
    // Cut or padded: the key length no longer explains the length.
    expectRejected(b, LENGTH - 1, "region announcement of " + (LENGTH - 1)
        + " bytes with a remote key of " + KEY.length + " bytes (expected "
        + LENGTH + ")");
    expectRejected(b, LENGTH + 1, "with a remote key of " + KEY.length);
    expectRejected(b, RegionAnnouncement.MAX_LENGTH + 1, "outside 45..");
    // A key length that points past the message, resealed.
    b.putShort(20, (short) (KEY.length + 100));
    new RegionAnnouncement().wrap(b, 0, LENGTH).seal();
    expectRejected(b, LENGTH, "with a remote key of " + (KEY.length + 100));
  }

  @Test(timeout = 10_000)
  public void testHeaderFieldsAreChecked() {
    expectRejected(0, 1, 'X', "bad message magic");
    expectRejected(4, 2, 1, "unsupported message version 1");
    expectRejected(6, 1, PacketDescriptor.TYPE, "message of type 2 where"
        + " type 1 was expected");
  }

  @Test(timeout = 10_000)
  public void testReservedBitsAreRejected() {
    for (int bit = 0; bit < 8; bit++) {
      expectRejected(7, 1, 1 << bit, "reserved bits of a region"
          + " announcement are set");
    }
    for (int bit = 0; bit < 16; bit++) {
      expectRejected(22, 2, 1 << bit, "reserved bits");
    }
  }

  @Test(timeout = 10_000)
  public void testRegionFieldsAreChecked() {
    expectRejected(16, 4, 0, "region id 0 outside 1..1048576");
    expectRejected(16, 4, RegionAnnouncement.MAX_REGION_ID + 1,
        "region id 1048577");
    expectRejected(16, 4, -1, "region id -1");
    expectRejected(24, 8, 0, "bad region: base 0x0");
    // No user memory in the top half of the address space; a negative
    // base would make the getter's range checks overflow.
    expectRejected(24, 8, -4096, "bad region: base 0xfffffffffffff000");
    expectRejected(24, 8, Long.MIN_VALUE, "bad region: base 0x8000");
    expectRejected(32, 8, 0, "bad region: base 0x7f28d8a20000 length 0");
    expectRejected(32, 8, -4096, "length -4096");
    expectRejected(32, 8, Long.MAX_VALUE, "length " + Long.MAX_VALUE);
  }

  @Test(timeout = 10_000)
  public void testEncodeRefusesWhatCannotBeSent() {
    ByteBuffer b = ByteBuffer.allocate(RegionAnnouncement.MAX_LENGTH + 8);
    for (int keyLength : new int[] {0, RegionAnnouncement.MAX_RKEY_LENGTH
        + 1}) {
      try {
        new RegionAnnouncement().wrap(b, 0, b.capacity()).encode(1, 1, BASE,
            4096, new byte[keyLength]);
        fail("encoded a key of " + keyLength + " bytes");
      } catch (IllegalArgumentException expected) {
        // Announcements carry 1 to 1024 key bytes.
      }
    }
    try {
      new RegionAnnouncement().wrap(ByteBuffer.allocate(LENGTH - 1), 0,
          LENGTH - 1).encode(1, 1, BASE, 4096, KEY);
      fail("encoded past the end of the buffer");
    } catch (IllegalArgumentException expected) {
      // One byte short.
    }
    try {
      new RegionAnnouncement().wrap(ByteBuffer.allocate(LENGTH)
          .order(ByteOrder.LITTLE_ENDIAN), 0, LENGTH);
      fail("wrapped a little-endian buffer");
    } catch (IllegalArgumentException expected) {
      // Byte order is part of the format.
    }
    // The largest key fits exactly.
    new RegionAnnouncement().wrap(b, 0, b.capacity()).encode(1, 1, BASE,
        4096, new byte[RegionAnnouncement.MAX_RKEY_LENGTH]);
  }

  private static void expectRejected(int offset, int width, long value,
      String message) {
    ByteBuffer b = ByteBuffer.allocate(LENGTH);
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
    new RegionAnnouncement().wrap(b, 0, LENGTH).seal();
    expectRejected(b, LENGTH, message);
  }

  private static void expectRejected(ByteBuffer b, int length,
      String message) {
    try {
      new RegionAnnouncement().wrap(b, 0, length).validate();
      fail("accepted an announcement that should fail with: " + message);
    } catch (MalformedMessageException e) {
      assertTrue("\"" + e.getMessage() + "\" should say \"" + message
          + "\"", e.getMessage().contains(message));
    }
  }
}
