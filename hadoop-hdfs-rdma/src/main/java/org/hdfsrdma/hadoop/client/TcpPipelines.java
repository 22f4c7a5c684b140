package org.hdfsrdma.hadoop.client;

import java.io.IOException;
import java.util.List;

import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.metrics.PipelineOutcome;
import org.hdfsrdma.hadoop.protocol.CommitEntry;
import org.hdfsrdma.hadoop.protocol.Decline;
import org.hdfsrdma.hadoop.runtime.NodeBackoff;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.hadoop.util.LogOnce;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A stream's pipelines that stay on TCP at set-up, and why: each one is
 * counted under its {@link PipelineOutcome}, each reason is one WARN line
 * while it persists ({@link LogOnce}, keyed by the reason, not the node),
 * and a DataNode UCX could not serve keeps the pipelines through it on
 * TCP for {@code dfs.client.rdma.unreachable-retry-ms} (the runtime's
 * {@link NodeBackoff}). Once per pipeline set-up, never per packet.
 */
final class TcpPipelines {

  private static final Logger LOG = LoggerFactory.getLogger(
      ClientStream.class);

  private final UcxRuntime runtime;
  private final RdmaConf conf;

  TcpPipelines(UcxRuntime runtime, RdmaConf conf) {
    this.runtime = runtime;
    this.conf = conf;
  }

  /**
   * Whether a node of the pipeline is backed off; if so the pipeline is
   * counted as on TCP for that node's reason.
   */
  boolean backedOff(String block, String[] nodes, String[] nodeNames) {
    for (int i = 0; i < nodes.length; i++) {
      PipelineOutcome tcp = runtime.nodeBackoff().tcpOutcome(nodes[i],
          conf.distribution());
      if (tcp != null) {
        LOG.debug("hdfs-rdma: {} on TCP ({}) because of {}", block,
            tcp.label(), nodeNames[i]);
        runtime.metrics().countPipeline(tcp);
        return true;
      }
    }
    return false;
  }

  /** DataNode 1's commit list could not be read. */
  void unreadable(String block, IOException e) {
    LOG.warn("hdfs-rdma: {} on TCP: malformed commit list: {}", block,
        e.getMessage());
    runtime.metrics().countPipeline(PipelineOutcome.TCP_DATANODE_REFUSED);
  }

  /**
   * The pipeline's DataNodes did not all commit: counted by the decline
   * they sent, or, with none and no commit list, as DataNode 1 running no
   * hdfs-rdma.
   */
  void declined(String block, String[] nodes, List<CommitEntry> commits,
      Decline d) {
    if (d == null && commits.isEmpty()) {
      d = new Decline(nodes[0], Decline.Reason.STOCK);
    }
    PipelineOutcome outcome = d == null
        ? PipelineOutcome.TCP_DATANODE_REFUSED : outcomeOf(d.getReason());
    runtime.metrics().countPipeline(outcome);
    String why = d == null ? commits.size() + " of " + nodes.length
        + " DataNodes committed" : "DataNode " + d;
    LOG.debug("hdfs-rdma: {} on TCP: {}", block, why);
    LogOnce.warn("tcp " + outcome, "hdfs-rdma: " + block + " over TCP: "
        + why + "; counted as " + outcome.metric());
  }

  private static PipelineOutcome outcomeOf(Decline.Reason r) {
    switch (r) {
    case STOCK:
      return PipelineOutcome.TCP_STOCK_DATANODE;
    case OFF:
      return PipelineOutcome.TCP_DATANODE_OFF;
    case PROTECTED:
      return PipelineOutcome.TCP_PROTECTED;
    default:
      return PipelineOutcome.TCP_DATANODE_REFUSED;
    }
  }

  /**
   * The pipeline runs over TCP because of one of its nodes ({@code t},
   * from {@link PipelineConnect}); so do the next ones through it, for
   * {@code dfs.client.rdma.unreachable-retry-ms}.
   */
  void unreachable(String block, String[] nodes, String[] nodeNames,
      PipelineConnect.OnTcp t) {
    runtime.nodeBackoff().tcpFor(nodes[t.node], t.outcome,
        conf.unreachableRetryMs());
    runtime.metrics().countPipeline(t.outcome);
    LogOnce.warn("tcp " + t.outcome + " " + t.why, "hdfs-rdma: "
        + block + " over TCP: " + t.why + " (" + nodeNames[t.node]
        + (t.cause == null ? "" : ": " + t.cause) + "); pipelines through"
        + " it use TCP for the next " + conf.unreachableRetryMs() + " ms");
  }
}
