package org.hdfsrdma.hadoop.client;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * How many heartbeats a UCX pipeline describes before DataNode 1 answers.
 * Heartbeats stay outside Hadoop's limit of packets in flight; over TCP
 * the socket paces them, here their acks do: a client with a zero socket
 * timeout sends them back to back, and each DataNode queues at most
 * max-queued-packets messages. One per stream; the DataStreamer describes,
 * the ack reader answers.
 */
final class HeartbeatPacing {

  /**
   * Heartbeats in flight at most: with Hadoop's 80 packets in flight they
   * stay well inside a DataNode's queue of 128.
   */
  static final int MAX_IN_FLIGHT = 8;

  /** Heartbeats described on this pipeline and not answered yet. */
  private final AtomicInteger inFlight = new AtomicInteger();

  /**
   * Whether to describe a heartbeat now (and count it in flight):
   * not when it could not be sent without a wait the caller may not take
   * ({@code sendable} false), nor while the DataNodes have not answered
   * the last ones (they are busy or the pipeline is failing, and another
   * heartbeat adds nothing).
   */
  boolean mayDescribe(boolean sendable) {
    if (!sendable || inFlight.get() >= MAX_IN_FLIGHT) {
      return false;
    }
    inFlight.incrementAndGet();
    return true;
  }

  /** DataNode 1 answered a heartbeat. */
  void acked() {
    inFlight.updateAndGet(n -> n > 0 ? n - 1 : 0);
  }

  /** A new pipeline: none in flight. */
  void reset() {
    inFlight.set(0);
  }
}
