package org.hdfsrdma.ucx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import org.junit.Test;

/** The descriptor's wire layout and validation, without UCX. */
public class TestPacketDescriptor {

  private static final long REGION = 0x7f0000100000L;
  private static final byte[] RKEY = {1, 2, 3, 4, 5, 6, 7, 8, 9};

  private static PacketDescriptor sample(ByteBuffer buffer, int offset) {
    return new PacketDescriptor().wrap(buffer, offset, buffer.capacity()
        - offset).encode(77L, 1073741825L, 1001L, 5L, 5L * 65536,
            PacketDescriptor.FLAG_LAST_PACKET_IN_BLOCK, 3, REGION, 4 << 20,
            REGION + 65536, 512, 65024, RKEY);
  }

  @Test
  public void testRoundTrip() throws Exception {
    ByteBuffer buffer = ByteBuffer.allocateDirect(256);
    PacketDescriptor d = sample(buffer, 16).validate(1 << 20);
    assertEquals(PacketDescriptor.HEADER_LENGTH + RKEY.length, d.length());
    assertEquals(77L, d.session());
    assertEquals(1073741825L, d.blockId());
    assertEquals(1001L, d.generationStamp());
    assertEquals(5L, d.seqno());
    assertEquals(5L * 65536, d.offsetInBlock());
    assertTrue(d.isLastPacketInBlock());
    assertFalse(d.isSyncBlock());
    assertEquals(3, d.regionId());
    assertEquals(REGION, d.regionBase());
    assertEquals(4 << 20, d.regionLength());
    assertEquals(REGION + 65536, d.address());
    assertEquals(512, d.checksumLength());
    assertEquals(65024, d.dataLength());
    assertEquals(65536, d.packetLength());
    assertTrue(d.rkeyEquals(RKEY));
    PacketDescriptor copy = d.copy().validate(1 << 20);
    assertEquals(d.seqno(), copy.seqno());
    assertTrue(copy.rkeyEquals(RKEY));
  }

  @Test
  public void testLayoutIsBigEndianAtFixedOffsets() {
    ByteBuffer buffer = ByteBuffer.allocate(256);
    sample(buffer, 0);
    assertEquals('H', buffer.get(0));
    assertEquals('R', buffer.get(1));
    assertEquals('M', buffer.get(2));
    assertEquals('A', buffer.get(3));
    assertEquals(0, buffer.get(PacketDescriptor.VERSION_OFFSET));
    assertEquals(1, buffer.get(PacketDescriptor.VERSION_OFFSET + 1));
    assertEquals(5, buffer.get(PacketDescriptor.SEQNO_OFFSET + 7));
    assertEquals(RKEY.length, buffer.get(PacketDescriptor.RKEY_LENGTH_OFFSET + 1));
    assertEquals(1, buffer.get(PacketDescriptor.RKEY_OFFSET));
  }

  @Test
  public void testRejectsLittleEndianBuffers() {
    try {
      new PacketDescriptor().wrap(ByteBuffer.allocate(128)
          .order(ByteOrder.LITTLE_ENDIAN), 0, 128);
      fail();
    } catch (IllegalArgumentException expected) {
      // Explicit byte order is part of the format.
    }
  }

  @Test
  public void testEveryFieldIsChecked() {
    expectRejected(-1, 0, 0, "truncated");
    expectRejected(PacketDescriptor.MAGIC_OFFSET, 4, 0x11223344, "magic");
    expectRejected(PacketDescriptor.VERSION_OFFSET, 2, 9, "version 9");
    expectRejected(PacketDescriptor.FLAGS_OFFSET, 2, 0x100, "flags");
    expectRejected(PacketDescriptor.OFFSET_IN_BLOCK_OFFSET, 8, -1,
        "negative offset");
    expectRejected(PacketDescriptor.DATA_LENGTH_OFFSET, 4, -1, "negative");
    expectRejected(PacketDescriptor.DATA_LENGTH_OFFSET, 4, 2 << 20, "cap");
    expectRejected(PacketDescriptor.REGION_BASE_OFFSET, 8, 0, "region");
    expectRejected(PacketDescriptor.REGION_LENGTH_OFFSET, 8, -5, "region");
    expectRejected(PacketDescriptor.REGION_LENGTH_OFFSET, 8, 65536, "outside");
    expectRejected(PacketDescriptor.ADDRESS_OFFSET, 8, REGION - 1, "outside");
    expectRejected(PacketDescriptor.RKEY_LENGTH_OFFSET, 2, 0, "remote key");
    expectRejected(PacketDescriptor.RKEY_LENGTH_OFFSET, 2, 5000, "remote key");
    expectRejected(PacketDescriptor.RESERVED_OFFSET, 2, 1, "reserved");
  }

  /** Overwrites one field (resealing the CRC) and expects a rejection. */
  private static void expectRejected(int offset, int width, long value,
      String message) {
    ByteBuffer buffer = ByteBuffer.allocate(256);
    PacketDescriptor d = sample(buffer, 0);
    int length = d.length();
    if (offset < 0) {
      length = PacketDescriptor.HEADER_LENGTH - 1;
    } else if (width == 8) {
      buffer.putLong(offset, value);
    } else if (width == 4) {
      buffer.putInt(offset, (int) value);
    } else {
      buffer.putShort(offset, (short) value);
    }
    d = new PacketDescriptor().wrap(buffer, 0, length);
    if (length >= PacketDescriptor.HEADER_LENGTH) {
      d.seal();
    }
    try {
      d.validate(1 << 20);
      fail("accepted a descriptor with field at " + offset + " = " + value);
    } catch (MalformedDescriptorException e) {
      assertTrue(e.getMessage() + " should mention " + message,
          e.getMessage().contains(message));
    }
  }

  @Test
  public void testCorruptionFailsTheChecksum() {
    ByteBuffer buffer = ByteBuffer.allocate(256);
    for (int i = 0; i < PacketDescriptor.HEADER_LENGTH + RKEY.length; i++) {
      if (i >= PacketDescriptor.CRC_OFFSET
          && i < PacketDescriptor.CRC_OFFSET + 4) {
        continue;
      }
      PacketDescriptor d = sample(buffer, 0);
      buffer.put(i, (byte) (buffer.get(i) ^ 0x40));
      try {
        d.validate(1 << 20);
        fail("a flipped bit at byte " + i + " went unnoticed");
      } catch (MalformedDescriptorException e) {
        // Either the checksum or an earlier field check catches it.
      }
    }
  }

  @Test
  public void testEncodeRefusesWhatCannotFit() {
    try {
      new PacketDescriptor().wrap(ByteBuffer.allocate(64), 0, 64).encode(1, 2,
          3, 4, 5, (short) 0, 0, REGION, 1 << 20, REGION, 0, 10, RKEY);
      fail();
    } catch (IllegalArgumentException expected) {
      // A 64-byte buffer cannot hold the header.
    }
  }
}
