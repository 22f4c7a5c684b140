package org.hdfsrdma.ucx;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32;

/**
 * Flyweight over the message by which an exposer announces, once per
 * session, a region of its registered memory that the session's packet
 * descriptors will point into: its bounds and UCX's packed remote key.
 *
 * <pre>
 *  0               4       6   7   8
 *  +---------------+-------+---+---+
 *  | magic "HRMA"  |version|typ| 0 |   typ = {@link #TYPE}
 *  +---------------+-------+---+---+  8
 *  |          session id           |
 *  +---------------+-------+-------+ 16
 *  |   region id   |rkeylen|   0   |
 *  +---------------+-------+-------+ 24
 *  |  region base (exposer's VA)   |
 *  +-------------------------------+ 32
 *  |        region length          |
 *  +-------------------------------+ 40
 *  | packed remote key (rkeylen bytes)
 *  +---------------+----------------
 *  |     CRC32     |                 40 + rkeylen .. 44 + rkeylen
 *  +---------------+
 * </pre>
 *
 * <p>Big-endian. The CRC32 covers every byte before it. The region id is
 * the exposer's name for the region within the session, 1 to
 * {@link #MAX_REGION_ID}; 0 is reserved for "no region". A getter trusts
 * none of it: {@link RemoteRegion} checks the key's shape and, for shared
 * memory, the kernel's facts about the segment before UCX sees the key.
 */
public final class RegionAnnouncement {

  public static final byte TYPE = 1;

  public static final int SESSION_OFFSET = PacketDescriptor.SESSION_OFFSET;
  public static final int REGION_ID_OFFSET = 16;
  public static final int RKEY_LENGTH_OFFSET = 20;
  public static final int RESERVED_OFFSET = 22;
  public static final int BASE_OFFSET = 24;
  public static final int LENGTH_OFFSET = 32;
  public static final int RKEY_OFFSET = 40;

  /** Packed UCX remote keys are tens to a few hundred bytes. */
  public static final int MAX_RKEY_LENGTH = 1024;
  /** The longest announcement. */
  public static final int MAX_LENGTH = RKEY_OFFSET + MAX_RKEY_LENGTH + 4;
  /** Region ids a session may use: 1 to this. */
  public static final int MAX_REGION_ID = 1 << 20;

  private final CRC32 crc = new CRC32();
  private ByteBuffer buffer;
  private ByteBuffer view;
  private int base;
  private int length;

  /** Bytes an announcement with a key of {@code rkeyLength} bytes takes. */
  public static int encodedLength(int rkeyLength) {
    return RKEY_OFFSET + rkeyLength + 4;
  }

  /** Points this flyweight at a message of {@code len} bytes. */
  public RegionAnnouncement wrap(ByteBuffer buf, int offset, int len) {
    if (buf.order() != ByteOrder.BIG_ENDIAN) {
      throw new IllegalArgumentException("message buffers are big-endian");
    }
    if (offset < 0 || len < 0 || offset + len > buf.capacity()) {
      throw new IndexOutOfBoundsException("offset " + offset + " length "
          + len + " capacity " + buf.capacity());
    }
    if (buf != buffer) {
      this.buffer = buf;
      this.view = buf.duplicate();
    }
    this.base = offset;
    this.length = len;
    return this;
  }

  public ByteBuffer buffer() {
    return buffer;
  }

  public int offset() {
    return base;
  }

  public int length() {
    return length;
  }

