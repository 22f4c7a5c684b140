package org.apache.hadoop.hdfs;

/**
 * Hadoop 2's flavour: where DataStreamer sends heartbeats. Hadoop 2 queues
 * a heartbeat and sends it from its run loop like any packet, outside the
 * {@code dataQueue} lock, so a UCX heartbeat may wait for a ring slot as a
 * data packet does. Hadoop 3 sends them holding that lock (src/hadoop3).
 */
final class UcxHeartbeats {

  /** Whether heartbeats go out holding DataStreamer's dataQueue lock. */
  static final boolean SENT_UNDER_QUEUE_LOCK = false;

  private UcxHeartbeats() {
  }
}
