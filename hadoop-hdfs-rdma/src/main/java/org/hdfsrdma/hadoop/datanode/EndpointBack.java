package org.hdfsrdma.hadoop.datanode;

import java.io.IOException;
import java.util.concurrent.TimeUnit;

import org.hdfsrdma.ucx.UcxEndpoint;
import org.hdfsrdma.ucx.UcxWorker;

/**
 * A DataNode's own endpoint back to a block's exposer, for the block's
 * gets: made from the exposer's hello when the block first needs it,
 * resolved once per block and again only when it fails.
 */
final class EndpointBack {

  private final UcxConnections connections;
  private final UcxWorker worker;
  private final UcxWorker.Driver driver;
  private final UcxBlockSession session;
  private final long timeoutMs;
  private UcxEndpoint endpoint;

  EndpointBack(UcxConnections connections, UcxWorker worker,
      UcxWorker.Driver driver, UcxBlockSession session, long timeoutMs) {
    this.connections = connections;
    this.worker = worker;
    this.driver = driver;
    this.session = session;
    this.timeoutMs = timeoutMs;
  }

  /**
   * The endpoint, waiting (driving the worker) while it is being made.
   *
   * @throws IOException when the DataNode no longer knows the exposer's
   *     connection, or the endpoint is not made within the timeout
   */
  UcxEndpoint get() throws IOException {
    UcxEndpoint e = endpoint;
    if (e != null && e.isUsable()) {
      return e;
    }
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    while (true) {
      UcxConnections.Connection c = connections.get(session.boundEndpoint());
      if (c == null) {
        // It greeted before its first block, so its connection was
        // forgotten (more than MAX_CONNECTIONS): waiting would not help.
        throw new IOException("hdfs-rdma: no UCX endpoint back to the"
            + " client of " + session.description() + " for its gets: this"
            + " DataNode no longer knows its connection");
      }
      e = c.endpoint;
      if (e != null && e.isUsable()) {
        endpoint = e;
        return e;
      }
      connections.connect(c);
      if (System.nanoTime() > deadline) {
        throw new IOException("hdfs-rdma: no UCX endpoint back to the client"
            + " of " + session.description() + " for its gets");
      }
      worker.drive(driver, () -> false, TimeUnit.MILLISECONDS.toNanos(1));
    }
  }
}
