package org.hdfsrdma.hadoop;

import java.io.IOException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.io.IOUtils;
import org.apache.hadoop.util.ServicePlugin;
import org.hdfsrdma.hadoop.agent.PatchState;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.datanode.UcxDataNode;
import org.hdfsrdma.hadoop.runtime.LocalDataNodeMarker;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxUnavailableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Starts the UCX side of a DataNode: listed in {@code dfs.datanode.plugins}
 * so that DataNode.java itself needs no patch. With
 * {@code dfs.datanode.rdma.enabled} it brings up the JVM's UCX runtime
 * (there is no listening socket: clients learn the DataNode's UCX worker
 * address in the authenticated writeBlock reply); when UCX cannot serve
 * (the DataNode classes are Hadoop's own, libraries missing, another Hadoop
 * release) it says why in one log line and the DataNode keeps writing over
 * TCP.
 */
public class UcxDataNodePlugin implements ServicePlugin {

  private static final Logger LOG =
      LoggerFactory.getLogger(UcxDataNodePlugin.class);

  private volatile UcxDataNode serving;
  /** Tells clients on this host that a DataNode here serves UCX. */
  private LocalDataNodeMarker marker;
  private volatile String disabledReason = "not started";

  @Override
  public void start(Object service) {
    if (!(service instanceof DataNode)) {
      disabledReason = "started for " + service + ", not a DataNode";
      LOG.warn("hdfs-rdma: {}", disabledReason);
      return;
    }
    DataNode dataNode = (DataNode) service;
    Configuration conf = dataNode.getConf();
    if (!conf.getBoolean(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY,
        HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_DEFAULT)) {
      disabledReason = HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY
          + " is false";
      LOG.info("hdfs-rdma: UCX data path off for {}: {}",
          dataNode.getDisplayName(), disabledReason);
      return;
    }
    String unpatched = PatchState.problem(PatchState.Group.DATANODE);
    if (unpatched != null) {
      disabledReason = unpatched;
      LOG.warn("hdfs-rdma: UCX data path off for {}, writes stay on TCP: {}",
          dataNode.getDisplayName(), unpatched);
      return;
    }
    try {
      UcxRuntime runtime = UcxRuntime.get(conf);
      serving = UcxDataNode.start(dataNode, dataNode.getDisplayName(), conf,
          runtime);
      disabledReason = null;
      announce(dataNode);
      LOG.info("hdfs-rdma: DataNode {} serves the UCX data path (UCX"
          + " transports {}{})", dataNode.getDisplayName(),
          runtime.conf().ucxTls().isEmpty() ? "all" : runtime.conf().ucxTls(),
          runtime.transports().networkRdma() ? ", RDMA devices present"
              : ", shared memory only: clients on this host");
    } catch (UcxUnavailableException e) {
      disabledReason = e.getMessage();
      LOG.warn("hdfs-rdma: UCX data path off for {}, writes stay on TCP: {}",
          dataNode.getDisplayName(), e.getMessage());
    } catch (RuntimeException e) {
      disabledReason = e.toString();
      LOG.warn("hdfs-rdma: UCX data path off for {}, writes stay on TCP: {}",
          dataNode.getDisplayName(), e.toString());
    }
  }

  /**
   * Marks this host as one with a DataNode serving UCX: without RDMA
   * devices, clients start UCX only where one does.
   */
  private synchronized void announce(DataNode dataNode) {
    try {
      marker = LocalDataNodeMarker.announce();
    } catch (IOException | RuntimeException e) {
      LOG.warn("hdfs-rdma: cannot mark {} as serving UCX in {} ({}); clients"
          + " on this host without RDMA devices will not start UCX",
          dataNode.getDisplayName(), LocalDataNodeMarker.directory(),
          e.toString());
    }
  }

  /** Whether this DataNode serves the UCX path. */
  public boolean isServing() {
    return serving != null;
  }

  /** The UCX side of this DataNode while it serves, else null. */
  public UcxDataNode dataNode() {
    return serving;
  }

  /** Why the UCX path is off, or null when it is on. */
  public String disabledReason() {
    return disabledReason;
  }

  /** The UCX runtime belongs to the JVM, shared by its DataNodes: it stays. */
  @Override
  public void stop() {
    UcxDataNode d = serving;
    serving = null;
    if (d != null) {
      d.stop();
    }
    disabledReason = "stopped";
    LocalDataNodeMarker m;
    synchronized (this) {
      m = marker;
      marker = null;
    }
    IOUtils.cleanupWithLogger(LOG, m);
  }

  @Override
  public void close() {
    stop();
  }
}
