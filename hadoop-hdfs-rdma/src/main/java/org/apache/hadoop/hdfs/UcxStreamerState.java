package org.apache.hadoop.hdfs;

import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.hadoop.classification.InterfaceAudience;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.hdfsrdma.hadoop.client.DistributionPolicy;
import org.hdfsrdma.hadoop.client.ShapeChooser;
import org.hdfsrdma.hadoop.client.UcxClients;
import org.hdfsrdma.hadoop.compat.CommitListField;
import org.hdfsrdma.hadoop.compat.WriteBlockOpRewriter;
import org.hdfsrdma.hadoop.conf.DistributionMode;
import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.metrics.PacketPhaseTimes;
import org.hdfsrdma.hadoop.metrics.PipelineOutcome;
import org.hdfsrdma.hadoop.metrics.UcxJvmMetrics;
import org.hdfsrdma.hadoop.metrics.WriterCounters;
import org.hdfsrdma.hadoop.protocol.CommitEntry;
import org.hdfsrdma.hadoop.protocol.SessionIds;
import org.hdfsrdma.hadoop.protocol.WriteRequest;
import org.hdfsrdma.hadoop.runtime.Reach;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.hadoop.sender.AnnouncedRegions;
import org.hdfsrdma.hadoop.sender.SendMemory;
import org.hdfsrdma.hadoop.util.LogOnce;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RegionAnnouncement;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.StatusSlots;
import org.hdfsrdma.ucx.UcxEndpoint;
import org.hdfsrdma.ucx.UcxWorker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The UCX side of one DataStreamer: offers each pipeline the UCX data path
 * in the writeBlock op, learns from DataNode 1's reply whether every node
 * committed and can be reached, and then sends each packet as a descriptor
 * to every node instead of writing its bytes down the socket. Every
 * DataNode fetches the packet from this client's registered memory itself.
 *
 * <p><b>Per packet</b> the DataStreamer thread writes one fixed-size
 * descriptor per node into a preallocated ring and sends it through the
 * thread-safe UCX worker itself: no hand-over to another thread, no object,
 * no lock. A region (a slab of the client's buffer pool) is announced to a
 * node's session before the first descriptor that points into it. A send
 * UCX could not finish at once (its shared-memory queue was full) keeps its
 * ring slot until it completes; the slot's next user waits for it,
 * progressing the worker.
 *
 * <p>Pipelines where UCX cannot serve (UCX off or missing, encryption or a
 * SASL QOP, a DataNode that did not commit, one that shared memory cannot
 * reach and no RDMA device can, a connection that failed lately) or should
 * not ({@link DistributionPolicy}: a DataNode whose gets the client's CPU
 * would serve) run exactly as stock, over TCP.
 */
@InterfaceAudience.Private
public final class UcxStreamerState {

  private static final Logger LOG =
      LoggerFactory.getLogger(UcxStreamerState.class);

  /** Descriptors in flight per streamer and node, reused round-robin. */
  private static final int RING = 64;
  /** Longest pipeline the descriptor ring has room for. */
  private static final int MAX_PIPELINE = 16;

  /**
   * DataNodes whose pipelines stay on TCP for a while, by transfer address:
   * UCX could not reach them, or their gets would be emulated.
   */
  private static final ConcurrentHashMap<String, TcpUntil> TCP_UNTIL =
      new ConcurrentHashMap<String, TcpUntil>();

  /**
   * DataNodes that did not commit to a chain or hybrid pipeline auto chose
   * (one could not feed the next by one-sided gets), by transfer address,
   * with when auto may shape pipelines through them again: until then it
   * fans them out.
   */
  private static final ConcurrentHashMap<String, Long> FAN_OUT_UNTIL =
      new ConcurrentHashMap<String, Long>();

  /** Why pipelines through a DataNode use TCP, and until when. */
  private static final class TcpUntil {
    final long untilMs;
    final PipelineOutcome outcome;

    TcpUntil(long untilMs, PipelineOutcome outcome) {
      this.untilMs = untilMs;
      this.outcome = outcome;
    }
  }

  /**
   * Heartbeats in flight at most: with Hadoop's 80 packets in flight they
   * stay well inside a DataNode's queue of 128.
   */
  private static final int MAX_HEARTBEATS_IN_FLIGHT = 8;

  private static final UcxStreamerState OFF = new UcxStreamerState(null,
      null, null, null);

  private final UcxRuntime runtime;
  private final RdmaConf conf;
  private final RegisteredBufferPool pool;
  private final UcxWorker worker;
  /** The DataStreamer's error state: where a failed send is reported. */
  private final DataStreamer.ErrorState errorState;
  /** Whether the pipeline failed already (a bad ack): stop waiting. */
  private final java.util.function.BooleanSupplier pipelineFailed;
  private SendMemory memory;
  private final PacketDescriptor descriptor = new PacketDescriptor();
  private final RegionAnnouncement announcement = new RegionAnnouncement();
  private int nextSlot;
  /** Heartbeats sent on this pipeline whose acks did not come back yet. */
  private final AtomicInteger heartbeatsInFlight = new AtomicInteger();

  // The pipeline being set up, then running.
  private WriteRequest request;
  private DatanodeInfo[] nodes;
  private ExtendedBlock block;
  private long generationStamp;
  private long[] sessionIds;
  /** The endpoints of the DataNodes this client feeds: the first ones. */
  private UcxEndpoint[] endpoints;
  /** How many DataNodes this client feeds; the rest are fed by those. */
  private int fed;
  private AnnouncedRegions announced;
  private boolean active;
  /** The active pipeline's per-packet counters. */
  private WriterCounters.Slot counters;
  private long tcpOnlyBlockId = Long.MIN_VALUE;

  private UcxStreamerState(UcxRuntime runtime, RdmaConf conf,
      RegisteredBufferPool pool, DataStreamer.ErrorState errorState) {
    this.runtime = runtime;
    this.conf = conf;
    this.pool = pool;
    this.errorState = errorState;
    this.pipelineFailed = errorState == null ? () -> false
        : errorState::hasError;
    this.worker = runtime == null ? null : runtime.worker();
    this.memory = runtime == null ? null
        : new SendMemory(worker, RING, MAX_PIPELINE);
  }

  /**
   * The state of a new DataStreamer of {@code client}: whether and how it
   * writes over UCX, decided once, here, for every packet of the stream.
   * Sends that fail are reported to {@code errorState}, as the
   * ResponseProcessor reports a bad ack.
   */
  static UcxStreamerState create(DFSClient client,
      DataStreamer.ErrorState errorState) {
    if (!UcxClients.wanted(client.getConfiguration())) {
      return OFF;
    }
    RdmaConf rdma = new RdmaConf(client.getConfiguration());
    UcxRuntime runtime = UcxClients.runtimeFor(client.getConfiguration(),
        rdma);
    if (runtime == null) {
      return OFF;
    }
    RegisteredBufferPool pool;
    try {
      pool = runtime.pools().client(client.getConf().getWritePacketSize());
    } catch (RuntimeException e) {
      LogOnce.info("client-pool", "hdfs-rdma: no registered buffer"
          + " pool, writes stay on TCP: " + e.getMessage());
      return OFF;
    }
    return new UcxStreamerState(runtime, rdma, pool, errorState);
  }

  /** The pool this stream's packets are leased from, or null (UCX off). */
  RegisteredBufferPool pool() {
    return pool;
  }

  /** How long a writer waits for a registered packet buffer. */
  long bufferWaitMs() {
    return conf == null ? 0 : conf.bufferWaitMs();
  }

  /** True while the current pipeline moves packets over UCX. */
  boolean isActive() {
    return active;
  }

  /**
   * Wraps the stream the writeBlock op goes out on so that the op offers
   * UCX, when this pipeline may use it. Called once per pipeline set-up.
   */
  DataOutputStream opOut(DataOutputStream out, DatanodeInfo[] pipeline,
      ExtendedBlock pipelineBlock, Token<BlockTokenIdentifier> token,
      long newGS, int packetSize) {
    endPipeline();
    if (runtime == null || pipeline.length > MAX_PIPELINE) {
      return out;
    }
    retireBusyMemory();
    if (pipelineBlock.getBlockId() == tcpOnlyBlockId) {
      LOG.info("hdfs-rdma: {} stays on TCP after a UCX failure",
          pipelineBlock);
      return out;
    }
    long now = System.currentTimeMillis();
    for (DatanodeInfo node : pipeline) {
      TcpUntil tcp = TCP_UNTIL.get(node.getXferAddr());
      // Emulated gets are the policy's reason, not UCX's: forced fan-out
      // ignores them.
      if (tcp != null && tcp.untilMs > now
          && (tcp.outcome == PipelineOutcome.TCP_UNREACHABLE
              || conf.distribution() == DistributionMode.AUTO)) {
        LOG.debug("hdfs-rdma: {} on TCP ({}) because of {}", pipelineBlock,
            tcp.outcome.label(), node);
        runtime.metrics().countPipeline(tcp.outcome);
        return out;
      }
    }
    int feeders = feeders(pipeline);
    request = WriteRequest.create(packetSize, feeders);
    fed = feeders == 0 ? pipeline.length : feeders;
    nodes = pipeline.clone();
    block = new ExtendedBlock(pipelineBlock);
    generationStamp = newGS;
    sessionIds = new long[nodes.length];
    for (int i = 0; i < nodes.length; i++) {
      sessionIds[i] = SessionIds.of(token.getPassword(),
          request.getNonce(), block.getBlockPoolId(), nodes[i].getXferAddr(),
          block.getBlockId(), newGS);
    }
    return WriteBlockOpRewriter.opOut(out, request);
  }

  /**
   * How many DataNodes of {@code pipeline} this client feeds (0: all).
   * Forced shapes as configured; in auto, where gets cross RDMA links, as
   * the measured rates say ({@link ShapeChooser}); otherwise a fan-out.
   */
  private int feeders(DatanodeInfo[] pipeline) {
    if (conf.distribution() == DistributionMode.AUTO) {
      if (!runtime.transports().networkRdma()) {
        return 0;
      }
      String[] addresses = new String[pipeline.length];
      long now = System.currentTimeMillis();
      for (int i = 0; i < pipeline.length; i++) {
        addresses[i] = pipeline[i].getXferAddr();
        Long until = FAN_OUT_UNTIL.get(addresses[i]);
        if (until != null && until > now) {
          return 0;
        }
      }
      return ShapeChooser.feeders(addresses);
    }
    return DistributionPolicy.feeders(conf.distribution(), pipeline.length,
        conf.hybridFeeders());
  }

  /**
   * Reads DataNode 1's reply: when every node of the pipeline committed and
   * its gets may go by UCX ({@link DistributionPolicy}), connects to each
   * one's UCX worker and switches the pipeline to UCX. Otherwise the
   * pipeline runs over TCP after all (its DataNodes see packets on the
   * socket instead of descriptors and read them as stock does), and
   * pipelines through that DataNode skip UCX for
   * {@code dfs.client.rdma.unreachable-retry-ms}.
   */
  void onConnectAck(BlockOpResponseProto reply) {
    if (request == null) {
      return;
    }
    List<CommitEntry> commits;
    try {
      commits = CommitListField.commitsOf(reply);
    } catch (IOException e) {
      LOG.warn("hdfs-rdma: {} on TCP: malformed commit list: {}", block,
          e.getMessage());
      request = null;
      return;
    }
    if (!committedInOrder(commits)) {
      LOG.debug("hdfs-rdma: {} on TCP: {} of {} DataNodes committed", block,
          commits.size(), nodes.length);
      if (request.feeders() > 0 && conf.distribution() == DistributionMode.AUTO) {
        // A DataNode could not feed the next one; the DataNodes' own log
        // says which. Fan these out for a while instead.
        long until = System.currentTimeMillis() + conf.unreachableRetryMs();
        for (DatanodeInfo n : nodes) {
          FAN_OUT_UNTIL.put(n.getXferAddr(), until);
        }
      }
      request = null;
      return;
    }
    for (CommitEntry c : commits) {
      ShapeChooser.noteIngest(c.getXferAddr(), c.getIngestBytesPerSecond());
    }
    DistributionMode mode = conf.distribution();
    Reach[] reach = new Reach[fed];
    for (int i = 0; i < fed; i++) {
      CommitEntry c = commits.get(i);
      reach[i] = Reach.before(runtime.transports(), c.getHostId(),
          c.getUid());
      if (reach[i] == Reach.UNREACHABLE) {
        tcpFor(i, PipelineOutcome.TCP_UNREACHABLE, "it is on another host or runs"
            + " as another user (UCX shares memory only between processes"
            + " of one user and host) and this JVM's UCX has no RDMA"
            + " device", null);
        return;
      }
      if (!DistributionPolicy.fetchesByGet(mode, reach[i])) {
        tcpFor(i, PipelineOutcome.TCP_EMULATED_GETS, "it is on another host and"
            + " only UCX's tcp transport reaches it, where the client's CPU"
            + " would serve every get", null);
        return;
      }
    }
    // Connect to all at once: set-up time counts for small files.
    List<CompletableFuture<UcxEndpoint>> pending =
        new ArrayList<CompletableFuture<UcxEndpoint>>(fed);
    for (int i = 0; i < fed; i++) {
      pending.add(runtime.connect(commits.get(i).getWorkerAddress(),
          nodes[i].getXferAddr()));
    }
    UcxEndpoint[] connected = new UcxEndpoint[fed];
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(conf.connectTimeoutMs());
    for (int i = 0; i < fed; i++) {
      try {
        connected[i] = pending.get(i).get(Math.max(0,
            deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (Exception e) {
        if (e instanceof InterruptedException) {
          Thread.currentThread().interrupt();
        }
        tcpFor(i, PipelineOutcome.TCP_UNREACHABLE, "its UCX worker could not be"
            + " reached", e);
        return;
      }
    }
    for (UcxEndpoint e : connected) {
      runtime.noteConnected(e);
    }
    for (int i = 0; i < fed; i++) {
      // What UCX chose for the connection decides, not what the transports
      // promised: a peer without RDMA lanes is served by tcp.
      if (reach[i] == Reach.ONE_SIDED && !DistributionPolicy.fetchesByGet(
          mode, Reach.of(connected[i].transports()))) {
        tcpFor(i, PipelineOutcome.TCP_EMULATED_GETS, "UCX reaches it only with"
            + " gets the client's CPU would serve ("
            + connected[i].transports() + ")", null);
        return;
      }
    }
    runtime.metrics().countPipeline(DistributionPolicy.outcomeOf(request.feeders()));
    endpoints = connected;
    announced = new AnnouncedRegions(fed);
    counters = runtime.metrics().openStream();
    active = true;
    LOG.debug("hdfs-rdma: {} moves over UCX to {} DataNodes, {} fed by the"
        + " client", block, nodes.length, fed);
  }

  /**
   * The pipeline runs over TCP because of node {@code node}; so do the
   * next ones through it, for {@code dfs.client.rdma.unreachable-retry-ms}.
   */
  private void tcpFor(int node, PipelineOutcome outcome, String why,
      Exception cause) {
    TCP_UNTIL.put(nodes[node].getXferAddr(), new TcpUntil(
        System.currentTimeMillis() + conf.unreachableRetryMs(), outcome));
    runtime.metrics().countPipeline(outcome);
    request = null;
    LogOnce.info(outcome + " " + nodes[node].getXferAddr() + why,
        "hdfs-rdma: " + block + " over TCP: " + why + " (" + nodes[node]
        + (cause == null ? "" : ": " + cause) + "); pipelines through it use"
        + " TCP for the next " + conf.unreachableRetryMs() + " ms");
  }

  private boolean committedInOrder(List<CommitEntry> commits) {
    if (commits.size() != nodes.length) {
      return false;
    }
    for (int i = 0; i < nodes.length; i++) {
      if (!commits.get(i).getXferAddr().equals(nodes[i].getXferAddr())) {
        return false;
      }
    }
    return true;
  }

  /**
   * Sends {@code packet} as a descriptor to every node of an active UCX
   * pipeline. Returns false when the pipeline is on TCP (the caller writes
   * the packet to the socket as stock does).
   *
   * <p>When a node's descriptor cannot be sent, the packet still counts as
   * sent: nodes before it may have fetched it, and the recovery's
   * writeBlock must allow for their bytes. The failure goes to the
   * DataStreamer's error state instead, naming that node, and the block
   * stays on TCP through its recovery. Sending also stops when the
   * pipeline already failed (a bad ack): a dead node's full queue would
   * otherwise hold the DataStreamer until the send timeout.
   *
   * @throws IOException when the packet cannot go over UCX at all
   */
  boolean send(DFSPacket packet) throws IOException {
    if (!active) {
      return false;
    }
    if (packet.isHeartbeatPacket()) {
      if (heartbeatsInFlight.get() >= MAX_HEARTBEATS_IN_FLIGHT) {
        // The DataNodes have not answered the last ones: they are busy or
        // the pipeline is failing, and another heartbeat adds nothing.
        return true;
      }
      heartbeatsInFlight.incrementAndGet();
    }
    try {
      sendNow(packet);
    } catch (IOException e) {
      tcpOnlyBlockId = block.getBlockId();
      throw e;
    }
    return true;
  }

  /**
   * Node {@code node} did not take a message: the pipeline fails there.
   * Stock learns of a bad node from an ack or a failed socket write; this
   * reports it the way the ResponseProcessor does.
   */
  private void nodeFailed(int node, IOException cause) {
    tcpOnlyBlockId = block.getBlockId();
    LOG.warn("hdfs-rdma: {} failed; the pipeline recovers without {}",
        cause.getMessage(), nodes[node]);
    synchronized (errorState) {
      if (!errorState.isNodeMarked()) {
        errorState.setBadNodeIndex(node);
      }
      errorState.setError(true);
    }
  }

  private void sendNow(DFSPacket packet) throws IOException {
    PacketPhaseTimes times = runtime.metrics().clientTimes();
    long started = times == null ? 0 : System.nanoTime();
    long address;
    int checksumLength;
    int dataLength;
    long offsetInBlock;
    boolean sync;
    int region = 0;
    long lease = RegisteredBufferPool.NO_LEASE;
    if (packet instanceof UcxDFSPacket) {
      UcxDFSPacket p = (UcxDFSPacket) packet;
      p.prepareForGet();
      if (p.corruptedForGet) {
        // Sent again after recovery: the old pipeline's reads are over.
        p.corruptedForGet = !p.undoCorruptionForGet();
      }
      if (p.injectCorruptionForGet()) {
        p.corruptedForGet = true;
      }
      address = p.getAddress();
      checksumLength = p.getChecksumLength();
      dataLength = p.getDataLength();
      offsetInBlock = p.offsetInBlock();
      sync = p.syncBlock();
      lease = p.lease();
      if (checksumLength + dataLength > 0) {
        region = pool.regionId(lease) + 1;
      } else {
        address = 0;
      }
    } else {
      // A heap packet: its header says what it is.
      PacketHeader header = headerOf(packet);
      if (header.getDataLen() != 0) {
        throw new IOException("hdfs-rdma: packet " + packet.getSeqno()
            + " of " + block + " is not in registered memory (the client's"
            + " buffer pool was exhausted); the block continues over TCP");
      }
      // Nothing to fetch: heartbeats and empty end-of-block or sync packets.
      address = 0;
      checksumLength = 0;
      dataLength = 0;
      offsetInBlock = header.getOffsetInBlock();
      sync = header.getSyncBlock();
    }
    int flags = 0;
    if (packet.isLastPacketInBlock()) {
      flags |= PacketDescriptor.FLAG_LAST_PACKET_IN_BLOCK;
    }
    if (sync) {
      flags |= PacketDescriptor.FLAG_SYNC_BLOCK;
    }
    int slot = nextSlot;
    nextSlot = (nextSlot + 1) % RING;
    SendMemory m = memory;
    for (int i = 0; i < endpoints.length; i++) {
      if (region != 0 && !announce(i, region - 1)) {
        return;
      }
      int entry = m.entry(slot, i);
      if (!awaitSlot(m.ringStatus(), entry, i)) {
        return;
      }
      descriptor.wrap(m.ring(), m.ringOffset(entry)).encode(sessionIds[i],
          block.getBlockId(), generationStamp, packet.getSeqno(),
          offsetInBlock, flags, region, address, checksumLength, dataLength);
      if (!send(i, m.ringAddress(entry), PacketDescriptor.LENGTH,
          m.ringStatus(), entry)) {
        return;
      }
    }
    counters.add(UcxJvmMetrics.SENT_BYTES, dataLength);
    if (times != null) {
      long sentAt = System.nanoTime();
      times.add(PacketPhaseTimes.Phase.CLIENT_SEND, sentAt - started);
      if (packet instanceof UcxDFSPacket) {
        ((UcxDFSPacket) packet).sentAt(sentAt, times);
      }
    }
  }

  /**
   * Announces pool region {@code poolRegion} to node i's session, once.
   * Returns false when the pipeline failed instead.
   */
  private boolean announce(int node, int poolRegion) throws IOException {
    if (announced.contains(node, poolRegion)) {
      return true;
    }
    SendMemory m = memory;
    if (!awaitSlot(m.announcementStatus(), node, node)) {
      return false;
    }
    announcement.wrap(m.announcements(), m.announcementOffset(node),
        RegionAnnouncement.MAX_LENGTH).encode(sessionIds[node],
            poolRegion + 1, pool.regionAddress(poolRegion),
            pool.regionLength(poolRegion), pool.regionKey(poolRegion));
    if (!send(node, m.announcementAddress(node), announcement.length(),
        m.announcementStatus(), node)) {
      return false;
    }
    announced.add(node, poolRegion);
    return true;
  }

  /**
   * Sends one message to node {@code node}. When UCX had to queue it (the
   * DataNode's receive queue was full), waits here until it went out,
   * progressing the worker: nothing else would (the DataNode freeing room
   * wakes nobody on this side), and a full queue is back-pressure, as a
   * full socket buffer is for stock's write. Returns false when the
   * pipeline failed instead.
   */
  private boolean send(int node, long address, int length,
      StatusSlots slots, int slot) throws IOException {
    int rc;
    try {
      rc = endpoints[node].send(address, length, slots.address(slot));
    } catch (IOException e) {
      nodeFailed(node, new IOException("hdfs-rdma: sending to "
          + nodes[node] + " for " + block + " (" + e.getMessage() + ")", e));
      return false;
    }
    if (rc != 0) {
      counters.add(UcxJvmMetrics.QUEUED_SENDS, 1);
      return awaitSlot(slots, slot, node);
    }
    return true;
  }

  /**
   * Waits until the send that last used {@code slot} is over, progressing
   * the worker from this thread. How it ended does not matter here: a send
   * that failed failed its connection, and every later send on it fails at
   * once. Returns false, without waiting longer, once the pipeline has
   * failed: when the DataStreamer's error state holds an error (a bad ack)
   * or the send does not end within the connect timeout.
   */
  private boolean awaitSlot(StatusSlots slots, int slot, int node)
      throws IOException {
    if (!slots.inProgress(slot)) {
      return true;
    }
    SendMemory.Wait w = SendMemory.await(worker, slots, slot,
        System.nanoTime()
            + TimeUnit.MILLISECONDS.toNanos(conf.connectTimeoutMs()),
        pipelineFailed);
    switch (w) {
    case DONE:
      return true;
    case INTERRUPTED:
      throw new java.io.InterruptedIOException("interrupted sending to "
          + nodes[node] + " for " + block);
    case GAVE_UP:
      tcpOnlyBlockId = block.getBlockId();
      return false;
    default:
      nodeFailed(node, new IOException("hdfs-rdma: a message to "
          + nodes[node] + " for " + block + " was not sent in "
          + conf.connectTimeoutMs() + " ms"));
      return false;
    }
  }

  /**
   * Leaves send memory that sends which never ended (to a dead DataNode)
   * still hold to UCX, and takes fresh memory: reusing it would make the
   * next pipeline wait for, and blame, a node that did nothing wrong. The
   * worker keeps the old memory until those sends end (see SendMemory).
   * Called once per pipeline set-up.
   */
  private void retireBusyMemory() {
    if (memory != null && memory.inUse()) {
      memory = new SendMemory(worker, RING, MAX_PIPELINE);
      nextSlot = 0;
    }
  }

  /** The header a heap packet would send, read back from its bytes. */
  private static PacketHeader headerOf(DFSPacket packet) throws IOException {
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    packet.writeTo(new DataOutputStream(bytes));
    PacketHeader header = new PacketHeader();
    header.readFields(ByteBuffer.wrap(bytes.toByteArray()));
    return header;
  }

  /**
   * DataNode 1 answered a heartbeat. Heartbeats stay outside Hadoop's
   * limit of packets in flight; over TCP the socket paces them, here
   * their acks do: a client with a zero socket timeout sends them back to
   * back, and each DataNode queues at most max-queued-packets messages.
   */
  void heartbeatAcked() {
    heartbeatsInFlight.updateAndGet(n -> n > 0 ? n - 1 : 0);
  }

  /** The pipeline is over (end of block, error, close). */
  void endPipeline() {
    heartbeatsInFlight.set(0);
    active = false;
    if (counters != null) {
      counters.close();
      counters = null;
    }
    request = null;
    endpoints = null;
  }

  @Override
  public String toString() {
    return runtime == null ? "UCX off" : active ? "UCX active for " + block
        : "UCX idle";
  }
}
