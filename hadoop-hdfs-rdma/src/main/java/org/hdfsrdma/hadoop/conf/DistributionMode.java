package org.hdfsrdma.hadoop.conf;

import java.util.Locale;

/**
 * How a client distributes a pipeline's packets: the setting of
 * {@code dfs.client.rdma.distribution}. Which pipelines each mode moves by
 * UCX, and why, is {@code DistributionPolicy}'s.
 */
public enum DistributionMode {
  /** Fan out where every get is one-sided; otherwise TCP. */
  AUTO,
  /** Fan out to every DataNode UCX reaches, emulated gets included. */
  FAN_OUT,
  /**
   * A chain by gets: the client feeds DataNode 1, each DataNode feeds the
   * next from its landing buffers; every link carries each byte once.
   */
  CHAIN,
  /**
   * The client feeds the first m DataNodes
   * ({@code dfs.client.rdma.hybrid-feeders}), each of those feeds the
   * DataNode m places behind it.
   */
  HYBRID,
  /** Never UCX: the JVM does not start it for writing. */
  TCP;

  /** The values {@link #parse} takes, for messages. */
  public static final String NAMES = "auto, fan-out, chain, hybrid, tcp";

  /** The mode {@code value} names, or null when it names none. */
  public static DistributionMode parse(String value) {
    switch (value.trim().toLowerCase(Locale.ROOT)) {
    case "auto":
      return AUTO;
    case "fan-out":
      return FAN_OUT;
    case "chain":
      return CHAIN;
    case "hybrid":
      return HYBRID;
    case "tcp":
      return TCP;
    default:
      return null;
    }
  }
}
