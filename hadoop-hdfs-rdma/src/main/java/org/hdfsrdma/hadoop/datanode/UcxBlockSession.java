package org.hdfsrdma.hadoop.datanode;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RemoteRegion;
import org.hdfsrdma.ucx.UcxWorker;

/**
 * One block being written to this DataNode over UCX: the regions its client
 * announced and the packet descriptors that arrived for it, in order,
 * waiting for the block's receiver.
 *
 * <p>Filled inside UCX's callback by {@link SessionTable} on whichever
 * thread progresses the worker (one at a time), or by the block's receiver
 * itself when the descriptors come on the block's socket (the first
 * descriptor decides which, for the block's life), drained by the block's
 * receiver thread: a ring of {@link PacketDescriptor#LENGTH}-byte slots
 * allocated with the session, with a volatile head and tail. Nothing is
 * allocated per packet.
 *
 * <p>Every descriptor is checked against what this DataNode knows, not what
 * the message claims: the session is bound to the first UCX endpoint that
 * spoke for it and accepts no other; block id and generation stamp are the
 * block's; data seqnos increase; the packet is no longer than the size the
 * DataNode agreed to and lies inside a region this session announced (whose
 * bounds {@link RemoteRegion} checked with the kernel or leaves to the NIC).
 * A bound client that breaks a rule fails its own block; nothing it sends
 * reaches another block.
 */
public final class UcxBlockSession implements Closeable, UcxWorker.Readiness {

  /** DFSPacket.HEART_BEAT_SEQNO. */
  static final long HEART_BEAT_SEQNO = -1L;

  /** Where the descriptors come from: not known yet, UCX, the socket. */
  private static final int FROM_EITHER = 0;
  private static final int FROM_UCX = 1;
  private static final int FROM_SOCKET = 2;
  private static final AtomicIntegerFieldUpdater<UcxBlockSession> SOURCE =
      AtomicIntegerFieldUpdater.newUpdater(UcxBlockSession.class, "source");

  private final SessionTable table;
  private final long sessionId;
  private final long blockId;
  private final long generationStamp;
  private final int maxPacketBytes;
  private final String description;
  private final ByteBuffer ring;
  private final int mask;
  private final RemoteRegion[] regions;
  private final PacketDescriptor view = new PacketDescriptor();
  /** Next slot the receiver reads; written by the receiver only. */
  private volatile long head;
  /** Next slot a descriptor goes to; written by the handler only. */
  private volatile long tail;
  /** The endpoint the session is bound to; 0 before its first message. */
  private volatile long boundEndpoint;
  private volatile UcxWorker.Driver driver;
  private volatile IOException failure;
  private volatile boolean closed;
  /** FROM_EITHER until the first descriptor decides it, for good. */
  private volatile int source;
  // Queueing state: the handler's (whose calls UCX serializes) or, when
  // the descriptors come on the socket, the receiver's.
  private long lastSeqno = -1;
  private boolean sawLast;
  private long descriptors;

  /**
   * @param maxQueued ring size, rounded up to a power of two
   * @param maxRegions the highest region id the client may announce
   */
  UcxBlockSession(SessionTable table, long sessionId, long blockId,
      long generationStamp, int maxPacketBytes, int maxQueued, int maxRegions,
      String description) {
    this.table = table;
    this.sessionId = sessionId;
    this.blockId = blockId;
    this.generationStamp = generationStamp;
    this.maxPacketBytes = maxPacketBytes;
    this.description = description;
    int size = Integer.highestOneBit(Math.max(2, maxQueued) * 2 - 1);
    this.ring = ByteBuffer.allocate(size * PacketDescriptor.LENGTH)
        .order(ByteOrder.BIG_ENDIAN);
    this.mask = size - 1;
    this.regions = new RemoteRegion[maxRegions + 1];
  }

  public long sessionId() {
    return sessionId;
  }

  /** The block and where, for messages. */
  public String description() {
    return description;
  }

  /** The largest packet this session accepts. */
  public int maxPacketBytes() {
    return maxPacketBytes;
  }

  /** The thread that reads this session; woken when a descriptor comes. */
  void setDriver(UcxWorker.Driver d) {
    this.driver = d;
  }

  /** Descriptors waiting for the receiver. */
  public int queued() {
    return (int) (tail - head);
  }

  /** Descriptors accepted so far. */
  long accepted() {
    return descriptors;
  }

  @Override
  public boolean isReady() {
    return tail != head || failure != null || closed;
  }

  /**
   * Binds the session to the endpoint its first message came on, and
   * checks later ones come on the same. Handler only.
   *
   * @return null, or why the message was refused; a message from another
   *     endpoint fails the session (only a peer that knows the session id
   *     can send one: the block is given up, and its recovery gets a new
   *     id, rather than left bound to whichever endpoint spoke first)
   */
  String bind(long endpoint) {
    if (endpoint == 0) {
      return "a message for " + description + " came without an endpoint";
    }
    if (boundEndpoint == 0) {
      boundEndpoint = endpoint;
      return null;
    }
    return boundEndpoint == endpoint ? null
        : fail("a message came from another UCX endpoint than the session's");
  }

  /** The endpoint the session is bound to, or 0. */
  public long boundEndpoint() {
    return boundEndpoint;
  }

