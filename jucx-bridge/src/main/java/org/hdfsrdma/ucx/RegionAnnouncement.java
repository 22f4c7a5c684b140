package org.hdfsrdma.ucx;

import java.nio.ByteBuffer;

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
 * <p>Header and CRC32 as every message's ({@link MessageHeader}:
 * big-endian, the CRC32 covers every byte before it). The region id is
 * the exposer's name for the region within the session, 1 to
 * {@link #MAX_REGION_ID}; 0 is reserved for "no region". A getter trusts
 * none of it: {@link RemoteRegion} checks the key's shape and, for shared
 * memory, the kernel's facts about the segment before UCX sees the key.
 */
public final class RegionAnnouncement {

  public static final byte TYPE = 1;

  public static final int SESSION_OFFSET = MessageHeader.LENGTH;
  public static final int REGION_ID_OFFSET = 16;
  public static final int RKEY_LENGTH_OFFSET = 20;
  public static final int RESERVED_OFFSET = 22;
  public static final int BASE_OFFSET = 24;
  public static final int LENGTH_OFFSET = 32;
  public static final int RKEY_OFFSET = 40;

  /** Packed UCX remote keys are tens to a few hundred bytes. */
  public static final int MAX_RKEY_LENGTH = 1024;
  /** The longest announcement. */
  public static final int MAX_LENGTH =
      RKEY_OFFSET + MAX_RKEY_LENGTH + MessageHeader.CRC_LENGTH;
  /** Region ids a session may use: 1 to this. */
  public static final int MAX_REGION_ID = 1 << 20;

  private final MessageHeader header = new MessageHeader();

  /** Bytes an announcement with a key of {@code rkeyLength} bytes takes. */
  public static int encodedLength(int rkeyLength) {
    return RKEY_OFFSET + rkeyLength + MessageHeader.CRC_LENGTH;
  }

  /**
   * Points this flyweight at a message of {@code len} bytes: the length
   * the transport delivered, or the space to encode in.
   */
  public RegionAnnouncement wrap(ByteBuffer buf, int offset, int len) {
    header.wrap(buf, offset, len);
    return this;
  }

  public ByteBuffer buffer() {
    return header.buffer();
  }

  public int offset() {
    return header.offset();
  }

  public int length() {
    return header.length();
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
    if (total > header.length()) {
      throw new IllegalArgumentException("announcement of " + total
          + " bytes does not fit in " + header.length() + " at "
          + header.offset() + " of " + header.buffer().capacity());
    }
    header.writeHeader(TYPE, 0);
    header.putLong(SESSION_OFFSET, session);
    header.putInt(REGION_ID_OFFSET, regionId);
    header.putShort(RKEY_LENGTH_OFFSET, (short) rkey.length);
    header.putShort(RESERVED_OFFSET, (short) 0);
    header.putLong(BASE_OFFSET, regionBase);
    header.putLong(LENGTH_OFFSET, regionLength);
    header.putBytes(RKEY_OFFSET, rkey);
    header.seal(total);
    return this;
  }

  /** Recomputes the CRC after fields were changed in place. */
  public RegionAnnouncement seal() {
    header.seal();
    return this;
  }

  /**
   * Checks the structure before any field is used.
   *
   * @throws MalformedMessageException saying what is wrong
   */
  public RegionAnnouncement validate() throws MalformedMessageException {
    int length = header.length();
    if (length < encodedLength(1) || length > MAX_LENGTH) {
      throw new MalformedMessageException("region announcement of "
          + length + " bytes, outside " + encodedLength(1) + ".."
          + MAX_LENGTH);
    }
    header.checkHeader(TYPE);
    if (header.flags() != 0 || header.getShort(RESERVED_OFFSET) != 0) {
      throw new MalformedMessageException(
          "reserved bits of a region announcement are set");
    }
    int rkeyLength = rkeyLength();
    if (encodedLength(rkeyLength) != length) {
      throw new MalformedMessageException("region announcement of "
          + length + " bytes with a remote key of " + rkeyLength
          + " bytes (expected " + encodedLength(rkeyLength) + ")");
    }
    header.checkCrc("announcement");
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
    return header.getLong(SESSION_OFFSET);
  }

  public int regionId() {
    return header.getInt(REGION_ID_OFFSET);
  }

  public int rkeyLength() {
    return header.getUnsignedShort(RKEY_LENGTH_OFFSET);
  }

  /** Offset of the packed remote key in {@link #buffer()}. */
  public int rkeyOffset() {
    return header.offset() + RKEY_OFFSET;
  }

  public long regionBase() {
    return header.getLong(BASE_OFFSET);
  }

  public long regionLength() {
    return header.getLong(LENGTH_OFFSET);
  }

  /** A copy of the packed remote key. */
  public byte[] rkey() {
    byte[] k = new byte[rkeyLength()];
    header.getBytes(RKEY_OFFSET, k);
    return k;
  }

  @Override
  public String toString() {
    return header.buffer() == null ? "RegionAnnouncement(unwrapped)"
        : "RegionAnnouncement(region " + regionId() + ", base 0x"
            + Long.toHexString(regionBase()) + ", length " + regionLength()
            + ", key " + rkeyLength() + " bytes)";
  }
}
