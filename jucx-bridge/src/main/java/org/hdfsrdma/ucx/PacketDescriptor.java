package org.hdfsrdma.ucx;

import java.nio.ByteBuffer;

/**
 * Flyweight over the message that tells a getter where one packet lies in
 * memory the exposer announced earlier with a {@link RegionAnnouncement}.
 *
 * <p>The exposer (an HDFS client) sends one per packet to every getter (a
 * DataNode), which validates it against what it knows of the session and
 * fetches the packet. Fixed size, so that it fits UCX's short-message path
 * on shared memory and costs no allocation to write or read. The first
 * 8 bytes and the CRC32 are every message's ({@link MessageHeader}: magic,
 * version, type, flags; big-endian).
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
 * <p>{@link #validate(int)} checks the structure only: magic, version, type,
 * flags, CRC, signs. Whether the session, block, seqno and range are what
 * the getter expects is for the getter, which knows.
 */
public final class PacketDescriptor {

  /** Message type of a packet descriptor. */
  public static final byte TYPE = 2;

  public static final int SESSION_OFFSET = MessageHeader.LENGTH;
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
  public static final int LENGTH = CRC_OFFSET + MessageHeader.CRC_LENGTH;

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

  private final MessageHeader header = new MessageHeader();

  /**
   * Points this flyweight at {@link #LENGTH} bytes of a big-endian buffer.
   */
  public PacketDescriptor wrap(ByteBuffer buf, int offset) {
    header.wrap(buf, offset, LENGTH);
    return this;
  }

  /**
   * The type of the message of {@code length} bytes at the start of buf
   * (a {@link MessageHandler}'s buffer), or -1 when it is shorter than a
   * header: which flyweight is to validate it.
   */
  public static int typeOf(ByteBuffer buf, int length) {
    return MessageHeader.typeOf(buf, 0, length);
  }

  /** The wrapped buffer. */
  public ByteBuffer buffer() {
    return header.buffer();
  }

  /** Offset of the message in {@link #buffer()}. */
  public int offset() {
    return header.offset();
  }

  /** Writes a whole descriptor at the wrapped position. */
  public PacketDescriptor encode(long session, long blockId,
      long generationStamp, long seqno, long offsetInBlock, int flags,
      int regionId, long address, int checksumLength, int dataLength) {
    header.writeHeader(TYPE, flags);
    header.putLong(SESSION_OFFSET, session);
    header.putLong(BLOCK_ID_OFFSET, blockId);
    header.putLong(GENERATION_STAMP_OFFSET, generationStamp);
    header.putLong(SEQNO_OFFSET, seqno);
    header.putLong(OFFSET_IN_BLOCK_OFFSET, offsetInBlock);
    header.putLong(ADDRESS_OFFSET, address);
    header.putInt(CHECKSUM_LENGTH_OFFSET, checksumLength);
    header.putInt(DATA_LENGTH_OFFSET, dataLength);
    header.putInt(REGION_ID_OFFSET, regionId);
    return seal();
  }

  /** Replaces the session id (one descriptor per getter) and reseals. */
  public PacketDescriptor withSession(long session) {
    header.putLong(SESSION_OFFSET, session);
    return seal();
  }

  /** Recomputes the CRC after fields were changed in place. */
  public PacketDescriptor seal() {
    header.seal();
    return this;
  }

  /**
   * Checks the structure of a message of {@code length} bytes, the length
   * the transport delivered, before any field is used.
   *
   * @throws MalformedMessageException saying what is wrong
   */
  public PacketDescriptor validate(int length)
      throws MalformedMessageException {
    if (length != LENGTH) {
      throw new MalformedMessageException("packet descriptor of " + length
          + " bytes, expected " + LENGTH);
    }
    header.checkHeader(TYPE);
    int flags = flags();
    if ((flags & ~KNOWN_FLAGS) != 0) {
      throw new MalformedMessageException(String.format(
          "unknown descriptor flags 0x%02x", flags));
    }
    header.checkCrc("descriptor");
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
    return header.flags();
  }

  public boolean isLastPacketInBlock() {
    return (flags() & FLAG_LAST_PACKET_IN_BLOCK) != 0;
  }

  public boolean isSyncBlock() {
    return (flags() & FLAG_SYNC_BLOCK) != 0;
  }

  public long session() {
    return header.getLong(SESSION_OFFSET);
  }

  public long blockId() {
    return header.getLong(BLOCK_ID_OFFSET);
  }

  public long generationStamp() {
    return header.getLong(GENERATION_STAMP_OFFSET);
  }

  public long seqno() {
    return header.getLong(SEQNO_OFFSET);
  }

  public long offsetInBlock() {
    return header.getLong(OFFSET_IN_BLOCK_OFFSET);
  }

  public long address() {
    return header.getLong(ADDRESS_OFFSET);
  }

  public int checksumLength() {
    return header.getInt(CHECKSUM_LENGTH_OFFSET);
  }

  public int dataLength() {
    return header.getInt(DATA_LENGTH_OFFSET);
  }

  /** Checksums plus data: the bytes one get fetches (overflow-safe). */
  public long packetLength() {
    return (long) checksumLength() + dataLength();
  }

  public int regionId() {
    return header.getInt(REGION_ID_OFFSET);
  }

  /** Copies this descriptor's bytes to {@code to} at {@code offset}. */
  public void copyTo(ByteBuffer to, int offset) {
    for (int i = 0; i < LENGTH; i += 8) {
      to.putLong(offset + i, header.getLong(i));
    }
  }

  @Override
  public String toString() {
    if (header.buffer() == null) {
      return "PacketDescriptor(unwrapped)";
    }
    return "PacketDescriptor(block " + blockId() + "_" + generationStamp()
        + ", seqno " + seqno() + ", offset " + offsetInBlock()
        + ", checksums " + checksumLength() + ", data " + dataLength()
        + ", region " + regionId() + ")";
  }
}
