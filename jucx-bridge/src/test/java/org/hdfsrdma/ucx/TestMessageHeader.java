package org.hdfsrdma.ucx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.ByteBuffer;

import org.junit.Test;

/**
 * The header every message shares, without UCX: its offsets pinned with
 * literals, and every bound taken from the length the receiver was given
 * (or the buffer), never from a length the message claims: a hello that
 * claims a longer address than arrived reads nothing past what arrived, a
 * wrap whose end overflows an int is refused, typeOf answers -1 for a
 * length the buffer does not hold.
 */
public class TestMessageHeader {

  @Test(timeout = 10_000)
  public void testLayout() {
    assertEquals(0x48524D41, MessageHeader.MAGIC);
    assertEquals(2, MessageHeader.VERSION);
    assertEquals(0, MessageHeader.MAGIC_OFFSET);
    assertEquals(4, MessageHeader.VERSION_OFFSET);
    assertEquals(6, MessageHeader.TYPE_OFFSET);
    assertEquals(7, MessageHeader.FLAGS_OFFSET);
    assertEquals(8, MessageHeader.LENGTH);
    assertEquals(4, MessageHeader.CRC_LENGTH);
    ByteBuffer b = ByteBuffer.allocate(16);
    MessageHeader h = new MessageHeader().wrap(b, 2, 14);
    h.writeHeader((byte) 9, 0x81);
    h.seal(13);
    assertEquals(13, h.length());
    assertEquals(0x48524D41, b.getInt(2));
    assertEquals(2, b.getShort(6));
    assertEquals(9, b.get(8));
    assertEquals((byte) 0x81, b.get(9));
    assertEquals(0x81, h.flags());
    assertEquals(9, MessageHeader.typeOf(b, 2, 13));
  }

  @Test(timeout = 10_000)
  public void testFieldsOutsideTheReceivedLengthAreNotRead() throws Exception {
    byte[] address = new byte[145];
    ByteBuffer b = ByteBuffer.allocate(1024);
    int full = new HelloMessage().wrap(b, 0, b.capacity()).encode(address)
        .length();
    // The message says 145 address bytes; only 40 bytes arrived.
    HelloMessage cut = new HelloMessage().wrap(b, 0, 40);
    assertEquals(145, cut.addressLength());
    try {
      cut.address();
      fail("read an address past the 40 bytes received");
    } catch (IndexOutOfBoundsException expected) {
      assertTrue(expected.getMessage(), expected.getMessage().contains(
          "145 bytes at 12 of a message of 40"));
    }
    try {
      cut.validate();
      fail("validated a cut hello");
    } catch (MalformedMessageException expected) {
      assertTrue(expected.getMessage(), expected.getMessage().contains(
          "hello of 40 bytes with an address of 145 bytes"));
    }
    new HelloMessage().wrap(b, 0, full).validate();
  }

  @Test(timeout = 10_000)
  public void testShortMessagesAreRefusedByTheHeader() {
    ByteBuffer b = ByteBuffer.allocate(64);
    for (int length : new int[] {0, 7, 8, 11}) {
      try {
        new MessageHeader().wrap(b, 0, length).checkHeader((byte) 1);
        fail("checked the header of " + length + " bytes");
      } catch (MalformedMessageException e) {
        assertTrue(e.getMessage(), e.getMessage().contains("message of "
            + length + " bytes, shorter than a header and a checksum (12)"));
      }
    }
  }

  @Test(timeout = 10_000)
  public void testBoundsComeFromTheBufferNotTheMessage() {
    ByteBuffer b = ByteBuffer.allocate(64);
    for (int[] bad : new int[][] {{-1, 8}, {0, -1}, {60, 8}, {0, 65},
        {Integer.MAX_VALUE - 4, 72}, {8, Integer.MAX_VALUE}}) {
      try {
        new MessageHeader().wrap(b, bad[0], bad[1]);
        fail("wrapped " + bad[1] + " bytes at " + bad[0] + " of 64");
      } catch (IndexOutOfBoundsException expected) {
        // Overflow-safe: offset + length is never computed.
      }
    }
    try {
      new PacketDescriptor().wrap(b, Integer.MAX_VALUE - 4);
      fail("wrapped a descriptor whose end overflows");
    } catch (IndexOutOfBoundsException expected) {
      // 72 bytes from there are not in the buffer.
    }
    ByteBuffer d = ByteBuffer.allocate(PacketDescriptor.LENGTH);
    new PacketDescriptor().wrap(d, 0).encode(1, 2, 3, 4, 0, 0, 0, 0, 0, 0);
    assertEquals(PacketDescriptor.TYPE, MessageHeader.typeOf(d, 0, 72));
    assertEquals(-1, MessageHeader.typeOf(d, 0, 73));
    assertEquals(-1, MessageHeader.typeOf(d, 68, 8));
    assertEquals(-1, MessageHeader.typeOf(d, -1, 8));
  }
}
