package org.apache.hadoop.hdfs.server.datanode;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.SelectableChannel;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.apache.hadoop.classification.InterfaceAudience;
import org.apache.hadoop.conf.Configuration;
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
import org.hdfsrdma.hadoop.compat.WriteBlockOpPeek;
import org.hdfsrdma.hadoop.compat.WriteBlockOpRewriter;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.datanode.PacketFetcher;
import org.hdfsrdma.hadoop.datanode.PacketForwarder;
import org.hdfsrdma.hadoop.datanode.UcxBlockSession;
import org.hdfsrdma.hadoop.datanode.UcxDataNode;
import org.hdfsrdma.hadoop.protocol.CommitEntry;
import org.hdfsrdma.hadoop.protocol.SessionIds;
import org.hdfsrdma.hadoop.protocol.WriteRequest;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.hadoop.util.LogOnce;
import org.hdfsrdma.hadoop.util.RateLimitedLog;
import org.hdfsrdma.ucx.HostIdentity;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The UCX side of one writeBlock operation on a DataNode (DataXceiver
 * calls it through one-line hooks).
 *
 * <p>Going down the pipeline: if the op offers UCX and this DataNode can
 * serve it, the DataNode opens the block's session (so descriptors that
 * arrive early wait) and passes the offer on to its mirror; otherwise the
 * mirror gets the op without it and the whole pipeline stays on TCP.
 * Coming back up: the DataNode commits only if its mirror committed for
 * exactly the DataNodes behind it (the commit list is checked against the
 * pipeline Hadoop set up, so a hostile or confused DataNode downstream
 * cannot send the client elsewhere); then its BlockReceiver reads packets
 * over UCX instead of from the socket, and the reply carries the commit
 * list to the client.
 *
 * <p>All of this happens after Hadoop checked the op (block token; SASL
 * where configured): the session id is derived from the block token's
 * password, and the worker address this DataNode commits is only ever
 * revealed in the reply to an authenticated op.
 */
@InterfaceAudience.Private
public final class UcxDataNodeWrite {

  private static final Logger LOG =
      LoggerFactory.getLogger(UcxDataNodeWrite.class);

  /** Hostile mirrors' commit lists, logged at a bounded rate. */
  private static final RateLimitedLog BAD_COMMITS =
      RateLimitedLog.of(LOG);

  private final WriteRequest request;
  private final ReadableByteChannel socket;
  private UcxDataNode dn;
  private UcxRuntime runtime;
  private RdmaConf conf;
  private UcxBlockSession session;
  private ExtendedBlock block;
  private byte[] tokenPassword;
  private long generationStamp;
  private String self;
  private List<CommitEntry> downstream = Collections.emptyList();
  private boolean committed;

  private UcxDataNodeWrite(WriteRequest request, ReadableByteChannel socket) {
    this.request = request;
    this.socket = socket;
  }

  /** An instance for an op that offers no UCX. */
  public static UcxDataNodeWrite none() {
    return new UcxDataNodeWrite(null, null);
  }

