package org.apache.hadoop.hdfs;

import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

import org.apache.hadoop.classification.InterfaceAudience;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.hdfsrdma.hadoop.PacketPhaseTimes;
import org.hdfsrdma.hadoop.RdmaConf;
import org.hdfsrdma.hadoop.UcxRuntime;
import org.hdfsrdma.hadoop.UcxWireFields;
import org.hdfsrdma.hadoop.UcxWireFields.CommitEntry;
import org.hdfsrdma.hadoop.UcxWireFields.WriteRequest;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RegionAnnouncement;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.StatusSlots;
import org.hdfsrdma.ucx.UcxEndpoint;
import org.hdfsrdma.ucx.UcxWorker;
import org.openucx.jucx.UcxUtils;
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
 * reach and no RDMA device can, a connection that failed lately) run
 * exactly as stock, over TCP.
 */
@InterfaceAudience.Private
public final class UcxStreamerState {

  private static final Logger LOG =
      LoggerFactory.getLogger(UcxStreamerState.class);

  /** Descriptors in flight per streamer and node, reused round-robin. */
  private static final int RING = 64;
  /** Longest pipeline the descriptor ring has room for. */
  private static final int MAX_PIPELINE = 16;

  /** DataNodes UCX could not reach, until when (ms since the epoch). */
  private static final ConcurrentHashMap<String, Long> UNREACHABLE =
      new ConcurrentHashMap<String, Long>();

  /**
   * Heartbeats in flight at most: with Hadoop's 80 packets in flight they
   * stay well inside a DataNode's queue of 128.
   */
  private static final int MAX_HEARTBEATS_IN_FLIGHT = 8;

  /** Polling a full DataNode queue: first pause, and the longest. */
  private static final long MIN_SEND_PAUSE_NANOS = 20_000;
  private static final long MAX_SEND_PAUSE_NANOS = 1_000_000;

  private static final UcxStreamerState OFF = new UcxStreamerState(null,
      null, null);

  private final UcxRuntime runtime;
  private final RdmaConf conf;
  private final RegisteredBufferPool pool;
  private final UcxWorker worker;
  private final ByteBuffer ring;
  private final long ringAddress;
  private final StatusSlots ringStatus;
  private final PacketDescriptor descriptor = new PacketDescriptor();
  private final ByteBuffer announcements;
  private final long announcementsAddress;
  private final StatusSlots announcementStatus;
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
  private UcxEndpoint[] endpoints;
  /** Per node, the pool regions announced to its session (bit per id). */
  private long[][] announced;
  private boolean active;
  private long tcpOnlyBlockId = Long.MIN_VALUE;
  private int failedNode = -1;

  private UcxStreamerState(UcxRuntime runtime, RdmaConf conf,
      RegisteredBufferPool pool) {
    this.runtime = runtime;
    this.conf = conf;
    this.pool = pool;
    this.worker = runtime == null ? null : runtime.worker();
    if (runtime == null) {
      ring = null;
      ringAddress = 0;
      ringStatus = null;
      announcements = null;
      announcementsAddress = 0;
      announcementStatus = null;
      return;
    }
    ring = ByteBuffer.allocateDirect(RING * MAX_PIPELINE
        * PacketDescriptor.LENGTH).order(ByteOrder.BIG_ENDIAN);
    ringAddress = UcxUtils.getAddress(ring);
    ringStatus = new StatusSlots(RING * MAX_PIPELINE);
    announcements = ByteBuffer.allocateDirect(MAX_PIPELINE
        * RegionAnnouncement.MAX_LENGTH).order(ByteOrder.BIG_ENDIAN);
    announcementsAddress = UcxUtils.getAddress(announcements);
    announcementStatus = new StatusSlots(MAX_PIPELINE);
  }

