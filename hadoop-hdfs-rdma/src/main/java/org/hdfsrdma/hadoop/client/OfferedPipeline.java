package org.hdfsrdma.hadoop.client;

import java.io.OutputStream;
import java.util.List;

import org.hdfsrdma.hadoop.protocol.CommitEntry;
import org.hdfsrdma.hadoop.protocol.SessionIds;
import org.hdfsrdma.hadoop.protocol.WriteRequest;

/**
 * A pipeline a stream offered UCX, as its writeBlock op named it: the
 * block, its DataNodes, the request they were offered and the session
 * each of them opens for it. Fixed at the offer; what became of the offer
 * is {@link ClientStream}'s.
 */
final class OfferedPipeline {

  final WriteRequest request;
  /** The block, for messages. */
  final String block;
  /** The DataNodes by transfer address, in pipeline order. */
  final String[] nodes;
  /** The same, as Hadoop names them in messages. */
  final String[] nodeNames;
  final long blockId;
  final long generationStamp;
  /** Per DataNode, the session it opens for this block. */
  final long[] sessionIds;
  /** How many DataNodes the client feeds; the rest are fed by those. */
  final int fed;
  /**
   * The block's socket to DataNode 1, where the descriptors go should
   * every DataNode take them there; null when they go over UCX.
   */
  final OutputStream socket;

  /**
   * @param feeders the DataNodes the client feeds in a chain, or 0 when it
   *     feeds them all ({@link DistributionPolicy#feeders})
   * @param tokenPassword the block token's password (keys session ids)
   * @param socket the block's socket to DataNode 1, to offer the
   *     descriptors on (fan-out only), or null
   */
  OfferedPipeline(String block, String[] nodes, String[] nodeNames,
      String blockPoolId, long blockId, long generationStamp,
      byte[] tokenPassword, int packetSize, int feeders,
      OutputStream socket) {
    this.request = WriteRequest.create(packetSize, feeders)
        .withSocketDescriptors(socket != null);
    this.socket = request.socketDescriptors() ? socket : null;
    this.fed = feeders == 0 ? nodes.length : feeders;
    this.block = block;
    this.nodes = nodes.clone();
    this.nodeNames = nodeNames.clone();
    this.blockId = blockId;
    this.generationStamp = generationStamp;
    this.sessionIds = new long[nodes.length];
    for (int i = 0; i < nodes.length; i++) {
      sessionIds[i] = SessionIds.of(tokenPassword, request.getNonce(),
          blockPoolId, nodes[i], blockId, generationStamp);
    }
  }

  /** Whether {@code commits} are every DataNode's, in pipeline order. */
  boolean committedInOrder(List<CommitEntry> commits) {
    if (commits.size() != nodes.length) {
      return false;
    }
    for (int i = 0; i < nodes.length; i++) {
      if (!commits.get(i).getXferAddr().equals(nodes[i])) {
        return false;
      }
    }
    return true;
  }

  /**
   * Where the descriptors of a pipeline that committed with
   * {@code commits} go: the block's socket when the request offered it
   * and every DataNode takes them there, else null (over UCX).
   */
  OutputStream descriptorSocket(List<CommitEntry> commits) {
    if (socket == null) {
      return null;
    }
    for (CommitEntry c : commits) {
      if (!c.takesSocketDescriptors()) {
        return null;
      }
    }
    return socket;
  }

  /** Whether {@code node} indexes a DataNode of the pipeline. */
  boolean has(int node) {
    return node >= 0 && node < nodes.length;
  }

  /** DataNode {@code node}'s name as Hadoop gives it, for messages. */
  String nameOf(int node) {
    return has(node) ? nodeNames[node] : "DataNode " + node;
  }
}
