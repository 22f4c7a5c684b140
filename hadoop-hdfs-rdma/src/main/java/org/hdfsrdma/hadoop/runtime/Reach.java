package org.hdfsrdma.hadoop.runtime;

import java.io.File;
import java.util.Set;

import org.hdfsrdma.ucx.HostIdentity;
import org.hdfsrdma.ucx.TransportReport;

/**
 * How this JVM's UCX reaches a peer, and so who does the work of a get
 * there: the peer's memory read directly (same host and user), a NIC
 * (RDMA lanes), or the exposer's CPU (a get UCX emulates over tcp).
 */
public enum Reach {
  /** Same host and user: the DataNode reads the client's memory. */
  SHARED_MEMORY,
  /** Gets served by hardware (RDMA lanes): the exposer's CPU is idle. */
  ONE_SIDED,
  /** Gets emulated by the exposer's CPU (UCX's tcp, or no RMA lane). */
  EMULATED,
  /** No UCX transport between the two. */
  UNREACHABLE;

  /** Where Linux lists RDMA devices (InfiniBand, RoCE, iWARP). */
  private static final File RDMA_DEVICES = new File("/sys/class/infiniband");

  /**
   * The reach of a peer that committed with {@code hostId} and {@code uid},
   * as far as it is known before connecting: shared memory when both share
   * host and user; otherwise what {@code transports} allow, confirmed by
   * {@link #of} once connected.
   */
  public static Reach before(UcxTransports transports, byte[] hostId,
      int uid) {
    if (transports.sharedMemory()
        && HostIdentity.canShareMemoryWith(hostId, uid)) {
      return SHARED_MEMORY;
    }
    if (transports.networkRdma()) {
      return ONE_SIDED;
    }
    return transports.tcp() ? EMULATED : UNREACHABLE;
  }

  /**
   * The reach of an open connection, from the lanes UCX chose for it: one
   * sided when every RMA lane is a hardware RDMA transport or a shared
   * memory one; emulated when there is none, or one is tcp or ud.
   */
  public static Reach of(TransportReport report) {
    Set<String> rma = report.rmaTransports();
    if (rma.isEmpty()) {
      return EMULATED;
    }
    for (String t : rma) {
      if (!isOneSided(t)) {
        return EMULATED;
      }
    }
    return ONE_SIDED;
  }

  /**
   * Why a peer that {@link #before} finds on this host and user must still
   * not exchange messages with this JVM through UCX's shared memory, or
   * null: its UCX release or shared-memory settings ({@code peerProfile},
   * from its commit) differ from this JVM's ({@code ownProfile}). UCX
   * lays out a shared-memory FIFO by each sender's own idea of it; a
   * client on UCX 1.22 writing to a DataNode on 1.13 corrupted the
   * DataNode's queue and died of SIGSEGV. A peer of a release that does
   * not say is refused too.
   */
  public static String sharedMemoryRefusal(String ownProfile,
      String peerProfile) {
    if (peerProfile == null) {
      return "it does not say which UCX it runs (an hdfs-rdma release"
          + " before shared-memory profiles)";
    }
    if (!peerProfile.equals(ownProfile)) {
      return "it runs UCX " + peerProfile + " and this JVM UCX "
          + ownProfile + ", whose shared-memory queues need not agree";
    }
    return null;
  }

  /** Whether UCX transport {@code name} serves gets without the peer CPU. */
  public static boolean isOneSided(String name) {
    return name.startsWith("rc") || name.startsWith("dc")
        || name.equals("cma") || name.equals("knem") || name.equals("xpmem")
        || name.equals("posix") || name.equals("sysv");
  }

  /** Whether this host has an RDMA device (what UCX's rc/dc/ud would use). */
  public static boolean rdmaDevicesPresent() {
    String[] devices = RDMA_DEVICES.list();
    return devices != null && devices.length > 0;
  }

  /** The directory {@link #rdmaDevicesPresent} looks at, for messages. */
  public static File rdmaDevices() {
    return RDMA_DEVICES;
  }
}
