package org.hdfsrdma.hadoop.datanode;

import java.io.Closeable;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

import org.hdfsrdma.hadoop.metrics.UcxDataNodeMetrics;
import org.hdfsrdma.hadoop.metrics.WriterCounters;
import org.hdfsrdma.hadoop.protocol.CommitEntry;
import org.hdfsrdma.hadoop.runtime.Reach;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.hadoop.sender.AnnouncedRegions;
import org.hdfsrdma.hadoop.sender.SendMemory;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RegionAnnouncement;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.StatusSlots;
import org.hdfsrdma.ucx.UcxEndpoint;
import org.hdfsrdma.ucx.UcxWorker;

/**
 * A DataNode's part in a chain or hybrid pipeline: it offers each packet
 * of the block, once fetched into one of its landing buffers, to the
 * DataNode it feeds (the one {@code feeders} places behind it), which
 * fetches it from there by get, as it would from a client. Every link then
 * carries each byte once, as in Hadoop's pipeline, and on RDMA hardware no
 * sending CPU touches the bytes.
 *
 * <p>To the fed DataNode this DataNode is an exposer like a client: it
 * connects to the worker address the fed DataNode committed (hello first),
 * announces each landing region to the fed DataNode's session (whose id it
 * derives as the client does, from the block token's password and the
 * client's nonce: it holds both) and sends one {@link PacketDescriptor}
 * per packet, on the BlockReceiver thread, from preallocated memory.
 *
 * <p><b>Buffer lifetime follows Hadoop's ack.</b> A landing buffer offered
 * downstream stays leased until the ack for its packet comes back from
 * this DataNode's mirror ({@link #acked}, on the PacketResponder thread):
 * the mirror acks a packet only after every DataNode behind it received it,
 * the fed one included. A block given up before that keeps its buffers out
 * of the pool for the get timeout: the fed DataNode may still be fetching
 * from them, and a get cannot be called back.
 */
public final class PacketForwarder implements Closeable {

  /** Descriptors in flight to the fed DataNode, reused round-robin. */
  private static final int RING = 64;
  /**
   * Landing buffers awaiting the downstream ack, at most: above Hadoop's 80
   * packets in flight per pipeline.
   */
  static final int HELD = 256;

  private final UcxRuntime runtime;
  private final WriterCounters.Slot counters;
  private final RegisteredBufferPool landing;
  private final UcxWorker worker;
  private final String target;
  private final String block;
  private final long sessionId;
  private final long blockId;
  private final long generationStamp;
  private final long timeoutMs;
  private final CompletableFuture<UcxEndpoint> connecting;
  private UcxEndpoint endpoint;
  private final SendMemory memory;
  private final AnnouncedRegions announced = new AnnouncedRegions(1);
  private final RegionAnnouncement announcement = new RegionAnnouncement();
  private final PacketDescriptor descriptor = new PacketDescriptor();
  private int nextSlot;
  // Buffers offered downstream and not yet acked, in offering order: the
  // receiver appends (tail), the PacketResponder releases (head). A token
  // is taken out of its slot with getAndSet, so that close() and a late
  // ack never both release it.
  private final long[] heldSeqnos = new long[HELD];
  private final AtomicLongArray heldTokens = new AtomicLongArray(HELD);
  private volatile long heldHead;
  private volatile long heldTail;
  private volatile boolean closed;
  private final java.util.function.BooleanSupplier isClosed = () -> closed;

  /**
   * Starts connecting to the fed DataNode; called when the pipeline
   * commits, so that the connection is up by the first packet.
   *
   * @param dataNode this DataNode
   * @param target the fed DataNode's transfer address
   * @param workerAddress the worker address the fed DataNode committed
   * @param sessionId the fed DataNode's session of the block
   * @param block the block and where, for messages
   */
  public PacketForwarder(UcxDataNode dataNode, String target,
      byte[] workerAddress, long sessionId, long blockId,
      long generationStamp, String block) {
    this.runtime = dataNode.runtime();
    this.counters = dataNode.metrics().openReceiver();
    this.landing = runtime.pools().landing();
    this.worker = runtime.worker();
    this.memory = new SendMemory(worker, RING, 1);
    this.target = target;
    this.block = block;
    this.sessionId = sessionId;
    this.blockId = blockId;
    this.generationStamp = generationStamp;
    this.timeoutMs = dataNode.conf().getTimeoutMs();
    for (int i = 0; i < HELD; i++) {
      heldTokens.set(i, RegisteredBufferPool.NO_LEASE);
    }
    this.connecting = runtime.connect(workerAddress, target);
  }

