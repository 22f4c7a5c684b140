package org.hdfsrdma.hadoop.client;

import org.hdfsrdma.hadoop.conf.DistributionMode;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.metrics.PipelineOutcome;
import org.hdfsrdma.hadoop.protocol.WriteRequest;
import org.hdfsrdma.hadoop.runtime.LocalDataNodeMarker;
import org.hdfsrdma.hadoop.runtime.Reach;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;

/**
 * Which pipelines a client distributes by UCX get, and which it leaves on
 * Hadoop's TCP pipeline ({@code dfs.client.rdma.distribution}).
 *
 * <p>Fan-out by get wins only where a get costs the client nothing: same
 * host shared memory, or RDMA lanes (rc, dc) whose NIC serves the get.
 * Over UCX's tcp transport (and ud, which has no RMA) UCX 1.13 emulates a
 * get with the client's CPU sending every byte to every DataNode: the
 * client's link carries each byte once per replica, against once for
 * stock's chain. {@link DistributionMode#AUTO} therefore fans a pipeline
 * out only when every DataNode's get is one-sided, judged from the lanes
 * UCX reports for the connection, not from configuration.
 *
 * <p>Decided once per pipeline set-up, never per packet.
 */
public final class DistributionPolicy {

  private DistributionPolicy() {
  }

  /** Whether a pipeline may fetch by get from a DataNode of this reach. */
  public static boolean fetchesByGet(DistributionMode mode, Reach reach) {
    switch (mode) {
    case FAN_OUT:
    case CHAIN:
    case HYBRID:
      return reach != Reach.UNREACHABLE;
    case AUTO:
      return reach == Reach.SHARED_MEMORY || reach == Reach.ONE_SIDED;
    default:
      return false;
    }
  }

  /**
   * How many DataNodes of a pipeline of {@code nodes} the client feeds
   * itself under {@code mode}, as the offer carries it
   * ({@link WriteRequest#feeders}): 0 for all (fan-out), 1
   * for a chain, {@code hybridFeeders} for a hybrid, where a hybrid as wide
   * as the pipeline is a fan-out.
   */
  public static int feeders(DistributionMode mode, int nodes,
      int hybridFeeders) {
    int m;
    switch (mode) {
    case CHAIN:
      m = 1;
      break;
    case HYBRID:
      m = hybridFeeders;
      break;
    default:
      return 0;
    }
    return m >= nodes ? 0 : m;
  }

  /**
   * How many DataNodes of {@code pipeline} (transfer addresses) a client
   * with {@code conf} feeds (0: all). Forced shapes as configured; in
   * auto, where gets cross RDMA links, as the measured rates say
   * ({@link ShapeChooser}) unless a node of it could not feed the next
   * lately; otherwise a fan-out.
   */
  static int feeders(UcxRuntime runtime, RdmaConf conf, String[] pipeline) {
    if (conf.distribution() == DistributionMode.AUTO) {
      if (!runtime.transports().networkRdma()
          || runtime.nodeBackoff().fanOutOnly(pipeline)) {
        return 0;
      }
      return ShapeChooser.feeders(runtime.ingestRates(), pipeline);
    }
    return feeders(conf.distribution(), pipeline.length,
        conf.hybridFeeders());
  }

  /** What a pipeline fed by {@code feeders} DataNodes counts as. */
  public static PipelineOutcome outcomeOf(int feeders) {
    return feeders == 0 ? PipelineOutcome.FAN_OUT
        : feeders == 1 ? PipelineOutcome.CHAIN : PipelineOutcome.HYBRID;
  }

  /**
   * Why a writer with {@code conf} should not start UCX in this JVM, or
   * null when it should. Starting UCX costs a client JVM about 150 ms of
   * CPU (measured: class and library loading, context, worker), which an
   * {@code hdfs dfs -put} of a small file pays in full; with no RDMA device
   * on the host and no DataNode serving UCX on it, no get could be
   * one-sided, so in {@link DistributionMode#AUTO} every pipeline would
   * stay on TCP anyway.
   */
  public static String reasonNotToStart(RdmaConf conf) {
    switch (conf.distribution()) {
    case TCP:
      return HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_DISTRIBUTION_KEY + " is tcp";
    case FAN_OUT:
    case CHAIN:
    case HYBRID:
      return null;
    default:
      break;
    }
    if (Reach.rdmaDevicesPresent() || LocalDataNodeMarker.anyAlive()) {
      return null;
    }
    return "this host has no RDMA device (" + Reach.rdmaDevices()
        + " is empty) and"
        + " no DataNode serving UCX runs on it as this user, so no get could"
        + " be one-sided";
  }
}
