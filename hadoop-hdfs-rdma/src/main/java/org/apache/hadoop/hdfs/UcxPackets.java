/**
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *     http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS,
 * WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and
 * limitations under the License.
 */
package org.apache.hadoop.hdfs;

import java.io.InterruptedIOException;
import java.lang.ref.PhantomReference;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.util.Collections;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.hadoop.classification.InterfaceAudience;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.hdfsrdma.hadoop.util.LogOnce;
import org.hdfsrdma.ucx.PoolExhaustedException;
import org.hdfsrdma.ucx.RegisteredBufferPool;

/**
 * Creates the packets of {@code DFSOutputStream.createPacket} in registered
 * memory when it can. A null answer means "use a stock heap packet": the
 * write goes on with that packet instead of failing, so a full pool slows
 * a writer down (by the acquire timeout) but never stops it.
 *
 * <p>Each reason for falling back is logged at WARN (an operator should
 * size the pool or the packet size) the first time and then at most once
 * per {@link LogOnce#REPEAT_INTERVAL_MS} with how often it recurred, so a
 * busy client does not flood its log and a reason that persists or comes
 * back is never silent for good.
 */
@InterfaceAudience.Private
public final class UcxPackets {

  /** The reasons for a heap packet, as {@link LogOnce} keys them. */
  private static final String OVERSIZE = "heap packet: oversize";
  private static final String EXHAUSTED = "heap packet: pool exhausted";
  private static final String UNUSABLE = "heap packet: pool unusable";
  private static final String ABANDONED_LEASES = "packet leases reclaimed";

  /**
   * A packet's lease, kept apart from the packet so that it can be returned
   * once the packet is garbage without having been released: Hadoop drops
   * the packet under construction when it aborts a stream (lease expiry,
   * {@code DFSClient.closeAllFilesBeingWritten(true)}) without calling
   * {@code releaseBuffer}, and the registered memory would stay leased.
   */
  static final class LeaseReference extends PhantomReference<UcxDFSPacket> {
    private final RegisteredBufferPool pool;
    private final long lease;

    private LeaseReference(UcxDFSPacket packet, RegisteredBufferPool pool,
        long lease) {
      super(packet, ABANDONED);
      this.pool = pool;
      this.lease = lease;
    }

    /** The packet released its lease itself: nothing to reclaim. */
    void forget() {
      TRACKED.remove(this);
    }
  }

  private static final ReferenceQueue<UcxDFSPacket> ABANDONED =
      new ReferenceQueue<UcxDFSPacket>();
  private static final Set<LeaseReference> TRACKED =
      Collections.newSetFromMap(
          new ConcurrentHashMap<LeaseReference, Boolean>());
  private static final AtomicLong RECLAIMED = new AtomicLong();

  private UcxPackets() {
  }

  /**
   * A packet in a buffer leased from {@code pool}, or null for a stock heap
   * packet when the packet does not fit the pool's buffers, no buffer is
   * released within {@code acquireTimeoutMs}, or the pool cannot be used
   * (closed, or UCX refused to register more memory). Arguments as
   * {@code DFSOutputStream.createPacket}'s and DFSPacket's.
   *
   * @throws InterruptedIOException when interrupted while waiting for a
   *     buffer, as stock's ByteArrayManager wait is
   */
  public static DFSPacket newPacket(RegisteredBufferPool pool,
      long acquireTimeoutMs, int packetSize, int chunksPerPkt,
      long offsetInBlock, long seqno, int checksumSize,
      boolean lastPacketInBlock) throws InterruptedIOException {
    final int needed = PacketHeader.PKT_MAX_HEADER_LEN + packetSize;
    if (needed > pool.bufferSize()) {
      fallBack(OVERSIZE, "packet seqno " + seqno + " needs " + needed
          + " bytes, more than the " + pool.bufferSize() + "-byte buffers of "
          + pool + "; raise the pool's buffer size to at least the packet"
          + " size (dfs.client-write-packet-size) plus "
          + PacketHeader.PKT_MAX_HEADER_LEN);
      return null;
    }
    reclaimAbandoned();
    long lease;
    try {
      lease = pool.acquire(acquireTimeoutMs);
    } catch (PoolExhaustedException e) {
      fallBack(EXHAUSTED, "packet seqno " + seqno + ": "
          + e.getMessage() + "; consider a larger pool cap");
      return null;
    } catch (IllegalStateException e) {
      fallBack(UNUSABLE, "packet seqno " + seqno + ": " + e);
      return null;
    }
    UcxDFSPacket packet;
    try {
      packet = new UcxDFSPacket(pool, lease, packetSize, chunksPerPkt,
          offsetInBlock, seqno, checksumSize, lastPacketInBlock);
    } catch (RuntimeException e) {
      pool.release(lease);
      throw e;
    }
    LeaseReference reference = new LeaseReference(packet, pool, lease);
    TRACKED.add(reference);
    packet.trackedBy(reference);
    return packet;
  }

  /**
   * Returns the leases of packets that became garbage unreleased (see
   * {@link LeaseReference}); runs whenever a packet is created, so a
   * client's aborted streams cannot drain its pool.
   *
   * @return how many leases were returned by this call
   */
  static int reclaimAbandoned() {
    int reclaimed = 0;
    Reference<? extends UcxDFSPacket> ref;
    while ((ref = ABANDONED.poll()) != null) {
      LeaseReference lease = (LeaseReference) ref;
      if (TRACKED.remove(lease) && !lease.pool.isReleased(lease.lease)) {
        lease.pool.release(lease.lease);
        reclaimed++;
      }
    }
    if (reclaimed > 0) {
      RECLAIMED.addAndGet(reclaimed);
      LogOnce.info(ABANDONED_LEASES, "hdfs-rdma: returned " + reclaimed
          + " registered packet buffer(s) of aborted streams to the pool");
    }
    return reclaimed;
  }

  /** Leases returned by {@link #reclaimAbandoned} in this JVM so far. */
  static long reclaimedCount() {
    return RECLAIMED.get();
  }

  /**
   * The packet {@code DFSOutputStream.createPacket} should use for a stream
   * of {@code streamer}: a registered one when the stream writes over UCX,
   * else null (stock). Packets without bytes stay on the heap: a descriptor
   * for them names no packet memory. Reads nothing but the stream's state,
   * decided once when the stream was created (or, for a JVM's first
   * stream, once its start past the first block ended).
   */
  public static DFSPacket forStream(DataStreamer streamer, int packetSize,
      int chunksPerPkt, long offsetInBlock, long seqno, int checksumSize,
      boolean lastPacketInBlock) throws InterruptedIOException {
    if (packetSize == 0 || streamer == null) {
      return null;
    }
    UcxStreamerState ucx = streamer.ucx;
    if (ucx == null) {
      return null;
    }
    ucx.beforePacket(offsetInBlock);
    RegisteredBufferPool pool = ucx.pool();
    if (pool == null) {
      return null;
    }
    return newPacket(pool, ucx.bufferWaitMs(), packetSize, chunksPerPkt,
        offsetInBlock, seqno, checksumSize, lastPacketInBlock);
  }

  private static void fallBack(String key, String reason) {
    LogOnce.warn(key, "hdfs-rdma: using a heap packet instead of registered"
        + " memory: " + reason);
  }
}