  /**
   * Writes a whole announcement at the wrapped position; the wrapped length
   * becomes the encoded length.
   */
  public RegionAnnouncement encode(long session, int regionId, long regionBase,
      long regionLength, byte[] rkey) {
    if (rkey.length == 0 || rkey.length > MAX_RKEY_LENGTH) {
      throw new IllegalArgumentException("remote key of " + rkey.length
          + " bytes");
    }
    int total = encodedLength(rkey.length);
    if (base + total > buffer.capacity()) {
      throw new IllegalArgumentException("announcement of " + total
          + " bytes does not fit at " + base + " of " + buffer.capacity());
    }
    buffer.putInt(base + PacketDescriptor.MAGIC_OFFSET, PacketDescriptor.MAGIC);
    buffer.putShort(base + PacketDescriptor.VERSION_OFFSET,
        PacketDescriptor.VERSION);
    buffer.put(base + PacketDescriptor.TYPE_OFFSET, TYPE);
    buffer.put(base + PacketDescriptor.FLAGS_OFFSET, (byte) 0);
    buffer.putLong(base + SESSION_OFFSET, session);
    buffer.putInt(base + REGION_ID_OFFSET, regionId);
    buffer.putShort(base + RKEY_LENGTH_OFFSET, (short) rkey.length);
    buffer.putShort(base + RESERVED_OFFSET, (short) 0);
    buffer.putLong(base + BASE_OFFSET, regionBase);
    buffer.putLong(base + LENGTH_OFFSET, regionLength);
    for (int i = 0; i < rkey.length; i++) {
      buffer.put(base + RKEY_OFFSET + i, rkey[i]);
    }
    this.length = total;
    return seal();
  }

  /** Recomputes the CRC after fields were changed in place. */
  public RegionAnnouncement seal() {
    buffer.putInt(base + length - 4, computeCrc());
    return this;
  }

  private int computeCrc() {
    return WireCrc.of(crc, view, base, base + length - 4);
  }

  /**
   * Checks the structure before any field is used.
   *
   * @throws MalformedMessageException saying what is wrong
   */
  public RegionAnnouncement validate() throws MalformedMessageException {
    if (length < encodedLength(1) || length > MAX_LENGTH) {
      throw new MalformedMessageException("region announcement of "
          + length + " bytes, outside " + encodedLength(1) + ".."
          + MAX_LENGTH);
    }
    WireCrc.checkHeader(buffer, base, TYPE);
    if (buffer.get(base + PacketDescriptor.FLAGS_OFFSET) != 0
        || buffer.getShort(base + RESERVED_OFFSET) != 0) {
      throw new MalformedMessageException(
          "reserved bits of a region announcement are set");
    }
    int rkeyLength = rkeyLength();
    if (encodedLength(rkeyLength) != length) {
      throw new MalformedMessageException("region announcement of "
          + length + " bytes with a remote key of " + rkeyLength
          + " bytes (expected " + encodedLength(rkeyLength) + ")");
    }
    int carried = buffer.getInt(base + length - 4);
    int computed = computeCrc();
    if (carried != computed) {
      throw new MalformedMessageException(String.format(
          "announcement checksum mismatch: carries 0x%08x, content gives"
          + " 0x%08x", carried, computed));
    }
    int id = regionId();
    if (id < 1 || id > MAX_REGION_ID) {
      throw new MalformedMessageException("region id " + id
          + " outside 1.." + MAX_REGION_ID);
    }
    long b = regionBase();
    long len = regionLength();
    // User memory lies in the lower half of the address space: a positive
    // base and end keep every range check of the getter free of overflow.
    if (b <= 0 || len <= 0 || b + len < b) {
      throw new MalformedMessageException("bad region: base 0x"
          + Long.toHexString(b) + " length " + len);
    }
    return this;
  }

  public long session() {
    return buffer.getLong(base + SESSION_OFFSET);
  }

  public int regionId() {
    return buffer.getInt(base + REGION_ID_OFFSET);
  }

  public int rkeyLength() {
    return buffer.getShort(base + RKEY_LENGTH_OFFSET) & 0xFFFF;
  }

  /** Offset of the packed remote key in {@link #buffer()}. */
  public int rkeyOffset() {
    return base + RKEY_OFFSET;
  }

  public long regionBase() {
    return buffer.getLong(base + BASE_OFFSET);
  }

  public long regionLength() {
    return buffer.getLong(base + LENGTH_OFFSET);
  }

  /** A copy of the packed remote key. */
  public byte[] rkey() {
    byte[] k = new byte[rkeyLength()];
    for (int i = 0; i < k.length; i++) {
      k[i] = buffer.get(base + RKEY_OFFSET + i);
    }
    return k;
  }

  @Override
  public String toString() {
    return buffer == null ? "RegionAnnouncement(unwrapped)"
        : "RegionAnnouncement(region " + regionId() + ", base 0x"
            + Long.toHexString(regionBase()) + ", length " + regionLength()
            + ", key " + rkeyLength() + " bytes)";
  }
}
