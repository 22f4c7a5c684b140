package org.hdfsrdma.ucx;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32;

/**
 * Flyweight over the descriptor message that tells a getter where one packet
 * lies in the exposer's registered memory.
 *
 * <p>The exposer (an HDFS client) sends one descriptor per packet to every
 * getter (DataNode); the getter validates it and fetches the packet bytes
 * with a one-sided get. The message is small and fixed-layout so it costs
 * no allocation to write or read. All fields are big-endian (network order,
 * like Hadoop's own wire format).
 *
 * <pre>
 *  0               4       6       8
 *  +---------------+-------+-------+
 *  | magic "HRMA"  |version| flags |
 *  +---------------+-------+-------+  8
 *  |        session nonce          |
 *  +-------------------------------+ 16
 *  |           block id            |
 *  +-------------------------------+ 24
 *  |       generation stamp        |
 *  +-------------------------------+ 32
 *  |         packet seqno          |
 *  +-------------------------------+ 40
 *  |        offset in block        |
 *  +-------------------------------+ 48
 *  |  region base (exposed memory) |
 *  +-------------------------------+ 56
 *  |  region length                |
 *  +-------------------------------+ 64
 *  |  packet address               |
 *  +---------------+---------------+ 72
 *  | checksum len  |  data len     |
 *  +---------------+-------+-------+ 80
 *  | region id     |rkeylen|  0    |
 *  +---------------+-------+-------+ 88
 *  | CRC32         | packed remote key (rkeylen bytes)
 *  +---------------+-----------------
 * </pre>
 *
 * <p>The CRC32 covers every other byte of the message (the CRC field
 * counts as zero). UCX checks a remote key only as far as the transport
 * uses it (over tcp not at all), so a corrupted key or address must be
 * caught here, before it reaches UCX.
 *
 * <p>The packet occupies {@code checksum len + data len} bytes from the
 * packet address (checksums first, then data, as in an HDFS packet), and
 * must lie inside the exposed region. The region id names the registered
 * slab so the getter can cache the unpacked remote key per region.
 *
 * <p>Nothing is trusted before {@link #validate(int)}: a message from the
 * network may be truncated, of another version, or hostile.
 */
public final class PacketDescriptor {

  /** "HRMA": hdfs-rdma. */
  public static final int MAGIC = 0x48524D41;
  public static final short VERSION = 1;

  public static final int MAGIC_OFFSET = 0;
  public static final int VERSION_OFFSET = 4;
  public static final int FLAGS_OFFSET = 6;
  public static final int SESSION_OFFSET = 8;
  public static final int BLOCK_ID_OFFSET = 16;
  public static final int GENERATION_STAMP_OFFSET = 24;
  public static final int SEQNO_OFFSET = 32;
  public static final int OFFSET_IN_BLOCK_OFFSET = 40;
  public static final int REGION_BASE_OFFSET = 48;
  public static final int REGION_LENGTH_OFFSET = 56;
  public static final int ADDRESS_OFFSET = 64;
  public static final int CHECKSUM_LENGTH_OFFSET = 72;
  public static final int DATA_LENGTH_OFFSET = 76;
  public static final int REGION_ID_OFFSET = 80;
  public static final int RKEY_LENGTH_OFFSET = 84;
  public static final int RESERVED_OFFSET = 86;
  public static final int CRC_OFFSET = 88;
  public static final int RKEY_OFFSET = 92;
  public static final int HEADER_LENGTH = RKEY_OFFSET;

  /** Packed UCX remote keys are tens to a few hundred bytes. */
  public static final int MAX_RKEY_LENGTH = 4096;
  public static final int MAX_LENGTH = HEADER_LENGTH + MAX_RKEY_LENGTH;

  /** The packet is the last one of its block. */
  public static final short FLAG_LAST_PACKET_IN_BLOCK = 0x1;
  /** The writer asked for the packet to be synced to disk (hsync). */
  public static final short FLAG_SYNC_BLOCK = 0x2;
  private static final short KNOWN_FLAGS =
      FLAG_LAST_PACKET_IN_BLOCK | FLAG_SYNC_BLOCK;

  private static final byte[] ZERO_CRC_FIELD = new byte[4];

  private ByteBuffer buffer;
  private int base;
  private int length;

  /** Points this flyweight at a message of {@code length} bytes. */
  public PacketDescriptor wrap(ByteBuffer buf, int offset, int len) {
    if (buf.order() != ByteOrder.BIG_ENDIAN) {
      throw new IllegalArgumentException("descriptor buffers are big-endian");
    }
    if (offset < 0 || len < 0 || offset + len > buf.capacity()) {
      throw new IndexOutOfBoundsException("offset " + offset + " length "
          + len + " capacity " + buf.capacity());
    }
    this.buffer = buf;
    this.base = offset;
    this.length = len;
    return this;
  }

