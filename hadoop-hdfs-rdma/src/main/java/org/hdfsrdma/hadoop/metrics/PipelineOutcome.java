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
  FELL_BACK_CLIENT("pipelines-fell-back-client", "PipelinesFellBackClient"),
  /** TCP: a DataNode of the pipeline runs no hdfs-rdma (stock, no agent). */
  TCP_STOCK_DATANODE("pipelines-tcp-stock-datanode",
      "PipelinesTcpStockDataNode"),
  /** TCP: a DataNode's UCX side is off (its setting, or UCX unavailable). */
  TCP_DATANODE_OFF("pipelines-tcp-datanode-off", "PipelinesTcpDataNodeOff"),
  /** TCP: a DataNode refused the block (limits, a later release). */
  TCP_DATANODE_REFUSED("pipelines-tcp-datanode-refused",
      "PipelinesTcpDataNodeRefused"),
  /** TCP: UCX cannot start in this JVM. */
  TCP_UCX_UNAVAILABLE("pipelines-tcp-ucx-unavailable",
      "PipelinesTcpUcxUnavailable"),
  /**
   * TCP: data-transfer encryption or SASL integrity/privacy is configured
   * here or on a DataNode.
   */
  TCP_PROTECTED("pipelines-tcp-protected", "PipelinesTcpProtected"),
  /** TCP: an erasure-coded file's stream (the path is for replicas). */
  TCP_ERASURE_CODED("pipelines-tcp-erasure-coded",
      "PipelinesTcpErasureCoded"),
  /**
   * TCP by this client's settings: {@code dfs.client.rdma.distribution}
   * tcp, or no RDMA device and no DataNode serving UCX on this host.
   */
  TCP_POLICY("pipelines-tcp-policy", "PipelinesTcpPolicy"),
  /**
   * TCP: the JVM's first block, written while UCX was not started
   * ({@code dfs.client.rdma.defer-start}).
   */
  TCP_DEFERRED("pipelines-tcp-deferred", "PipelinesTcpDeferred");

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
