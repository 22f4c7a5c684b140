package org.hdfsrdma.ucx;

import java.nio.ByteBuffer;

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
 * <p>Header and CRC32 as every message's ({@link MessageHeader}:
 * big-endian, the CRC32 covers every byte before it). The address comes
 * from a peer UCX already wired up with (only such a peer can send it);
 * UCX parses it when the getter connects back.
 */
public final class HelloMessage {

  public static final byte TYPE = 3;

  public static final int ADDRESS_LENGTH_OFFSET = MessageHeader.LENGTH;
  public static final int RESERVED_OFFSET = 10;
  public static final int ADDRESS_OFFSET = 12;
  /** UCX worker addresses are a few hundred bytes even with many devices. */
  public static final int MAX_ADDRESS_LENGTH = 4096;

  private final MessageHeader header = new MessageHeader();

  public static int encodedLength(int addressLength) {
    return ADDRESS_OFFSET + addressLength + MessageHeader.CRC_LENGTH;
  }

  /**
   * Points this flyweight at a message of {@code len} bytes: the length
   * the transport delivered, or the space to encode in.
   */
  public HelloMessage wrap(ByteBuffer buf, int offset, int len) {
    header.wrap(buf, offset, len);
    return this;
  }

  public int length() {
    return header.length();
  }

  /** Writes a whole hello; the wrapped length becomes the encoded length. */
  public HelloMessage encode(byte[] address) {
    if (address.length == 0 || address.length > MAX_ADDRESS_LENGTH) {
      throw new IllegalArgumentException("worker address of "
          + address.length + " bytes");
    }
    int total = encodedLength(address.length);
    if (total > header.length()) {
      throw new IllegalArgumentException("hello of " + total
          + " bytes does not fit in " + header.length());
    }
    header.writeHeader(TYPE, 0);
    header.putShort(ADDRESS_LENGTH_OFFSET, (short) address.length);
    header.putShort(RESERVED_OFFSET, (short) 0);
    header.putBytes(ADDRESS_OFFSET, address);
    header.seal(total);
    return this;
  }

  /**
   * Checks the structure before any field is used.
   *
   * @throws MalformedMessageException saying what is wrong
   */
  public HelloMessage validate() throws MalformedMessageException {
    int length = header.length();
    if (length < encodedLength(1) || length > encodedLength(
        MAX_ADDRESS_LENGTH)) {
      throw new MalformedMessageException("hello of " + length
          + " bytes");
    }
    header.checkHeader(TYPE);
    if (header.flags() != 0 || header.getShort(RESERVED_OFFSET) != 0) {
      throw new MalformedMessageException(
          "reserved bits of a hello are set");
    }
    if (encodedLength(addressLength()) != length) {
      throw new MalformedMessageException("hello of " + length
          + " bytes with an address of " + addressLength() + " bytes");
    }
    header.checkCrc("hello");
    return this;
  }

  public int addressLength() {
    return header.getUnsignedShort(ADDRESS_LENGTH_OFFSET);
  }

  /** A copy of the peer's worker address. */
  public byte[] address() {
    byte[] a = new byte[addressLength()];
    header.getBytes(ADDRESS_OFFSET, a);
    return a;
  }
}
