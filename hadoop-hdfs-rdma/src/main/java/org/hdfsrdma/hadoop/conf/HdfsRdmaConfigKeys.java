package org.hdfsrdma.hadoop.conf;

/**
 * Configuration keys of hdfs-rdma, named and paired like Hadoop's own
 * (KEY and KEY_DEFAULT). Each is described in hdfs-rdma-default.xml, which
 * this jar carries.
 */
public final class HdfsRdmaConfigKeys {

  private HdfsRdmaConfigKeys() {
  }

  /** The resource with every key's default and description. */
  public static final String DEFAULT_RESOURCE = "hdfs-rdma-default.xml";

  // Client.
  public static final String DFS_CLIENT_RDMA_ENABLED_KEY =
      "dfs.client.rdma.enabled";
  public static final boolean DFS_CLIENT_RDMA_ENABLED_DEFAULT = false;
  public static final String DFS_CLIENT_RDMA_POOL_MAX_BYTES_KEY =
      "dfs.client.rdma.buffer-pool.max-bytes";
  public static final long DFS_CLIENT_RDMA_POOL_MAX_BYTES_DEFAULT =
      128L * 1024 * 1024;
  public static final String DFS_CLIENT_RDMA_POOL_SLAB_BYTES_KEY =
      "dfs.client.rdma.buffer-pool.slab-bytes";
  public static final long DFS_CLIENT_RDMA_POOL_SLAB_BYTES_DEFAULT =
      8L * 1024 * 1024;
  public static final String DFS_CLIENT_RDMA_BUFFER_WAIT_MS_KEY =
      "dfs.client.rdma.buffer-wait-ms";
  public static final long DFS_CLIENT_RDMA_BUFFER_WAIT_MS_DEFAULT = 100;
  public static final String DFS_CLIENT_RDMA_CONNECT_TIMEOUT_MS_KEY =
      "dfs.client.rdma.connect-timeout-ms";
  public static final long DFS_CLIENT_RDMA_CONNECT_TIMEOUT_MS_DEFAULT = 5000;
  public static final String DFS_CLIENT_RDMA_UNREACHABLE_RETRY_MS_KEY =
      "dfs.client.rdma.unreachable-retry-ms";
  public static final long DFS_CLIENT_RDMA_UNREACHABLE_RETRY_MS_DEFAULT =
      10L * 60 * 1000;
  public static final String DFS_CLIENT_RDMA_DISTRIBUTION_KEY =
      "dfs.client.rdma.distribution";
  public static final String DFS_CLIENT_RDMA_DISTRIBUTION_DEFAULT = "auto";
  public static final String DFS_CLIENT_RDMA_HYBRID_FEEDERS_KEY =
      "dfs.client.rdma.hybrid-feeders";
  public static final int DFS_CLIENT_RDMA_HYBRID_FEEDERS_DEFAULT = 2;
  public static final String DFS_CLIENT_RDMA_WORKERS_KEY =
      "dfs.client.rdma.workers";
  public static final int DFS_CLIENT_RDMA_WORKERS_DEFAULT = 1;
  public static final String DFS_CLIENT_RDMA_DEFER_START_KEY =
      "dfs.client.rdma.defer-start";
  public static final boolean DFS_CLIENT_RDMA_DEFER_START_DEFAULT = true;
  public static final String DFS_CLIENT_RDMA_SOCKET_DESCRIPTORS_KEY =
      "dfs.client.rdma.socket-descriptors";
  public static final boolean DFS_CLIENT_RDMA_SOCKET_DESCRIPTORS_DEFAULT =
      true;
  public static final String DFS_CLIENT_RDMA_PACKET_TIMERS_ENABLED_KEY =
      "dfs.client.rdma.packet-timers.enabled";
  public static final boolean DFS_CLIENT_RDMA_PACKET_TIMERS_ENABLED_DEFAULT =
      false;

