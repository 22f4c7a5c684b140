package org.hdfsrdma.hadoop.datanode;

import java.io.IOException;
import java.nio.channels.SelectableChannel;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.protocol.CommitEntry;
import org.hdfsrdma.hadoop.protocol.Decline;
import org.hdfsrdma.hadoop.protocol.SessionIds;
import org.hdfsrdma.hadoop.protocol.WriteRequest;
import org.hdfsrdma.hadoop.util.LogOnce;
import org.hdfsrdma.hadoop.util.RateLimitedLog;
import org.hdfsrdma.ucx.HostIdentity;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The UCX side of one writeBlock operation on a DataNode, the same for
 * every Hadoop release (the release's DataXceiver adapter feeds it).
 *
 * <p>Going down the pipeline: if the op offers UCX and this DataNode can
 * serve it, the DataNode opens the block's session (so descriptors that
 * arrive early wait) and passes the offer on to its mirror; otherwise the
 * mirror gets the op without it and the whole pipeline stays on TCP.
 * Coming back up: the DataNode commits only if its mirror committed for
 * exactly the DataNodes behind it (the commit list is checked against the
 * pipeline Hadoop set up, so a hostile or confused DataNode downstream
 * cannot send the client elsewhere); then its block's packets arrive
 * through a {@link PacketFetcher}, and the reply carries the commit list to
 * the client.
 *
 * <p>All of this happens after Hadoop checked the op (block token; SASL
 * where configured): the session id is derived from the block token's
 * password, and the worker address this DataNode commits is only ever
 * revealed in the reply to an authenticated op.
 */
public final class BlockWrite {

  private static final Logger LOG = LoggerFactory.getLogger(BlockWrite.class);

  /** Hostile mirrors' commit lists, logged at a bounded rate. */
  private static final RateLimitedLog BAD_COMMITS = RateLimitedLog.of(LOG);

  private final WriteRequest request;
  private final UcxDataNode dataNode;
  private final String self;
  private final String blockPoolId;
  private final long blockId;
  private final long generationStamp;
  private final byte[] tokenPassword;
  private final UcxBlockSession session;
  private List<CommitEntry> downstream = Collections.emptyList();
  /** The mirror's decline, if its reply carried one. */
  private Decline downstreamDecline;
  /** The mirror's reply carried hdfs-rdma fields that do not parse. */
  private boolean downstreamUnreadable;
  /** Why the block did not commit, for the reply upstream, or null. */
  private Decline decline;
  private PacketFetcher fetcher;
  private boolean committed;

  private BlockWrite(WriteRequest request, UcxDataNode dataNode, String self,
      String blockPoolId, long blockId, long generationStamp,
      byte[] tokenPassword, UcxBlockSession session) {
    this.request = request;
    this.dataNode = dataNode;
    this.self = self;
    this.blockPoolId = blockPoolId;
    this.blockId = blockId;
    this.generationStamp = generationStamp;
    this.tokenPassword = tokenPassword;
    this.session = session;
  }

  /**
   * Opens the session of a block whose op offered {@code request}, or
   * returns null when the block stays on TCP (the reason logged once).
   *
   * @param dataNode this DataNode's UCX side, null when it serves none
   * @param name the DataNode's display name, for messages
   * @param self its transfer address (what session ids name)
   * @param block the block, for messages
   */
  public static BlockWrite begin(WriteRequest request, UcxDataNode dataNode,
      String name, String self, String block,
      String blockPoolId, long blockId, long generationStamp,
      byte[] tokenPassword) {
    String refusal = refusal(request, dataNode);
    if (refusal != null) {
      LogOnce.info("refusal " + name + refusal, "hdfs-rdma: blocks stay on"
          + " TCP at " + name + ": " + refusal);
      return null;
    }
    long sessionId = SessionIds.of(tokenPassword, request.getNonce(),
        blockPoolId, self, blockId, generationStamp);
    UcxBlockSession session;
    try {
      session = dataNode.server().sessions().open(sessionId, blockId,
          generationStamp, request.getPacketSize(),
          dataNode.conf().maxQueuedPackets(),
          dataNode.conf().maxRegionsPerBlock(), block + " at " + name);
    } catch (IOException e) {
      LOG.warn("hdfs-rdma: {} stays on TCP: {}", block, e.getMessage());
      return null;
    }
    return new BlockWrite(request, dataNode, self, blockPoolId, blockId,
        generationStamp, tokenPassword, session);
  }

  /**
   * The reason a DataNode that could not begin an offered block
   * ({@link #begin} returned null) gives upstream.
   */
  public static Decline.Reason declinedBecause(UcxDataNode dataNode) {
    return dataNode == null ? Decline.Reason.OFF
        : dataNode.conf().transferProtected() ? Decline.Reason.PROTECTED
        : Decline.Reason.REFUSED;
  }

  /** Why this DataNode cannot serve the offered block over UCX, or null. */
  private static String refusal(WriteRequest request,
      UcxDataNode dataNode) {
    if (dataNode == null) {
      return "UCX is not running (dfs.datanode.rdma.enabled not true, or"
          + " UCX unavailable: see the DataNode's log)";
    }
    if (dataNode.conf().transferProtected()) {
      return RdmaConf.TRANSFER_PROTECTED_REASON;
    }
    // The landing pool is the JVM's: its buffers are sized by the
    // runtime's settings, not this DataNode's.
    int maxPacketBytes = dataNode.runtime().conf().maxPacketBytes();
    if (request.getPacketSize() > maxPacketBytes) {
      return "the client's packets of " + request.getPacketSize()
          + " bytes exceed dfs.datanode.rdma.packet-buffer-bytes="
          + maxPacketBytes;
    }
    return null;
  }

