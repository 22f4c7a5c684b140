package org.hdfsrdma.hadoop.datanode;

/**
 * The packet a {@link PacketFetcher} presents: its header's fields and one
 * heap buffer holding its checksums, then its data, as Hadoop's socket
 * PacketReceiver lays them out. One per block, refilled per packet.
 */
public final class FetchedPacket {

  final byte[] bytes;
  int checksumLength;
  int dataLength;
  long offsetInBlock;
  long seqno;
  boolean lastPacketInBlock;
  boolean syncBlock;

  FetchedPacket(int maxPacketBytes) {
    this.bytes = new byte[maxPacketBytes];
  }

  /** Checksums from offset 0, then data. */
  public byte[] bytes() {
    return bytes;
  }

  public int checksumLength() {
    return checksumLength;
  }

  public int dataLength() {
    return dataLength;
  }

  public long offsetInBlock() {
    return offsetInBlock;
  }

  public long seqno() {
    return seqno;
  }

  public boolean isLastPacketInBlock() {
    return lastPacketInBlock;
  }

  public boolean isSyncBlock() {
    return syncBlock;
  }
}
