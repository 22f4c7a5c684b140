package org.hdfsrdma.hadoop.runtime;

import java.util.Set;

import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.conf.RdmaConf;

/**
 * Which kinds of UCX transport this JVM's context has (from its resources,
 * {@code transport/device}): RDMA hardware, shared memory, tcp. Decides
 * which peers a get can reach one-sided ({@link Reach}) and whether UCX
 * may start at all.
 */
public final class UcxTransports {

  private final boolean networkRdma;
  private final boolean sharedMemory;
  private final boolean tcp;

  public UcxTransports(Set<String> resources) {
    this.networkRdma = hasNetworkRdma(resources);
    this.sharedMemory = hasTransport(resources, "sysv/", "posix/");
    this.tcp = hasTransport(resources, "tcp/");
  }

  /** For tests: transports with the given kinds. */
  public UcxTransports(boolean networkRdma, boolean sharedMemory,
      boolean tcp) {
    this.networkRdma = networkRdma;
    this.sharedMemory = sharedMemory;
    this.tcp = tcp;
  }

  /** UCX reaches other hosts with hardware RMA. */
  public boolean networkRdma() {
    return networkRdma;
  }

  /** UCX has a shared-memory transport (same-host peers). */
  public boolean sharedMemory() {
    return sharedMemory;
  }

  /** UCX runs its tcp transport: other hosts reachable, gets emulated. */
  public boolean tcp() {
    return tcp;
  }

  private static boolean hasTransport(Set<String> resources,
      String... prefixes) {
    for (String r : resources) {
      for (String p : prefixes) {
        if (r.startsWith(p)) {
          return true;
        }
      }
    }
    return false;
  }

  /** Whether UCX found RDMA hardware (InfiniBand/RoCE transports). */
  static boolean hasNetworkRdma(Set<String> resources) {
    for (String r : resources) {
      if (r.matches("(rc|dc|ud)_(verbs|mlx5)/.*")) {
        return true;
      }
    }
    return false;
  }

  /**
   * Why this JVM must not start UCX with these transports, or null. UCX's
   * tcp transport listens on a port any host can connect to, and UCX 1.13
   * dies on malformed input there (a DataNode died within four crafted
   * connections: DESIGN.md, "Threat model"); it takes an operator's
   * explicit word that the network is trusted.
   */
  static String tcpRefusal(Set<String> resources, RdmaConf conf) {
    if (conf.ucxAllowTcp()) {
      return null;
    }
    for (String r : resources) {
      if (r.startsWith("tcp/")) {
        return "UCX's tcp transport (" + r + ") is among the transports of "
            + HdfsRdmaConfigKeys.DFS_RDMA_UCX_TLS_KEY + "=" + conf.ucxTls()
            + (conf.ucxTls().isEmpty() ? " (UCX_TLS or all)" : "")
            + ": it would accept connections from any host, and UCX dies on"
            + " malformed input there. Exclude tcp (the default ^tcp), or set "
            + HdfsRdmaConfigKeys.DFS_RDMA_UCX_ALLOW_TCP_KEY
            + "=true on a trusted network";
      }
    }
    return null;
  }
}