  /**
   * Why this DataNode cannot feed the DataNode that committed {@code fed}
   * by gets that are one-sided, or null when it can: same host and user
   * (shared memory), or RDMA lanes. Emulated gets (UCX's tcp) only where
   * {@code dfs.datanode.rdma.allow-emulated-gets} allows them, as the fed
   * DataNode would refuse them otherwise. A DataNode that cannot feed does
   * not commit, and the pipeline runs over TCP.
   */
  public static String refusal(UcxRuntime runtime, CommitEntry fed) {
    Reach reach = Reach.before(runtime.transports(), fed.getHostId(),
        fed.getUid());
    switch (reach) {
    case SHARED_MEMORY:
      String other = Reach.sharedMemoryRefusal(runtime.sharedMemoryProfile(),
          fed.getSharedMemoryProfile());
      return other == null ? null : "the DataNode it would feed ("
          + fed.getXferAddr() + ") is on this host, but " + other;
    case ONE_SIDED:
      return null;
    case EMULATED:
      return runtime.conf().dataNodeAllowEmulatedGets() ? null
          : "the DataNode it would feed (" + fed.getXferAddr() + ") could"
              + " fetch from it only by gets this DataNode's CPU serves (UCX"
              + " over tcp)";
    default:
      return "UCX cannot reach the DataNode it would feed ("
          + fed.getXferAddr() + ")";
    }
  }

  /** The fed DataNode's transfer address. */
  public String target() {
    return target;
  }

  /**
   * Offers one packet to the fed DataNode. Takes {@code token} (the landing
   * buffer holding checksums then data, or {@link RegisteredBufferPool#
   * NO_LEASE} for a packet without bytes), whatever happens.
   *
   * @throws IOException naming the fed DataNode and the block when it
   *     cannot be reached or does not take the descriptor in time (Hadoop
   *     then reports its mirror as failed, as for a failed socket write)
   */
  public void forward(long seqno, long offsetInBlock, boolean last,
      boolean sync, int checksumLength, int dataLength, long token)
      throws IOException {
    int region = 0;
    long address = 0;
    if (token != RegisteredBufferPool.NO_LEASE) {
      hold(seqno, token);
      region = landing.regionId(token) + 1;
      address = landing.address(token);
    }
    UcxEndpoint e = endpoint();
    if (region != 0) {
      announce(e, region - 1);
    }
    int flags = PacketDescriptor.FLAG_FORWARDED;
    if (last) {
      flags |= PacketDescriptor.FLAG_LAST_PACKET_IN_BLOCK;
    }
    if (sync) {
      flags |= PacketDescriptor.FLAG_SYNC_BLOCK;
    }
    int entry = memory.entry(nextSlot, 0);
    nextSlot = (nextSlot + 1) % RING;
    awaitSlot(memory.ringStatus(), entry);
    descriptor.wrap(memory.ring(), memory.ringOffset(entry)).encode(
        sessionId, blockId, generationStamp, seqno, offsetInBlock, flags,
        region, address, checksumLength, dataLength);
    send(e, memory.ringAddress(entry), PacketDescriptor.LENGTH,
        memory.ringStatus(), entry);
    counters.add(UcxDataNodeMetrics.FORWARDED_BYTES, dataLength);
  }

  /**
   * This DataNode's mirror acked packet {@code seqno}: every DataNode
   * behind it, the fed one included, has it, so the landing buffers of it
   * and the packets before it go back to the pool. PacketResponder thread.
   */
  public void acked(long seqno) {
    if (seqno < 0) {
      return;
    }
    long h = heldHead;
    long t = heldTail;
    while (h < t && heldSeqnos[(int) (h % HELD)] <= seqno) {
      release(h);
      h++;
    }
    heldHead = h;
  }

  /** Buffers offered downstream and not acked yet. */
  int held() {
    return (int) (heldTail - heldHead);
  }

