package org.hdfsrdma.hadoop.datanode;

import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxEndpoint;

/**
 * The DataNode side's connection table as tests outside this package need
 * to see and drive it (the sweep, the endpoints back); nothing of it is
 * public in the product.
 */
public final class DataNodeInternals {

  private DataNodeInternals() {
  }

  private static UcxConnections connections(UcxRuntime runtime) {
    return DataNodeServer.of(runtime).connections();
  }

  /** Runs the idle-connection sweep now. */
  public static void sweepConnections(UcxRuntime runtime) {
    connections(runtime).sweep();
  }

  /** Whether the connection of {@code replyEndpoint} is known. */
  public static boolean knowsConnection(UcxRuntime runtime,
      long replyEndpoint) {
    return connections(runtime).get(replyEndpoint) != null;
  }

  /** The endpoint back of {@code replyEndpoint}'s connection, or null. */
  public static UcxEndpoint endpointBack(UcxRuntime runtime,
      long replyEndpoint) {
    UcxConnections.Connection c = connections(runtime).get(replyEndpoint);
    return c == null ? null : c.endpoint;
  }

  /** Closes every client connection. */
  public static void closeConnections(UcxRuntime runtime) {
    connections(runtime).close();
  }
}
