package org.hdfsrdma.hadoop.client;

import org.hdfsrdma.ucx.RegisteredBufferPool;

/**
 * One packet as the client describes it to its DataNodes: where its
 * checksums and data lie in the stream's registered memory, and its
 * header's fields. Filled by the release's DataStreamer adapter from
 * Hadoop's packet, once per stream and reused for every packet.
 */
public final class OutgoingPacket {
  /** The packet's lease in the stream's pool, or NO_LEASE (no bytes). */
  public long lease = RegisteredBufferPool.NO_LEASE;
  /** Where its checksums start, followed by its data; 0 without bytes. */
  public long address;
  public int checksumLength;
  public int dataLength;
  public long seqno;
  public long offsetInBlock;
  public boolean heartbeat;
  public boolean lastPacketInBlock;
  public boolean syncBlock;

  /** Sets every field; {@code lease} NO_LEASE for a packet without bytes. */
  public OutgoingPacket set(long seqno, long offsetInBlock, boolean heartbeat,
      boolean lastPacketInBlock, boolean syncBlock, long lease, long address,
      int checksumLength, int dataLength) {
    this.seqno = seqno;
    this.offsetInBlock = offsetInBlock;
    this.heartbeat = heartbeat;
    this.lastPacketInBlock = lastPacketInBlock;
    this.syncBlock = syncBlock;
    this.lease = lease;
    this.address = address;
    this.checksumLength = checksumLength;
    this.dataLength = dataLength;
    return this;
  }
}
