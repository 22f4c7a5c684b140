package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assume.assumeTrue;

import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.hdfsrdma.ucx.UcxConnection;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Test;

/** The DataNode plugin in a MiniDFSCluster. */
public class TestUcxDataNodePlugin {

  @After
  public void tearDown() {
    UcxRuntime.shutdown();
  }

  private static Configuration conf(boolean enabled) {
    Configuration conf = new Configuration();
    conf.set(DFSConfigKeys.DFS_DATANODE_PLUGINS_KEY,
        UcxDataNodePlugin.class.getName());
    conf.setBoolean(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY, enabled);
    conf.set(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ADDRESS_KEY, "127.0.0.1:0");
    conf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY, enabled);
    return conf;
  }

  @Test(timeout = 120_000)
  public void testEnabledDataNodesServeOneListenerPerJvm() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    Configuration conf = conf(true);
    MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf)
        .numDataNodes(2).build();
    try {
      cluster.waitActive();
      UcxRuntime runtime = UcxRuntime.current();
      assertNotNull("the plugin started the JVM's UCX runtime", runtime);
      InetSocketAddress listener = runtime.listenerAddress();
      assertNotNull(listener);
      UcxConnection c = runtime.endpoints().get(listener)
          .get(30, TimeUnit.SECONDS);
      c.close();
      // With a UCX client (conf()), both replicas arrive by get.
      FileSystem fs = cluster.getFileSystem();
      Path file = new Path("/plugin");
      DFSTestUtil.createFile(fs, file, 1 << 20, (short) 2, 7);
      assertEquals(1 << 20, DFSTestUtil.readFileBuffer(fs, file).length);
      long fetched = 0;
      for (long n : runtime.dataBytesFetched().values()) {
        fetched += n;
      }
      assertEquals(2L << 20, fetched);
    } finally {
      cluster.shutdown();
    }
  }

  @Test(timeout = 120_000)
  public void testDisabledDataNodesStartNoUcx() throws Exception {
    MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf(false))
        .numDataNodes(1).build();
    try {
      cluster.waitActive();
      assertNull(UcxRuntime.current());
    } finally {
      cluster.shutdown();
    }
  }
}
