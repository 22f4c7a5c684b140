package org.hdfsrdma.hadoop.protocol;

import java.io.IOException;
import java.security.SecureRandom;
import java.util.Arrays;

/**
 * The client's request for a UCX pipeline: it offers one in the
 * {@code writeBlock} op, and every DataNode that can serve the block
 * relays it downstream (DESIGN.md section 1).
 *
 * <p>It holds the nonce R, 16 random bytes from which each DataNode's
 * session id is computed ({@link SessionIds}); the client's write packet
 * size, positive, which a DataNode checks against its packet buffers; and
 * the pipeline's feeders m, 0 to {@link #MAX_FEEDERS}: 0, the client feeds
 * every DataNode (fan-out); otherwise it feeds DataNodes 1..m and DataNode
 * k feeds DataNode k+m from its own landing buffers (m = 1 is a chain);
 * and whether the client would carry each packet's descriptor on the
 * block's socket, should every DataNode take it there
 * ({@link #socketDescriptors}).
 *
 * <p>How it travels is not this class's business: it compiles unchanged
 * against every Hadoop release (see {@code org.hdfsrdma.hadoop.compat}).
 * Immutable; every value is checked by the constructor, for what this side
 * sends, and by {@link #received}, for what a peer sent.
 */
public final class WriteRequest {

  /** Length of the nonce R in bytes (128 bits). */
  public static final int NONCE_LENGTH = 16;

  /**
   * Most feeders a request names: what the previous release's four flag
   * bits held, more than any real pipeline's length.
   */
  public static final int MAX_FEEDERS = 15;

  private static final SecureRandom RANDOM = new SecureRandom();

  private final byte[] nonce;
  private final int packetSize;
  private final int feeders;
  private final boolean socketDescriptors;

  /**
   * @param nonce {@link #NONCE_LENGTH} bytes, copied
   * @param packetSize the client's write packet size, positive
   * @param feeders 0 to {@link #MAX_FEEDERS}
   * @throws IllegalArgumentException when a value is out of range
   */
  public WriteRequest(byte[] nonce, int packetSize, int feeders) {
    String problem = problem(nonce, packetSize, feeders);
    if (problem != null) {
      throw new IllegalArgumentException(problem);
    }
    this.nonce = nonce.clone();
    this.packetSize = packetSize;
    this.feeders = feeders;
    this.socketDescriptors = false;
  }

  private WriteRequest(WriteRequest r, boolean socketDescriptors) {
    this.nonce = r.nonce;
    this.packetSize = r.packetSize;
    this.feeders = r.feeders;
    this.socketDescriptors = socketDescriptors;
  }

  /**
   * This request, saying whether the client would write each packet's
   * descriptor on the block's socket. Only a fan-out carries them there
   * (every DataNode fetches from the client), so a request with feeders
   * never says so.
   */
  public WriteRequest withSocketDescriptors(boolean wanted) {
    boolean value = wanted && feeders == 0;
    return value == socketDescriptors ? this
        : new WriteRequest(this, value);
  }

  /** A request with a fresh random nonce. */
  public static WriteRequest create(int packetSize, int feeders) {
    byte[] r = new byte[NONCE_LENGTH];
    RANDOM.nextBytes(r);
    return new WriteRequest(r, packetSize, feeders);
  }

  /**
   * A request as a peer sent it.
   *
   * @throws IOException naming the first value out of range
   */
  public static WriteRequest received(byte[] nonce, int packetSize,
      int feeders) throws IOException {
    String problem = problem(nonce, packetSize, feeders);
    if (problem != null) {
      throw new IOException("hdfs-rdma write request with " + problem);
    }
    return new WriteRequest(nonce, packetSize, feeders);
  }

  /** @return what is wrong with these values, or null */
  private static String problem(byte[] nonce, int packetSize, int feeders) {
    if (nonce == null || nonce.length != NONCE_LENGTH) {
      return "a nonce of " + (nonce == null ? "null" : nonce.length
          + " bytes") + ", not " + NONCE_LENGTH;
    }
    if (packetSize <= 0) {
      return "invalid packet size " + packetSize;
    }
    if (feeders < 0 || feeders > MAX_FEEDERS) {
      return "feeders " + feeders + " out of range [0, " + MAX_FEEDERS + "]";
    }
    return null;
  }

  /** @return a copy of the nonce R */
  public byte[] getNonce() {
    return nonce.clone();
  }

  public int getPacketSize() {
    return packetSize;
  }

  /**
   * How many DataNodes the client feeds itself: 0 for all of them
   * (fan-out); m for the first m, each DataNode k then feeding k+m.
   */
  public int feeders() {
    return feeders;
  }

  /**
   * Whether the client would write each packet's descriptor on the block's
   * socket, where stock writes the packet, if every DataNode commits to
   * taking it there; otherwise it sends one over UCX to each DataNode.
   */
  public boolean socketDescriptors() {
    return socketDescriptors;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof WriteRequest)) {
      return false;
    }
    WriteRequest w = (WriteRequest) o;
    return packetSize == w.packetSize && feeders == w.feeders
        && socketDescriptors == w.socketDescriptors
        && Arrays.equals(nonce, w.nonce);
  }

  @Override
  public int hashCode() {
    return ((packetSize * 31 + feeders) * 31 + Arrays.hashCode(nonce)) * 2
        + (socketDescriptors ? 1 : 0);
  }

  /** Shows no nonce: it keys the session id on clusters without tokens. */
  @Override
  public String toString() {
    return "WriteRequest{packetSize=" + packetSize + ", feeders=" + feeders
        + (socketDescriptors ? ", socketDescriptors" : "") + "}";
  }
}
