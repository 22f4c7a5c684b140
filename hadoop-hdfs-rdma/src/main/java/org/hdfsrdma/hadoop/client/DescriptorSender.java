package org.hdfsrdma.hadoop.client;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.hdfsrdma.hadoop.metrics.UcxJvmMetrics;
import org.hdfsrdma.hadoop.metrics.WriterCounters;
import org.hdfsrdma.hadoop.sender.AnnouncedRegions;
import org.hdfsrdma.hadoop.sender.SendMemory;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RegionAnnouncement;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.StatusSlots;
import org.hdfsrdma.ucx.UcxEndpoint;
import org.hdfsrdma.ucx.UcxWorker;

/**
 * A stream's per-packet path: one {@link PacketDescriptor} per DataNode the
 * client feeds, encoded into a preallocated ring of registered memory and
 * sent through the thread-safe worker on the DataStreamer thread itself,
 * with each pool region announced to a DataNode's session before the first
 * descriptor that points into it. No object, no lock, no hand-over per
 * packet.
 *
 * <p>A send UCX could not finish at once (the DataNode's shared-memory
 * queue was full) keeps its ring slot until it completes; the slot's next
 * user waits for it, progressing the worker, as a full socket buffer holds
 * stock's write. A node that does not take a message within the connect
 * timeout, or whose endpoint UCX failed, is reported to the
 * {@link SendFailure} and the pipeline stops sending; so does a pipeline
 * that failed meanwhile (a bad ack).
 */
final class DescriptorSender {

  /** Where a node that took no message is reported. */
  interface SendFailure {
    /** Node {@code node} took no message, for {@code why}. */
    void sendFailed(int node, String why);
  }

  /** Descriptors in flight per stream and node, reused round-robin. */
  private static final int RING = 64;
  /** Longest pipeline the descriptor ring has room for. */
  static final int MAX_PIPELINE = 16;

  private final UcxWorker worker;
  private final RegisteredBufferPool pool;
  private final BooleanSupplier pipelineFailed;
  private final SendFailure sendFailure;
  private final long timeoutMs;
  private final PacketDescriptor descriptor = new PacketDescriptor();
  private final RegionAnnouncement announcement = new RegionAnnouncement();
  private SendMemory memory;
  private int nextSlot;

  // The pipeline it sends for: set by start(), cleared by stop().
  private String block;
  private String[] nodes;
  private long blockId;
  private long generationStamp;
  private long[] sessionIds;
  private UcxEndpoint[] endpoints;
  private AnnouncedRegions announced;
  private WriterCounters.Slot counters;
  /** The block's socket the descriptors go on, or null (over UCX). */
  private OutputStream socket;
  /** One descriptor as it goes on the socket: every DataNode's. */
  private final ByteBuffer frame =
      ByteBuffer.allocate(PacketDescriptor.LENGTH);

  /**
   * @param pipelineFailed whether the pipeline failed already (stop
   *     waiting for a send)
   * @param timeoutMs how long a node may take to accept a message
   */
  DescriptorSender(UcxWorker worker, RegisteredBufferPool pool,
      BooleanSupplier pipelineFailed, SendFailure sendFailure,
      long timeoutMs) {
    this.worker = worker;
    this.pool = pool;
    this.pipelineFailed = pipelineFailed;
    this.sendFailure = sendFailure;
    this.timeoutMs = timeoutMs;
    this.memory = new SendMemory(worker, RING, MAX_PIPELINE);
  }

  /**
   * Leaves send memory that sends which never ended (to a dead DataNode)
   * still hold to UCX, and takes fresh memory: reusing it would make the
   * next pipeline wait for, and blame, a node that did nothing wrong. The
   * worker keeps the old memory until those sends end (see SendMemory).
   * Called once per pipeline set-up.
   */
  void retireBusyMemory() {
    if (memory.inUse()) {
      memory = new SendMemory(worker, RING, MAX_PIPELINE);
      nextSlot = 0;
    }
  }

  /**
   * Starts sending for a pipeline whose first {@code endpoints.length}
   * nodes this client feeds.
   *
   * @param nodes the pipeline's DataNodes, for messages
   * @param socket the block's socket to DataNode 1 when every DataNode
   *     takes the descriptors there, else null
   */
  void start(String block, String[] nodes, long blockId,
      long generationStamp, long[] sessionIds, UcxEndpoint[] endpoints,
      OutputStream socket, WriterCounters.Slot counters) {
    this.socket = socket;
    this.block = block;
    this.nodes = nodes;
    this.blockId = blockId;
    this.generationStamp = generationStamp;
    this.sessionIds = sessionIds;
    this.endpoints = endpoints;
    this.announced = new AnnouncedRegions(endpoints.length);
    this.counters = counters;
  }

  /** The pipeline is over: its counters close with it. */
  void stop() {
    if (counters != null) {
      counters.close();
      counters = null;
    }
    endpoints = null;
    socket = null;
  }

  /**
   * Sends {@code p}'s descriptor to every node the client feeds. Returns
   * false when a node failed (reported) or the pipeline had failed already:
   * the packet then still counts as sent, since nodes before that one may
   * have fetched it.
   */
  boolean send(OutgoingPacket p) throws IOException {
    return send(p, true);
  }

