package org.hdfsrdma.hadoop.datanode;

import java.io.Closeable;

import org.hdfsrdma.hadoop.runtime.RegionCache;
import org.hdfsrdma.ucx.Closeables;
import org.hdfsrdma.ucx.UcxWorker;

/**
 * One DataNode lane ({@link ServerLanes}): a UCX worker, the blocks whose
 * descriptors it receives (its session table, the worker's message
 * handler) and the client connections made on it. A block's receiver
 * thread drives only its lane's worker, so the receivers of blocks on
 * different lanes never hand each other their descriptors.
 */
public final class ServerLane implements Closeable {

  private final int index;
  private final UcxWorker worker;
  /** Lane 0's worker is the runtime's, which closes it. */
  private final boolean ownsWorker;
  private final byte[] address;
  private final UcxConnections connections;
  private final SessionTable sessions;

  /**
   * Routes {@code worker}'s messages to the lane's sessions.
   *
   * @param ownsWorker whether {@link #close} closes the worker too
   */
  ServerLane(int index, UcxWorker worker, boolean ownsWorker,
      long connectTimeoutMs, long unboundConnectionTimeoutMs,
      RegionCache regions) {
    this.index = index;
    this.worker = worker;
    this.ownsWorker = ownsWorker;
    this.address = worker.address();
    this.connections = new UcxConnections(worker, connectTimeoutMs,
        unboundConnectionTimeoutMs);
    this.sessions = new SessionTable(connections, regions);
    worker.setMessageHandler(sessions);
  }

  /** Its place among the lanes: 0 is the runtime's own worker. */
  public int index() {
    return index;
  }

  /** The worker the lane's blocks receive on and drive. */
  public UcxWorker worker() {
    return worker;
  }

  /** The worker's address, which a block on this lane commits. */
  byte[] address() {
    return address;
  }

  /** The blocks receiving on this lane. */
  public SessionTable sessions() {
    return sessions;
  }

  UcxConnections connections() {
    return connections;
  }

  /**
   * Stops routing messages, closes the lane's client connections and, for
   * lanes 1 and up, its worker. Idempotent.
   */
  @Override
  public void close() {
    worker.setMessageHandler(null);
    Closeables.closeAll(connections, ownsWorker ? worker : null);
  }

  @Override
  public String toString() {
    return "lane " + index + " (" + worker.name() + ", " + sessions.size()
        + " blocks)";
  }
}
