package org.hdfsrdma.hadoop.datanode;

import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.hadoop.agent.PatchState;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxUnavailableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Starts and stops one DataNode's UCX side. With the agent, the DataNode's
 * transfer server starts it (the hook in {@code DataXceiverServer.run}),
 * so that {@code dfs.datanode.rdma.enabled} is the one switch and no
 * Hadoop setting names a class of this jar: a DataNode rolled back to
 * stock (agent removed) starts as stock. A DataNode whose
 * {@code dfs.datanode.plugins} still names {@link #PLUGIN} is started by
 * the plugin instead, never twice.
 *
 * <p>When UCX cannot serve (the setting off, the DataNode classes
 * Hadoop's own, libraries missing, another Hadoop release) it says why in
 * one line and the DataNode receives over TCP. Nothing here throws: the
 * DataNode starts whatever UCX does.
 */
public final class DataNodeStart {

  private static final Logger LOG =
      LoggerFactory.getLogger(DataNodeStart.class);

  /** The plugin class a cluster may list in {@code dfs.datanode.plugins}. */
  public static final String PLUGIN = "org.hdfsrdma.hadoop.UcxDataNodePlugin";

  private DataNodeStart() {
  }

  /** Whether {@code conf} lists {@link #PLUGIN}, which then starts UCX. */
  public static boolean pluginListed(Configuration conf) {
    return conf.getTrimmedStringCollection("dfs.datanode.plugins")
        .contains(PLUGIN);
  }

  /**
   * Starts serving UCX for {@code dataNode} unless it serves already.
   *
   * @param dataNode the DataNode, which keys its UCX side
   *     ({@link UcxDataNode#of})
   * @param name its display name, host:port
   * @param conf its configuration
   * @return null when the DataNode serves UCX, else why not (logged)
   */
  public static synchronized String start(Object dataNode, String name,
      Configuration conf) {
    if (UcxDataNode.of(dataNode) != null) {
      return null;
    }
    // A DataNode restarted on its port starts before the old one's server
    // thread (which stops its UCX side) has ended: the old one goes first,
    // its metrics source holding the name the new one registers.
    UcxDataNode previous = UcxDataNode.named(name);
    if (previous != null) {
      previous.stop();
    }
    if (!conf.getBoolean(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY,
        HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_DEFAULT)) {
      String why = HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY
          + " is false";
      LOG.info("hdfs-rdma: UCX data path off for {}: {}", name, why);
      return why;
    }
    String why = PatchState.problem(PatchState.Group.DATANODE);
    if (why == null) {
      try {
        UcxRuntime runtime = UcxRuntime.get(conf);
        UcxDataNode.start(dataNode, name, conf, runtime);
        LOG.info("hdfs-rdma: DataNode {} serves the UCX data path (UCX"
            + " transports {}{})", name,
            runtime.conf().ucxTls().isEmpty() ? "all"
                : runtime.conf().ucxTls(),
            runtime.transports().networkRdma() ? ", RDMA devices present"
                : ", shared memory only: clients on this host");
        return null;
      } catch (UcxUnavailableException e) {
        why = e.getMessage();
      } catch (RuntimeException | LinkageError e) {
        why = e.toString();
      }
    }
    LOG.warn("hdfs-rdma: UCX data path off for {}, writes stay on TCP: {}",
        name, why);
    return why;
  }

  /** Stops serving UCX for {@code dataNode}, if it does. */
  public static synchronized void stop(Object dataNode) {
    UcxDataNode d = UcxDataNode.of(dataNode);
    if (d != null) {
      d.stop();
    }
  }
}
