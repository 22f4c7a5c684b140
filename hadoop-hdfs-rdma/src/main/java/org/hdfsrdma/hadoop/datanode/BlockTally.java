package org.hdfsrdma.hadoop.datanode;

import org.hdfsrdma.hadoop.metrics.UcxDataNodeMetrics;
import org.hdfsrdma.hadoop.metrics.WriterCounters;

/**
 * What one block's receiver tells its DataNode: the packets and bytes UCX
 * brought, counted in a counter slot of the receiver's own; its busy time
 * from each descriptor to the packet's disk write, which the DataNode's
 * {@link IngestRate} (and so the shape of clients' pipelines) is measured
 * over; a fallback to TCP, once; and at the block's end the path it came
 * by. The block's receiver thread only.
 */
final class BlockTally {

  private final UcxDataNode dataNode;
  private final WriterCounters.Slot counters;
  /** When the current packet's descriptor was there, or 0. */
  private long busyFrom;
  /** Time from descriptor to disk write, summed over the block. */
  private long busyNanos;
  private long packets;
  private long bytes;
  private boolean fellBack;

  BlockTally(UcxDataNode dataNode) {
    this.dataNode = dataNode;
    this.counters = dataNode.metrics().openReceiver();
  }

  /** Packets presented from UCX. */
  long packets() {
    return packets;
  }

  /** Packet bytes (checksums and data) fetched over UCX. */
  long bytes() {
    return bytes;
  }

  /** The current packet's descriptor is there: its busy time starts. */
  void busy() {
    busyFrom = System.nanoTime();
  }

  /** The current packet is on disk: its busy time ends. */
  void written() {
    if (busyFrom != 0) {
      busyNanos += System.nanoTime() - busyFrom;
      busyFrom = 0;
    }
  }

  /**
   * The current packet's {@code length} bytes, {@code dataLength} of them
   * data, were fetched: read directly or by get, and from a DataNode
   * feeding this one or from the client.
   */
  void fetched(int length, int dataLength, boolean direct,
      boolean fromDataNode) {
    if (direct) {
      counters.add(UcxDataNodeMetrics.READ_DIRECTLY, dataLength);
    }
    bytes += length;
    counters.add(UcxDataNodeMetrics.FETCHED_BYTES, dataLength);
    counters.add(UcxDataNodeMetrics.PACKETS_FETCHED, 1);
    if (fromDataNode) {
      counters.add(UcxDataNodeMetrics.FETCHED_FROM_DATANODES, dataLength);
    }
  }

  /** A packet was presented from UCX. */
  void presented() {
    packets++;
  }

  /** The block's UCX path failed and it asked for TCP: counted once. */
  void fellBack() {
    if (!fellBack) {
      fellBack = true;
      dataNode.metrics().countFallback();
    }
  }

  /**
   * The block is over: counted as received over TCP when its packets came
   * on the socket, over UCX when they came by UCX (its busy time then
   * noted in the ingest rate; {@code socketDescriptors}: their
   * descriptors came on the socket), not at all when none came.
   */
  void close(boolean overSocket, boolean socketDescriptors) {
    counters.close();
    if (overSocket) {
      dataNode.metrics().countBlock(false);
    } else if (packets > 0) {
      if (socketDescriptors) {
        dataNode.metrics().countSocketDescriptorBlock();
      }
      dataNode.metrics().countBlock(true);
      dataNode.ingest().note(bytes, busyNanos);
    }
  }
}
