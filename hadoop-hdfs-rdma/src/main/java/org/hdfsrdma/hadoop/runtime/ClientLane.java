package org.hdfsrdma.hadoop.runtime;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import org.hdfsrdma.ucx.EndpointCache;
import org.hdfsrdma.ucx.UcxEndpoint;
import org.hdfsrdma.ucx.UcxWorker;

/**
 * One client lane ({@link ClientLanes}): a UCX worker and the connections
 * to DataNodes made on it, each greeting with that worker's address, and
 * how many streams send on it now. A stream sends only on its lane's
 * connections and waits for its sends with its lane's worker, so streams
 * on different lanes never wait for each other's sends.
 */
public final class ClientLane {

  private final int index;
  private final UcxWorker worker;
  private final EndpointCache endpoints;
  /** Streams that hold this lane and have work in hand. */
  private final AtomicInteger streams = new AtomicInteger();

  ClientLane(int index, UcxWorker worker, EndpointCache endpoints) {
    this.index = index;
    this.worker = worker;
    this.endpoints = endpoints;
  }

  /** Its place among the lanes: 0 is the runtime's own worker. */
  public int index() {
    return index;
  }

  /** The worker this lane's streams send on and wait with. */
  public UcxWorker worker() {
    return worker;
  }

  /**
   * The connection to a DataNode's worker (cached per lane), with this
   * lane's hello sent first (the DataNode connects back with it).
   */
  public CompletableFuture<UcxEndpoint> connect(byte[] address, String peer) {
    return endpoints.get(address, peer);
  }

  EndpointCache endpoints() {
    return endpoints;
  }

  /** Streams on this lane that have work in hand now. */
  public int streams() {
    return streams.get();
  }

  /** Messages sent on this lane's connections (metrics and tests). */
  public long messagesSent() {
    return endpoints.messagesSent();
  }

  /** Connections opened on this lane. */
  public long connects() {
    return endpoints.connectCount();
  }

  /** A stream of this lane has work in hand (a pipeline being set up). */
  public void engage() {
    streams.incrementAndGet();
  }

  /** It has none any more (its pipeline ended, or it closed). */
  public void disengage() {
    streams.decrementAndGet();
  }

  @Override
  public String toString() {
    return "lane " + index + " (" + worker.name() + ", " + streams()
        + " streams)";
  }
}
