package org.hdfsrdma.hadoop.client;

import org.apache.hadoop.classification.InterfaceAudience;
import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.hadoop.conf.DistributionMode;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.hadoop.util.LogOnce;
import org.hdfsrdma.ucx.UcxUnavailableException;

/**
 * Whether a client writes with the UCX data path, decided once per stream
 * (never per packet): it must be switched on, UCX must be usable in this
 * JVM, and no data-transfer encryption or SASL integrity/privacy may be
 * configured (UCX gives no such protection). A JVM that has not started
 * UCX yet starts it only where some get could be one-sided
 * ({@link DistributionPolicy#reasonNotToStart}). Each reason to stay on TCP
 * is logged once.
 */
@InterfaceAudience.Private
public final class UcxClients {

  private UcxClients() {
  }

  /**
   * Whether {@code conf} asks for UCX and allows it (no protection UCX
   * lacks); false for a stand-in client without a configuration.
   */
  public static boolean wanted(Configuration conf) {
    if (conf == null) {
      return false; // a stand-in client (Hadoop's tests mock DFSClient)
    }
    if (!conf.getBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY,
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_DEFAULT)) {
      return false;
    }
    if (RdmaConf.transferProtected(conf)) {
      LogOnce.info("client-protection", "hdfs-rdma: writes stay on TCP: "
          + RdmaConf.TRANSFER_PROTECTED_REASON);
      return false;
    }
    return true;
  }

  /**
   * The JVM's UCX runtime for a client that {@link #wanted} UCX, or null
   * when its writes stay on TCP.
   */
  public static UcxRuntime runtimeFor(Configuration conf, RdmaConf rdma) {
    if (rdma.distribution() == DistributionMode.TCP) {
      return null;
    }
    UcxRuntime running = UcxRuntime.current();
    if (running != null) {
      return running; // a DataNode or an earlier stream started it
    }
    String notNow = DistributionPolicy.reasonNotToStart(rdma);
    if (notNow != null) {
      LogOnce.info("client-not-started", "hdfs-rdma: UCX not started,"
          + " writes use Hadoop's TCP pipeline: " + notNow);
      return null;
    }
    try {
      return UcxRuntime.get(conf);
    } catch (UcxUnavailableException e) {
      LogOnce.warn("client-unavailable", "hdfs-rdma: UCX unavailable,"
          + " writes stay on TCP: " + e.getMessage());
      return null;
    }
  }
}
