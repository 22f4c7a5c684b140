package org.hdfsrdma.hadoop.datanode;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.util.concurrent.ThreadLocalRandom;

import org.apache.hadoop.net.SocketOutputStream;
import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.protocol.CommitEntry;
import org.hdfsrdma.hadoop.protocol.ReadAnswer;
import org.hdfsrdma.hadoop.protocol.ReadOffer;
import org.hdfsrdma.hadoop.sender.ReadReservation;
import org.hdfsrdma.hadoop.util.LogOnce;
import org.hdfsrdma.ucx.HostIdentity;

/**
 * One {@code readBlock} op a DataNode serves over UCX (DESIGN.md section
 * 9): the offer accepted, the read's window of buffers reserved, the
 * answer for the op's reply, and the stream {@code BlockSender} writes the
 * packets to ({@link ReadExposer}). Release-neutral: the DataNode's
 * per-release layer hands it plain values.
 */
public final class BlockRead implements AutoCloseable {

  private final UcxDataNode dataNode;
  private final ReadAnswer answer;
  private final ReadExposer exposer;
  private boolean closed;

  private BlockRead(UcxDataNode dataNode, ReadAnswer answer,
      ReadExposer exposer) {
    this.dataNode = dataNode;
    this.answer = answer;
    this.exposer = exposer;
  }

  /**
   * Accepts {@code offer} for one block read, or returns null: the read is
   * then served stock, with a reply byte for byte stock's.
   *
   * @param user the block token's user ("" without block tokens), whose
   *     reads share a cap and a pool per client worker
   * @param bytesPerChecksum the block's checksum chunk
   * @param largestPacket the most bytes {@code BlockSender} writes as one
   *     packet (header, checksums and data)
   * @param in the socket's input, where the client's credits arrive
   * @param socket the socket's output, where descriptors go
   */
  public static BlockRead begin(ReadOffer offer, UcxDataNode dataNode,
      String self, String user, String block, long blockId,
      long generationStamp, int bytesPerChecksum, int largestPacket,
      DataInputStream in, OutputStream socket) {
    if (offer == null) {
      return null;
    }
    int capacity = dataNode == null ? 0 : capacity(offer,
        dataNode.conf(), bytesPerChecksum);
    String refusal = dataNode == null ? "UCX is not running"
        : !dataNode.conf().dataNodeReads() ? "dfs.datanode.rdma.read.enabled"
            + " is false"
        : dataNode.conf().transferProtected()
            ? RdmaConf.TRANSFER_PROTECTED_REASON
        : largestPacket > capacity ? "packets of " + largestPacket
            + " bytes do not fit read buffers of " + capacity
        : null;
    if (refusal != null) {
      LogOnce.info("read refusal " + refusal, "hdfs-rdma: reads stay on"
          + " TCP at " + self + ": " + refusal);
      return null;
    }
    RdmaConf conf = dataNode.conf();
    int window = Math.min(offer.getWindow(), conf.dataNodeReadUserBuffers());
    ReadReservation r = dataNode.server().readers().reserve(user,
        offer.getClientKey(), window);
    if (r.declined() != null) {
      LogOnce.info("read declined " + r.declined(), "hdfs-rdma: a read of "
          + block + " at " + self + " stays on TCP: " + r.declined()
          + " (dfs.datanode.rdma.read.user-buffers, max-buffers)");
      return null;
    }
    long readId;
    do {
      readId = ThreadLocalRandom.current().nextLong();
    } while (readId == 0);
    CommitEntry entry = new CommitEntry(self,
        dataNode.runtime().workerAddress(), HostIdentity.uid(),
        HostIdentity.hostId(), dataNode.ingest().bytesPerSecond(),
        dataNode.runtime().sharedMemoryProfile());
    ReadAnswer answer = new ReadAnswer(entry, readId, capacity, window);
    return new BlockRead(dataNode, answer, new ReadExposer(r, readId,
        blockId, generationStamp, capacity, in, socket,
        "the read of " + block + " at " + self));
  }

  /**
   * Bytes of stock packets one buffer takes: the smaller of the offer's
   * and this DataNode's, in whole checksum chunks.
   */
  static int capacity(ReadOffer offer, RdmaConf conf, int bytesPerChecksum) {
    int bytes = Math.min(offer.getPacketBytes(),
        conf.dataNodeReadBufferBytes());
    return bytesPerChecksum <= 0 ? bytes
        : bytes - bytes % bytesPerChecksum;
  }

  /** What the op's reply tells the client. */
  public ReadAnswer answer() {
    return answer;
  }

  /** The stream {@code BlockSender} writes the packets to. */
  public OutputStream exposer() {
    return exposer;
  }

  /**
   * The stream {@code BlockSender} sends data with directly: over the
   * op's socket stream {@code stock}, when it is Hadoop's socket stream,
   * one whose transferTo reads the block file into the read's buffers (as
   * a TCP read, 64 KiB packets and no copy through the heap); else the
   * exposer, to which it then writes packets it read itself.
   */
  public OutputStream baseStream(OutputStream stock) {
    if (stock instanceof SocketOutputStream) {
      try {
        return new ExposerSocketStream(exposer, (SocketOutputStream) stock);
      } catch (IOException e) {
        // Not a selectable channel after all: packets without transferTo.
      }
    }
    return exposer;
  }

  /** Ends the read: counts it and gives its buffers back. Idempotent. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (exposer.fellBack()) {
      dataNode.metrics().countReadFallback();
    } else if (exposer.isFinished()) {
      dataNode.metrics().countRead();
    }
    // Also of a read its client ended early, left or fell back from.
    dataNode.metrics().countReadBytes(exposer.bytesTaken());
    exposer.close();
  }
}
