package org.hdfsrdma.ucx;

import java.nio.ByteBuffer;
import java.util.zip.CRC32;

/**
 * What every hdfs-rdma message starts with (magic, version, type) and the
 * CRC32 that ends it, shared by {@link PacketDescriptor} and
 * {@link RegionAnnouncement}.
 */
final class WireCrc {

  private WireCrc() {
  }

  /**
   * CRC32 of {@code view}'s bytes [start, end), computed with {@code crc}
   * through {@code view}'s position and limit (a view owned by the caller,
   * so the message buffer itself is not moved). Allocates nothing.
   */
  static int of(CRC32 crc, ByteBuffer view, int start, int end) {
    crc.reset();
    view.clear();
    view.limit(end).position(start);
    crc.update(view);
    return (int) crc.getValue();
  }

  /**
   * Checks magic, version and type.
   *
   * @throws MalformedMessageException saying which is wrong
   */
  static void checkHeader(ByteBuffer buffer, int base, byte type)
      throws MalformedMessageException {
    int magic = buffer.getInt(base + PacketDescriptor.MAGIC_OFFSET);
    if (magic != PacketDescriptor.MAGIC) {
      throw new MalformedMessageException(String.format(
          "bad message magic 0x%08x, expected 0x%08x", magic,
          PacketDescriptor.MAGIC));
    }
    short version = buffer.getShort(base + PacketDescriptor.VERSION_OFFSET);
    if (version != PacketDescriptor.VERSION) {
      throw new MalformedMessageException("unsupported message version "
          + version + ", this side speaks " + PacketDescriptor.VERSION);
    }
    byte actual = buffer.get(base + PacketDescriptor.TYPE_OFFSET);
    if (actual != type) {
      throw new MalformedMessageException("message of type " + actual
          + " where type " + type + " was expected");
    }
  }

  /** The type byte of a message of at least 8 bytes, or -1 if shorter. */
  static int typeOf(ByteBuffer buffer, int base, int length) {
    return length < 8 ? -1 : buffer.get(base + PacketDescriptor.TYPE_OFFSET);
  }
}
