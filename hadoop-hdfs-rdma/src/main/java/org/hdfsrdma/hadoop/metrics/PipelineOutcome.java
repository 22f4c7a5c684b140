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
  TCP_UNREACHABLE("pipelines-tcp-unreachable", "PipelinesTcpUnreachable");

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