  private void release(long index) {
    long token = heldTokens.getAndSet((int) (index % HELD),
        RegisteredBufferPool.NO_LEASE);
    if (token != RegisteredBufferPool.NO_LEASE) {
      landing.release(token);
    }
  }

  /** Keeps {@code token} until its ack; waits while HELD are waiting. */
  private void hold(long seqno, long token) throws IOException {
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    while (heldTail - heldHead >= HELD) {
      if (System.nanoTime() - deadline > 0) {
        landing.release(token);
        throw new IOException("hdfs-rdma: feeding " + target + " with "
            + block + ": no ack from the mirror for " + HELD + " packets in "
            + timeoutMs + " ms");
      }
      LockSupport.parkNanos(100_000);
      if (Thread.interrupted()) {
        Thread.currentThread().interrupt();
        landing.release(token);
        throw new InterruptedIOException("interrupted feeding " + target
            + " with " + block);
      }
    }
    long t = heldTail;
    heldSeqnos[(int) (t % HELD)] = seqno;
    heldTokens.set((int) (t % HELD), token);
    heldTail = t + 1;
  }

  private UcxEndpoint endpoint() throws IOException {
    UcxEndpoint e = endpoint;
    if (e != null) {
      return e;
    }
    try {
      e = connecting.get(timeoutMs, TimeUnit.MILLISECONDS);
    } catch (InterruptedException ie) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted connecting to " + target
          + " to feed it " + block);
    } catch (ExecutionException | TimeoutException failed) {
      Throwable cause = failed instanceof ExecutionException
          ? failed.getCause() : failed;
      throw new IOException("hdfs-rdma: cannot reach " + target + " over UCX"
          + " to feed it " + block + ": " + cause, cause);
    }
    runtime.noteConnected(e);
    endpoint = e;
    return e;
  }

  /** Announces landing region {@code poolRegion} to the fed session, once. */
  private void announce(UcxEndpoint e, int poolRegion) throws IOException {
    if (announced.contains(0, poolRegion)) {
      return;
    }
    StatusSlots slots = memory.announcementStatus();
    awaitSlot(slots, 0);
    announcement.wrap(memory.announcements(), memory.announcementOffset(0),
        RegionAnnouncement.MAX_LENGTH).encode(sessionId, poolRegion + 1,
            landing.regionAddress(poolRegion),
            landing.regionLength(poolRegion), landing.regionKey(poolRegion));
    send(e, memory.announcementAddress(0), announcement.length(), slots, 0);
    announced.add(0, poolRegion);
  }

  private void send(UcxEndpoint e, long address, int length,
      StatusSlots slots, int slot) throws IOException {
    try {
      e.send(address, length, slots.address(slot));
    } catch (IOException failed) {
      throw new IOException("hdfs-rdma: feeding " + target + " with " + block
          + ": " + failed.getMessage(), failed);
    }
  }

  /** Waits for the send that last used {@code slot}; see SendMemory. */
  private void awaitSlot(StatusSlots slots, int slot) throws IOException {
    if (!slots.inProgress(slot)) {
      return;
    }
    SendMemory.Wait w = SendMemory.await(worker, slots, slot,
        System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs),
        isClosed);
    if (w == SendMemory.Wait.INTERRUPTED) {
      throw new InterruptedIOException("interrupted feeding " + target
          + " with " + block);
    }
    if (w != SendMemory.Wait.DONE) {
      throw new IOException("hdfs-rdma: feeding " + target + " with " + block
          + ": a message was not taken in " + timeoutMs + " ms");
    }
  }

  /**
   * The block is over here: buffers still waiting for their ack go back to
   * the pool after the get timeout (see the class comment). Idempotent;
   * any thread.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    counters.close();
    long[] pending = new long[HELD];
    int n = 0;
    for (int i = 0; i < HELD; i++) {
      long token = heldTokens.getAndSet(i, RegisteredBufferPool.NO_LEASE);
      if (token != RegisteredBufferPool.NO_LEASE) {
        pending[n++] = token;
      }
    }
    if (n > 0) {
      final long[] tokens = java.util.Arrays.copyOf(pending, n);
      runtime.maintenance().later(timeoutMs, () -> {
        for (long token : tokens) {
          landing.release(token);
        }
      });
    }
  }

  @Override
  public String toString() {
    return "PacketForwarder(" + block + " to " + target + ")";
  }
}
