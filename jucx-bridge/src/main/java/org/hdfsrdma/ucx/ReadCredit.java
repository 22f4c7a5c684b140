package org.hdfsrdma.ucx;

import java.nio.ByteBuffer;

/**
 * Flyweight over the message a reader sends back to the side that exposed
 * block data to it: which exposed packets it is done with, so that their
 * buffers can be filled again, and whether the rest of the read is to come
 * as ordinary stock packets instead.
 *
 * <pre>
 *  0               4       6   7   8
 *  +---------------+-------+---+---+
 *  | magic "HRMA"  |version|typ|flg|   typ = {@link #TYPE}
 *  +---------------+-------+---+---+  8
 *  |            read id            |
 *  +-------------------------------+ 16
 *  |            seqno              |
 *  +---------------+---------------+ 24
 *  |   reserved 0  |     CRC32     |
 *  +---------------+---------------+ 32
 * </pre>
 *
 * <p>Header and CRC32 as every message's ({@link MessageHeader}:
 * big-endian, the CRC32 covers the 28 bytes before it). At most one flag:
 * <ul>
 * <li>none: every packet up to and including {@code seqno} is fetched and
 * verified, and no byte a get of the reader's reads from its buffer will
 * ever be used (credits are cumulative);</li>
 * <li>{@link #FLAG_FINAL}: the same for the whole read, {@code seqno}
 * being its last packet's;</li>
 * <li>{@link #FLAG_CANCEL}: the reader stops early; the same promise for
 * every buffer of the read ({@code seqno} the last packet it used, -1 for
 * none);</li>
 * <li>{@link #FLAG_FALLBACK}: the same promise for every buffer, and a
 * request to send packets from {@code seqno} on as stock packets.</li>
 * </ul>
 *
 * <p>{@link #validate(int)} checks the structure only. Whether the read id
 * is the read's, and the seqno one the exposer described, is for the
 * exposer, which knows.
 */
public final class ReadCredit {

  /** Message type of a read credit. */
  public static final byte TYPE = 4;

  public static final int READ_ID_OFFSET = MessageHeader.LENGTH;
  public static final int SEQNO_OFFSET = 16;
  public static final int RESERVED_OFFSET = 24;
  public static final int CRC_OFFSET = 28;
  /** Every read credit is this long. */
  public static final int LENGTH = CRC_OFFSET + MessageHeader.CRC_LENGTH;

  /** The read is over: every packet up to seqno, the last, is done. */
  public static final int FLAG_FINAL = 0x1;
  /** The reader stops before the end of the read. */
  public static final int FLAG_CANCEL = 0x2;
  /** Packets from seqno on are to come as stock packets. */
  public static final int FLAG_FALLBACK = 0x4;
  private static final int KNOWN_FLAGS =
      FLAG_FINAL | FLAG_CANCEL | FLAG_FALLBACK;

  private final MessageHeader header = new MessageHeader();

  /** Points this flyweight at {@link #LENGTH} bytes of a big-endian buffer. */
  public ReadCredit wrap(ByteBuffer buf, int offset) {
    header.wrap(buf, offset, LENGTH);
    return this;
  }

  /**
   * Writes a whole credit at the wrapped position.
   *
   * @throws IllegalArgumentException for a read id of 0, more than one
   *     flag, or a seqno the flag does not allow
   */
  public ReadCredit encode(long readId, int flags, long seqno) {
    String wrong = check(readId, flags, seqno);
    if (wrong != null) {
      throw new IllegalArgumentException(wrong);
    }
    header.writeHeader(TYPE, flags);
    header.putLong(READ_ID_OFFSET, readId);
    header.putLong(SEQNO_OFFSET, seqno);
    header.putInt(RESERVED_OFFSET, 0);
    header.seal();
    return this;
  }

  /**
   * Checks the structure of a message of {@code length} bytes, the length
   * the transport delivered, before any field is used.
   *
   * @throws MalformedMessageException saying what is wrong
   */
  public ReadCredit validate(int length) throws MalformedMessageException {
    if (length != LENGTH) {
      throw new MalformedMessageException("read credit of " + length
          + " bytes, expected " + LENGTH);
    }
    header.checkHeader(TYPE);
    header.checkCrc("read credit");
    if (header.getInt(RESERVED_OFFSET) != 0) {
      throw new MalformedMessageException(
          "reserved bits of a read credit are set");
    }
    String wrong = check(readId(), flags(), seqno());
    if (wrong != null) {
      throw new MalformedMessageException(wrong);
    }
    return this;
  }

  /** What is wrong with these fields, or null. */
  private static String check(long readId, int flags, long seqno) {
    if ((flags & ~KNOWN_FLAGS) != 0) {
      return String.format("unknown read credit flags 0x%02x", flags);
    }
    if (Integer.bitCount(flags) > 1) {
      return String.format("read credit with flags 0x%02x: at most one",
          flags);
    }
    if (readId == 0) {
      return "read credit for read id 0";
    }
    long least = flags == FLAG_CANCEL ? -1 : 0;
    if (seqno < least) {
      return "read credit for seqno " + seqno;
    }
    return null;
  }

  public int flags() {
    return header.flags();
  }

  public boolean isFinal() {
    return flags() == FLAG_FINAL;
  }

  public boolean isCancel() {
    return flags() == FLAG_CANCEL;
  }

  public boolean isFallback() {
    return flags() == FLAG_FALLBACK;
  }

  public long readId() {
    return header.getLong(READ_ID_OFFSET);
  }

  public long seqno() {
    return header.getLong(SEQNO_OFFSET);
  }

  @Override
  public String toString() {
    if (header.buffer() == null) {
      return "ReadCredit(unwrapped)";
    }
    return String.format("ReadCredit(read %016x, seqno %d, flags 0x%02x)",
        readId(), seqno(), flags());
  }
}
