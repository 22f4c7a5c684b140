package org.hdfsrdma.hadoop.metrics;

/** What became of one client pipeline, as the metrics count it. */
public enum PipelineOutcome {
  /** Every DataNode fetched by get from the client. */
  FAN_OUT("pipelines-fan-out", "PipelinesFanOut"),
  /** Every DataNode fetched by get, each from the one before it. */
  CHAIN("pipelines-chain", "PipelinesChain"),
  /** The first m DataNodes fetched from the client, the rest from them. */
  HYBRID("pipelines-hybrid", "PipelinesHybrid"),
  /** TCP, because some DataNode's gets would have been emulated. */
  TCP_EMULATED_GETS("pipelines-tcp-emulated-gets",
      "PipelinesTcpEmulatedGets"),
  /** TCP, because UCX could not reach some DataNode. */
  TCP_UNREACHABLE("pipelines-tcp-unreachable", "PipelinesTcpUnreachable"),
  /**
   * TCP, because a DataNode on this host runs another UCX release or other
   * shared-memory settings.
   */
  TCP_OTHER_UCX("pipelines-tcp-other-ucx", "PipelinesTcpOtherUcx"),
  /**
   * Started over UCX, restarted over TCP with every DataNode: a DataNode's
   * UCX failed the block (it asked for TCP with an out-of-band ack).
   */
  FELL_BACK_DATANODE("pipelines-fell-back-datanode",
      "PipelinesFellBackDataNode"),
  /**
   * Started over UCX, restarted over TCP with every DataNode: the client's
   * UCX could not send a descriptor (an endpoint error, or none taken in
   * the send timeout).
   */
  FELL_BACK_CLIENT("pipelines-fell-back-client", "PipelinesFellBackClient");

  private final String label;
  private final String metric;

  PipelineOutcome(String label, String metric) {
    this.label = label;
    this.metric = metric;
  }

  /** The name in the totals line. */
  public String label() {
    return label;
  }

  /** The metrics2 counter's name. */
  public String metric() {
    return metric;
  }
}
