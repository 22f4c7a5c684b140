package org.apache.hadoop.hdfs;

/**
 * Hadoop 3's flavour: where DataStreamer sends heartbeats. Since HDFS-15813
 * {@code sendHeartbeat()} sends them holding the {@code dataQueue} lock,
 * from the run loop's wait and from the end-of-block wait for acks; the
 * writer and the ResponseProcessor need that lock. So a UCX heartbeat must
 * never wait there: one that would wait for a ring slot is not sent
 * ({@code ClientStream.send(packet, false)}); the DataNodes have
 * descriptors queued then, and the next heartbeat comes an interval later.
 */
final class UcxHeartbeats {

  /** Whether heartbeats go out holding DataStreamer's dataQueue lock. */
  static final boolean SENT_UNDER_QUEUE_LOCK = true;

  private UcxHeartbeats() {
  }
}
