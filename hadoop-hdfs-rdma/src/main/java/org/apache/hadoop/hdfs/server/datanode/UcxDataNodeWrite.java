package org.apache.hadoop.hdfs.server.datanode;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.SelectableChannel;
import java.util.List;

import org.apache.hadoop.classification.InterfaceAudience;
import org.apache.hadoop.hdfs.net.Peer;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.Op;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.net.SocketInputStream;
import org.apache.hadoop.security.token.Token;
import org.hdfsrdma.hadoop.compat.CommitListField;
import org.hdfsrdma.hadoop.compat.DeclineField;
import org.hdfsrdma.hadoop.compat.OpPeek;
import org.hdfsrdma.hadoop.compat.OpRewriter;
import org.hdfsrdma.hadoop.datanode.BlockWrite;
import org.hdfsrdma.hadoop.datanode.DataNodeStart;
import org.hdfsrdma.hadoop.datanode.UcxDataNode;
import org.hdfsrdma.hadoop.protocol.CommitEntry;
import org.hdfsrdma.hadoop.protocol.Decline;
import org.hdfsrdma.hadoop.protocol.WriteRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * DataXceiver's hooks into the UCX data path (patch 0004), for this Hadoop
 * release: Hadoop's types in, the release-neutral {@link BlockWrite}
 * behind; and DataXceiverServer's, which start and stop the DataNode's UCX
 * side with its transfer server ({@link DataNodeStart}). It reads the offer from the op before Hadoop does, relays it to
 * the mirror, reads the mirror's commit list, and puts this DataNode's
 * commit list in the reply, switching the block's receiver to UCX
 * ({@link UcxPacketReceiver}) when the pipeline commits.
 */
@InterfaceAudience.Private
public final class UcxDataNodeWrite {

  private static final Logger LOG =
      LoggerFactory.getLogger(UcxDataNodeWrite.class);

  /** The offer of the op, or null. */
  private final WriteRequest request;
  private final ReadableByteChannel socket;
  /** The block's UCX side once its session is open, else null. */
  private BlockWrite write;
  /** Why this DataNode could not open the offered block, or null. */
  private Decline declined;

  private UcxDataNodeWrite(WriteRequest request, ReadableByteChannel socket) {
    this.request = request;
    this.socket = socket;
  }

  /**
   * The DataNode's transfer server starts accepting: its UCX side starts
   * first, unless the DataNode lists the plugin, which starts it. Called on
   * the server's thread before its first accept (a DataNode with a local
   * domain-socket server calls twice; the second finds it started).
   */
  public static void serverStarting(DataNode dataNode) {
    try {
      if (!DataNodeStart.pluginListed(dataNode.getConf())) {
        DataNodeStart.start(dataNode, dataNode.getDisplayName(),
            dataNode.getConf());
      }
    } catch (RuntimeException | LinkageError e) {
      LOG.warn("hdfs-rdma: UCX data path off for {}: {}",
          dataNode.getDisplayName(), e.toString());
    }
  }

  /** The DataNode's transfer server stopped: so does its UCX side. */
  public static void serverStopped(DataNode dataNode) {
    try {
      if (!DataNodeStart.pluginListed(dataNode.getConf())) {
        DataNodeStart.stop(dataNode);
      }
    } catch (RuntimeException | LinkageError e) {
      LOG.warn("hdfs-rdma: stopping the UCX side of {}: {}",
          dataNode.getDisplayName(), e.toString());
    }
  }

  /** An instance for an op that offers no UCX. */
  public static UcxDataNodeWrite none() {
    return new UcxDataNodeWrite(null, null);
  }

  /**
   * Reads the UCX offer of the op about to be processed, leaving the stream
   * where it was. Never throws: an op without an offer gets an inert
   * instance. Read also where this DataNode serves no UCX, so that it can
   * tell the client why ({@link Decline}).
   *
   * @param peer the connection the op came on; its socket is watched while
   *     the block waits for descriptors
   */
  public static UcxDataNodeWrite peek(Op op, DataInputStream in, Peer peer) {
    WriteRequest request = null;
    if (op == Op.WRITE_BLOCK) {
      try {
        request = OpPeek.peekWriteRequest(in);
      } catch (IOException e) {
        // Reading the op itself failed: Hadoop's own read will say so.
        LOG.debug("hdfs-rdma: cannot read the UCX offer of a writeBlock op;"
            + " the block stays on TCP: {}", e.toString());
      }
    }
    return new UcxDataNodeWrite(request,
        request == null || peer == null ? null : peer.getInputStreamChannel());
  }

