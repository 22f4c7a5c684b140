package org.hdfsrdma.hadoop.conf;

import static org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys.*;

import java.util.List;

import org.apache.hadoop.conf.Configuration;

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
  private final boolean clientDeferStart;
  private final boolean clientSocketDescriptors;
  private final DistributionMode distribution;
  private final int hybridFeeders;
  private final int clientWorkers;

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
  private final boolean clientReads;
  private final long clientReadMinBytes;
  private final boolean dataNodeReads;
  private final int dataNodeReadBufferBytes;
  private final int dataNodeReadUserBuffers;
  private final int dataNodeReadMaxBuffers;

  // Both.
  private final String ucxTls;
  private final boolean ucxAllowTcp;
  private final boolean transferProtected;
  private final List<String> problems;

  /** Why {@link #transferProtected(Configuration)} keeps writes on TCP. */
  public static final String TRANSFER_PROTECTED_REASON = "data-transfer"
      + " encryption (dfs.encrypt.data.transfer) or a SASL QOP of integrity"
      + " or privacy (dfs.data.transfer.protection) is configured, which"
      + " UCX does not give";

  /**
   * Reads {@code conf}, checking every value against its range
   * ({@link RdmaSettings}): a value out of range or unparseable, or an
   * unknown key of hdfs-rdma's family, is warned about once and the
   * default used. Never throws on a setting: a bad one must not fail a
   * write or stop a daemon.
   */
  public RdmaConf(Configuration conf) {
    RdmaSettings.Reader r = new RdmaSettings.Reader(conf);
    clientEnabled = r.getBoolean(DFS_CLIENT_RDMA_ENABLED_KEY,
        DFS_CLIENT_RDMA_ENABLED_DEFAULT);
    long poolMax = r.getLong(DFS_CLIENT_RDMA_POOL_MAX_BYTES_KEY,
        DFS_CLIENT_RDMA_POOL_MAX_BYTES_DEFAULT);
    long slab = r.getLong(DFS_CLIENT_RDMA_POOL_SLAB_BYTES_KEY,
        DFS_CLIENT_RDMA_POOL_SLAB_BYTES_DEFAULT);
    if (slab > poolMax) {
      r.problem(DFS_CLIENT_RDMA_POOL_SLAB_BYTES_KEY + "=" + slab + " > "
          + poolMax, DFS_CLIENT_RDMA_POOL_SLAB_BYTES_KEY + "=" + slab
          + " is more than " + DFS_CLIENT_RDMA_POOL_MAX_BYTES_KEY + "="
          + poolMax + " (a slab is registered whole, so the pool would pass"
          + " its cap); using " + poolMax);
      slab = poolMax;
    }
    clientPoolMaxBytes = poolMax;
    clientPoolSlabBytes = slab;
    clientBufferWaitMs = r.getLong(DFS_CLIENT_RDMA_BUFFER_WAIT_MS_KEY,
        DFS_CLIENT_RDMA_BUFFER_WAIT_MS_DEFAULT);
    clientConnectTimeoutMs = r.getLong(
        DFS_CLIENT_RDMA_CONNECT_TIMEOUT_MS_KEY,
        DFS_CLIENT_RDMA_CONNECT_TIMEOUT_MS_DEFAULT);
    clientUnreachableRetryMs = r.getLong(
        DFS_CLIENT_RDMA_UNREACHABLE_RETRY_MS_KEY,
        DFS_CLIENT_RDMA_UNREACHABLE_RETRY_MS_DEFAULT);
    clientTimers = r.getBoolean(DFS_CLIENT_RDMA_PACKET_TIMERS_ENABLED_KEY,
        DFS_CLIENT_RDMA_PACKET_TIMERS_ENABLED_DEFAULT);
    clientDeferStart = r.getBoolean(DFS_CLIENT_RDMA_DEFER_START_KEY,
        DFS_CLIENT_RDMA_DEFER_START_DEFAULT);
    clientSocketDescriptors = r.getBoolean(
        DFS_CLIENT_RDMA_SOCKET_DESCRIPTORS_KEY,
        DFS_CLIENT_RDMA_SOCKET_DESCRIPTORS_DEFAULT);
    String mode = conf.getTrimmed(DFS_CLIENT_RDMA_DISTRIBUTION_KEY,
        DFS_CLIENT_RDMA_DISTRIBUTION_DEFAULT);
    DistributionMode parsed = DistributionMode.parse(mode);
    if (parsed == null) {
      r.noneOf(DFS_CLIENT_RDMA_DISTRIBUTION_KEY, DistributionMode.NAMES,
          "how the client distributes pipelines",
          DFS_CLIENT_RDMA_DISTRIBUTION_DEFAULT);
      parsed = DistributionMode.parse(DFS_CLIENT_RDMA_DISTRIBUTION_DEFAULT);
    }
    distribution = parsed;
    hybridFeeders = r.getInt(DFS_CLIENT_RDMA_HYBRID_FEEDERS_KEY,
        DFS_CLIENT_RDMA_HYBRID_FEEDERS_DEFAULT);
    clientWorkers = r.getInt(DFS_CLIENT_RDMA_WORKERS_KEY,
        DFS_CLIENT_RDMA_WORKERS_DEFAULT);

    dataNodeEnabled = r.getBoolean(DFS_DATANODE_RDMA_ENABLED_KEY,
        DFS_DATANODE_RDMA_ENABLED_DEFAULT);
    dataNodePoolMaxBytes = r.getLong(DFS_DATANODE_RDMA_POOL_MAX_BYTES_KEY,
        DFS_DATANODE_RDMA_POOL_MAX_BYTES_DEFAULT);
    dataNodePacketBufferBytes = r.getInt(
        DFS_DATANODE_RDMA_PACKET_BUFFER_BYTES_KEY,
        DFS_DATANODE_RDMA_PACKET_BUFFER_BYTES_DEFAULT);
    dataNodeGetTimeoutMs = r.getLong(DFS_DATANODE_RDMA_GET_TIMEOUT_MS_KEY,
        DFS_DATANODE_RDMA_GET_TIMEOUT_MS_DEFAULT);
    dataNodeMaxQueuedPackets = r.getInt(
        DFS_DATANODE_RDMA_MAX_QUEUED_PACKETS_KEY,
        DFS_DATANODE_RDMA_MAX_QUEUED_PACKETS_DEFAULT);
    int gets = r.getInt(DFS_DATANODE_RDMA_GETS_IN_FLIGHT_KEY,
        DFS_DATANODE_RDMA_GETS_IN_FLIGHT_DEFAULT);
    long landing = landingBuffers(dataNodePacketBufferBytes,
        dataNodePoolMaxBytes);
    if (gets > landing) {
      // A block leases a landing buffer per get before it frees one: with
      // fewer in the pool it waits for its own and fails at the timeout.
      r.problem(DFS_DATANODE_RDMA_GETS_IN_FLIGHT_KEY + "=" + gets + " > "
          + landing, DFS_DATANODE_RDMA_GETS_IN_FLIGHT_KEY + "=" + gets
          + " is more than the " + landing + " landing buffers of "
          + DFS_DATANODE_RDMA_PACKET_BUFFER_BYTES_KEY + "="
          + dataNodePacketBufferBytes + " that "
          + DFS_DATANODE_RDMA_POOL_MAX_BYTES_KEY + "=" + dataNodePoolMaxBytes
          + " holds (a block would wait for its own buffers and fail);"
          + " using " + landing);
      gets = (int) landing;
    }
    dataNodeGetsInFlight = gets;
    clientReads = r.getBoolean(DFS_CLIENT_RDMA_READ_ENABLED_KEY,
        DFS_CLIENT_RDMA_READ_ENABLED_DEFAULT);
    clientReadMinBytes = r.getLong(DFS_CLIENT_RDMA_READ_MIN_BYTES_KEY,
        DFS_CLIENT_RDMA_READ_MIN_BYTES_DEFAULT);
    dataNodeReads = r.getBoolean(DFS_DATANODE_RDMA_READ_ENABLED_KEY,
        DFS_DATANODE_RDMA_READ_ENABLED_DEFAULT);
    dataNodeReadBufferBytes = r.getInt(
        DFS_DATANODE_RDMA_READ_BUFFER_BYTES_KEY,
        DFS_DATANODE_RDMA_READ_BUFFER_BYTES_DEFAULT);
    int readMax = r.getInt(DFS_DATANODE_RDMA_READ_MAX_BUFFERS_KEY,
        DFS_DATANODE_RDMA_READ_MAX_BUFFERS_DEFAULT);
    int readUser = r.getInt(DFS_DATANODE_RDMA_READ_USER_BUFFERS_KEY,
        DFS_DATANODE_RDMA_READ_USER_BUFFERS_DEFAULT);
    if (readUser > readMax) {
      r.problem(DFS_DATANODE_RDMA_READ_USER_BUFFERS_KEY + " > "
          + DFS_DATANODE_RDMA_READ_MAX_BUFFERS_KEY,
          DFS_DATANODE_RDMA_READ_USER_BUFFERS_KEY + "=" + readUser
          + " is more than " + DFS_DATANODE_RDMA_READ_MAX_BUFFERS_KEY + "="
          + readMax + " (one user may not hold more than all); using "
          + readMax);
      readUser = readMax;
    }
    dataNodeReadUserBuffers = readUser;
    dataNodeReadMaxBuffers = readMax;
    dataNodeAllowEmulatedGets = r.getBoolean(
        DFS_DATANODE_RDMA_ALLOW_EMULATED_GETS_KEY,
        DFS_DATANODE_RDMA_ALLOW_EMULATED_GETS_DEFAULT);
    dataNodeMaxRegionsPerBlock = r.getInt(
        DFS_DATANODE_RDMA_MAX_REGIONS_PER_BLOCK_KEY,
        DFS_DATANODE_RDMA_MAX_REGIONS_PER_BLOCK_DEFAULT);
    if (clientEnabled) {
      r.checkSlabsAgainstRegions(clientPoolMaxBytes, clientPoolSlabBytes,
          dataNodeMaxRegionsPerBlock);
    }
    dataNodeUnboundConnectionTimeoutMs = r.getLong(
        DFS_DATANODE_RDMA_UNBOUND_CONNECTION_TIMEOUT_MS_KEY,
        DFS_DATANODE_RDMA_UNBOUND_CONNECTION_TIMEOUT_MS_DEFAULT);
    dataNodeTimers = r.getBoolean(
        DFS_DATANODE_RDMA_PACKET_TIMERS_ENABLED_KEY,
        DFS_DATANODE_RDMA_PACKET_TIMERS_ENABLED_DEFAULT);

    ucxTls = conf.getTrimmed(DFS_RDMA_UCX_TLS_KEY, DFS_RDMA_UCX_TLS_DEFAULT);
    ucxAllowTcp = r.getBoolean(DFS_RDMA_UCX_ALLOW_TCP_KEY,
        DFS_RDMA_UCX_ALLOW_TCP_DEFAULT);
    transferProtected = transferProtected(conf);
    problems = r.logProblems();
    UnknownKeys.warnUnknownKeys(conf);
  }

  /**
   * Landing buffers of {@code bufferBytes} a pool capped at
   * {@code capBytes} holds, rounded as BufferPools rounds them: slabs of
   * {@link RdmaSettings#LANDING_SLAB_BYTES} in whole buffers (one at
   * least), the cap in whole slabs (one at least).
   */
  public static long landingBuffers(long bufferBytes, long capBytes) {
    long slab = Math.max(bufferBytes,
        RdmaSettings.LANDING_SLAB_BYTES / bufferBytes * bufferBytes);
    long cap = Math.max(slab, capBytes / slab * slab);
    return cap / bufferBytes;
  }

  /**
   * What was wrong with the settings read (out of range, unparseable, at
   * odds with another), one message each, as logged; empty when nothing.
   */
  public List<String> problems() {
    return problems;
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

  /**
   * Whether a client with {@code conf} asks for the UCX path to write or to
   * read ({@code dfs.client.rdma.enabled}, {@code
   * dfs.client.rdma.read.enabled}), before anything decides whether it may.
   */
  public static boolean clientAsksForUcx(Configuration conf) {
    return conf.getBoolean(DFS_CLIENT_RDMA_ENABLED_KEY,
        DFS_CLIENT_RDMA_ENABLED_DEFAULT)
        || conf.getBoolean(DFS_CLIENT_RDMA_READ_ENABLED_KEY,
        DFS_CLIENT_RDMA_READ_ENABLED_DEFAULT);
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

  /**
   * UCX workers ("lanes") this JVM's client streams send on
   * (dfs.client.rdma.workers); JVM-wide, so the runtime's first
   * configuration decides.
   */
  public int clientWorkers() {
    return clientWorkers;
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

  /** Whether a JVM's first block waits for UCX over TCP (see key). */
  public boolean clientDeferStart() {
    return clientDeferStart;
  }

  /** dfs.client.rdma.socket-descriptors: see hdfs-rdma-default.xml. */
  public boolean clientSocketDescriptors() {
    return clientSocketDescriptors;
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

  /** Whether the client offers to read blocks over UCX. */
  public boolean clientReads() {
    return clientReads;
  }

  /**
   * The shortest block read a client offers UCX, as this configuration
   * sets it (a client reads it per read, from its own configuration).
   */
  public long clientReadMinBytes() {
    return clientReadMinBytes;
  }

  /** Whether a DataNode serves reads over UCX when offered. */
  public boolean dataNodeReads() {
    return dataNodeReads;
  }

  /** Bytes of one buffer a DataNode serves a read from. */
  public int dataNodeReadBufferBytes() {
    return dataNodeReadBufferBytes;
  }

  /** Read buffers one user's reads may hold at a DataNode. */
  public int dataNodeReadUserBuffers() {
    return dataNodeReadUserBuffers;
  }

  /** Read buffers all reads of a DataNode may hold. */
  public int dataNodeReadMaxBuffers() {
    return dataNodeReadMaxBuffers;
  }
}