  /** The wrapped buffer. */
  public ByteBuffer buffer() {
    return buffer;
  }

  /** Offset of the message in {@link #buffer()}. */
  public int offset() {
    return base;
  }

  /** Length of the wrapped message in bytes. */
  public int length() {
    return length;
  }

  /** Bytes a message with a remote key of {@code rkeyLength} bytes takes. */
  public static int encodedLength(int rkeyLength) {
    return HEADER_LENGTH + rkeyLength;
  }

  /**
   * Writes a whole message at the wrapped position and sets the wrapped
   * length to the encoded length.
   */
  public PacketDescriptor encode(long session, long blockId,
      long generationStamp, long seqno, long offsetInBlock, short flags,
      int regionId, long regionBase, long regionLength, long address,
      int checksumLength, int dataLength, byte[] rkey) {
    int total = encodedLength(rkey.length);
    if (rkey.length > MAX_RKEY_LENGTH) {
      throw new IllegalArgumentException("remote key of " + rkey.length
          + " bytes exceeds " + MAX_RKEY_LENGTH);
    }
    if (base + total > buffer.capacity()) {
      throw new IllegalArgumentException("descriptor of " + total
          + " bytes does not fit at offset " + base + " of a buffer of "
          + buffer.capacity());
    }
    buffer.putInt(base + MAGIC_OFFSET, MAGIC);
    buffer.putShort(base + VERSION_OFFSET, VERSION);
    buffer.putShort(base + FLAGS_OFFSET, flags);
    buffer.putLong(base + SESSION_OFFSET, session);
    buffer.putLong(base + BLOCK_ID_OFFSET, blockId);
    buffer.putLong(base + GENERATION_STAMP_OFFSET, generationStamp);
    buffer.putLong(base + SEQNO_OFFSET, seqno);
    buffer.putLong(base + OFFSET_IN_BLOCK_OFFSET, offsetInBlock);
    buffer.putLong(base + REGION_BASE_OFFSET, regionBase);
    buffer.putLong(base + REGION_LENGTH_OFFSET, regionLength);
    buffer.putLong(base + ADDRESS_OFFSET, address);
    buffer.putInt(base + CHECKSUM_LENGTH_OFFSET, checksumLength);
    buffer.putInt(base + DATA_LENGTH_OFFSET, dataLength);
    buffer.putInt(base + REGION_ID_OFFSET, regionId);
    buffer.putShort(base + RKEY_LENGTH_OFFSET, (short) rkey.length);
    buffer.putShort(base + RESERVED_OFFSET, (short) 0);
    for (int i = 0; i < rkey.length; i++) {
      buffer.put(base + RKEY_OFFSET + i, rkey[i]);
    }
    this.length = total;
    buffer.putInt(base + CRC_OFFSET, computeCrc());
    return this;
  }

  /** CRC32 of the wrapped message with the CRC field taken as zero. */
  private int computeCrc() {
    CRC32 crc = new CRC32();
    ByteBuffer view = buffer.duplicate();
    view.limit(base + CRC_OFFSET).position(base);
    crc.update(view);
    crc.update(ZERO_CRC_FIELD);
    view.limit(base + length).position(base + RKEY_OFFSET);
    crc.update(view);
    return (int) crc.getValue();
  }

  /** Recomputes the CRC after fields were changed in place. */
  public PacketDescriptor seal() {
    buffer.putInt(base + CRC_OFFSET, computeCrc());
    return this;
  }

