package org.apache.hadoop.hdfs.client.impl;

import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.channels.ReadableByteChannel;

import org.apache.hadoop.classification.InterfaceAudience;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.net.Peer;
import org.apache.hadoop.hdfs.protocol.DatanodeID;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.hadoop.client.BlockReads;
import org.hdfsrdma.hadoop.client.ReadChannel;
import org.hdfsrdma.hadoop.compat.OpRewriter;
import org.hdfsrdma.hadoop.compat.ReadAnswerField;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * BlockReaderRemote's hooks into a UCX read (DESIGN.md section 9), for
 * this Hadoop release: Hadoop's types in, the release-neutral
 * {@link BlockReads} behind. The {@code readBlock} op carries the offer;
 * when the DataNode answers, the reader reads its packets from a
 * {@link ReadChannel} instead of the socket, and Hadoop's parsing and
 * checksum verification see the same bytes.
 */
@InterfaceAudience.Private
public final class UcxBlockRead {

  private static final Logger LOG =
      LoggerFactory.getLogger(UcxBlockRead.class);

  private static final UcxBlockRead NONE = new UcxBlockRead(null);

  /** The read's offer, or null when it stays stock. */
  private final BlockReads reads;

  private UcxBlockRead(BlockReads reads) {
    this.reads = reads;
  }

  /**
   * Whether a read of {@code length} bytes on {@code peer} offers UCX
   * ({@link BlockReads#offer}). Never throws.
   */
  public static UcxBlockRead offer(Configuration conf, Peer peer,
      long length) {
    try {
      BlockReads r = BlockReads.offer(conf, peer.getDomainSocket() != null,
          length, BlockReads.transferAddress(peer.getRemoteAddressString()));
      return r == null ? NONE : new UcxBlockRead(r);
    } catch (RuntimeException | LinkageError e) {
      LOG.warn("hdfs-rdma: a read stays on TCP: {}", e.toString());
      return NONE;
    }
  }

  /** The stream the op goes out on, carrying the offer if any. */
  public DataOutputStream opOut(DataOutputStream out) {
    return reads == null ? out : OpRewriter.withOffer(out, reads.readOffer());
  }

  /**
   * The channel the reader reads packets from: {@code in} itself unless
   * the DataNode answered the offer in {@code status}.
   *
   * @throws IOException when the DataNode answered but the answer or its
   *     UCX cannot be used: the read fails, and Hadoop tries the next
   *     replica
   */
  public ReadableByteChannel channel(BlockOpResponseProto status,
      ReadableByteChannel in, Peer peer, DatanodeID dataNode,
      DataChecksum checksum, ExtendedBlock block) throws IOException {
    if (reads == null) {
      return in;
    }
    return reads.channel(ReadAnswerField.answerOf(status), in,
        peer.getOutputStream(), dataNode.getXferAddr(),
        checksum.getChecksumType().id, checksum.getBytesPerChecksum(),
        checksum.getChecksumSize(), block.getBlockId(), block.toString());
  }

  /** The reader closes: so does its UCX read, if it had one. */
  public static void close(ReadableByteChannel in) {
    if (in instanceof ReadChannel) {
      ((ReadChannel) in).close();
    }
  }
}