  // DataNode.
  public static final String DFS_DATANODE_RDMA_ENABLED_KEY =
      "dfs.datanode.rdma.enabled";
  public static final boolean DFS_DATANODE_RDMA_ENABLED_DEFAULT = false;
  public static final String DFS_DATANODE_RDMA_POOL_MAX_BYTES_KEY =
      "dfs.datanode.rdma.buffer-pool.max-bytes";
  public static final long DFS_DATANODE_RDMA_POOL_MAX_BYTES_DEFAULT =
      64L * 1024 * 1024;
  public static final String DFS_DATANODE_RDMA_PACKET_BUFFER_BYTES_KEY =
      "dfs.datanode.rdma.packet-buffer-bytes";
  public static final int DFS_DATANODE_RDMA_PACKET_BUFFER_BYTES_DEFAULT =
      64 * 1024;
  public static final String DFS_DATANODE_RDMA_GET_TIMEOUT_MS_KEY =
      "dfs.datanode.rdma.get-timeout-ms";
  public static final long DFS_DATANODE_RDMA_GET_TIMEOUT_MS_DEFAULT = 60000;
  public static final String DFS_DATANODE_RDMA_MAX_QUEUED_PACKETS_KEY =
      "dfs.datanode.rdma.max-queued-packets";
  public static final int DFS_DATANODE_RDMA_MAX_QUEUED_PACKETS_DEFAULT = 128;
  public static final String DFS_DATANODE_RDMA_GETS_IN_FLIGHT_KEY =
      "dfs.datanode.rdma.gets-in-flight";
  public static final int DFS_DATANODE_RDMA_GETS_IN_FLIGHT_DEFAULT = 4;
  public static final String DFS_DATANODE_RDMA_ALLOW_EMULATED_GETS_KEY =
      "dfs.datanode.rdma.allow-emulated-gets";
  public static final boolean DFS_DATANODE_RDMA_ALLOW_EMULATED_GETS_DEFAULT =
      false;
  public static final String DFS_DATANODE_RDMA_MAX_REGIONS_PER_BLOCK_KEY =
      "dfs.datanode.rdma.max-regions-per-block";
  public static final int DFS_DATANODE_RDMA_MAX_REGIONS_PER_BLOCK_DEFAULT =
      64;
  public static final String DFS_DATANODE_RDMA_UNBOUND_CONNECTION_TIMEOUT_MS_KEY
      = "dfs.datanode.rdma.unbound-connection-timeout-ms";
  public static final long
      DFS_DATANODE_RDMA_UNBOUND_CONNECTION_TIMEOUT_MS_DEFAULT = 30_000;
  public static final String DFS_DATANODE_RDMA_PACKET_TIMERS_ENABLED_KEY =
      "dfs.datanode.rdma.packet-timers.enabled";
  public static final boolean DFS_DATANODE_RDMA_PACKET_TIMERS_ENABLED_DEFAULT =
      false;

  // Both.
  /** UCX_TLS for this JVM's UCX context; empty: UCX chooses. */
  public static final String DFS_RDMA_UCX_TLS_KEY = "dfs.rdma.ucx.tls";
  public static final String DFS_RDMA_UCX_TLS_DEFAULT = "^tcp";
  // Reads (DESIGN.md section 9).
  public static final String DFS_CLIENT_RDMA_READ_ENABLED_KEY =
      "dfs.client.rdma.read.enabled";
  public static final boolean DFS_CLIENT_RDMA_READ_ENABLED_DEFAULT = false;
  public static final String DFS_CLIENT_RDMA_READ_MIN_BYTES_KEY =
      "dfs.client.rdma.read.min-bytes";
  public static final long DFS_CLIENT_RDMA_READ_MIN_BYTES_DEFAULT =
      1024 * 1024;
  public static final String DFS_DATANODE_RDMA_READ_ENABLED_KEY =
      "dfs.datanode.rdma.read.enabled";
  public static final boolean DFS_DATANODE_RDMA_READ_ENABLED_DEFAULT = true;
  public static final String DFS_DATANODE_RDMA_READ_BUFFER_BYTES_KEY =
      "dfs.datanode.rdma.read.buffer-bytes";
  public static final int DFS_DATANODE_RDMA_READ_BUFFER_BYTES_DEFAULT =
      1024 * 1024;
  public static final String DFS_DATANODE_RDMA_READ_USER_BUFFERS_KEY =
      "dfs.datanode.rdma.read.user-buffers";
  public static final int DFS_DATANODE_RDMA_READ_USER_BUFFERS_DEFAULT = 16;
  public static final String DFS_DATANODE_RDMA_READ_MAX_BUFFERS_KEY =
      "dfs.datanode.rdma.read.max-buffers";
  public static final int DFS_DATANODE_RDMA_READ_MAX_BUFFERS_DEFAULT = 64;

  /**
   * Whether UCX may use its tcp transport, whose listening socket takes
   * connections from any host: for trusted networks and tests only.
   */
  public static final String DFS_RDMA_UCX_ALLOW_TCP_KEY =
      "dfs.rdma.ucx.allow-tcp";
  public static final boolean DFS_RDMA_UCX_ALLOW_TCP_DEFAULT = false;
}
