package org.hdfsrdma.hadoop.conf;

import static org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys.*;

import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.hadoop.protocol.WriteRequest;
import org.hdfsrdma.hadoop.util.LogOnce;

/**
 * hdfs-rdma's settings, read once from a {@link Configuration} into final
 * fields, as Hadoop's {@code DNConf} does: nothing on the data path looks a
 * key up per packet. Defaults are the {@code _DEFAULT} constants (adding
 * hdfs-rdma-default.xml as a resource would put it after the site files and
 * override the operator).
 */
public final class RdmaConf {

  // Client.
  private final boolean clientEnabled;
  private final long clientPoolMaxBytes;
  private final long clientPoolSlabBytes;
  private final long clientBufferWaitMs;
  private final long clientConnectTimeoutMs;
  private final long clientUnreachableRetryMs;
  private final boolean clientTimers;
  private final DistributionMode distribution;
  private final int hybridFeeders;

  // DataNode.
  private final boolean dataNodeEnabled;
  private final long dataNodePoolMaxBytes;
  private final int dataNodePacketBufferBytes;
  private final long dataNodeGetTimeoutMs;
  private final int dataNodeMaxQueuedPackets;
  private final int dataNodeGetsInFlight;
  private final boolean dataNodeAllowEmulatedGets;
  private final int dataNodeMaxRegionsPerBlock;
  private final long dataNodeUnboundConnectionTimeoutMs;
  private final boolean dataNodeTimers;

  // Both.
  private final String ucxTls;
  private final boolean ucxAllowTcp;
  private final boolean transferProtected;

  /** Why {@link #transferProtected(Configuration)} keeps writes on TCP. */
  public static final String TRANSFER_PROTECTED_REASON = "data-transfer"
      + " encryption (dfs.encrypt.data.transfer) or a SASL QOP of integrity"
      + " or privacy (dfs.data.transfer.protection) is configured, which"
      + " UCX does not give";

  public RdmaConf(Configuration conf) {
    clientEnabled = conf.getBoolean(DFS_CLIENT_RDMA_ENABLED_KEY,
        DFS_CLIENT_RDMA_ENABLED_DEFAULT);
    clientPoolMaxBytes = conf.getLong(DFS_CLIENT_RDMA_POOL_MAX_BYTES_KEY,
        DFS_CLIENT_RDMA_POOL_MAX_BYTES_DEFAULT);
    clientPoolSlabBytes = conf.getLong(DFS_CLIENT_RDMA_POOL_SLAB_BYTES_KEY,
        DFS_CLIENT_RDMA_POOL_SLAB_BYTES_DEFAULT);
    clientBufferWaitMs = conf.getLong(DFS_CLIENT_RDMA_BUFFER_WAIT_MS_KEY,
        DFS_CLIENT_RDMA_BUFFER_WAIT_MS_DEFAULT);
    clientConnectTimeoutMs = conf.getLong(
        DFS_CLIENT_RDMA_CONNECT_TIMEOUT_MS_KEY,
        DFS_CLIENT_RDMA_CONNECT_TIMEOUT_MS_DEFAULT);
    clientUnreachableRetryMs = conf.getLong(
        DFS_CLIENT_RDMA_UNREACHABLE_RETRY_MS_KEY,
        DFS_CLIENT_RDMA_UNREACHABLE_RETRY_MS_DEFAULT);
    clientTimers = conf.getBoolean(DFS_CLIENT_RDMA_PACKET_TIMERS_ENABLED_KEY,
        DFS_CLIENT_RDMA_PACKET_TIMERS_ENABLED_DEFAULT);
    String mode = conf.getTrimmed(DFS_CLIENT_RDMA_DISTRIBUTION_KEY,
        DFS_CLIENT_RDMA_DISTRIBUTION_DEFAULT);
    DistributionMode parsed = DistributionMode.parse(mode);
    if (parsed == null) {
      LogOnce.warn("distribution " + mode, "hdfs-rdma: "
          + DFS_CLIENT_RDMA_DISTRIBUTION_KEY + "=" + mode + " is none of"
          + " auto, fan-out, chain, hybrid, tcp; using auto");
      parsed = DistributionMode.AUTO;
    }
    distribution = parsed;
    int feeders = conf.getInt(DFS_CLIENT_RDMA_HYBRID_FEEDERS_KEY,
        DFS_CLIENT_RDMA_HYBRID_FEEDERS_DEFAULT);
    if (feeders < 1 || feeders > WriteRequest.MAX_FEEDERS) {
      LogOnce.warn("hybrid-feeders " + feeders, "hdfs-rdma: "
          + DFS_CLIENT_RDMA_HYBRID_FEEDERS_KEY + "=" + feeders + " is outside"
          + " 1.." + WriteRequest.MAX_FEEDERS + "; using "
          + DFS_CLIENT_RDMA_HYBRID_FEEDERS_DEFAULT);
      feeders = DFS_CLIENT_RDMA_HYBRID_FEEDERS_DEFAULT;
    }
    hybridFeeders = feeders;

    dataNodeEnabled = conf.getBoolean(DFS_DATANODE_RDMA_ENABLED_KEY,
        DFS_DATANODE_RDMA_ENABLED_DEFAULT);
    dataNodePoolMaxBytes = conf.getLong(DFS_DATANODE_RDMA_POOL_MAX_BYTES_KEY,
        DFS_DATANODE_RDMA_POOL_MAX_BYTES_DEFAULT);
    dataNodePacketBufferBytes = conf.getInt(
        DFS_DATANODE_RDMA_PACKET_BUFFER_BYTES_KEY,
        DFS_DATANODE_RDMA_PACKET_BUFFER_BYTES_DEFAULT);
    dataNodeGetTimeoutMs = conf.getLong(DFS_DATANODE_RDMA_GET_TIMEOUT_MS_KEY,
        DFS_DATANODE_RDMA_GET_TIMEOUT_MS_DEFAULT);
    dataNodeMaxQueuedPackets = conf.getInt(
        DFS_DATANODE_RDMA_MAX_QUEUED_PACKETS_KEY,
        DFS_DATANODE_RDMA_MAX_QUEUED_PACKETS_DEFAULT);
    dataNodeGetsInFlight = Math.max(1, conf.getInt(
        DFS_DATANODE_RDMA_GETS_IN_FLIGHT_KEY,
        DFS_DATANODE_RDMA_GETS_IN_FLIGHT_DEFAULT));
    dataNodeAllowEmulatedGets = conf.getBoolean(
        DFS_DATANODE_RDMA_ALLOW_EMULATED_GETS_KEY,
        DFS_DATANODE_RDMA_ALLOW_EMULATED_GETS_DEFAULT);
    dataNodeMaxRegionsPerBlock = conf.getInt(
        DFS_DATANODE_RDMA_MAX_REGIONS_PER_BLOCK_KEY,
        DFS_DATANODE_RDMA_MAX_REGIONS_PER_BLOCK_DEFAULT);
    dataNodeUnboundConnectionTimeoutMs = conf.getLong(
        DFS_DATANODE_RDMA_UNBOUND_CONNECTION_TIMEOUT_MS_KEY,
        DFS_DATANODE_RDMA_UNBOUND_CONNECTION_TIMEOUT_MS_DEFAULT);
    dataNodeTimers = conf.getBoolean(
        DFS_DATANODE_RDMA_PACKET_TIMERS_ENABLED_KEY,
        DFS_DATANODE_RDMA_PACKET_TIMERS_ENABLED_DEFAULT);

    ucxTls = conf.getTrimmed(DFS_RDMA_UCX_TLS_KEY, DFS_RDMA_UCX_TLS_DEFAULT);
    ucxAllowTcp = conf.getBoolean(DFS_RDMA_UCX_ALLOW_TCP_KEY,
        DFS_RDMA_UCX_ALLOW_TCP_DEFAULT);
    transferProtected = transferProtected(conf);
  }

