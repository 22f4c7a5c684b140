package org.hdfsrdma.hadoop.client;

import org.hdfsrdma.hadoop.metrics.PipelineOutcome;
import org.hdfsrdma.hadoop.metrics.UcxJvmMetrics;
import org.hdfsrdma.hadoop.runtime.NodeBackoff;
import org.hdfsrdma.hadoop.util.RateLimitedLog;
import org.slf4j.LoggerFactory;

/**
 * Whether UCX failed a stream's current pipeline, and what that does to
 * Hadoop's recovery of it (DESIGN.md, section 6): the pipeline restarts
 * over TCP with every DataNode, unless an ack reported a bad DataNode,
 * which is Hadoop's own evidence. The first reason of a pipeline wins;
 * each is counted and logged, one line per reason every 10 s at most.
 */
final class PipelineFallback {

  private static final RateLimitedLog DATANODE_LOG = RateLimitedLog.of(
      LoggerFactory.getLogger(ClientStream.class));
  private static final RateLimitedLog CLIENT_LOG = RateLimitedLog.of(
      LoggerFactory.getLogger(ClientStream.class));

  private final PipelineFailures failures;
  private final UcxJvmMetrics metrics;
  private final NodeBackoff nodeBackoff;
  private final long retryMs;
  /** Why UCX failed the current pipeline, or null. */
  private PipelineOutcome reason;
  /** Whether an ack of the current pipeline reported a bad DataNode. */
  private volatile boolean ackReportedBadNode;

  /**
   * @param nodeBackoff the runtime's, where a DataNode UCX failed is noted
   * @param retryMs dfs.client.rdma.unreachable-retry-ms: how long a
   *     DataNode UCX failed twice stays on TCP
   */
  PipelineFallback(PipelineFailures failures, UcxJvmMetrics metrics,
      NodeBackoff nodeBackoff, long retryMs) {
    this.failures = failures;
    this.metrics = metrics;
    this.nodeBackoff = nodeBackoff;
    this.retryMs = retryMs;
  }

  /**
   * UCX failed the pipeline of {@code block} because of DataNode
   * {@code node} ({@code name}): starts Hadoop's recovery, counts and logs
   * {@code why} (the first time for this pipeline).
   *
   * @param outcome {@link PipelineOutcome#FELL_BACK_DATANODE} or
   *     {@link PipelineOutcome#FELL_BACK_CLIENT}
   * @return true the first time for this pipeline
   */
  synchronized boolean fellBack(String block, String node, String name,
      PipelineOutcome outcome, String why) {
    if (reason != null) {
      return false;
    }
    reason = outcome;
    String backoff = "";
    if (node != null && nodeBackoff.fellBack(node, retryMs)) {
      backoff = "; UCX failed with " + name + " before, so pipelines"
          + " through it use TCP for the next " + retryMs + " ms";
    }
    metrics.countPipeline(outcome);
    (outcome == PipelineOutcome.FELL_BACK_DATANODE ? DATANODE_LOG
        : CLIENT_LOG).warn("hdfs-rdma: " + block + " restarts over TCP"
            + " with every DataNode: " + why + backoff);
    failures.restartOverTcp();
    return true;
  }

  /** An ack of the current pipeline reported a DataNode bad. */
  void ackReportedBadNode() {
    ackReportedBadNode = true;
  }

  /**
   * The pipeline is closed, before recovery chooses a bad node: when UCX
   * failed it and no ack reported one, recovery keeps every node.
   */
  synchronized void pipelineEnded() {
    if (reason != null && !ackReportedBadNode) {
      failures.forgive();
    }
    reason = null;
    ackReportedBadNode = false;
  }
}
