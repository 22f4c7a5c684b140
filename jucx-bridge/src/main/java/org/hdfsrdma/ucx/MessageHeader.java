package org.hdfsrdma.ucx;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32;

/**
 * Flyweight over what every hdfs-rdma message has in common: the 8-byte
 * header it starts with and the CRC32 it ends with. {@link PacketDescriptor},
 * {@link RegionAnnouncement}, {@link HelloMessage} and {@link ReadCredit}
 * each hold one and lay their own fields between the two.
 *
 * <pre>
 *  0               4       6   7   8                       length-4   length
 *  +---------------+-------+---+---+- - - - - - - - - - - -+---------------+
 *  | magic "HRMA"  |version|typ|flg|  body (per type)      |     CRC32     |
 *  +---------------+-------+---+---+- - - - - - - - - - - -+---------------+
 *   typ: 1 region announcement, 2 packet descriptor, 3 hello, 4 read credit
 *   flg: the descriptor's and the credit's flags; 0 in the other two
 *   CRC32: of bytes [0, length-4)
 * </pre>
 *
 * <p>Big-endian ({@link #BYTE_ORDER}, network order like Hadoop's own wire
 * format): a buffer of another order is refused, not converted.
 *
 * <p><b>No length on the wire here.</b> The three messages share no length
 * field (a hello's address length and an announcement's key length sit at
 * different offsets, a descriptor has none). The length every check is
 * made against is the one the receiver knows: the transport's (UCX's
 * active-message length) when reading, the space the writer wrapped when
 * writing. The CRC is taken at the end of that length, and every field
 * access is checked to lie inside it, so a message that claims more than
 * was received reads nothing past what was received; a length field in a
 * body must explain the received length exactly, which each message's
 * {@code validate} checks before using it.
 *
 * <p>One per message flyweight, reused: wrapping, reading, writing and
 * checking allocate nothing (the buffer's duplicate that the CRC reads
 * through is made once per buffer, not per message); only a rejection
 * allocates its exception.
 */
public final class MessageHeader {

  /** The byte order of every message. */
  public static final ByteOrder BYTE_ORDER = ByteOrder.BIG_ENDIAN;
  /** "HRMA": hdfs-rdma; the first four bytes of every message. */
  public static final int MAGIC = 0x48524D41;
  /** The message layout version this code writes and reads. */
  public static final short VERSION = 2;

  public static final int MAGIC_OFFSET = 0;
  public static final int VERSION_OFFSET = 4;
  public static final int TYPE_OFFSET = 6;
  public static final int FLAGS_OFFSET = 7;
  /** Bytes of the header; a message's own fields start here. */
  public static final int LENGTH = 8;
  /** Bytes of the CRC32 that ends every message. */
  public static final int CRC_LENGTH = 4;

  private final CRC32 crc = new CRC32();
  private ByteBuffer buffer;
  /** A duplicate of buffer, moved by CRC computations. */
  private ByteBuffer view;
  private int base;
  private int length;

  /**
   * The type byte of the message of {@code length} bytes at {@code base} of
   * {@code buf}, or -1 when it is shorter than a header or the buffer does
   * not hold that many bytes there. Reads nothing else: the message is
   * still to be validated.
   */
  static int typeOf(ByteBuffer buf, int base, int length) {
    if (base < 0 || length < LENGTH || length > buf.capacity() - base) {
      return -1;
    }
    return buf.get(base + TYPE_OFFSET);
  }