  /**
   * Reads the UCX offer of the op about to be processed, leaving the stream
   * where it was. Never throws: a DataNode without UCX, or an op without an
   * offer, gets an inert instance.
   *
   * @param peer the connection the op came on; its socket is watched while
   *     the block waits for descriptors
   */
  public static UcxDataNodeWrite peek(Op op, DataInputStream in, Peer peer) {
    WriteRequest request = null;
    if (op == Op.WRITE_BLOCK && UcxRuntime.current() != null) {
      try {
        request = WriteBlockOpPeek.peekWriteRequest(in);
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
    String refusal = refusal(dataNode);
    if (refusal != null) {
      LogOnce.info("refusal " + dataNode.getDisplayName() + refusal,
          "hdfs-rdma: blocks stay on TCP at " + dataNode.getDisplayName()
          + ": " + refusal);
      return;
    }
    self = dataNode.getDatanodeId().getXferAddr();
    this.block = block;
    this.tokenPassword = token.getPassword();
    this.generationStamp = generationStamp;
    long sessionId = SessionIds.of(token.getPassword(),
        request.getNonce(), block.getBlockPoolId(), self, block.getBlockId(),
        generationStamp);
    try {
      session = dn.server().sessions().open(sessionId, block.getBlockId(),
          generationStamp, request.getPacketSize(), conf.maxQueuedPackets(),
          conf.maxRegionsPerBlock(), block + " at "
          + dataNode.getDisplayName());
    } catch (IOException e) {
      LOG.warn("hdfs-rdma: {} stays on TCP: {}", block, e.getMessage());
    }
  }

  private String refusal(DataNode dataNode) {
    Configuration dnConf = dataNode.getConf();
    dn = UcxDataNode.of(dataNode);
    if (dn == null) {
      return "UCX is not running (is org.hdfsrdma.hadoop.UcxDataNodePlugin"
          + " in dfs.datanode.plugins, with dfs.datanode.rdma.enabled?)";
    }
    runtime = dn.runtime();
    conf = dn.conf();
    String protection = dnConf.getTrimmed("dfs.data.transfer.protection", "");
    if (dnConf.getBoolean("dfs.encrypt.data.transfer", false)
        || protection.contains("integrity")
        || protection.contains("privacy")) {
      return "data-transfer encryption or a SASL QOP of integrity/privacy is"
          + " configured, which UCX does not give";
    }
    // The landing pool is the JVM's: its buffers are sized by the
    // runtime's settings, not this DataNode's.
    int maxPacketBytes = runtime.conf().maxPacketBytes();
    if (request.getPacketSize() > maxPacketBytes) {
      return "the client's packets of " + request.getPacketSize()
          + " bytes exceed dfs.datanode.rdma.packet-buffer-bytes="
          + maxPacketBytes;
    }
    return null;
  }

  /** The stream the op goes to the mirror on, offering UCX if we can. */
  public DataOutputStream relayOut(DataOutputStream mirrorOut) {
    return session == null ? mirrorOut
        : WriteBlockOpRewriter.opOut(mirrorOut, request);
  }

  /** The mirror's reply to the op. */
  public void downstreamAck(BlockOpResponseProto ack) {
    if (session == null) {
      return;
    }
    try {
      downstream = CommitListField.commitsOf(ack);
    } catch (IOException e) {
      BAD_COMMITS.warn("hdfs-rdma: malformed commit list from the mirror of "
          + session.description() + ": " + e.getMessage());
      downstream = Collections.emptyList();
    }
  }

  /**
   * Commits to UCX when this DataNode and exactly the DataNodes behind it
   * ({@code targets}) can, switching {@code receiver} to read packets over
   * UCX, and returns the reply builder with the commit list; otherwise
   * closes the session and returns the reply unchanged (TCP).
   */
  public BlockOpResponseProto.Builder commit(
      BlockOpResponseProto.Builder reply, Status status,
      DatanodeInfo[] targets, BlockReceiver receiver) {
    if (session == null) {
      UcxDataNode counted = dn != null ? dn : UcxDataNode.of(receiver == null
          ? null : receiver.getDataNode());
      if (counted != null && receiver != null) {
        counted.metrics().countBlock(false);
      }
      return reply;
    }
    String why = status != Status.SUCCESS ? "the mirror failed"
        : receiver == null ? "no receiver" : checkDownstream(targets);
    CommitEntry fed = null;
    if (why == null && request.feeders() > 0
        && downstream.size() >= request.feeders()) {
      fed = downstream.get(request.feeders() - 1);
      why = PacketForwarder.refusal(runtime, fed);
      if (why != null) {
        LogOnce.info("feed " + self + " " + fed.getXferAddr(),
            "hdfs-rdma: " + session.description() + " and the next blocks"
            + " of chain or hybrid pipelines through it stay on TCP: " + why);
      }
    }
    if (why != null) {
      LOG.debug("hdfs-rdma: {} on TCP: {}", session.description(), why);
      close();
      if (receiver != null) {
        dn.metrics().countBlock(false);
      }
      return reply;
    }
    List<CommitEntry> entries = new ArrayList<CommitEntry>(
        downstream.size() + 1);
    entries.add(new CommitEntry(self, runtime.workerAddress(),
        HostIdentity.uid(), HostIdentity.hostId(),
        dn.ingest().bytesPerSecond()));
    entries.addAll(downstream);
    PacketFetcher packets = new PacketFetcher(session, dn, watchable(socket));
    if (fed != null) {
      packets.feed(new PacketForwarder(dn, fed.getXferAddr(),
          fed.getWorkerAddress(), SessionIds.of(tokenPassword,
              request.getNonce(), block.getBlockPoolId(), fed.getXferAddr(),
              block.getBlockId(), generationStamp), block.getBlockId(),
          generationStamp, session.description()));
    }
    receiver.setPacketReceiver(new UcxPacketReceiver(packets));
    committed = true;
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

  /**
   * Null when the mirror's commit list names exactly the pipeline's
   * DataNodes behind this one, in order; otherwise why not.
   */
  private String checkDownstream(DatanodeInfo[] targets) {
    int mirrors = targets == null ? 0 : targets.length;
    if (downstream.size() != mirrors) {
      return downstream.size() + " of " + mirrors + " mirrors committed";
    }
    for (int i = 0; i < mirrors; i++) {
      if (!downstream.get(i).getXferAddr().equals(targets[i].getXferAddr())) {
        BAD_COMMITS.warn("hdfs-rdma: the mirror of " + session.description()
            + " committed for " + downstream.get(i).getXferAddr() + " where"
            + " the pipeline has " + targets[i].getXferAddr() + "; the block"
            + " stays on TCP");
        return "commit list does not match the pipeline";
      }
    }
    return null;
  }

  /** Whether this block's packets arrive over UCX. */
  public boolean isCommitted() {
    return committed;
  }

  /** Closes an uncommitted session (a committed one closes with its receiver). */
  public void close() {
    if (session != null && !committed) {
      session.close();
    }
  }
}