  /**
   * The state of a new DataStreamer of {@code client}: whether and how it
   * writes over UCX, decided once, here, for every packet of the stream.
   */
  static UcxStreamerState create(DFSClient client) {
    UcxRuntime runtime = UcxClients.runtimeFor(client);
    if (runtime == null) {
      return OFF;
    }
    RegisteredBufferPool pool;
    try {
      pool = runtime.clientPool(client.getConf().getWritePacketSize());
    } catch (RuntimeException e) {
      UcxRuntime.logOnce("client-pool", "hdfs-rdma: no registered buffer"
          + " pool, writes stay on TCP: " + e.getMessage());
      return OFF;
    }
    return new UcxStreamerState(runtime,
        new RdmaConf(client.getConfiguration()), pool);
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
    if (pipelineBlock.getBlockId() == tcpOnlyBlockId) {
      LOG.info("hdfs-rdma: {} stays on TCP after a UCX failure",
          pipelineBlock);
      return out;
    }
    long now = System.currentTimeMillis();
    for (DatanodeInfo node : pipeline) {
      Long until = UNREACHABLE.get(node.getXferAddr());
      if (until != null && until > now) {
        LOG.debug("hdfs-rdma: {} on TCP: UCX cannot reach {} lately",
            pipelineBlock, node);
        return out;
      }
    }
    request = WriteRequest.create(packetSize, 0);
    nodes = pipeline.clone();
    block = new ExtendedBlock(pipelineBlock);
    generationStamp = newGS;
    sessionIds = new long[nodes.length];
    for (int i = 0; i < nodes.length; i++) {
      sessionIds[i] = UcxWireFields.sessionId(token.getPassword(),
          request.getNonce(), block.getBlockPoolId(), nodes[i].getXferAddr(),
          block.getBlockId(), newGS);
    }
    return UcxWireFields.opOut(out, request);
  }