  /**
   * The receiver of {@code block} was set up: open its UCX session when the
   * op offered UCX and this DataNode can serve it.
   */
  public void begin(DataNode dataNode, ExtendedBlock block,
      Token<BlockTokenIdentifier> token, long generationStamp,
      boolean receivingFromClient) {
    if (request == null || !receivingFromClient) {
      return;
    }
    UcxDataNode ucx = UcxDataNode.of(dataNode);
    String self = dataNode.getDatanodeId().getXferAddr();
    write = BlockWrite.begin(request, ucx, dataNode.getDisplayName(), self,
        block.toString(), block.getBlockPoolId(), block.getBlockId(),
        generationStamp, token.getPassword());
    if (write == null) {
      declined = new Decline(self, BlockWrite.declinedBecause(ucx));
    }
  }

  /** The stream the op goes to the mirror on, offering UCX if we can. */
  public DataOutputStream relayOut(DataOutputStream mirrorOut) {
    return write == null ? mirrorOut
        : OpRewriter.withRequest(mirrorOut, write.request());
  }

  /** The mirror's reply to the op. */
  public void downstreamAck(BlockOpResponseProto ack) {
    if (write == null) {
      return;
    }
    try {
      write.downstream(CommitListField.commitsOf(ack),
          DeclineField.declineOf(ack));
    } catch (IOException e) {
      write.downstreamUnreadable(e);
    }
  }

  /**
   * Commits to UCX when this DataNode and exactly the DataNodes behind it
   * ({@code targets}) can, switching {@code receiver} to read packets over
   * UCX, and returns the reply builder with the commit list; otherwise
   * returns it with why not (a {@link Decline}: TCP). Counts a client's
   * block that stays on TCP at a DataNode serving UCX.
   */
  public BlockOpResponseProto.Builder commit(
      BlockOpResponseProto.Builder reply, Status status,
      DatanodeInfo[] targets, BlockReceiver receiver) {
    if (write == null) {
      UcxDataNode dn = receiver == null ? null
          : UcxDataNode.of(receiver.getDataNode());
      if (dn != null) {
        dn.metrics().countBlock(false);
      }
      return declined == null ? reply
          : DeclineField.withDecline(reply, declined);
    }
    String whyNot = status != Status.SUCCESS ? "the mirror failed"
        : receiver == null ? "no receiver" : null;
    String[] mirrors = new String[targets == null ? 0 : targets.length];
    for (int i = 0; i < mirrors.length; i++) {
      mirrors[i] = targets[i].getXferAddr();
    }
    List<CommitEntry> entries = write.commit(whyNot, mirrors,
        watchable(socket));
    if (entries == null) {
      if (receiver != null) {
        write.dataNode().metrics().countBlock(false);
      }
      Decline d = write.decline();
      return d == null ? reply : DeclineField.withDecline(reply, d);
    }
    receiver.setPacketReceiver(new UcxPacketReceiver(write.fetcher(),
        receiver));
    return CommitListField.withCommits(reply, entries);
  }

  /** The raw channel under Hadoop's socket stream, if it can be polled. */
  static SelectableChannel watchable(ReadableByteChannel channel) {
    if (channel instanceof SocketInputStream) {
      channel = ((SocketInputStream) channel).getChannel();
    }
    if (channel instanceof SelectableChannel
        && !((SelectableChannel) channel).isBlocking()) {
      return (SelectableChannel) channel;
    }
    return null;
  }

  /** Whether this block's packets arrive over UCX. */
  public boolean isCommitted() {
    return write != null && write.isCommitted();
  }

  /**
   * Closes an uncommitted session (a committed one closes with its
   * receiver).
   */
  public void close() {
    if (write != null) {
      write.close();
    }
  }
}