  /**
   * As {@link #send(OutgoingPacket)}; with {@code mayWait} false (a packet
   * without bytes, sent where the caller must not block, such as Hadoop
   * 3's heartbeats under the DataStreamer's queue lock) a send UCX has to
   * queue keeps its ring slot without being waited for here: the slot's
   * next user waits for it. Call {@link #canSendWithoutWaiting} first.
   */
  boolean send(OutgoingPacket p, boolean mayWait) throws IOException {
    int region = 0;
    long address = 0;
    if (p.lease != RegisteredBufferPool.NO_LEASE
        && p.checksumLength + p.dataLength > 0) {
      region = pool.regionId(p.lease) + 1;
      address = p.address;
    }
    int flags = 0;
    if (p.lastPacketInBlock) {
      flags |= PacketDescriptor.FLAG_LAST_PACKET_IN_BLOCK;
    }
    if (p.syncBlock) {
      flags |= PacketDescriptor.FLAG_SYNC_BLOCK;
    }
    if (socket != null) {
      return sendOnSocket(p, flags, region, address);
    }
    int slot = nextSlot;
    nextSlot = (nextSlot + 1) % RING;
    SendMemory m = memory;
    for (int i = 0; i < endpoints.length; i++) {
      if (region != 0 && !announce(i, region - 1)) {
        return false;
      }
      int entry = m.entry(slot, i);
      if (!awaitSlot(m.ringStatus(), entry, i)) {
        return false;
      }
      descriptor.wrap(m.ring(), m.ringOffset(entry)).encode(sessionIds[i],
          blockId, generationStamp, p.seqno, p.offsetInBlock, flags, region,
          address, p.checksumLength, p.dataLength);
      if (!send(i, m.ringAddress(entry), PacketDescriptor.LENGTH,
          m.ringStatus(), entry, mayWait)) {
        return false;
      }
    }
    counters.add(UcxJvmMetrics.SENT_BYTES, p.dataLength);
    return true;
  }

  /**
   * Writes {@code p}'s one descriptor on the block's socket, where stock
   * writes the packet, after announcing its region to every DataNode over
   * UCX (once per region and pipeline); each DataNode passes it on to its
   * mirror. The session field is 0: the socket, bound to the block by
   * Hadoop's op, says whose it is. A failed write is the socket's
   * IOException, which Hadoop handles as stock's.
   */
  private boolean sendOnSocket(OutgoingPacket p, int flags, int region,
      long address) throws IOException {
    if (region != 0) {
      for (int i = 0; i < endpoints.length; i++) {
        if (!announce(i, region - 1)) {
          return false;
        }
      }
    }
    descriptor.wrap(frame, 0).encode(0, blockId, generationStamp, p.seqno,
        p.offsetInBlock, flags, region, address, p.checksumLength,
        p.dataLength);
    socket.write(frame.array(), 0, PacketDescriptor.LENGTH);
    socket.flush();
    counters.add(UcxJvmMetrics.SENT_BYTES, p.dataLength);
    return true;
  }

  /**
   * Whether {@code e}, thrown by {@link #send}, is the block's socket
   * failing (a DataNode or the network: Hadoop's to handle) rather than
   * this JVM's UCX or an interrupt.
   */
  boolean failedOnSocket(IOException e) {
    return socket != null && !(e instanceof InterruptedIOException);
  }

  /**
   * Whether a packet without bytes can be described to every node now,
   * without waiting for a ring slot: the slots it would use are free.
   */
  boolean canSendWithoutWaiting() {
    SendMemory m = memory;
    UcxEndpoint[] to = endpoints;
    if (to == null) {
      return false;
    }
    if (socket != null) {
      return true;
    }
    for (int i = 0; i < to.length; i++) {
      if (m.ringStatus().inProgress(m.entry(nextSlot, i))) {
        return false;
      }
    }
    return true;
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
        m.announcementStatus(), node, true)) {
      return false;
    }
    announced.add(node, poolRegion);
    return true;
  }

  /**
   * Sends one message to node {@code node}. When UCX had to queue it (the
   * DataNode's receive queue was full), waits here until it went out,
   * progressing the worker: nothing else would (the DataNode freeing room
   * wakes nobody on this side), unless {@code mayWait} is false. Returns
   * false when the pipeline failed.
   */
  private boolean send(int node, long address, int length,
      StatusSlots slots, int slot, boolean mayWait) throws IOException {
    int rc;
    try {
      rc = endpoints[node].send(address, length, slots.address(slot));
    } catch (IOException e) {
      sendFailure.sendFailed(node, "UCX could not send to " + nodes[node]
          + " (" + e.getMessage() + ")");
      return false;
    }
    if (rc != 0) {
      counters.add(UcxJvmMetrics.QUEUED_SENDS, 1);
      return !mayWait || awaitSlot(slots, slot, node);
    }
    return true;
  }

  /**
   * Waits until the send that last used {@code slot} is over, progressing
   * the worker from this thread. How it ended does not matter here: a send
   * that failed failed its connection, and every later send on it fails at
   * once. Returns false, without waiting longer, once the pipeline has
   * failed: a bad ack reported meanwhile, or no end within the timeout.
   */
  private boolean awaitSlot(StatusSlots slots, int slot, int node)
      throws IOException {
    if (!slots.inProgress(slot)) {
      return true;
    }
    SendMemory.Wait w = SendMemory.await(worker, slots, slot,
        System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs),
        pipelineFailed);
    switch (w) {
    case DONE:
      return true;
    case INTERRUPTED:
      throw new InterruptedIOException("interrupted sending to "
          + nodes[node] + " for " + block);
    case GAVE_UP:
      return false;
    default:
      sendFailure.sendFailed(node, "a UCX message to " + nodes[node]
          + " was not sent in " + timeoutMs + " ms");
      return false;
    }
  }
}
