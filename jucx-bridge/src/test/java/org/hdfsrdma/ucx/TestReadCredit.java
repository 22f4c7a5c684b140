package org.hdfsrdma.ucx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import java.util.zip.CRC32;

import org.junit.Test;

/**
 * The read credit's wire layout and structural validation, without UCX;
 * literal offsets pin the format.
 */
public class TestReadCredit {

  private static final long READ_ID = 0x0123456789abcdefL;
  private static final int LENGTH = 32;

  private static ReadCredit sample(ByteBuffer b, int offset, int flags,
      long seqno) {
    return new ReadCredit().wrap(b, offset).encode(READ_ID, flags, seqno);
  }

  /** Recomputes the CRC after a test changed a field. */
  private static void reseal(ByteBuffer b) {
    CRC32 crc = new CRC32();
    for (int i = 0; i < LENGTH - 4; i++) {
      crc.update(b.get(i));
    }
    b.putInt(LENGTH - 4, (int) crc.getValue());
  }

  @Test(timeout = 10_000)
  public void testRoundTripOfEveryKindAtAnOffset() throws Exception {
    ByteBuffer b = ByteBuffer.allocateDirect(256);
    int[] kinds = {0, ReadCredit.FLAG_FINAL, ReadCredit.FLAG_CANCEL,
        ReadCredit.FLAG_FALLBACK};
    for (int flags : kinds) {
      sample(b, 100, flags, 41);
      ReadCredit c = new ReadCredit().wrap(b, 100).validate(LENGTH);
      assertEquals(READ_ID, c.readId());
      assertEquals(41, c.seqno());
      assertEquals(flags, c.flags());
      assertEquals(flags == ReadCredit.FLAG_FINAL, c.isFinal());
      assertEquals(flags == ReadCredit.FLAG_CANCEL, c.isCancel());
      assertEquals(flags == ReadCredit.FLAG_FALLBACK, c.isFallback());
    }
    for (int i = 0; i < 100; i++) {
      assertEquals(0, b.get(i));
    }
    for (int i = 100 + LENGTH; i < 256; i++) {
      assertEquals(0, b.get(i));
    }
    sample(b, 0, ReadCredit.FLAG_CANCEL, -1);
    assertEquals(-1, new ReadCredit().wrap(b, 0).validate(LENGTH).seqno());
  }

  @Test(timeout = 10_000)
  public void testLayoutIsBigEndianAtFixedOffsets() {
    assertEquals(LENGTH, ReadCredit.LENGTH);
    ByteBuffer b = ByteBuffer.allocate(LENGTH);
    sample(b, 0, ReadCredit.FLAG_FALLBACK, 0x1122334455667788L);
    assertEquals(0x48524D41, b.getInt(0));
    assertEquals(2, b.getShort(4));
    assertEquals(4, b.get(6)); // type: read credit
    assertEquals(4, b.get(7)); // flags: fallback
    assertEquals(0x01, b.get(8)); // read id, most significant first
    assertEquals((byte) 0xef, b.get(15));
    assertEquals(0x11, b.get(16)); // seqno
    assertEquals((byte) 0x88, b.get(23));
    assertEquals(0, b.getInt(24));
    CRC32 crc = new CRC32();
    crc.update(b.array(), 0, 28);
    assertEquals((int) crc.getValue(), b.getInt(28));
  }

  @Test(timeout = 10_000)
  public void testEverySingleBitFlipIsRejected() {
    ByteBuffer b = ByteBuffer.allocate(LENGTH);
    ReadCredit c = new ReadCredit();
    for (int bit = 0; bit < LENGTH * 8; bit++) {
      sample(b, 0, ReadCredit.FLAG_FINAL, 7);
      b.put(bit / 8, (byte) (b.get(bit / 8) ^ (1 << (bit % 8))));
      try {
        c.wrap(b, 0).validate(LENGTH);
        fail("a flip of bit " + bit + " went unnoticed");
      } catch (MalformedMessageException expected) {
        // CRC32 or a field check.
      }
    }
  }

