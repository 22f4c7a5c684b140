package org.hdfsrdma.hadoop.client;

import java.io.IOException;
import java.io.OutputStream;
import java.util.List;

import org.hdfsrdma.hadoop.conf.DistributionMode;
import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.metrics.PacketPhaseTimes;
import org.hdfsrdma.hadoop.metrics.PipelineOutcome;
import org.hdfsrdma.hadoop.protocol.CommitEntry;
import org.hdfsrdma.hadoop.protocol.Decline;
import org.hdfsrdma.hadoop.protocol.WriteRequest;
import org.hdfsrdma.hadoop.runtime.ClientLane;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.hadoop.util.LogOnce;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The UCX side of one writer stream (one DataStreamer), the same for every
 * Hadoop release: offers each pipeline the UCX data path, learns from
 * DataNode 1's commit list whether every node committed and can be
 * reached, and then sends each packet as a descriptor to every node the
 * client feeds ({@link DescriptorSender}) instead of writing its bytes
 * down the socket. Every DataNode fetches the packet from this client's
 * registered memory itself, or from the DataNode feeding it.
 *
 * <p>Pipelines where UCX cannot serve (a DataNode that did not commit, one
 * that shared memory cannot reach and no RDMA device can, a connection
 * that failed lately) or should not ({@link DistributionPolicy}: a
 * DataNode whose gets the client's CPU would serve) run exactly as stock,
 * over TCP. Everything here is decided once per pipeline set-up; per
 * packet only {@link #send} runs.
 *
 * <p>A stream sends on one {@linkplain ClientLane lane} (a UCX worker and
 * its connections) for life, taken when it opens. It counts on its lane
 * while it has work in hand: from its opening to the end of its first
 * pipeline, then from each pipeline's offer to its end (Hadoop ends the
 * last one when the stream closes). A stream that is never started stays
 * counted: the count only steers the next stream's choice.
 */
public final class ClientStream {

  private static final Logger LOG = LoggerFactory.getLogger(ClientStream.class);

  /** What became of one packet handed to {@link #send}. */
  public enum Sent {
    /** The pipeline is on TCP: the caller writes the packet's bytes. */
    ON_TCP,
    /** Described to every node the client feeds. */
    DESCRIBED,
    /** Not described: a heartbeat too many, or the pipeline failed. */
    NOT_DESCRIBED
  }

  private final UcxRuntime runtime;
  private final RdmaConf conf;
  private final ClientLane lane;
  /** Whether this stream counts on its lane now (under this lock). */
  private boolean engaged;
  private final RegisteredBufferPool pool;
  private final DescriptorSender sender;
  private final PipelineFallback fallback;
  private final TcpPipelines tcp;
  private final HeartbeatPacing heartbeats = new HeartbeatPacing();

  /** The pipeline offered UCX, until it turns out to run on TCP or ends. */
  private OfferedPipeline offered;
  /** The last pipeline offered UCX (null before the first), for messages. */
  private volatile OfferedPipeline last;
  private volatile boolean active;
  private volatile long tcpOnlyBlockId = Long.MIN_VALUE;

  private ClientStream(UcxRuntime runtime, RdmaConf conf,
      RegisteredBufferPool pool, PipelineFailures failures) {
    this.runtime = runtime;
    this.conf = conf;
    this.pool = pool;
    this.lane = runtime.clientLanes().take();
    this.engaged = true;
    try {
      this.sender = new DescriptorSender(lane.worker(), pool,
          failures::pipelineFailed, this::sendFailed,
          conf.connectTimeoutMs());
    } catch (RuntimeException | Error e) {
      lane.disengage();
      throw e;
    }
    this.fallback = new PipelineFallback(failures, runtime.metrics(),
        runtime.nodeBackoff(), conf.unreachableRetryMs());
    this.tcp = new TcpPipelines(runtime, conf);
  }

  /**
   * The UCX side of a new stream of a client whose start was decided
   * ({@link UcxClients#start}), or null when the stream writes over TCP
   * (UCX off, unwanted or not startable here, each reason logged once; or
   * no pool for its packets). Decided once, here, for every packet of the
   * stream.
   *
   * @param writePacketSize the client's dfs.client-write-packet-size
   * @param failures where a node that takes no descriptor is reported
   */
  public static ClientStream open(UcxClients.Start start,
      int writePacketSize, PipelineFailures failures) {
    if (start.runtime == null) {
      return null;
    }
    RegisteredBufferPool pool;
    try {
      pool = start.runtime.pools().client(writePacketSize);
    } catch (RuntimeException e) {
      LogOnce.warn("client-pool", "hdfs-rdma: no registered buffer pool,"
          + " writes stay on TCP: " + e.getMessage());
      return null;
    }
    return new ClientStream(start.runtime, start.conf, pool, failures);
  }

  /** The lane this stream sends on, for life. */
  public ClientLane lane() {
    return lane;
  }

  /** The pool this stream's packets are leased from. */
  public RegisteredBufferPool pool() {
    return pool;
  }

  /** How long a writer waits for a registered packet buffer. */
  public long bufferWaitMs() {
    return conf.bufferWaitMs();
  }

  /** The client's phase timers, or null when they are off. */
  public PacketPhaseTimes times() {
    return runtime.metrics().clientTimes();
  }

  /** True while the current pipeline moves packets over UCX. */
  public boolean isActive() {
    return active;
  }

  /** Whether a pipeline offered UCX and waits for its commit list. */
  public boolean awaitsCommits() {
    return offered != null;
  }

  /**
   * The request to offer a new pipeline in its writeBlock op, or null when
   * it stays on TCP. Called once per pipeline set-up.
   *
   * @param block the block, for messages
   * @param nodes the pipeline's DataNodes by transfer address
   * @param nodeNames the same, as Hadoop names them in messages
   * @param tokenPassword the block token's password (keys session ids)
   * @param socket the stream the op goes out on and the packets would
   *     follow, to offer the descriptors on (when
   *     {@code dfs.client.rdma.socket-descriptors} allows and the client
   *     feeds every DataNode), or null
   */
  public WriteRequest offer(String block, String[] nodes, String[] nodeNames,
      String blockPoolId, long blockId, long newGS, byte[] tokenPassword,
      int packetSize, OutputStream socket) {
    endPipeline();
    engage();
    if (nodes.length > DescriptorSender.MAX_PIPELINE) {
      return null;
    }
    sender.retireBusyMemory();
    if (blockId == tcpOnlyBlockId) {
      LOG.info("hdfs-rdma: {} stays on TCP after a UCX failure", block);
      return null;
    }
    if (tcp.backedOff(block, nodes, nodeNames)) {
      return null;
    }
    offered = new OfferedPipeline(block, nodes, nodeNames, blockPoolId,
        blockId, newGS, tokenPassword, packetSize,
        DistributionPolicy.feeders(runtime, conf, nodes),
        conf.clientSocketDescriptors() ? socket : null);
    last = offered;
    return offered.request;
  }

  /** DataNode 1's commit list could not be read: the pipeline uses TCP. */
  public void commitsUnreadable(IOException e) {
    OfferedPipeline p = last;
    tcp.unreadable(p == null ? null : p.block, e);
    offered = null;
  }

  /**
   * DataNode 1's commit list: when every node of the pipeline committed and
   * its gets may go by UCX ({@link DistributionPolicy}), connects to each
   * node the client feeds and switches the pipeline to UCX. Otherwise the
   * pipeline runs over TCP after all (its DataNodes see packets on the
   * socket instead of descriptors and read them as stock does), and
   * pipelines through that DataNode skip UCX for
   * {@code dfs.client.rdma.unreachable-retry-ms}.
   *
   * @param declined why the DataNodes did not commit, when they said
   *     ({@link Decline}), else null
   */
  public void committed(List<CommitEntry> commits, Decline declined) {
    OfferedPipeline p = offered;
    if (p == null) {
      return;
    }
    if (!p.committedInOrder(commits)) {
      tcp.declined(p.block, p.nodes, commits, declined);
      if (p.request.feeders() > 0
          && conf.distribution() == DistributionMode.AUTO) {
        // A DataNode could not feed the next one; the DataNodes' own log
        // says which. Fan these out for a while instead.
        runtime.nodeBackoff().fanOutFor(p.nodes, conf.unreachableRetryMs());
      }
      offered = null;
      return;
    }
    for (CommitEntry c : commits) {
      runtime.ingestRates().note(c.getXferAddr(),
          c.getIngestBytesPerSecond());
    }
    PipelineConnect.Result connect = PipelineConnect.connect(runtime, lane,
        conf, commits, p.nodes, p.fed);
    if (connect.onTcp != null) {
      tcp.unreachable(p.block, p.nodes, p.nodeNames, connect.onTcp);
      offered = null;
      return;
    }
    runtime.metrics().countPipeline(
        DistributionPolicy.outcomeOf(p.request.feeders()));
    sender.start(p.block, p.nodeNames, p.blockId, p.generationStamp,
        p.sessionIds, connect.endpoints, p.descriptorSocket(commits),
        runtime.metrics().openStream());
    active = true;
    LOG.debug("hdfs-rdma: {} moves over UCX to {} DataNodes, {} fed by the"
        + " client", p.block, p.nodes.length, p.fed);
  }

  /**
   * Sends {@code packet} as a descriptor to every node the client feeds of
   * an active UCX pipeline; {@link Sent#ON_TCP} when the pipeline is on TCP
   * (the caller writes the packet to the socket as stock does).
   *
   * <p>A descriptor that cannot be written on the block's socket fails
   * the pipeline as a packet that cannot be written does in stock: Hadoop's
   * recovery drops DataNode 1, and the recovered pipeline is offered UCX
   * again.
   *
   * <p>When a node's descriptor cannot be sent, the packet still counts as
   * sent: nodes before it may have fetched it, and the recovery's
   * writeBlock must allow for their bytes. The pipeline restarts over TCP
   * with every DataNode instead (the stream's {@link PipelineFailures}),
   * and the block stays on TCP. Sending also stops when the
   * pipeline already failed (a bad ack): a dead node's full queue would
   * otherwise hold the DataStreamer until the send timeout.
   *
   * <p>A heartbeat with {@code mayWait} false never waits: where Hadoop
   * sends heartbeats holding a lock the writer and the ack reader need
   * (Hadoop 3's DataStreamer sends them under its {@code dataQueue} lock,
   * HDFS-15813), a heartbeat that would wait for a ring slot is not sent
   * ({@link Sent#NOT_DESCRIBED}): the DataNodes still have descriptors to
   * take, so they are not idle, and the next heartbeat comes an interval
   * later. Data packets always may wait.
   *
   * @throws IOException when the packet cannot go over UCX at all
   */
  public Sent send(OutgoingPacket packet, boolean mayWait)
      throws IOException {
    if (!active) {
      return Sent.ON_TCP;
    }
    boolean wait = mayWait || !packet.heartbeat;
    if (packet.heartbeat && !heartbeats.mayDescribe(
        wait || sender.canSendWithoutWaiting())) {
      return Sent.NOT_DESCRIBED;
    }
    boolean described;
    try {
      described = sender.send(packet, wait);
    } catch (IOException e) {
      if (!sender.failedOnSocket(e)) {
        tcpOnlyBlockId = last.blockId;
      }
      throw e;
    }
    if (!described) {
      tcpOnlyBlockId = last.blockId;
      return Sent.NOT_DESCRIBED;
    }
    return Sent.DESCRIBED;
  }

  /** A packet of this block can only go over TCP (no registered memory). */
  public IOException notInRegisteredMemory(long seqno) {
    OfferedPipeline p = last;
    if (p != null) {
      tcpOnlyBlockId = p.blockId;
    }
    return new IOException("hdfs-rdma: packet " + seqno + " of "
        + (p == null ? "the block" : p.block)
        + " is not in registered memory (the client's buffer pool was"
        + " exhausted); the block continues over TCP");
  }

  /**
   * The client's UCX could not give node {@code node} a message (UCX
   * failed its endpoint, or it took none in the send timeout): the
   * pipeline restarts over TCP with every DataNode. A DataNode that died
   * shows in Hadoop's acks, or fails the TCP pipeline's set-up, and
   * recovery drops it then.
   */
  private void sendFailed(int node, String why) {
    fellBack(node, PipelineOutcome.FELL_BACK_CLIENT, why);
  }

  /**
   * DataNode {@code node} of the current pipeline sent the out-of-band
   * ack by which a DataNode whose UCX failed the block asks to continue
   * over TCP (its log says why). Returns the exception the ack reader
   * throws to end the pipeline; recovery restarts it over TCP with every
   * DataNode.
   */
  public IOException dataNodeFellBack(int node) {
    OfferedPipeline p = last;
    String name = p == null ? "DataNode " + node : p.nameOf(node);
    fellBack(node, PipelineOutcome.FELL_BACK_DATANODE, name + " could not"
        + " go on over UCX (its log says why)");
    return new IOException("hdfs-rdma: " + name + " asked to continue "
        + (p == null ? "the block" : p.block) + " over TCP");
  }

  /**
   * An ack of the current pipeline reported a DataNode bad: Hadoop's own
   * evidence, which a UCX failure at the same time does not undo.
   */
  public void ackReportedBadNode() {
    fallback.ackReportedBadNode();
  }

  /**
   * UCX failed the current pipeline because of node {@code node}: the
   * block stays on TCP, and Hadoop's recovery restarts it with every
   * DataNode ({@link PipelineFallback}).
   */
  private synchronized void fellBack(int node, PipelineOutcome outcome,
      String why) {
    if (!active) {
      return;
    }
    OfferedPipeline p = last;
    tcpOnlyBlockId = p.blockId;
    boolean known = p.has(node);
    fallback.fellBack(p.block, known ? p.nodes[node] : null,
        known ? p.nodeNames[node] : null, outcome, why);
  }

  /** DataNode 1 answered a heartbeat ({@link HeartbeatPacing}). */
  public void heartbeatAcked() {
    heartbeats.acked();
  }

  /**
   * The pipeline is over (end of block, error, close). When UCX failed it
   * and no ack reported a bad DataNode, recovery keeps every node.
   */
  public synchronized void endPipeline() {
    fallback.pipelineEnded();
    heartbeats.reset();
    active = false;
    offered = null;
    sender.stop();
    if (engaged) {
      engaged = false;
      lane.disengage();
    }
  }

  /** A pipeline is being set up: this stream counts on its lane again. */
  private synchronized void engage() {
    if (!engaged) {
      engaged = true;
      lane.engage();
    }
  }

  @Override
  public String toString() {
    OfferedPipeline p = last;
    return active && p != null ? "UCX active for " + p.block : "UCX idle";
  }
}
