package org.hdfsrdma.hadoop.protocol;

import java.io.IOException;

/**
 * A DataNode's answer to a {@link ReadOffer}, in its reply to the
 * {@code readBlock} op (DESIGN.md section 9, being built: nothing sends
 * one yet): the read's packets will be described, not sent.
 *
 * <p>It holds how to reach the DataNode over UCX (a {@link CommitEntry},
 * as a write's commit does); the read id, random and non-zero, which every
 * message of the read carries as its session; the data bytes per packet
 * it will describe; and the buffers it reserved for the read.
 * {@link #received} checks what holds for any answer;
 * {@link #checkFor} what holds only for the reader's own offer and
 * connection.
 *
 * <p>Immutable; every value is checked by the constructor, for what this
 * side sends, and by {@link #received}, for what a peer sent.
 */
public final class ReadAnswer {

  private final CommitEntry dataNode;
  private final long readId;
  private final int packetBytes;
  private final int window;

  /** @throws IllegalArgumentException when a value is out of range */
  public ReadAnswer(CommitEntry dataNode, long readId, int packetBytes,
      int window) {
    String problem = problem(dataNode, readId, packetBytes, window);
    if (problem != null) {
      throw new IllegalArgumentException(problem);
    }
    this.dataNode = dataNode;
    this.readId = readId;
    this.packetBytes = packetBytes;
    this.window = window;
  }

  /**
   * An answer as a peer sent it.
   *
   * @throws IOException naming the first value out of range
   */
  public static ReadAnswer received(CommitEntry dataNode, long readId,
      int packetBytes, int window) throws IOException {
    String problem = problem(dataNode, readId, packetBytes, window);
    if (problem != null) {
      throw new IOException("hdfs-rdma read answer with " + problem);
    }
    return new ReadAnswer(dataNode, readId, packetBytes, window);
  }

  /** @return what is wrong with these values, or null */
  private static String problem(CommitEntry dataNode, long readId,
      int packetBytes, int window) {
    if (dataNode == null) {
      return "no DataNode";
    }
    if (readId == 0) {
      return "read id 0";
    }
    if (packetBytes < 1 || packetBytes > ReadOffer.MAX_PACKET_BYTES) {
      return "packet bytes " + packetBytes + " out of range [1, "
          + ReadOffer.MAX_PACKET_BYTES + "]";
    }
    if (window < ReadOffer.MIN_WINDOW || window > ReadOffer.MAX_WINDOW) {
      return "window " + window + " out of range [" + ReadOffer.MIN_WINDOW
          + ", " + ReadOffer.MAX_WINDOW + "]";
    }
    return null;
  }

  /**
   * Checks this answer against what the reader knows: the offer it made,
   * the DataNode it connected to and the block's checksum chunk.
   *
   * @param xferAddr the data-transfer address the reader connected to
   * @param bytesPerChecksum the chunk size of the reply's checksum
   * @throws IOException naming the first mismatch
   */
  public void checkFor(ReadOffer offer, String xferAddr,
      int bytesPerChecksum) throws IOException {
    String problem = !dataNode.getXferAddr().equals(xferAddr)
        ? "DataNode " + dataNode.getXferAddr() + " on a connection to "
            + xferAddr
        : bytesPerChecksum <= 0 || packetBytes % bytesPerChecksum != 0
        ? "packet bytes " + packetBytes + " not whole chunks of "
            + bytesPerChecksum
        : packetBytes > offer.getPacketBytes()
        ? "packet bytes " + packetBytes + " above the offer's "
            + offer.getPacketBytes()
        : window > offer.getWindow()
        ? "window " + window + " above the offer's " + offer.getWindow()
        : null;
    if (problem != null) {
      throw new IOException("hdfs-rdma read answer with " + problem);
    }
  }

  public CommitEntry getDataNode() {
    return dataNode;
  }

  public long getReadId() {
    return readId;
  }

  public int getPacketBytes() {
    return packetBytes;
  }

  public int getWindow() {
    return window;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof ReadAnswer)) {
      return false;
    }
    ReadAnswer a = (ReadAnswer) o;
    return readId == a.readId && packetBytes == a.packetBytes
        && window == a.window && dataNode.equals(a.dataNode);
  }

  @Override
  public int hashCode() {
    return ((Long.hashCode(readId) * 31 + packetBytes) * 31 + window) * 31
        + dataNode.hashCode();
  }

  /** Shows no read id: it names the read's messages. */
  @Override
  public String toString() {
    return "ReadAnswer{" + dataNode.getXferAddr() + ", packetBytes="
        + packetBytes + ", window=" + window + "}";
  }
}