  /** This DataNode's UCX side. */
  public UcxDataNode dataNode() {
    return dataNode;
  }

  /** The offer to relay to the mirror. */
  public WriteRequest request() {
    return request;
  }

  /** The mirror's commit list, as its reply carried it. */
  public void downstream(List<CommitEntry> commits, Decline declined) {
    downstream = commits;
    downstreamDecline = declined;
  }

  /** The mirror's reply carried a commit list that does not parse. */
  public void downstreamUnreadable(IOException e) {
    BAD_COMMITS.warn("hdfs-rdma: malformed commit list from the mirror of "
        + session.description() + ": " + e.getMessage());
    downstream = Collections.emptyList();
    downstreamUnreadable = true;
  }

  /**
   * Commits to UCX when this DataNode and exactly the DataNodes behind it
   * ({@code targets}, by transfer address) can: returns the commit list for
   * the reply, this DataNode's entry first, and the block's packets then
   * come through {@link #fetcher}. Otherwise closes the session, counts the
   * block as received over TCP and returns null.
   *
   * @param whyNot why the pipeline cannot commit already (the mirror
   *     failed, no receiver), or null
   * @param socket the block's socket, watched while waiting (may be null)
   */
  public List<CommitEntry> commit(String whyNot, String[] targets,
      SelectableChannel socket) {
    String why = whyNot != null ? whyNot : checkDownstream(targets);
    CommitEntry fed = null;
    if (why == null && request.feeders() > 0
        && downstream.size() >= request.feeders()) {
      fed = downstream.get(request.feeders() - 1);
      why = PacketForwarder.refusal(dataNode.runtime(), fed);
      if (why != null) {
        LogOnce.info("feed " + self + " " + fed.getXferAddr(), "hdfs-rdma: "
            + session.description() + " and the next blocks of chain or"
            + " hybrid pipelines through it stay on TCP: " + why);
      }
    }
    if (why != null) {
      LOG.debug("hdfs-rdma: {} on TCP: {}", session.description(), why);
      decline = downstreamDecline != null ? downstreamDecline
          // A mirror that answered with neither runs no hdfs-rdma.
          : whyNot == null && downstream.isEmpty() && targets.length > 0
              ? new Decline(targets[0], downstreamUnreadable
                  ? Decline.Reason.REFUSED : Decline.Reason.STOCK)
          : new Decline(self, Decline.Reason.REFUSED);
      close();
      return null;
    }
    List<CommitEntry> entries = new ArrayList<CommitEntry>(
        downstream.size() + 1);
    CommitEntry own = new CommitEntry(self,
        dataNode.runtime().workerAddress(), HostIdentity.uid(),
        HostIdentity.hostId(), dataNode.ingest().bytesPerSecond(),
        dataNode.runtime().sharedMemoryProfile());
    // Only a fan-out's request offers them (WriteRequest): nothing to feed.
    boolean onSocket = request.socketDescriptors() && fed == null;
    entries.add(onSocket ? own.takingSocketDescriptors() : own);
    entries.addAll(downstream);
    fetcher = new PacketFetcher(session, dataNode, socket, onSocket);
    if (fed != null) {
      fetcher.feed(new PacketForwarder(dataNode, fed.getXferAddr(),
          fed.getWorkerAddress(), SessionIds.of(tokenPassword,
              request.getNonce(), blockPoolId, fed.getXferAddr(), blockId,
              generationStamp), blockId, generationStamp,
          session.description()));
    }
    committed = true;
    return entries;
  }

  /**
   * Why the block did not commit ({@link #commit} returned null): the
   * mirror's decline passed up, or this DataNode's own.
   */
  public Decline decline() {
    return decline;
  }

  /** The block's packet source once committed, else null. */
  public PacketFetcher fetcher() {
    return fetcher;
  }

  /**
   * Null when the mirror's commit list names exactly the pipeline's
   * DataNodes behind this one, in order; otherwise why not.
   */
  private String checkDownstream(String[] targets) {
    int mirrors = targets.length;
    if (downstream.size() != mirrors) {
      return downstream.size() + " of " + mirrors + " mirrors committed";
    }
    for (int i = 0; i < mirrors; i++) {
      if (!downstream.get(i).getXferAddr().equals(targets[i])) {
        BAD_COMMITS.warn("hdfs-rdma: the mirror of " + session.description()
            + " committed for " + downstream.get(i).getXferAddr() + " where"
            + " the pipeline has " + targets[i] + "; the block stays on TCP");
        return "commit list does not match the pipeline";
      }
    }
    return null;
  }

  /** Whether this block's packets arrive over UCX. */
  public boolean isCommitted() {
    return committed;
  }

  /**
   * Closes an uncommitted session (a committed one closes with its
   * fetcher). Idempotent.
   */
  public void close() {
    if (!committed) {
      session.close();
    }
  }
}
