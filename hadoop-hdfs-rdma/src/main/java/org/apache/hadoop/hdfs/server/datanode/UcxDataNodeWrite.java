package org.apache.hadoop.hdfs.server.datanode;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.ReadableByteChannel;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.apache.hadoop.classification.InterfaceAudience;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.net.Peer;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.Op;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.hdfsrdma.hadoop.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.UcxBlockSession;
import org.hdfsrdma.hadoop.UcxPacketReceiver;
import org.hdfsrdma.hadoop.UcxRuntime;
import org.hdfsrdma.hadoop.UcxWireFields;
import org.hdfsrdma.hadoop.UcxWireFields.CommitEntry;
import org.hdfsrdma.hadoop.UcxWireFields.WriteRequest;
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
 * every node behind it, then its BlockReceiver reads packets by UCX get
 * instead of from the socket, and the reply carries the commit list
 * (transfer address and UCX listener of each node) to the client.
 */
@InterfaceAudience.Private
public final class UcxDataNodeWrite {

  private static final Logger LOG =
      LoggerFactory.getLogger(UcxDataNodeWrite.class);

  private final WriteRequest request;
  private final ReadableByteChannel socket;
  private UcxRuntime runtime;
  private UcxBlockSession session;
  private String self;
  private InetSocketAddress ucxAddress;
  private long getTimeoutMs;
  private int getsInFlight;
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
        request = UcxWireFields.peekWriteRequest(in);
      } catch (IOException e) {
        LOG.warn("hdfs-rdma: cannot read the UCX offer of a writeBlock op;"
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
      LOG.info("hdfs-rdma: {} stays on TCP at {}: {}", block,
          dataNode.getDisplayName(), refusal);
      return;
    }
    Configuration conf = dataNode.getConf();
    self = dataNode.getDatanodeId().getXferAddr();
    long sessionId = UcxWireFields.sessionId(token.getPassword(),
        request.getNonce(), block.getBlockPoolId(), self, block.getBlockId(),
        generationStamp);
    try {
      session = runtime.sessions().open(sessionId, block.getBlockId(),
          generationStamp, conf.getInt(
              HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_MAX_QUEUED_PACKETS_KEY,
              HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_MAX_QUEUED_PACKETS_DEFAULT),
          block + " at " + dataNode.getDisplayName());
    } catch (IOException e) {
      LOG.warn("hdfs-rdma: {} stays on TCP: {}", block, e.getMessage());
      return;
    }
    getTimeoutMs = conf.getLong(
        HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_GET_TIMEOUT_MS_KEY,
        HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_GET_TIMEOUT_MS_DEFAULT);
    getsInFlight = conf.getInt(
        HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_GETS_IN_FLIGHT_KEY,
        HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_GETS_IN_FLIGHT_DEFAULT);
  }

  private String refusal(DataNode dataNode) {
    Configuration conf = dataNode.getConf();
    if (!conf.getBoolean(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY,
        HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_DEFAULT)) {
      return HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY + " is false";
    }
    String protection = conf.getTrimmed("dfs.data.transfer.protection", "");
    if (conf.getBoolean("dfs.encrypt.data.transfer", false)
        || protection.contains("integrity")
        || protection.contains("privacy")) {
      return "data-transfer encryption or a SASL QOP of integrity/privacy is"
          + " configured, which UCX does not give";
    }
    runtime = UcxRuntime.current();
    ucxAddress = runtime == null ? null : runtime.listenerAddress();
    if (ucxAddress == null) {
      return "the UCX listener is not running (is "
          + "org.hdfsrdma.hadoop.UcxDataNodePlugin in dfs.datanode.plugins?)";
    }
    int buffer = conf.getInt(
        HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_PACKET_BUFFER_BYTES_KEY,
        HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_PACKET_BUFFER_BYTES_DEFAULT);
    if (request.getPacketSize() > buffer) {
      return "the client's packets of " + request.getPacketSize()
          + " bytes exceed dfs.datanode.rdma.packet-buffer-bytes=" + buffer;
    }
    return null;
  }

  /** The stream the op goes to the mirror on, offering UCX if we can. */
  public DataOutputStream relayOut(DataOutputStream mirrorOut) {
    return session == null ? mirrorOut
        : UcxWireFields.opOut(mirrorOut, request);
  }

  /** The mirror's reply to the op. */
  public void downstreamAck(BlockOpResponseProto ack) {
    if (session == null) {
      return;
    }
    try {
      downstream = UcxWireFields.commitsOf(ack);
    } catch (IOException e) {
      LOG.warn("hdfs-rdma: malformed commit list from the mirror of {}: {}",
          session.description(), e.getMessage());
      downstream = Collections.emptyList();
    }
  }

  /**
   * Commits to UCX when this DataNode and every node behind it can, switching
   * {@code receiver} to fetch packets by get, and returns the reply builder
   * with the commit list; otherwise closes the session and returns the
   * reply unchanged (the pipeline runs over TCP).
   */
  public BlockOpResponseProto.Builder commit(
      BlockOpResponseProto.Builder reply, Status status, int mirrors,
      BlockReceiver receiver) {
    UcxRuntime current = UcxRuntime.current();
    if (session == null) {
      if (current != null && receiver != null) {
        current.countReceivedBlock(false);
      }
      return reply;
    }
    if (status != Status.SUCCESS || receiver == null
        || downstream.size() != mirrors) {
      LOG.debug("hdfs-rdma: {} on TCP: {} of {} mirrors committed",
          session.description(), downstream.size(), mirrors);
      close();
      if (receiver != null) {
        runtime.countReceivedBlock(false);
      }
      return reply;
    }
    List<CommitEntry> entries = new ArrayList<CommitEntry>(mirrors + 1);
    String host = ucxAddress.getAddress() == null
        || ucxAddress.getAddress().isAnyLocalAddress()
        ? self.substring(0, self.lastIndexOf(':'))
        : ucxAddress.getAddress().getHostAddress();
    entries.add(new CommitEntry(self, host, ucxAddress.getPort()));
    entries.addAll(downstream);
    final UcxRuntime r = runtime;
    final String dataNode = self;
    receiver.setPacketReceiver(new UcxPacketReceiver(session,
        r.landingPool(), getTimeoutMs, getsInFlight, socket,
        n -> r.countFetched(dataNode, n), r::recountBlockOverTcp,
        r::noteTransports, r.dataNodeTimes()));
    committed = true;
    runtime.countReceivedBlock(true);
    return UcxWireFields.withCommits(reply, entries);
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