  /**
   * Whether {@code conf} asks Hadoop to encrypt or integrity-protect data
   * transfer: such writes stay on TCP, where Hadoop's SASL wraps them (UCX
   * moves the bytes unprotected). A QOP of authentication alone protects
   * no bytes, so it does not count.
   */
  public static boolean transferProtected(Configuration conf) {
    // The keys live in hadoop-hdfs (DFSConfigKeys) and hadoop-hdfs-client
    // (HdfsClientConfigKeys) of some releases only: by name here.
    String protection = conf.getTrimmed("dfs.data.transfer.protection", "");
    return conf.getBoolean("dfs.encrypt.data.transfer", false)
        || protection.contains("integrity") || protection.contains("privacy");
  }

  /** {@link #transferProtected(Configuration)} of the conf read. */
  public boolean transferProtected() {
    return transferProtected;
  }

  /** Whether a client with this configuration writes over UCX. */
  public boolean isClientEnabled() {
    return clientEnabled;
  }

  /** Whether a DataNode with this configuration serves UCX. */
  public boolean isDataNodeEnabled() {
    return dataNodeEnabled;
  }

  /** The largest packet (checksums and data) a DataNode takes over UCX. */
  public int maxPacketBytes() {
    return dataNodePacketBufferBytes;
  }

  public long getTimeoutMs() {
    return dataNodeGetTimeoutMs;
  }

  public int maxQueuedPackets() {
    return dataNodeMaxQueuedPackets;
  }

  public int getsInFlight() {
    return dataNodeGetsInFlight;
  }

  public int maxRegionsPerBlock() {
    return dataNodeMaxRegionsPerBlock;
  }

  public long connectTimeoutMs() {
    return clientConnectTimeoutMs;
  }

  public long unreachableRetryMs() {
    return clientUnreachableRetryMs;
  }

  public long bufferWaitMs() {
    return clientBufferWaitMs;
  }

  /** DataNodes a hybrid pipeline's client feeds itself. */
  public int hybridFeeders() {
    return hybridFeeders;
  }

  /** How the client distributes pipelines (dfs.client.rdma.distribution). */
  public DistributionMode distribution() {
    return distribution;
  }

  /** UCX_TLS of the UCX context; empty: UCX chooses. */
  public String ucxTls() {
    return ucxTls;
  }

  /** Whether UCX's tcp transport may run (dfs.rdma.ucx.allow-tcp). */
  public boolean ucxAllowTcp() {
    return ucxAllowTcp;
  }

  /** Most bytes the client's packet pool registers. */
  public long clientPoolMaxBytes() {
    return clientPoolMaxBytes;
  }

  /** Bytes the client's packet pool registers at a time. */
  public long clientPoolSlabBytes() {
    return clientPoolSlabBytes;
  }

  /** Whether client packet phases are timed. */
  public boolean clientTimers() {
    return clientTimers;
  }

  /** Most bytes a DataNode's landing pool registers. */
  public long dataNodePoolMaxBytes() {
    return dataNodePoolMaxBytes;
  }

  /** Whether a DataNode serves gets UCX emulates over tcp. */
  public boolean dataNodeAllowEmulatedGets() {
    return dataNodeAllowEmulatedGets;
  }

  /** How long a client connection that opened no block is kept. */
  public long dataNodeUnboundConnectionTimeoutMs() {
    return dataNodeUnboundConnectionTimeoutMs;
  }

  /** Whether DataNode packet phases are timed. */
  public boolean dataNodeTimers() {
    return dataNodeTimers;
  }
}
