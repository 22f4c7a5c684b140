package org.apache.hadoop.hdfs;

import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.classification.InterfaceAudience;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.hdfsrdma.hadoop.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.PacketPhaseTimes;
import org.hdfsrdma.hadoop.UcxRuntime;
import org.hdfsrdma.hadoop.UcxWireFields;
import org.hdfsrdma.hadoop.UcxWireFields.CommitEntry;
import org.hdfsrdma.hadoop.UcxWireFields.WriteRequest;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RegisteredBuffer;
import org.hdfsrdma.ucx.UcxConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The UCX side of one DataStreamer: offers each pipeline the UCX data path
 * in the writeBlock op, learns from DataNode 1's reply whether every node
 * committed, and then sends each packet as a descriptor to every node
 * instead of writing its bytes down the socket. Every DataNode fetches the
 * packet from this client's registered memory itself.
 *
 * <p>Pipelines where UCX cannot serve (UCX off or missing, encryption or a
 * SASL QOP, a DataNode that did not commit, a listener this client could not
 * reach before) run exactly as stock, over TCP.
 */
@InterfaceAudience.Private
public final class UcxStreamerState {

  private static final Logger LOG =
      LoggerFactory.getLogger(UcxStreamerState.class);

  /** Descriptors in flight per streamer, reused round-robin. */
  private static final int DESCRIPTOR_SLOTS = 256;
  private static final int DESCRIPTOR_SLOT_BYTES = 512;
  /** Longest pipeline the descriptor slots have room for. */
  private static final int MAX_PIPELINE = 16;

  /** DataNodes whose UCX listener could not be reached, until when. */
  private static final ConcurrentHashMap<String, Long> UNREACHABLE =
      new ConcurrentHashMap<String, Long>();

  private static final UcxStreamerState OFF = new UcxStreamerState(null,
      null, 0, 0);

  private final UcxRuntime runtime;
  private final String offReason;
  private final long connectTimeoutMs;
  private final long retryMs;
  private final ByteBuffer[] slots;
  @SuppressWarnings("unchecked")
  private final CompletableFuture<?>[] slotSends =
      new CompletableFuture<?>[DESCRIPTOR_SLOTS];
  private int nextSlot;

  // The pipeline being set up, then running.
  private WriteRequest request;
  private DatanodeInfo[] nodes;
  private ExtendedBlock block;
  private long generationStamp;
  private long[] sessionIds;
  private UcxConnection[] connections;
  private boolean active;
  private long tcpOnlyBlockId = Long.MIN_VALUE;
  private volatile IOException sendFailure;
  private volatile int failedNode = -1;

  private UcxStreamerState(UcxRuntime runtime, String offReason,
      long connectTimeoutMs, long retryMs) {
    this.runtime = runtime;
    this.offReason = offReason;
    this.connectTimeoutMs = connectTimeoutMs;
    this.retryMs = retryMs;
    this.slots = runtime == null ? null : new ByteBuffer[DESCRIPTOR_SLOTS];
  }

