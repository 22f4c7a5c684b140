package org.hdfsrdma.hadoop.client;

/**
 * Where a stream reports a DataNode that did not take its descriptor, as
 * Hadoop's ResponseProcessor reports a bad ack: the release's DataStreamer
 * adapter marks the node in the streamer's error state, and pipeline
 * recovery drops it.
 */
public interface PipelineFailures {

  /** Node {@code index} of the pipeline failed. */
  void nodeFailed(int index);

  /** Whether the pipeline already failed (a bad ack): stop waiting. */
  boolean pipelineFailed();
}
