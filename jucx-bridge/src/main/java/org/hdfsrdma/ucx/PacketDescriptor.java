package org.hdfsrdma.ucx;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32;

/**
 * Flyweight over the message that tells a getter where one packet lies in
 * memory the exposer announced earlier with a {@link RegionAnnouncement}.
 *
 * <p>The exposer (an HDFS client) sends one per packet to every getter (a
 * DataNode), which validates it against what it knows of the session and
 * fetches the packet. Fixed size, so that it fits UCX's short-message path
 * on shared memory and costs no allocation to write or read. Big-endian
 * (network order, like Hadoop's own wire format).
 *
 * <pre>
 *  0               4       6   7   8
 *  +---------------+-------+---+---+
 *  | magic "HRMA"  |version|typ|flg|   typ = {@link #TYPE}
 *  +---------------+-------+---+---+  8
 *  |          session id           |
 *  +-------------------------------+ 16
 *  |           block id            |
 *  +-------------------------------+ 24
 *  |       generation stamp        |
 *  +-------------------------------+ 32
 *  |         packet seqno          |
 *  +-------------------------------+ 40
 *  |        offset in block        |
 *  +-------------------------------+ 48
 *  |  packet address (exposer's)   |
 *  +---------------+---------------+ 56
 *  | checksum len  |   data len    |
 *  +---------------+---------------+ 64
 *  |   region id   |     CRC32     |
 *  +---------------+---------------+ 72
 * </pre>
 *
 * <p>The packet occupies {@code checksum len + data len} bytes from the
 * packet address (checksums first, then data, as in an HDFS packet) inside
 * the region the session announced under {@code region id}. A packet with
 * no bytes (a heartbeat, an empty end-of-block or sync packet) has region id
 * 0 and address 0. The CRC32 covers the 68 bytes before it: the transports
 * check their own frames, but a getter must never act on a corrupted
 * address or length.
 *
 * <p>{@link #validate()} checks the structure only: magic, version, type,
 * flags, CRC, signs. Whether the session, block, seqno and range are what
 * the getter expects is for the getter, which knows.
 */
public final class PacketDescriptor {

  /** "HRMA": hdfs-rdma; the first four bytes of every message. */
  public static final int MAGIC = 0x48524D41;
  /** The message layout version this code writes and reads. */
  public static final short VERSION = 2;
  /** Message type of a packet descriptor. */
  public static final byte TYPE = 2;

  public static final int MAGIC_OFFSET = 0;
  public static final int VERSION_OFFSET = 4;
  public static final int TYPE_OFFSET = 6;
  public static final int FLAGS_OFFSET = 7;
  public static final int SESSION_OFFSET = 8;
  public static final int BLOCK_ID_OFFSET = 16;
  public static final int GENERATION_STAMP_OFFSET = 24;
  public static final int SEQNO_OFFSET = 32;
  public static final int OFFSET_IN_BLOCK_OFFSET = 40;
  public static final int ADDRESS_OFFSET = 48;
  public static final int CHECKSUM_LENGTH_OFFSET = 56;
  public static final int DATA_LENGTH_OFFSET = 60;
  public static final int REGION_ID_OFFSET = 64;
  public static final int CRC_OFFSET = 68;
  /** Every packet descriptor is this long. */
  public static final int LENGTH = 72;

  /** The packet is the last one of its block. */
  public static final byte FLAG_LAST_PACKET_IN_BLOCK = 0x1;
  /** The writer asked for the packet to be synced to disk (hsync). */
  public static final byte FLAG_SYNC_BLOCK = 0x2;
  /**
   * The packet lies in the landing buffers of the DataNode before the
   * getter in a chain, not in the client's memory (for the counters).
   */
  public static final byte FLAG_FORWARDED = 0x4;
  private static final int KNOWN_FLAGS =
      FLAG_LAST_PACKET_IN_BLOCK | FLAG_SYNC_BLOCK | FLAG_FORWARDED;

  private final CRC32 crc = new CRC32();
  private ByteBuffer buffer;
  /** A duplicate of buffer, moved by CRC computations. */
  private ByteBuffer view;
  private int base;

  /**
   * Points this flyweight at {@link #LENGTH} bytes of a big-endian buffer.
   */
  public PacketDescriptor wrap(ByteBuffer buf, int offset) {
    if (buf.order() != ByteOrder.BIG_ENDIAN) {
      throw new IllegalArgumentException("message buffers are big-endian");
    }
    if (offset < 0 || offset + LENGTH > buf.capacity()) {
      throw new IndexOutOfBoundsException("offset " + offset + " capacity "
          + buf.capacity());
    }
    if (buf != buffer) {
      this.buffer = buf;
      this.view = buf.duplicate();
    }
    this.base = offset;
    return this;
  }

  /** The type of the message of {@code length} bytes at the start of buf. */
  public static int typeOf(ByteBuffer buf, int length) {
    return WireCrc.typeOf(buf, 0, length);
  }

  /** The wrapped buffer. */
  public ByteBuffer buffer() {
    return buffer;
  }

  /** Offset of the message in {@link #buffer()}. */
  public int offset() {
    return base;
  }