  /** The state of a new DataStreamer of {@code client}. */
  static UcxStreamerState create(DFSClient client) {
    UcxRuntime runtime = UcxClients.runtimeFor(client);
    if (runtime == null) {
      return OFF;
    }
    Configuration conf = client.getConfiguration();
    return new UcxStreamerState(runtime, null, conf.getLong(
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_CONNECT_TIMEOUT_MS_KEY,
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_CONNECT_TIMEOUT_MS_DEFAULT),
        conf.getLong(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_UNREACHABLE_RETRY_MS_KEY,
            HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_UNREACHABLE_RETRY_MS_DEFAULT));
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
    if (runtime == null) {
      return out;
    }
    if (pipeline.length > MAX_PIPELINE) {
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
        LOG.debug("hdfs-rdma: {} on TCP: UCX of {} unreachable lately",
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
   * Reads DataNode 1's reply: when every node of the pipeline committed,
   * connects to each one's UCX listener and switches the pipeline to UCX.
   * When a committed listener cannot be reached, the pipeline runs over
   * TCP after all (its DataNodes see packets on the socket instead of
   * descriptors and read them as stock does), and pipelines through that
   * DataNode skip UCX for {@code dfs.client.rdma.unreachable-retry-ms}.
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
    // Connect to all at once: set-up time counts for small files.
    List<CompletableFuture<UcxConnection>> pending =
        new ArrayList<CompletableFuture<UcxConnection>>(nodes.length);
    for (int i = 0; i < nodes.length; i++) {
      CommitEntry c = commits.get(i);
      pending.add(runtime.endpoints().get(
          new InetSocketAddress(c.getUcxHost(), c.getUcxPort())));
    }
    UcxConnection[] connected = new UcxConnection[nodes.length];
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(connectTimeoutMs);
    for (int i = 0; i < nodes.length; i++) {
      try {
        connected[i] = pending.get(i).get(Math.max(0,
            deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (Exception e) {
        if (e instanceof InterruptedException) {
          Thread.currentThread().interrupt();
        }
        UNREACHABLE.put(nodes[i].getXferAddr(),
            System.currentTimeMillis() + retryMs);
        request = null;
        LOG.warn("hdfs-rdma: {} over TCP: UCX listener {}:{} of {} is"
            + " unreachable ({}); pipelines through it use TCP for the next"
            + " {} ms", block, commits.get(i).getUcxHost(),
            commits.get(i).getUcxPort(), nodes[i], e.toString(), retryMs);
        return;
      }
    }
    for (int i = 0; i < connected.length; i++) {
      runtime.noteTransports(connected[i]);
    }
    connections = connected;
    active = true;
    sendFailure = null;
    failedNode = -1;
    LOG.debug("hdfs-rdma: {} moves over UCX to {} DataNodes", block,
        nodes.length);
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
    IOException failed = sendFailure;
    if (failed != null) {
      throw failed;
    }
    RegisteredBuffer region;
    long address;
    int checksumLength;
    int dataLength;
    long offsetInBlock;
    boolean sync;
    if (packet instanceof UcxDFSPacket) {
      UcxDFSPacket ucxPacket = (UcxDFSPacket) packet;
      UcxDFSPacket.GetRegion r = ucxPacket.prepareForGet();
      if (ucxPacket.corruptedForGet) {
        // Sent again after recovery: the old pipeline's reads are over.
        ucxPacket.corruptedForGet = !ucxPacket.undoCorruptionForGet();
      }
      if (ucxPacket.injectCorruptionForGet()) {
        ucxPacket.corruptedForGet = true;
      }
      region = r.buffer();
      address = r.address();
      checksumLength = r.checksumLength();
      dataLength = r.dataLength();
      offsetInBlock = ucxPacket.offsetInBlock();
      sync = ucxPacket.syncBlock();
    } else {
      // A heap packet: its header says what it is.
      PacketHeader header = headerOf(packet);
      if (header.getDataLen() != 0) {
        throw new IOException("hdfs-rdma: packet " + packet.getSeqno()
            + " of " + block + " is not in registered memory (the client's"
            + " buffer pool was exhausted); the block continues over TCP");
      }
      // Nothing to fetch: heartbeats and empty end-of-block or sync packets.
      region = runtime.anchor();
      address = region.address();
      checksumLength = 0;
      dataLength = 0;
      offsetInBlock = header.getOffsetInBlock();
      sync = header.getSyncBlock();
    }
    short flags = 0;
    if (packet.isLastPacketInBlock()) {
      flags |= PacketDescriptor.FLAG_LAST_PACKET_IN_BLOCK;
    }
    if (sync) {
      flags |= PacketDescriptor.FLAG_SYNC_BLOCK;
    }
    int slot = nextSlot;
    nextSlot = (nextSlot + 1) % DESCRIPTOR_SLOTS;
    waitForSlot(slot);
    if (slots[slot] == null) {
      slots[slot] = ByteBuffer.allocateDirect(
          DESCRIPTOR_SLOT_BYTES * MAX_PIPELINE);
    }
    byte[] rkey = region.remoteKey(); // once per packet, not per node
    final PacketDescriptor[] descriptors = new PacketDescriptor[
        connections.length];
    for (int i = 0; i < connections.length; i++) {
      // One descriptor per node: each names that node's session.
      descriptors[i] = new PacketDescriptor()
          .wrap(slots[slot], i * DESCRIPTOR_SLOT_BYTES, DESCRIPTOR_SLOT_BYTES)
          .encode(sessionIds[i], block.getBlockId(), generationStamp,
              packet.getSeqno(), offsetInBlock, flags, region.regionId(),
              region.regionAddress(), region.regionLength(), address,
              checksumLength, dataLength, rkey);
    }
    // One hand-over to the progress thread for all nodes: a wake-up per
    // node would cost a system call and a context switch each.
    final CompletableFuture<Void> sent = new CompletableFuture<Void>();
    final UcxConnection[] to = connections;
    final DatanodeInfo[] toNodes = nodes;
    final ExtendedBlock ofBlock = block;
    try {
      runtime.worker().execute(() -> {
        CompletableFuture<?>[] sends = new CompletableFuture<?>[to.length];
        for (int i = 0; i < to.length; i++) {
          final int index = i;
          sends[i] = to[i].sendDescriptor(descriptors[i], connectTimeoutMs)
              .whenComplete((ok, error) -> {
                if (error != null && sendFailure == null) {
                  failedNode = index;
                  sendFailure = new IOException("hdfs-rdma: sending a"
                      + " packet descriptor of " + ofBlock + " to "
                      + toNodes[index] + " failed", error);
                }
              });
        }
        CompletableFuture.allOf(sends).whenComplete((ok, error) -> {
          if (error != null) {
            sent.completeExceptionally(error);
          } else {
            sent.complete(null);
          }
        });
      });
    } catch (IllegalStateException e) {
      throw new IOException("hdfs-rdma: cannot send the descriptors of "
          + block + ": " + e.getMessage(), e);
    }
    slotSends[slot] = sent;
    runtime.countSent(dataLength);
    if (times != null) {
      long sentAt = System.nanoTime();
      times.add(PacketPhaseTimes.Phase.CLIENT_SEND, sentAt - started);
      if (packet instanceof UcxDFSPacket) {
        ((UcxDFSPacket) packet).sentAt(sentAt, times);
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

  private void waitForSlot(int slot) throws IOException {
    CompletableFuture<?> previous = slotSends[slot];
    if (previous == null) {
      return;
    }
    try {
      previous.get(connectTimeoutMs, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new java.io.InterruptedIOException("interrupted sending to "
          + block);
    } catch (Exception e) {
      throw new IOException("hdfs-rdma: a descriptor of " + block
          + " was not sent in " + connectTimeoutMs + " ms", e);
    }
  }

  /** The pipeline is over (end of block, error, close). */
  void endPipeline() {
    failedNode = -1;
    active = false;
    request = null;
    connections = null;
  }

  @Override
  public String toString() {
    return runtime == null ? "UCX off" + (offReason == null ? ""
        : ": " + offReason) : active ? "UCX active for " + block : "UCX idle";
  }
}