  /**
   * Reads DataNode 1's reply: when every node of the pipeline committed and
   * can be reached, connects to each one's UCX worker and switches the
   * pipeline to UCX. Otherwise the pipeline runs over TCP after all (its
   * DataNodes see packets on the socket instead of descriptors and read
   * them as stock does), and pipelines through an unreachable DataNode skip
   * UCX for {@code dfs.client.rdma.unreachable-retry-ms}.
   */
  void onConnectAck(BlockOpResponseProto reply) {
    if (request == null) {
      return;
    }
    List<CommitEntry> commits;
    try {
      commits = UcxWireFields.commitsOf(reply);
    } catch (IOException e) {
      LOG.warn("hdfs-rdma: {} on TCP: malformed commit list: {}", block,
          e.getMessage());
      request = null;
      return;
    }
    if (!committedInOrder(commits)) {
      LOG.debug("hdfs-rdma: {} on TCP: {} of {} DataNodes committed", block,
          commits.size(), nodes.length);
      request = null;
      return;
    }
    for (int i = 0; i < nodes.length; i++) {
      CommitEntry c = commits.get(i);
      if (!runtime.canReach(c.getHostId(), c.getUid())) {
        unreachable(i, "it is on another host or runs as another user"
            + " (UCX shares memory only between processes of one user and"
            + " host) and this JVM's UCX has no RDMA device", null);
        return;
      }
    }
    // Connect to all at once: set-up time counts for small files.
    List<CompletableFuture<UcxEndpoint>> pending =
        new ArrayList<CompletableFuture<UcxEndpoint>>(nodes.length);
    for (int i = 0; i < nodes.length; i++) {
      pending.add(runtime.connect(commits.get(i).getWorkerAddress(),
          nodes[i].getXferAddr()));
    }
    UcxEndpoint[] connected = new UcxEndpoint[nodes.length];
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(conf.connectTimeoutMs());
    for (int i = 0; i < nodes.length; i++) {
      try {
        connected[i] = pending.get(i).get(Math.max(0,
            deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (Exception e) {
        if (e instanceof InterruptedException) {
          Thread.currentThread().interrupt();
        }
        unreachable(i, "its UCX worker could not be reached", e);
        return;
      }
    }
    for (UcxEndpoint e : connected) {
      runtime.noteConnected(e);
    }
    endpoints = connected;
    announced = new long[nodes.length][1];
    active = true;
    failedNode = -1;
    LOG.debug("hdfs-rdma: {} moves over UCX to {} DataNodes", block,
        nodes.length);
  }

  private void unreachable(int node, String why, Exception cause) {
    UNREACHABLE.put(nodes[node].getXferAddr(),
        System.currentTimeMillis() + conf.unreachableRetryMs());
    request = null;
    UcxRuntime.logOnce("unreachable " + nodes[node].getXferAddr() + why,
        "hdfs-rdma: " + block + " over TCP: " + why + " (" + nodes[node]
        + (cause == null ? "" : ": " + cause) + "); pipelines through it use"
        + " TCP for the next " + conf.unreachableRetryMs() + " ms");
  }

  /**
   * When sending descriptors failed for one node of the pipeline, names
   * that node as the bad one (stock would blame DataNode 1, which wrote
   * the socket), so that recovery replaces the node UCX lost.
   */
  void markFailedNode(DataStreamer.ErrorState errorState) {
    int node = failedNode;
    if (node >= 0 && !errorState.isNodeMarked()) {
      errorState.setBadNodeIndex(node);
    }
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
   * @throws IOException when a descriptor could not be sent; the block
   *     then stays on TCP through its pipeline recovery
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

  private void sendNow(DFSPacket packet) throws IOException {
    PacketPhaseTimes times = runtime.clientTimes();
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
    for (int i = 0; i < endpoints.length; i++) {
      if (region != 0) {
        announce(i, region - 1);
      }
      int entry = slot * MAX_PIPELINE + i;
      awaitSlot(ringStatus, entry, i);
      int offset = entry * PacketDescriptor.LENGTH;
      descriptor.wrap(ring, offset).encode(sessionIds[i], block.getBlockId(),
          generationStamp, packet.getSeqno(), offsetInBlock, flags, region,
          address, checksumLength, dataLength);
      send(i, ringAddress + offset, PacketDescriptor.LENGTH, ringStatus,
          entry);
    }
    runtime.countSent(dataLength);
    if (times != null) {
      long sentAt = System.nanoTime();
      times.add(PacketPhaseTimes.Phase.CLIENT_SEND, sentAt - started);
      if (packet instanceof UcxDFSPacket) {
        ((UcxDFSPacket) packet).sentAt(sentAt, times);
      }
    }
  }

  /** Announces pool region {@code poolRegion} to node i's session, once. */
  private void announce(int node, int poolRegion) throws IOException {
    long[] bits = announced[node];
    int word = poolRegion >>> 6;
    if (word >= bits.length) {
      bits = Arrays.copyOf(bits, word + 1);
      announced[node] = bits;
    }
    long bit = 1L << (poolRegion & 63);
    if ((bits[word] & bit) != 0) {
      return;
    }
    awaitSlot(announcementStatus, node, node);
    int offset = node * RegionAnnouncement.MAX_LENGTH;
    announcement.wrap(announcements, offset, RegionAnnouncement.MAX_LENGTH)
        .encode(sessionIds[node], poolRegion + 1,
            pool.regionAddress(poolRegion), pool.regionLength(poolRegion),
            pool.regionKey(poolRegion));
    send(node, announcementsAddress + offset, announcement.length(),
        announcementStatus, node);
    bits[word] |= bit;
  }

  /**
   * Sends one message to node {@code node}. When UCX had to queue it (the
   * DataNode's receive queue was full), waits here until it went out,
   * progressing the worker: nothing else would (the DataNode freeing room
   * wakes nobody on this side), and a full queue is back-pressure, as a
   * full socket buffer is for stock's write.
   */
  private void send(int node, long address, int length, StatusSlots slots,
      int slot) throws IOException {
    int rc;
    try {
      rc = endpoints[node].send(address, length, slots.address(slot));
    } catch (IOException e) {
      failedNode = node;
      throw new IOException("hdfs-rdma: sending to " + nodes[node] + " for "
          + block + " failed", e);
    }
    if (rc != 0) {
      runtime.countQueuedSend();
      awaitSlot(slots, slot, node);
    }
  }

  /**
   * Waits until the send that last used {@code slot} is over, progressing
   * the worker from this thread. How it ended does not matter here: a send
   * that failed failed its connection, and every later send on it fails at
   * once.
   */
  private void awaitSlot(StatusSlots slots, int slot, int node)
      throws IOException {
    if (!slots.inProgress(slot)) {
      return;
    }
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(conf.connectTimeoutMs());
    long pause = 0;
    while (slots.inProgress(slot)) {
      if (worker.progress() != 0) {
        pause = 0;
      } else {
        // The DataNode's queue is full; nothing signals when it drains.
        // Poll at a falling rate instead of spinning the core it needs.
        pause = Math.min(MAX_SEND_PAUSE_NANOS,
            Math.max(MIN_SEND_PAUSE_NANOS, pause * 2));
        LockSupport.parkNanos(pause);
      }
      if (Thread.interrupted()) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("interrupted sending to "
            + nodes[node] + " for " + block);
      }
      if (System.nanoTime() > deadline) {
        failedNode = node;
        throw new IOException("hdfs-rdma: a message to " + nodes[node]
            + " for " + block + " was not sent in " + conf.connectTimeoutMs()
            + " ms");
      }
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
    failedNode = -1;
    active = false;
    request = null;
    endpoints = null;
  }

  @Override
  public String toString() {
    return runtime == null ? "UCX off" : active ? "UCX active for " + block
        : "UCX idle";
  }
}
