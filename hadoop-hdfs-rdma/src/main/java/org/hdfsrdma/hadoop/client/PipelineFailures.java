package org.hdfsrdma.hadoop.client;

/**
 * How a stream makes Hadoop restart its pipeline when UCX fails it. UCX is
 * an accelerator: a pipeline it fails restarts over TCP with every
 * DataNode, as pipeline recovery with no bad node does. The release's
 * DataStreamer adapter works Hadoop's {@code ErrorState}: recovery starts
 * only for a marked node, so {@link #restartOverTcp} marks one, and
 * {@link #forgive} clears the mark when the streamer closes the failed
 * pipeline, before recovery would drop that node.
 */
public interface PipelineFailures {

  /** The pipeline failed because of UCX: start Hadoop's recovery. */
  void restartOverTcp();

  /**
   * Recovery is about to choose a bad node for a pipeline UCX failed, and
   * no DataNode reported one: keep every node.
   */
  void forgive();

  /** Whether the pipeline already failed (a bad ack): stop waiting. */
  boolean pipelineFailed();
}