  @Test(timeout = 10_000)
  public void testFieldsAreChecked() {
    ByteBuffer b = ByteBuffer.allocate(LENGTH + 1);
    for (int length : new int[] {0, 8, LENGTH - 1, LENGTH + 1}) {
      sample(b, 0, 0, 5);
      expectRejected(b, length, "read credit of " + length + " bytes");
    }
    expectRejected(3, 'B', "bad message magic");
    expectRejected(5, 1, "unsupported message version 1");
    expectRejected(6, PacketDescriptor.TYPE, "message of type 2 where type"
        + " 4 was expected");
    for (int bit = 3; bit < 8; bit++) {
      expectRejected(7, 1 << bit, "unknown read credit flags");
    }
    expectRejected(7, ReadCredit.FLAG_FINAL | ReadCredit.FLAG_FALLBACK,
        "at most one");
    expectRejected(7, ReadCredit.FLAG_CANCEL | ReadCredit.FLAG_FINAL,
        "at most one");
    for (int i = 24; i < 28; i++) {
      expectRejected(i, 1, "reserved bits of a read credit are set");
    }
    sample(b, 0, 0, 3);
    b.putLong(8, 0);
    reseal(b);
    expectRejected(b, LENGTH, "read id 0");
    for (int flags : new int[] {0, ReadCredit.FLAG_FINAL,
        ReadCredit.FLAG_FALLBACK}) {
      sample(b, 0, flags, 3);
      b.putLong(16, -1);
      reseal(b);
      expectRejected(b, LENGTH, "seqno -1");
    }
    sample(b, 0, ReadCredit.FLAG_CANCEL, 3);
    b.putLong(16, -2);
    reseal(b);
    expectRejected(b, LENGTH, "seqno -2");
  }

  /** Random 32-byte messages, sealed or not: none is taken. */
  @Test(timeout = 30_000)
  public void testRandomMessagesAreRejected() {
    Random random = new Random(4);
    ByteBuffer b = ByteBuffer.allocate(LENGTH);
    ReadCredit c = new ReadCredit();
    int accepted = 0;
    for (int i = 0; i < 10_000; i++) {
      byte[] junk = new byte[LENGTH];
      random.nextBytes(junk);
      b.clear();
      b.put(junk);
      if (i % 2 == 0) {
        // A valid header and CRC around junk fields.
        b.putInt(0, MessageHeader.MAGIC);
        b.putShort(4, MessageHeader.VERSION);
        b.put(6, ReadCredit.TYPE);
        reseal(b);
      }
      try {
        c.wrap(b, 0).validate(LENGTH);
        accepted++;
        assertTrue(c.readId() != 0);
        assertTrue(c.seqno() >= -1);
        assertTrue(Integer.bitCount(c.flags()) <= 1);
        assertEquals(0, b.getInt(24));
      } catch (MalformedMessageException expected) {
        // Most of them.
      }
    }
    assertTrue(accepted + " of 10,000 accepted", accepted < 10);
  }

  @Test(timeout = 10_000)
  public void testEncodeRefusesWhatCannotBeSent() {
    ByteBuffer b = ByteBuffer.allocate(LENGTH);
    long[][] wrong = {{0, 0, 1}, {1, 3, 1}, {1, 8, 1}, {1, 0, -1},
        {1, ReadCredit.FLAG_FALLBACK, -1}, {1, ReadCredit.FLAG_CANCEL, -2}};
    for (long[] w : wrong) {
      try {
        new ReadCredit().wrap(b, 0).encode(w[0], (int) w[1], w[2]);
        fail("encoded read " + w[0] + " flags " + w[1] + " seqno " + w[2]);
      } catch (IllegalArgumentException expected) {
        // What validate refuses is never written.
      }
    }
    try {
      new ReadCredit().wrap(ByteBuffer.allocate(64)
          .order(ByteOrder.LITTLE_ENDIAN), 0);
      fail("wrapped a little-endian buffer");
    } catch (IllegalArgumentException expected) {
      // Byte order is part of the format.
    }
    try {
      new ReadCredit().wrap(ByteBuffer.allocate(64), 40);
      fail("wrapped past the end");
    } catch (IndexOutOfBoundsException expected) {
      // 40 + 32 > 64.
    }
    assertFalse(new ReadCredit().toString().isEmpty());
  }

  /** Sets one byte of a valid credit, reseals, expects the rejection. */
  private static void expectRejected(int offset, int value, String message) {
    ByteBuffer b = ByteBuffer.allocate(LENGTH);
    sample(b, 0, 0, 5);
    b.put(offset, (byte) value);
    reseal(b);
    expectRejected(b, LENGTH, message);
  }

  private static void expectRejected(ByteBuffer b, int length,
      String message) {
    try {
      new ReadCredit().wrap(b, 0).validate(length);
      fail("accepted a read credit that should fail with: " + message);
    } catch (MalformedMessageException e) {
      assertTrue("\"" + e.getMessage() + "\" should say \"" + message
          + "\"", e.getMessage().contains(message));
    }
  }
}
