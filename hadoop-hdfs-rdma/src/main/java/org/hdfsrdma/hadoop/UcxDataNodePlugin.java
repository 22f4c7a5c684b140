package org.hdfsrdma.hadoop;

import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.util.ServicePlugin;
import org.hdfsrdma.hadoop.datanode.DataNodeStart;
import org.hdfsrdma.hadoop.datanode.UcxDataNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Starts the UCX side of a DataNode from {@code dfs.datanode.plugins}, for
 * clusters configured before the agent started it by itself
 * ({@link DataNodeStart}). Not needed with the agent, and a setting to
 * remove before the agent: a DataNode whose plugin list names a class it
 * cannot load does not start (Hadoop's {@code DataNode.startPlugins}
 * rethrows).
 */
public class UcxDataNodePlugin implements ServicePlugin {

  private static final Logger LOG =
      LoggerFactory.getLogger(UcxDataNodePlugin.class);

  private volatile DataNode dataNode;
  private volatile String disabledReason = "not started";

  @Override
  public void start(Object service) {
    if (!(service instanceof DataNode)) {
      disabledReason = "started for " + service + ", not a DataNode";
      LOG.warn("hdfs-rdma: {}", disabledReason);
      return;
    }
    DataNode d = (DataNode) service;
    dataNode = d;
    disabledReason = DataNodeStart.start(d, d.getDisplayName(), d.getConf());
  }

  /** Whether this DataNode serves the UCX path. */
  public boolean isServing() {
    return dataNode() != null;
  }

  /** The UCX side of this DataNode while it serves, else null. */
  public UcxDataNode dataNode() {
    DataNode d = dataNode;
    return d == null ? null : UcxDataNode.of(d);
  }

  /** Why the UCX path is off, or null when it is on. */
  public String disabledReason() {
    return disabledReason;
  }

  /** The UCX runtime belongs to the JVM, shared by its DataNodes: it stays. */
  @Override
  public void stop() {
    DataNode d = dataNode;
    dataNode = null;
    if (d != null) {
      DataNodeStart.stop(d);
    }
    disabledReason = "stopped";
  }

  @Override
  public void close() {
    stop();
  }
}
