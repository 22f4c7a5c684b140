package org.hdfsrdma.hadoop.datanode;

/**
 * A DataNode's ingest rate: bytes its block receivers took in per second
 * of their busy time (from a packet's descriptor to its disk write: get,
 * checksums, disk), a moving average over its blocks, so that it follows
 * disks and links that change. Commits carry it to clients, which shape
 * pipelines by it (section 4a of DESIGN.md).
 */
public final class IngestRate {

  /** Blocks shorter than this say little about a DataNode's ingest rate. */
  static final long MIN_SAMPLE_BYTES = 1L << 20;

  private double bytesPerSecond;

  /** A block: {@code bytes} took {@code busyNanos} from descriptor to disk. */
  public synchronized void note(long bytes, long busyNanos) {
    if (bytes < MIN_SAMPLE_BYTES || busyNanos <= 0) {
      return;
    }
    double rate = bytes * 1e9 / busyNanos;
    bytesPerSecond = bytesPerSecond == 0 ? rate
        : 0.7 * bytesPerSecond + 0.3 * rate;
  }

  /** The rate in bytes/s, 0 before the first sample. */
  public synchronized long bytesPerSecond() {
    return (long) bytesPerSecond;
  }
}
