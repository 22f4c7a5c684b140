package org.hdfsrdma.ucx;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32;

/**
 * Flyweight over the first message an exposer sends on a new connection:
 * its own UCX worker address, so that the getter can create an endpoint of
 * its own back to it (UCX pairs the two). A getter needs that endpoint for
 * gets that are not direct reads (RDMA hardware, tcp) and to hear at once,
 * through UCX's error callback, when the exposer dies.
 *
 * <pre>
 *  0               4       6   7   8
 *  +---------------+-------+---+---+
 *  | magic "HRMA"  |version|typ| 0 |   typ = {@link #TYPE}
 *  +-------+-------+-------+---+---+  8
 *  |addrlen|   0   |
 *  +-------+-------+---------------- 12
 *  | UCX worker address (addrlen bytes)
 *  +---------------+----------------
 *  |     CRC32     |                  12 + addrlen .. 16 + addrlen
 *  +---------------+
 * </pre>
 *
 * <p>Big-endian; the CRC32 covers every byte before it. The address comes
 * from a peer UCX already wired up with (only such a peer can send it);
 * UCX parses it when the getter connects back.
 */
public final class HelloMessage {

  public static final byte TYPE = 3;

  public static final int ADDRESS_LENGTH_OFFSET = 8;
  public static final int RESERVED_OFFSET = 10;
  public static final int ADDRESS_OFFSET = 12;
  /** UCX worker addresses are a few hundred bytes even with many devices. */
  public static final int MAX_ADDRESS_LENGTH = 4096;

  private final CRC32 crc = new CRC32();
  private ByteBuffer buffer;
  private ByteBuffer view;
  private int base;
  private int length;

  public static int encodedLength(int addressLength) {
    return ADDRESS_OFFSET + addressLength + 4;
  }

  public HelloMessage wrap(ByteBuffer buf, int offset, int len) {
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

  public int length() {
    return length;
  }

  /** Writes a whole hello; the wrapped length becomes the encoded length. */
  public HelloMessage encode(byte[] address) {
    if (address.length == 0 || address.length > MAX_ADDRESS_LENGTH) {
      throw new IllegalArgumentException("worker address of "
          + address.length + " bytes");
    }
    int total = encodedLength(address.length);
    if (base + total > buffer.capacity()) {
      throw new IllegalArgumentException("hello of " + total
          + " bytes does not fit");
    }
    buffer.putInt(base + PacketDescriptor.MAGIC_OFFSET, PacketDescriptor.MAGIC);
    buffer.putShort(base + PacketDescriptor.VERSION_OFFSET,
        PacketDescriptor.VERSION);
    buffer.put(base + PacketDescriptor.TYPE_OFFSET, TYPE);
    buffer.put(base + PacketDescriptor.FLAGS_OFFSET, (byte) 0);
    buffer.putShort(base + ADDRESS_LENGTH_OFFSET, (short) address.length);
    buffer.putShort(base + RESERVED_OFFSET, (short) 0);
    for (int i = 0; i < address.length; i++) {
      buffer.put(base + ADDRESS_OFFSET + i, address[i]);
    }
    this.length = total;
    buffer.putInt(base + length - 4, WireCrc.of(crc, view, base,
        base + length - 4));
    return this;
  }

  /**
   * Checks the structure before any field is used.
   *
   * @throws MalformedMessageException saying what is wrong
   */
  public HelloMessage validate() throws MalformedMessageException {
    if (length < encodedLength(1) || length > encodedLength(
        MAX_ADDRESS_LENGTH)) {
      throw new MalformedMessageException("hello of " + length
          + " bytes");
    }
    WireCrc.checkHeader(buffer, base, TYPE);
    if (buffer.get(base + PacketDescriptor.FLAGS_OFFSET) != 0
        || buffer.getShort(base + RESERVED_OFFSET) != 0) {
      throw new MalformedMessageException(
          "reserved bits of a hello are set");
    }
    if (encodedLength(addressLength()) != length) {
      throw new MalformedMessageException("hello of " + length
          + " bytes with an address of " + addressLength() + " bytes");
    }
    int carried = buffer.getInt(base + length - 4);
    int computed = WireCrc.of(crc, view, base, base + length - 4);
    if (carried != computed) {
      throw new MalformedMessageException(String.format(
          "hello checksum mismatch: carries 0x%08x, content gives 0x%08x",
          carried, computed));
    }
    return this;
  }

  public int addressLength() {
    return buffer.getShort(base + ADDRESS_LENGTH_OFFSET) & 0xFFFF;
  }

  /** A copy of the peer's worker address. */
  public byte[] address() {
    byte[] a = new byte[addressLength()];
    for (int i = 0; i < a.length; i++) {
      a[i] = buffer.get(base + ADDRESS_OFFSET + i);
    }
    return a;
  }
}