  /**
   * Checks every field before any is used.
   *
   * @param maxPacketBytes the largest packet (checksums plus data) the
   *     getter accepts; it bounds the local buffer a get may fill
   * @throws MalformedDescriptorException saying what is wrong
   */
  public PacketDescriptor validate(int maxPacketBytes)
      throws MalformedDescriptorException {
    if (length < HEADER_LENGTH) {
      throw new MalformedDescriptorException("truncated descriptor: "
          + length + " bytes, the header alone is " + HEADER_LENGTH);
    }
    int magic = buffer.getInt(base + MAGIC_OFFSET);
    if (magic != MAGIC) {
      throw new MalformedDescriptorException(String.format(
          "bad descriptor magic 0x%08x, expected 0x%08x", magic, MAGIC));
    }
    short version = version();
    if (version != VERSION) {
      throw new MalformedDescriptorException("unsupported descriptor version "
          + version + ", this side speaks " + VERSION);
    }
    short flags = flags();
    if ((flags & ~KNOWN_FLAGS) != 0) {
      throw new MalformedDescriptorException(String.format(
          "unknown descriptor flags 0x%04x", flags));
    }
    int rkeyLength = rkeyLength();
    if (rkeyLength == 0 || rkeyLength > MAX_RKEY_LENGTH) {
      throw new MalformedDescriptorException("remote key length " + rkeyLength
          + " outside 1.." + MAX_RKEY_LENGTH);
    }
    if (HEADER_LENGTH + rkeyLength != length) {
      throw new MalformedDescriptorException("descriptor of " + length
          + " bytes does not match its remote key length " + rkeyLength
          + " (expected " + (HEADER_LENGTH + rkeyLength) + " bytes)");
    }
    int crc = buffer.getInt(base + CRC_OFFSET);
    int expectedCrc = computeCrc();
    if (crc != expectedCrc) {
      throw new MalformedDescriptorException(String.format(
          "descriptor checksum mismatch: carries 0x%08x, content gives 0x%08x",
          crc, expectedCrc));
    }
    if (buffer.getShort(base + RESERVED_OFFSET) != 0) {
      throw new MalformedDescriptorException("reserved descriptor field set");
    }
    int checksumLength = checksumLength();
    int dataLength = dataLength();
    if (checksumLength < 0 || dataLength < 0) {
      throw new MalformedDescriptorException("negative length: checksums "
          + checksumLength + ", data " + dataLength);
    }
    long packetLength = (long) checksumLength + dataLength;
    if (packetLength > maxPacketBytes) {
      throw new MalformedDescriptorException("packet of " + packetLength
          + " bytes exceeds the cap of " + maxPacketBytes);
    }
    if (offsetInBlock() < 0) {
      throw new MalformedDescriptorException("negative offset in block "
          + offsetInBlock());
    }
    long regionBase = regionBase();
    long regionLength = regionLength();
    if (regionBase == 0 || regionLength <= 0
        || regionBase + regionLength < regionBase) {
      throw new MalformedDescriptorException("bad exposed region: base 0x"
          + Long.toHexString(regionBase) + " length " + regionLength);
    }
    long address = address();
    if (address < regionBase || address + packetLength < address
        || address + packetLength > regionBase + regionLength) {
      throw new MalformedDescriptorException("packet [0x"
          + Long.toHexString(address) + ", +" + packetLength
          + ") lies outside the exposed region [0x"
          + Long.toHexString(regionBase) + ", +" + regionLength + ")");
    }
    return this;
  }

  public short version() {
    return buffer.getShort(base + VERSION_OFFSET);
  }

  public short flags() {
    return buffer.getShort(base + FLAGS_OFFSET);
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

  public long regionBase() {
    return buffer.getLong(base + REGION_BASE_OFFSET);
  }

  public long regionLength() {
    return buffer.getLong(base + REGION_LENGTH_OFFSET);
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

  /** Checksums plus data: the bytes one get fetches. */
  public int packetLength() {
    return checksumLength() + dataLength();
  }

  public int regionId() {
    return buffer.getInt(base + REGION_ID_OFFSET);
  }

  public int rkeyLength() {
    return buffer.getShort(base + RKEY_LENGTH_OFFSET) & 0xFFFF;
  }

  /** Copies the packed remote key out. Only after {@link #validate}. */
  public byte[] rkey() {
    byte[] rkey = new byte[rkeyLength()];
    for (int i = 0; i < rkey.length; i++) {
      rkey[i] = buffer.get(base + RKEY_OFFSET + i);
    }
    return rkey;
  }

  /** True when the packed remote key equals {@code other}. */
  public boolean rkeyEquals(byte[] other) {
    if (other.length != rkeyLength()) {
      return false;
    }
    for (int i = 0; i < other.length; i++) {
      if (buffer.get(base + RKEY_OFFSET + i) != other[i]) {
        return false;
      }
    }
    return true;
  }

  /** An independent copy of the wrapped message, on the heap. */
  public PacketDescriptor copy() {
    ByteBuffer copy = ByteBuffer.allocate(length);
    for (int i = 0; i < length; i++) {
      copy.put(i, buffer.get(base + i));
    }
    return new PacketDescriptor().wrap(copy, 0, length);
  }

  @Override
  public String toString() {
    if (buffer == null || length < HEADER_LENGTH) {
      return "PacketDescriptor(" + length + " bytes)";
    }
    return "PacketDescriptor(block " + blockId() + "_" + generationStamp()
        + ", seqno " + seqno() + ", offset " + offsetInBlock()
        + ", checksums " + checksumLength() + ", data " + dataLength()
        + ", region " + regionId() + ")";
  }
}
