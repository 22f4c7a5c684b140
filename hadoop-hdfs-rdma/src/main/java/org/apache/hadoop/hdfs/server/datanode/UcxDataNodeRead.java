package org.apache.hadoop.hdfs.server.datanode;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;

import org.apache.hadoop.classification.InterfaceAudience;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.Op;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.DFSUtilClient;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.hadoop.compat.OpPeek;
import org.hdfsrdma.hadoop.compat.ReadAnswerField;
import org.hdfsrdma.hadoop.datanode.BlockRead;
import org.hdfsrdma.hadoop.datanode.UcxDataNode;
import org.hdfsrdma.hadoop.protocol.ReadOffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * DataXceiver's hooks into a UCX read (DESIGN.md section 9), for this
 * Hadoop release: Hadoop's types in, the release-neutral {@link BlockRead}
 * behind. It reads the offer from a {@code readBlock} op before Hadoop
 * does, puts the answer in the op's reply when this DataNode serves the
 * read over UCX, and then gives {@code BlockSender} the stream that puts
 * the packets in registered memory instead of on the socket. An op without
 * an offer, or one this DataNode declines, is served exactly as stock.
 */
@InterfaceAudience.Private
public final class UcxDataNodeRead {

  private static final Logger LOG =
      LoggerFactory.getLogger(UcxDataNodeRead.class);

  private static final UcxDataNodeRead NONE = new UcxDataNodeRead(null);

  /**
   * The most data bytes {@code BlockSender} puts in one packet: with
   * transferTo (which {@link BlockRead#baseStream} gives it) at least
   * 64 KiB, else {@code io.file.buffer.size}, read the same way it reads it.
   */
  private static final int PACKET_DATA_BYTES = Math.max(64 * 1024,
      DFSUtilClient.getIoFileBufferSize(new HdfsConfiguration()));

  /** The op's offer, or null. */
  private final ReadOffer offer;
  /** The read served over UCX, once answered; else null. */
  private BlockRead read;
  private DataOutputStream out;

  private UcxDataNodeRead(ReadOffer offer) {
    this.offer = offer;
  }

  /** An instance for an op that offers no UCX read. */
  public static UcxDataNodeRead none() {
    return NONE;
  }

  /**
   * Reads the UCX read offer of the op about to be processed, leaving the
   * stream where it was. Never throws: an op without an offer gets an
   * inert instance.
   */
  public static UcxDataNodeRead peek(Op op, DataInputStream in) {
    if (op != Op.READ_BLOCK) {
      return NONE;
    }
    try {
      ReadOffer offer = OpPeek.peekReadOffer(in);
      return offer == null ? NONE : new UcxDataNodeRead(offer);
    } catch (IOException e) {
      // Reading the op itself failed: Hadoop's own read will say so.
      LOG.debug("hdfs-rdma: cannot read the UCX offer of a readBlock op;"
          + " the read stays on TCP: {}", e.toString());
      return NONE;
    }
  }

  /**
   * The {@code readBlock} op's {@code sender} is ready: serve the read
   * over UCX when the op offered it and this DataNode can.
   *
   * @param in the op's socket input, where the client's credits arrive
   * @param socket the op's socket output, where descriptors go
   */
  public void begin(DataNode dataNode, ExtendedBlock block,
      Token<BlockTokenIdentifier> token, BlockSender sender,
      DataInputStream in, OutputStream socket) {
    if (offer == null) {
      return;
    }
    try {
      DataChecksum checksum = sender.getChecksum();
      int chunk = checksum.getBytesPerChecksum();
      int chunks = Math.max(1, (PACKET_DATA_BYTES + chunk - 1) / chunk);
      int largestPacket = PacketHeader.PKT_MAX_HEADER_LEN
          + (chunk + checksum.getChecksumSize()) * chunks;
      read = BlockRead.begin(offer, UcxDataNode.of(dataNode),
          dataNode.getDatanodeId().getXferAddr(), user(token),
          block.toString(), block.getBlockId(), block.getGenerationStamp(),
          chunk, largestPacket, in, socket);
    } catch (RuntimeException | LinkageError e) {
      LOG.warn("hdfs-rdma: the read of {} stays on TCP: {}", block,
          e.toString());
      read = null;
    }
    if (read != null) {
      out = new DataOutputStream(read.exposer());
    }
  }

  /**
   * The op's reply: with the answer when this DataNode serves the read
   * over UCX, else as given (byte for byte stock's).
   */
  public BlockOpResponseProto.Builder answer(
      BlockOpResponseProto.Builder reply) {
    return read == null ? reply
        : ReadAnswerField.withAnswer(reply, read.answer());
  }

  /** The token's user, by which a DataNode keeps readers apart. */
  private static String user(Token<BlockTokenIdentifier> token) {
    if (token == null || token.getIdentifier().length == 0) {
      return "";
    }
    try {
      String user = token.decodeIdentifier().getUserId();
      return user == null ? "" : user;
    } catch (IOException e) {
      return "";
    }
  }

  /** The stream {@code BlockSender} is to write the packets to. */
  public DataOutputStream out(DataOutputStream stock) {
    return read == null ? stock : out;
  }

  /**
   * The stream {@code BlockSender} may send data with directly
   * (transferTo): the socket for a stock read, for a UCX read one that puts
   * the data in registered memory.
   */
  public OutputStream baseStream(OutputStream stock) {
    return read == null ? stock : read.baseStream(stock);
  }

  /** Ends the read's use of registered memory. Idempotent. */
  public void close() {
    if (read != null) {
      read.close();
    }
  }
}