  /**
   * Points this flyweight at {@code len} bytes at {@code offset} of a
   * big-endian buffer: the received length when reading, the space to
   * write in when writing.
   *
   * @throws IllegalArgumentException when the buffer is not big-endian
   * @throws IndexOutOfBoundsException when the bytes are not all inside it
   */
  MessageHeader wrap(ByteBuffer buf, int offset, int len) {
    if (buf.order() != BYTE_ORDER) {
      throw new IllegalArgumentException("message buffers are big-endian");
    }
    if (offset < 0 || len < 0 || len > buf.capacity() - offset) {
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

  ByteBuffer buffer() {
    return buffer;
  }

  /** Offset of the message in {@link #buffer()}. */
  int offset() {
    return base;
  }

  /** The wrapped length (see {@link #wrap}). */
  int length() {
    return length;
  }

  /** Writes magic, version, type and flags. */
  void writeHeader(byte type, int flags) {
    buffer.putInt(at(MAGIC_OFFSET, 4), MAGIC);
    buffer.putShort(at(VERSION_OFFSET, 2), VERSION);
    buffer.put(at(TYPE_OFFSET, 1), type);
    buffer.put(at(FLAGS_OFFSET, 1), (byte) flags);
  }

  /**
   * Checks magic, version and type, after the message's own check of the
   * received length.
   *
   * @throws MalformedMessageException saying which is wrong
   */
  void checkHeader(byte type) throws MalformedMessageException {
    if (length < LENGTH + CRC_LENGTH) {
      throw new MalformedMessageException("message of " + length
          + " bytes, shorter than a header and a checksum ("
          + (LENGTH + CRC_LENGTH) + ")");
    }
    int magic = getInt(MAGIC_OFFSET);
    if (magic != MAGIC) {
      throw new MalformedMessageException(String.format(
          "bad message magic 0x%08x, expected 0x%08x", magic, MAGIC));
    }
    short version = getShort(VERSION_OFFSET);
    if (version != VERSION) {
      throw new MalformedMessageException("unsupported message version "
          + version + ", this side speaks " + VERSION);
    }
    byte actual = get(TYPE_OFFSET);
    if (actual != type) {
      throw new MalformedMessageException("message of type " + actual
          + " where type " + type + " was expected");
    }
  }

  /** The flags byte, unsigned. */
  int flags() {
    return get(FLAGS_OFFSET) & 0xFF;
  }

  /**
   * Shortens the wrapped length to {@code total}, the length of the message
   * just written, and writes its CRC into its last four bytes.
   */
  void seal(int total) {
    if (total < LENGTH + CRC_LENGTH || total > length) {
      throw new IndexOutOfBoundsException("message of " + total
          + " bytes in " + length);
    }
    this.length = total;
    seal();
  }

  /** Recomputes the CRC after fields were changed in place. */
  void seal() {
    buffer.putInt(at(length - CRC_LENGTH, CRC_LENGTH), computeCrc());
  }

  /**
   * Checks the CRC at the end of the received length.
   *
   * @param what the message's name in the failure ("hello")
   * @throws MalformedMessageException when it does not match the content
   */
  void checkCrc(String what) throws MalformedMessageException {
    int carried = getInt(length - CRC_LENGTH);
    int computed = computeCrc();
    if (carried != computed) {
      throw new MalformedMessageException(String.format(
          "%s checksum mismatch: carries 0x%08x, content gives 0x%08x", what,
          carried, computed));
    }
  }

  /** CRC32 of the bytes before the last four, through the view. */
  private int computeCrc() {
    int end = at(length - CRC_LENGTH, CRC_LENGTH);
    crc.reset();
    view.clear();
    view.limit(end).position(base);
    crc.update(view);
    return (int) crc.getValue();
  }

  // Field access at offsets from the message's start, each checked to lie
  // inside the wrapped length.

  byte get(int offset) {
    return buffer.get(at(offset, 1));
  }

  short getShort(int offset) {
    return buffer.getShort(at(offset, 2));
  }

  int getUnsignedShort(int offset) {
    return getShort(offset) & 0xFFFF;
  }

  int getInt(int offset) {
    return buffer.getInt(at(offset, 4));
  }

  long getLong(int offset) {
    return buffer.getLong(at(offset, 8));
  }

  /** Copies {@code to.length} bytes from {@code offset} into {@code to}. */
  void getBytes(int offset, byte[] to) {
    int from = at(offset, to.length);
    for (int i = 0; i < to.length; i++) {
      to[i] = buffer.get(from + i);
    }
  }

  void put(int offset, byte value) {
    buffer.put(at(offset, 1), value);
  }

  void putShort(int offset, short value) {
    buffer.putShort(at(offset, 2), value);
  }

  void putInt(int offset, int value) {
    buffer.putInt(at(offset, 4), value);
  }

  void putLong(int offset, long value) {
    buffer.putLong(at(offset, 8), value);
  }

  /** Copies {@code from} to the message at {@code offset}. */
  void putBytes(int offset, byte[] from) {
    int to = at(offset, from.length);
    for (int i = 0; i < from.length; i++) {
      buffer.put(to + i, from[i]);
    }
  }

  /**
   * The buffer index of {@code width} bytes at {@code offset} of the
   * message, which must lie inside the wrapped length.
   */
  private int at(int offset, int width) {
    if (offset < 0 || offset > length - width) {
      throw new IndexOutOfBoundsException(width + " bytes at " + offset
          + " of a message of " + length);
    }
    return base + offset;
  }
}