  /** Writes a whole descriptor at the wrapped position. */
  public PacketDescriptor encode(long session, long blockId,
      long generationStamp, long seqno, long offsetInBlock, int flags,
      int regionId, long address, int checksumLength, int dataLength) {
    buffer.putInt(base + MAGIC_OFFSET, MAGIC);
    buffer.putShort(base + VERSION_OFFSET, VERSION);
    buffer.put(base + TYPE_OFFSET, TYPE);
    buffer.put(base + FLAGS_OFFSET, (byte) flags);
    buffer.putLong(base + SESSION_OFFSET, session);
    buffer.putLong(base + BLOCK_ID_OFFSET, blockId);
    buffer.putLong(base + GENERATION_STAMP_OFFSET, generationStamp);
    buffer.putLong(base + SEQNO_OFFSET, seqno);
    buffer.putLong(base + OFFSET_IN_BLOCK_OFFSET, offsetInBlock);
    buffer.putLong(base + ADDRESS_OFFSET, address);
    buffer.putInt(base + CHECKSUM_LENGTH_OFFSET, checksumLength);
    buffer.putInt(base + DATA_LENGTH_OFFSET, dataLength);
    buffer.putInt(base + REGION_ID_OFFSET, regionId);
    return seal();
  }

  /** Replaces the session id (one descriptor per getter) and reseals. */
  public PacketDescriptor withSession(long session) {
    buffer.putLong(base + SESSION_OFFSET, session);
    return seal();
  }

  /** Recomputes the CRC after fields were changed in place. */
  public PacketDescriptor seal() {
    buffer.putInt(base + CRC_OFFSET, computeCrc());
    return this;
  }

  private int computeCrc() {
    return WireCrc.of(crc, view, base, base + CRC_OFFSET);
  }

  /**
   * Checks the structure of a message of {@code length} bytes before any
   * field is used.
   *
   * @throws MalformedMessageException saying what is wrong
   */
  public PacketDescriptor validate(int length)
      throws MalformedMessageException {
    if (length != LENGTH) {
      throw new MalformedMessageException("packet descriptor of " + length
          + " bytes, expected " + LENGTH);
    }
    WireCrc.checkHeader(buffer, base, TYPE);
    int flags = flags();
    if ((flags & ~KNOWN_FLAGS) != 0) {
      throw new MalformedMessageException(String.format(
          "unknown descriptor flags 0x%02x", flags));
    }
    int carried = buffer.getInt(base + CRC_OFFSET);
    int computed = computeCrc();
    if (carried != computed) {
      throw new MalformedMessageException(String.format(
          "descriptor checksum mismatch: carries 0x%08x, content gives 0x%08x",
          carried, computed));
    }
    if (checksumLength() < 0 || dataLength() < 0) {
      throw new MalformedMessageException("negative length: checksums "
          + checksumLength() + ", data " + dataLength());
    }
    if (offsetInBlock() < 0) {
      throw new MalformedMessageException("negative offset in block "
          + offsetInBlock());
    }
    if (packetLength() == 0 && (regionId() != 0 || address() != 0)) {
      throw new MalformedMessageException("an empty packet names region "
          + regionId() + " at 0x" + Long.toHexString(address()));
    }
    return this;
  }

  public int flags() {
    return buffer.get(base + FLAGS_OFFSET) & 0xFF;
  }

  public boolean isLastPacketInBlock() {
    return (flags() & FLAG_LAST_PACKET_IN_BLOCK) != 0;
  }

  public boolean isSyncBlock() {
    return (flags() & FLAG_SYNC_BLOCK) != 0;
  }

  public long session() {
    return buffer.getLong(base + SESSION_OFFSET);
  }

  public long blockId() {
    return buffer.getLong(base + BLOCK_ID_OFFSET);
  }

  public long generationStamp() {
    return buffer.getLong(base + GENERATION_STAMP_OFFSET);
  }

  public long seqno() {
    return buffer.getLong(base + SEQNO_OFFSET);
  }

  public long offsetInBlock() {
    return buffer.getLong(base + OFFSET_IN_BLOCK_OFFSET);
  }

  public long address() {
    return buffer.getLong(base + ADDRESS_OFFSET);
  }

  public int checksumLength() {
    return buffer.getInt(base + CHECKSUM_LENGTH_OFFSET);
  }

  public int dataLength() {
    return buffer.getInt(base + DATA_LENGTH_OFFSET);
  }

  /** Checksums plus data: the bytes one get fetches (overflow-safe). */
  public long packetLength() {
    return (long) checksumLength() + dataLength();
  }

  public int regionId() {
    return buffer.getInt(base + REGION_ID_OFFSET);
  }

  /** Copies this descriptor's bytes to {@code to} at {@code offset}. */
  public void copyTo(ByteBuffer to, int offset) {
    for (int i = 0; i < LENGTH; i += 8) {
      to.putLong(offset + i, buffer.getLong(base + i));
    }
  }

  @Override
  public String toString() {
    if (buffer == null) {
      return "PacketDescriptor(unwrapped)";
    }
    return "PacketDescriptor(block " + blockId() + "_" + generationStamp()
        + ", seqno " + seqno() + ", offset " + offsetInBlock()
        + ", checksums " + checksumLength() + ", data " + dataLength()
        + ", region " + regionId() + ")";
  }
}