  /**
   * Accepts a region the client announced for this session. Handler only.
   *
   * @return null, or why the region was refused (the session has failed)
   */
  synchronized String addRegion(int id, RemoteRegion region) {
    if (closed || failure != null) {
      region.release();
      return description + " is closed";
    }
    if (id < 1 || id >= regions.length) {
      region.release();
      return fail("region id " + id + " outside 1.." + (regions.length - 1));
    }
    if (regions[id] != null) {
      region.release();
      return fail("region " + id + " announced twice");
    }
    regions[id] = region;
    UcxWorker.Driver dr = driver;
    if (dr != null) {
      // A receiver with a descriptor from the socket may wait for it.
      dr.wake();
    }
    return null;
  }

  /** The region announced under {@code id}, or null. Receiver. */
  public RemoteRegion region(int id) {
    return id > 0 && id < regions.length ? regions[id] : null;
  }

  /**
   * Checks a descriptor against the session and queues it. Handler only.
   *
   * @return null when queued, otherwise why not (the session may have
   *     failed: a bound client breaking a rule loses its block)
   */
  String offer(PacketDescriptor d) {
    if (source != FROM_UCX
        && !SOURCE.compareAndSet(this, FROM_EITHER, FROM_UCX)) {
      return fail("a descriptor over UCX for a block whose descriptors come"
          + " on its socket");
    }
    return queue(d, true);
  }

  /**
   * Checks a descriptor the block's socket carried against the session
   * and queues it. Receiver only; from then on the session takes no
   * descriptor over UCX.
   *
   * @return null when queued, otherwise why not (the session has failed)
   */
  String offerFromSocket(PacketDescriptor d) {
    if (source != FROM_SOCKET
        && !SOURCE.compareAndSet(this, FROM_EITHER, FROM_SOCKET)) {
      return fail("a descriptor on the socket for a block whose descriptors"
          + " come over UCX");
    }
    return queue(d, false);
  }

  /** Whether the block's descriptors come on its socket. */
  boolean descriptorsOnSocket() {
    return source == FROM_SOCKET;
  }

  /**
   * Checks {@code d} and queues it for the receiver, waking it when
   * {@code wake}; why not, or null.
   */
  private String queue(PacketDescriptor d, boolean wake) {
    if (closed || failure != null) {
      return description + " is closed";
    }
    if (d.blockId() != blockId || d.generationStamp() != generationStamp) {
      return fail("descriptor for block " + d.blockId() + "_"
          + d.generationStamp());
    }
    long length = d.packetLength();
    if (length > maxPacketBytes) {
      return fail("packet of " + length + " bytes, more than the agreed "
          + maxPacketBytes);
    }
    if (length > 0) {
      RemoteRegion r = region(d.regionId());
      if (r == null) {
        return fail("packet in region " + d.regionId()
            + ", which was not announced");
      }
      if (!r.contains(d.address(), length)) {
        return fail("packet [0x" + Long.toHexString(d.address()) + ", +"
            + length + ") lies outside " + r);
      }
    }
    if (d.seqno() == HEART_BEAT_SEQNO) {
      if (length != 0) {
        return fail("heartbeat with " + length + " bytes");
      }
    } else {
      if (sawLast) {
        return fail("packet " + d.seqno() + " after the last packet");
      }
      if (d.seqno() <= lastSeqno) {
        return fail("packet " + d.seqno() + " after packet " + lastSeqno);
      }
      lastSeqno = d.seqno();
      sawLast = d.isLastPacketInBlock();
    }
    long t = tail;
    if (t - head > mask) {
      return fail("more than " + (mask + 1) + " unread packets");
    }
    d.copyTo(ring, (int) (t & mask) * PacketDescriptor.LENGTH);
    tail = t + 1;
    descriptors++;
    UcxWorker.Driver dr = driver;
    if (wake && dr != null) {
      dr.wake();
    }
    return null;
  }

  /**
   * Copies the next descriptor into {@code into} at {@code offset} and
   * consumes it. Receiver.
   *
   * @return false when none is waiting
   * @throws IOException when the session failed
   */
  boolean take(ByteBuffer into, int offset) throws IOException {
    IOException f = failure;
    if (f != null) {
      throw f;
    }
    long h = head;
    if (h == tail) {
      return false;
    }
    view.wrap(ring, (int) (h & mask) * PacketDescriptor.LENGTH)
        .copyTo(into, offset);
    head = h + 1;
    return true;
  }

  /**
   * Fails the session: the receiver's next or current wait throws.
   *
   * @return the reason, for the caller's refusal
   */
  String fail(String reason) {
    fail(new UcxPathException("hdfs-rdma: " + description + ": "
        + reason));
    return reason;
  }

  /** Fails the session; the receiver's next or current wait throws. */
  void fail(IOException reason) {
    if (failure == null) {
      failure = reason;
      UcxWorker.Driver dr = driver;
      if (dr != null) {
        dr.wake();
      }
    }
  }

  /** Why the session failed, or null. */
  public IOException failure() {
    return failure;
  }

  /** Unregisters the session and releases its regions. Idempotent. */
  @Override
  public void close() {
    close(true);
  }

  /**
   * Unregisters the session and keeps its regions' remote keys unpacked for
   * good: for a receiver giving up with a get UCX still holds, which may yet
   * be sent with one of those keys (destroying a key under a queued get is
   * a use after free). Costs the keys' memory; only gets that outlived
   * their timeout come here. Idempotent, like {@link #close()}.
   */
  void closeKeepingRegions() {
    close(false);
  }

  private void close(boolean releaseRegions) {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      for (int i = 0; i < regions.length; i++) {
        if (regions[i] != null) {
          if (releaseRegions) {
            regions[i].release();
          }
          regions[i] = null;
        }
      }
    }
    table.remove(this);
  }

  @Override
  public String toString() {
    return "UcxBlockSession(" + description + ")";
  }
}
