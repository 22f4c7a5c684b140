package org.hdfsrdma.hadoop.datanode;

import org.hdfsrdma.hadoop.metrics.PacketPhaseTimes;
import org.hdfsrdma.hadoop.metrics.PacketPhaseTimes.Phase;

/**
 * One block receiver's packet phase timers: where its packets spend their
 * time between descriptor and disk, added to its DataNode's
 * {@link PacketPhaseTimes}. With timers off ({@code
 * dfs.datanode.rdma.packet-timers.enabled}) every call reads one field and
 * returns.
 */
final class PhaseClock {

  private final PacketPhaseTimes times;
  /** The last mark and when; none from a disk write to the next packet. */
  private Phase lastMark;
  private long lastMarkNanos;

  /** @param times where to add, or null for no timing */
  PhaseClock(PacketPhaseTimes times) {
    this.times = times;
  }

  /** Now, when timing; 0 otherwise (no clock read). */
  long now() {
    return times == null ? 0 : System.nanoTime();
  }

  /** Adds the time since {@code from} (a {@link #now}) to {@code phase}. */
  void since(Phase phase, long from) {
    if (times != null) {
      times.add(phase, System.nanoTime() - from);
    }
  }

  /**
   * The receiver asks for its next packet at {@code now}: the time since
   * the last mark was the rest of BlockReceiver's work.
   */
  void nextPacket(long now) {
    if (times != null && lastMark != null) {
      times.add(Phase.OTHER, now - lastMarkNanos);
      lastMark = null;
    }
  }

  /** The packet was presented: what follows is timed from here. */
  void presented() {
    if (times != null) {
      lastMarkNanos = System.nanoTime();
      lastMark = Phase.COPY;
    }
  }

  /** Marks the end of {@code phase} of the presented packet. */
  void mark(Phase phase) {
    if (times != null && lastMark != null) {
      long now = System.nanoTime();
      times.add(phase, now - lastMarkNanos);
      lastMarkNanos = now;
      lastMark = phase;
    }
  }
}
