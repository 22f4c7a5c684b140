package org.hdfsrdma.hadoop.protocol;

import java.io.IOException;
import java.util.Arrays;

/**
 * A reader's offer to take a block's packets from the DataNode's memory
 * instead of the socket, sent in the {@code readBlock} op (DESIGN.md
 * section 9, being built: nothing sends one yet).
 *
 * <p>It holds the client key, {@link #CLIENT_KEY_LENGTH} bytes naming the
 * reader's UCX worker, by which the DataNode keeps each reader's exposed
 * buffers apart; the most data bytes per packet the reader's landing
 * buffers take, {@link #MIN_PACKET_BYTES} to {@link #MAX_PACKET_BYTES};
 * and the packets it asks to have exposed ahead of its credits,
 * {@link #MIN_WINDOW} to {@link #MAX_WINDOW}.
 *
 * <p>How it travels is not this class's business (see
 * {@code org.hdfsrdma.hadoop.compat}). Immutable; every value is checked
 * by the constructor, for what this side sends, and by {@link #received},
 * for what a peer sent.
 */
public final class ReadOffer {

  /** Length of the client key in bytes. */
  public static final int CLIENT_KEY_LENGTH = 16;
  /** Fewest data bytes per packet: one page. */
  public static final int MIN_PACKET_BYTES = 4096;
  /** Most data bytes per packet: 16 of Hadoop's default packets. */
  public static final int MAX_PACKET_BYTES = 1 << 20;
  /** Fewest packets exposed ahead: one being read, one being filled. */
  public static final int MIN_WINDOW = 2;
  /** Most packets exposed ahead of a reader's credits. */
  public static final int MAX_WINDOW = 64;

  private final byte[] clientKey;
  private final int packetBytes;
  private final int window;

  /**
   * @param clientKey {@link #CLIENT_KEY_LENGTH} bytes, copied
   * @throws IllegalArgumentException when a value is out of range
   */
  public ReadOffer(byte[] clientKey, int packetBytes, int window) {
    String problem = problem(clientKey, packetBytes, window);
    if (problem != null) {
      throw new IllegalArgumentException(problem);
    }
    this.clientKey = clientKey.clone();
    this.packetBytes = packetBytes;
    this.window = window;
  }

  /**
   * An offer as a peer sent it.
   *
   * @throws IOException naming the first value out of range
   */
  public static ReadOffer received(byte[] clientKey, int packetBytes,
      int window) throws IOException {
    String problem = problem(clientKey, packetBytes, window);
    if (problem != null) {
      throw new IOException("hdfs-rdma read offer with " + problem);
    }
    return new ReadOffer(clientKey, packetBytes, window);
  }

  /** @return what is wrong with these values, or null */
  private static String problem(byte[] clientKey, int packetBytes,
      int window) {
    if (clientKey == null || clientKey.length != CLIENT_KEY_LENGTH) {
      return "a client key of " + (clientKey == null ? "null"
          : clientKey.length + " bytes") + ", not " + CLIENT_KEY_LENGTH;
    }
    if (packetBytes < MIN_PACKET_BYTES || packetBytes > MAX_PACKET_BYTES) {
      return "packet bytes " + packetBytes + " out of range ["
          + MIN_PACKET_BYTES + ", " + MAX_PACKET_BYTES + "]";
    }
    if (window < MIN_WINDOW || window > MAX_WINDOW) {
      return "window " + window + " out of range [" + MIN_WINDOW + ", "
          + MAX_WINDOW + "]";
    }
    return null;
  }

  /** @return a copy of the client key */
  public byte[] getClientKey() {
    return clientKey.clone();
  }

  public int getPacketBytes() {
    return packetBytes;
  }

  public int getWindow() {
    return window;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof ReadOffer)) {
      return false;
    }
    ReadOffer r = (ReadOffer) o;
    return packetBytes == r.packetBytes && window == r.window
        && Arrays.equals(clientKey, r.clientKey);
  }

  @Override
  public int hashCode() {
    return (packetBytes * 31 + window) * 31 + Arrays.hashCode(clientKey);
  }

  @Override
  public String toString() {
    return "ReadOffer{packetBytes=" + packetBytes + ", window=" + window
        + "}";
  }
}
