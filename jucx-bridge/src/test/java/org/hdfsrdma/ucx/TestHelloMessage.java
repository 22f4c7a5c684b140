package org.hdfsrdma.ucx;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import java.util.zip.CRC32;

import org.junit.Test;

/**
 * The hello's wire layout and structural validation, without UCX; literal
 * offsets pin the format.
 */
public class TestHelloMessage {

  /** About the size of a UCX worker address on shared memory. */
  private static final byte[] ADDRESS = new byte[145];
  private static final int LENGTH = HelloMessage.encodedLength(
      ADDRESS.length);

  static {
    new Random(3).nextBytes(ADDRESS);
  }

  private static HelloMessage sample(ByteBuffer b, int offset) {
    return new HelloMessage().wrap(b, offset, b.capacity() - offset)
        .encode(ADDRESS);
  }

  /** Recomputes the CRC after a test changed a field. */
  private static void reseal(ByteBuffer b, int length) {
    CRC32 crc = new CRC32();
    for (int i = 0; i < length - 4; i++) {
      crc.update(b.get(i));
    }
    b.putInt(length - 4, (int) crc.getValue());
  }

  @Test(timeout = 10_000)
  public void testRoundTripAtAnOffset() throws Exception {
    ByteBuffer b = ByteBuffer.allocateDirect(1024);
    HelloMessage h = sample(b, 100);
    assertEquals(12 + ADDRESS.length + 4, h.length());
    assertEquals(LENGTH, h.length());
    HelloMessage read = new HelloMessage().wrap(b, 100, LENGTH).validate();
    assertEquals(ADDRESS.length, read.addressLength());
    assertArrayEquals(ADDRESS, read.address());
    read.address()[0] ^= 1;
    assertArrayEquals("address() is a copy", ADDRESS, read.address());
    for (int i = 0; i < 100; i++) {
      assertEquals(0, b.get(i));
    }
    for (int i = 100 + LENGTH; i < 1024; i++) {
      assertEquals(0, b.get(i));
    }
  }

  @Test(timeout = 10_000)
  public void testLayoutIsBigEndianAtFixedOffsets() {
    ByteBuffer b = ByteBuffer.allocate(LENGTH);
    sample(b, 0);
    assertEquals(0x48524D41, b.getInt(0));
    assertEquals(2, b.getShort(4));
    assertEquals(3, b.get(6)); // type: hello
    assertEquals(0, b.get(7));
    assertEquals(0, b.get(8)); // address length, most significant first
    assertEquals(ADDRESS.length, b.get(9) & 0xFF);
    assertEquals(0, b.getShort(10));
    for (int i = 0; i < ADDRESS.length; i++) {
      assertEquals(ADDRESS[i], b.get(12 + i));
    }
    CRC32 crc = new CRC32();
    crc.update(b.array(), 0, 12 + ADDRESS.length);
    assertEquals((int) crc.getValue(), b.getInt(12 + ADDRESS.length));
  }

  @Test(timeout = 10_000)
  public void testEverySingleBitFlipIsRejected() {
    ByteBuffer b = ByteBuffer.allocate(LENGTH);
    HelloMessage h = new HelloMessage();
    for (int bit = 0; bit < LENGTH * 8; bit++) {
      sample(b, 0);
      b.put(bit / 8, (byte) (b.get(bit / 8) ^ (1 << (bit % 8))));
      try {
        h.wrap(b, 0, LENGTH).validate();
        fail("a flip of bit " + bit + " went unnoticed");
      } catch (MalformedMessageException expected) {
        // CRC32 or a field check.
      }
    }
  }

  @Test(timeout = 10_000)
  public void testTruncatedAndOversizedMessages() {
    int max = HelloMessage.encodedLength(HelloMessage.MAX_ADDRESS_LENGTH);
    ByteBuffer b = ByteBuffer.allocate(max + 16);
    sample(b, 0);
    for (int length : new int[] {0, 12, 16, max + 1}) {
      expectRejected(b, length, "hello of " + length + " bytes");
    }
    expectRejected(b, LENGTH - 1, "hello of " + (LENGTH - 1)
        + " bytes with an address of " + ADDRESS.length + " bytes");
    expectRejected(b, LENGTH + 1, "with an address of " + ADDRESS.length);
    b.putShort(8, (short) 0);
    reseal(b, LENGTH);
    expectRejected(b, LENGTH, "with an address of 0 bytes");
  }

  @Test(timeout = 10_000)
  public void testHeaderFieldsAreChecked() {
    expectRejected(3, 'B', "bad message magic");
    expectRejected(5, 1, "unsupported message version 1");
    expectRejected(6, RegionAnnouncement.TYPE, "message of type 1 where"
        + " type 3 was expected");
  }

  @Test(timeout = 10_000)
  public void testReservedBitsAreRejected() {
    for (int bit = 0; bit < 8; bit++) {
      expectRejected(7, 1 << bit, "reserved bits of a hello are set");
      expectRejected(10, 1 << bit, "reserved bits of a hello are set");
      expectRejected(11, 1 << bit, "reserved bits of a hello are set");
    }
  }

  @Test(timeout = 10_000)
  public void testEncodeRefusesWhatCannotBeSent() {
    ByteBuffer big = ByteBuffer.allocate(8192);
    for (int n : new int[] {0, HelloMessage.MAX_ADDRESS_LENGTH + 1}) {
      try {
        new HelloMessage().wrap(big, 0, big.capacity()).encode(new byte[n]);
        fail("encoded an address of " + n + " bytes");
      } catch (IllegalArgumentException expected) {
        // 1 to 4096 bytes.
      }
    }
    try {
      new HelloMessage().wrap(ByteBuffer.allocate(LENGTH - 1), 0,
          LENGTH - 1).encode(ADDRESS);
      fail("encoded past the end of the buffer");
    } catch (IllegalArgumentException expected) {
      // One byte short.
    }
    try {
      new HelloMessage().wrap(ByteBuffer.allocate(64)
          .order(ByteOrder.LITTLE_ENDIAN), 0, 64);
      fail("wrapped a little-endian buffer");
    } catch (IllegalArgumentException expected) {
      // Byte order is part of the format.
    }
    try {
      new HelloMessage().wrap(ByteBuffer.allocate(64), 60, 8);
      fail("wrapped past the end");
    } catch (IndexOutOfBoundsException expected) {
      // 60 + 8 > 64.
    }
  }

  /** Sets one byte of a valid hello, reseals, expects the rejection. */
  private static void expectRejected(int offset, int value, String message) {
    ByteBuffer b = ByteBuffer.allocate(LENGTH);
    sample(b, 0);
    b.put(offset, (byte) value);
    reseal(b, LENGTH);
    expectRejected(b, LENGTH, message);
  }

  private static void expectRejected(ByteBuffer b, int length,
      String message) {
    try {
      new HelloMessage().wrap(b, 0, length).validate();
      fail("accepted a hello that should fail with: " + message);
    } catch (MalformedMessageException e) {
      assertTrue("\"" + e.getMessage() + "\" should say \"" + message
          + "\"", e.getMessage().contains(message));
    }
  }
}
