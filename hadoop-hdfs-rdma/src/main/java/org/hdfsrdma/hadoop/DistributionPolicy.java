package org.hdfsrdma.hadoop;

import java.io.File;
import java.util.Locale;
import java.util.Set;

import org.hdfsrdma.hadoop.protocol.WriteRequest;
import org.hdfsrdma.ucx.HostIdentity;
import org.hdfsrdma.ucx.TransportReport;

/**
 * Which pipelines a client distributes by UCX get, and which it leaves on
 * Hadoop's TCP pipeline ({@code dfs.client.rdma.distribution}).
 *
 * <p>Fan-out by get wins only where a get costs the client nothing: same
 * host shared memory, or RDMA lanes (rc, dc) whose NIC serves the get.
 * Over UCX's tcp transport (and ud, which has no RMA) UCX 1.13 emulates a
 * get with the client's CPU sending every byte to every DataNode: the
 * client's link carries each byte once per replica, against once for
 * stock's chain. {@link Mode#AUTO} therefore fans a pipeline out only when
 * every DataNode's get is one-sided, judged from the lanes UCX reports for
 * the connection, not from configuration.
 *
 * <p>Decided once per pipeline set-up, never per packet.
 */
public final class DistributionPolicy {

  /** The setting of {@code dfs.client.rdma.distribution}. */
  public enum Mode {
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

    /** The mode {@code value} names, or null when it names none. */
    static Mode parse(String value) {
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

  /** How a client's UCX reaches one DataNode. */
  public enum Reach {
    /** Same host and user: the DataNode reads the client's memory. */
    SHARED_MEMORY,
    /** Gets served by hardware (RDMA lanes): the client's CPU is idle. */
    ONE_SIDED,
    /** Gets emulated by the client's CPU (UCX's tcp, or no RMA lane). */
    EMULATED,
    /** No UCX transport between the two. */
    UNREACHABLE
  }

  /** What became of one pipeline, as counted in the metrics. */
  public enum Outcome {
    /** Every DataNode fetched by get from the client. */
    FAN_OUT("pipelines-fan-out"),
    /** Every DataNode fetched by get, each from the one before it. */
    CHAIN("pipelines-chain"),
    /** The first m DataNodes fetched from the client, the rest from them. */
    HYBRID("pipelines-hybrid"),
    /** TCP, because some DataNode's gets would have been emulated. */
    TCP_EMULATED_GETS("pipelines-tcp-emulated-gets"),
    /** TCP, because UCX could not reach some DataNode. */
    TCP_UNREACHABLE("pipelines-tcp-unreachable");

    private final String label;

    Outcome(String label) {
      this.label = label;
    }

    /** The name in the totals line. */
    public String label() {
      return label;
    }
  }

  /** Where Linux lists RDMA devices (InfiniBand, RoCE, iWARP). */
  private static final File RDMA_DEVICES = new File("/sys/class/infiniband");

  private DistributionPolicy() {
  }

  /**
   * The reach of a DataNode that committed with {@code hostId} and
   * {@code uid}, as far as it is known before connecting: shared memory
   * when both share host and user; otherwise what the runtime's transports
   * allow, confirmed by {@link #reachOf} once connected.
   */
  public static Reach reachBeforeConnect(UcxRuntime runtime, byte[] hostId,
      int uid) {
    if (runtime.hasSharedMemory()
        && HostIdentity.canShareMemoryWith(hostId, uid)) {
      return Reach.SHARED_MEMORY;
    }
    if (runtime.hasNetworkRdma()) {
      return Reach.ONE_SIDED;
    }
    return runtime.hasTcp() ? Reach.EMULATED : Reach.UNREACHABLE;
  }

  /**
   * The reach of an open connection, from the lanes UCX chose for it: one
   * sided when every RMA lane is a hardware RDMA transport or a shared
   * memory one; emulated when there is none, or one is tcp or ud.
   */
  public static Reach reachOf(TransportReport report) {
    Set<String> rma = report.rmaTransports();
    if (rma.isEmpty()) {
      return Reach.EMULATED;
    }
    for (String t : rma) {
      if (!isOneSided(t)) {
        return Reach.EMULATED;
      }
    }
    return Reach.ONE_SIDED;
  }

  /** Whether UCX transport {@code name} serves gets without the peer CPU. */
  static boolean isOneSided(String name) {
    return name.startsWith("rc") || name.startsWith("dc")
        || name.equals("cma") || name.equals("knem") || name.equals("xpmem")
        || name.equals("posix") || name.equals("sysv");
  }

  /** Whether a pipeline may fetch by get from a DataNode of this reach. */
  public static boolean fetchesByGet(Mode mode, Reach reach) {
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
  public static int feeders(Mode mode, int nodes, int hybridFeeders) {
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

  /** What a pipeline fed by {@code feeders} DataNodes counts as. */
  public static Outcome outcomeOf(int feeders) {
    return feeders == 0 ? Outcome.FAN_OUT
        : feeders == 1 ? Outcome.CHAIN : Outcome.HYBRID;
  }

  /** Whether this host has an RDMA device (what UCX's rc/dc/ud would use). */
  public static boolean rdmaDevicesPresent() {
    String[] devices = RDMA_DEVICES.list();
    return devices != null && devices.length > 0;
  }

  /**
   * Why a writer with {@code conf} should not start UCX in this JVM, or
   * null when it should. Starting UCX costs a client JVM about 150 ms of
   * CPU (measured: class and library loading, context, worker), which an
   * {@code hdfs dfs -put} of a small file pays in full; with no RDMA device
   * on the host and no DataNode serving UCX on it, no get could be
   * one-sided, so in {@link Mode#AUTO} every pipeline would stay on TCP
   * anyway.
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
    if (rdmaDevicesPresent() || LocalDataNodeMarker.anyAlive()) {
      return null;
    }
    return "this host has no RDMA device (" + RDMA_DEVICES + " is empty) and"
        + " no DataNode serving UCX runs on it as this user, so no get could"
        + " be one-sided";
  }
}
