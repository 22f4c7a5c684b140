package org.hdfsrdma.hadoop.datanode;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNotSame;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assume.assumeTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeoutException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.test.GenericTestUtils;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Test;

/**
 * The one switch: with {@code dfs.datanode.rdma.enabled} and no plugin
 * entry, a DataNode's UCX side starts with its transfer server (the hook
 * in DataXceiverServer) and stops with it, across a restart on the same
 * port; with the old plugin entry as well it starts once; switched off it
 * starts nothing and the DataNode writes over TCP. Each write proves by
 * the DataNodes' counters which path carried the bytes.
 */
public class TestDataNodeStart {

  private static final int SIZE = 2 * 1024 * 1024 + 777;
  private static final long BLOCK = 1024 * 1024;

  private MiniDFSCluster cluster;

  @After
  public void tearDown() {
    if (cluster != null) {
      cluster.shutdown();
    }
    UcxRuntime.shutdown();
  }

  private static Configuration conf(boolean enabled, String plugins) {
    Configuration conf = new Configuration();
    conf.set(DFSConfigKeys.DFS_DATANODE_PLUGINS_KEY, plugins);
    conf.setBoolean(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY, enabled);
    conf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY, true);
    conf.setLong(DFSConfigKeys.DFS_BLOCK_SIZE_KEY, BLOCK);
    return conf;
  }

  private static void assumeUcx() {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
  }

  /** Waits until every DataNode of the cluster serves UCX; returns them. */
  private List<UcxDataNode> serving() throws Exception {
    List<UcxDataNode> all = new ArrayList<UcxDataNode>();
    for (DataNode dn : cluster.getDataNodes()) {
      GenericTestUtils.waitFor(() -> UcxDataNode.of(dn) != null, 50,
          30_000);
      all.add(UcxDataNode.of(dn));
    }
    return all;
  }

  private void write(String name) throws Exception {
    write(name, (short) 2);
  }

  private void write(String name, short replication) throws Exception {
    byte[] data = new byte[SIZE];
    new Random(name.hashCode()).nextBytes(data);
    Path path = new Path(name);
    FileSystem fs = cluster.getFileSystem();
    try (FSDataOutputStream out = fs.create(path, replication)) {
      out.write(data);
    }
    assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
  }

  /** Every one of {@code dataNodes} fetched {@code bytes} more over UCX. */
  private static void fetched(List<UcxDataNode> dataNodes, long[] before,
      long bytes) throws Exception {
    for (int i = 0; i < dataNodes.size(); i++) {
      UcxDataNode d = dataNodes.get(i);
      long from = before[i];
      GenericTestUtils.waitFor(
          () -> d.metrics().dataBytesFetched() - from == bytes, 50, 30_000);
    }
  }

  private static long[] fetchedSoFar(List<UcxDataNode> dataNodes) {
    long[] n = new long[dataNodes.size()];
    for (int i = 0; i < n.length; i++) {
      n[i] = dataNodes.get(i).metrics().dataBytesFetched();
    }
    return n;
  }

  @Test(timeout = 180_000)
  public void testStartsWithoutPluginEntryAndAcrossARestart()
      throws Exception {
    assumeUcx();
    cluster = new MiniDFSCluster.Builder(conf(true, "")).numDataNodes(2)
        .build();
    cluster.waitActive();
    List<UcxDataNode> first = serving();
    write("/one-switch");
    fetched(first, new long[2], SIZE);

    // Restarted on its port: the old side stops, a new one serves.
    DataNode old = cluster.getDataNodes().get(0);
    UcxDataNode oldSide = first.get(0);
    cluster.restartDataNode(0, true);
    cluster.waitActive();
    List<UcxDataNode> second = serving();
    assertNull("the stopped DataNode serves no more", UcxDataNode.of(old));
    UcxDataNode restarted = UcxDataNode.named(oldSide.name());
    assertNotNull("the restarted DataNode, on the same port, serves",
        restarted);
    assertNotSame(oldSide, restarted);
    assertEquals(2, second.size());
    long[] before = fetchedSoFar(second);
    write("/after-restart");
    fetched(second, before, SIZE);

    // Shut down, each DataNode's side stops with its server.
    List<DataNode> dataNodes = new ArrayList<DataNode>(
        cluster.getDataNodes());
    cluster.shutdown();
    cluster = null;
    for (DataNode dn : dataNodes) {
      GenericTestUtils.waitFor(() -> UcxDataNode.of(dn) == null, 50,
          30_000);
    }
  }

  /**
   * An idle DataNode that served UCX reports the xceiver count of one that
   * never did: the UCX threads its transfer server and transfer threads
   * started (progress loops, timers) count as no transfer, as Hadoop 2.x
   * would count them (its transfer thread group's size) in every heartbeat,
   * and the NameNode's load rule would then place blocks away from it.
   */
  @Test(timeout = 180_000)
  public void testIdleDataNodesCountNoUcxThreadAsTransfer()
      throws Exception {
    assumeUcx();
    cluster = new MiniDFSCluster.Builder(conf(true, "")).numDataNodes(3)
        .build();
    cluster.waitActive();
    List<UcxDataNode> sides = serving();
    write("/three-ucx-replicas", (short) 3);
    fetched(sides, new long[3], SIZE);

    Configuration stockConf = new Configuration(cluster.getConfiguration(0));
    stockConf.setBoolean(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY,
        false);
    cluster.startDataNodes(stockConf, 1, true, null, null);
    cluster.waitActive();
    DataNode stock = cluster.getDataNodes().get(3);
    assertNull(UcxDataNode.of(stock));
    for (DataNode dn : cluster.getDataNodes()) {
      try {
        GenericTestUtils.waitFor(
            () -> dn.getXceiverCount() == stock.getXceiverCount(), 50,
            30_000);
      } catch (TimeoutException e) {
        assertEquals("xceivers of idle " + dn.getDisplayName()
            + " against the stock DataNode's", stock.getXceiverCount(),
            dn.getXceiverCount());
      }
    }
  }

  @Test(timeout = 180_000)
  public void testPluginEntryAndAgentStartOnce() throws Exception {
    assumeUcx();
    cluster = new MiniDFSCluster.Builder(
        conf(true, DataNodeStart.PLUGIN)).numDataNodes(2).build();
    cluster.waitActive();
    List<UcxDataNode> sides = serving();
    for (DataNode dn : cluster.getDataNodes()) {
      // A second start, as the other caller would make, keeps the first.
      UcxDataNode d = UcxDataNode.of(dn);
      assertNull(DataNodeStart.start(dn, dn.getDisplayName(), dn.getConf()));
      assertSame(d, UcxDataNode.of(dn));
    }
    write("/plugin-and-agent");
    fetched(sides, new long[2], SIZE);
  }

  @Test(timeout = 180_000)
  public void testSwitchedOffStartsNothing() throws Exception {
    cluster = new MiniDFSCluster.Builder(conf(false, "")).numDataNodes(2)
        .build();
    cluster.waitActive();
    for (DataNode dn : cluster.getDataNodes()) {
      assertEquals(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY
          + " is false", DataNodeStart.start(dn, dn.getDisplayName(),
              dn.getConf()));
      assertNull(UcxDataNode.of(dn));
    }
    write("/switched-off");
    UcxRuntime runtime = UcxRuntime.current();
    if (runtime != null) {
      assertEquals("the client sent no descriptor", 0,
          runtime.metrics().dataBytesSent());
    }
    assertNotNull(cluster.getFileSystem().getFileStatus(
        new Path("/switched-off")));
  }
}
