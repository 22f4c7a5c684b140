package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assume.assumeTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.hdfsrdma.hadoop.ProcessCluster.DataNodeProcess;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.metrics.PipelineOutcome;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A chain across three DataNode JVMs, each reading the landing buffers of
 * the one before it: through the other process's shared-memory segments
 * (the kernel-checked path of a same-host peer), and by real gets over
 * each DataNode's own endpoint back to the one feeding it (UCX's tcp,
 * emulated gets allowed: the code path RDMA hardware takes). Each
 * DataNode's JMX bean shows whom it fetched from and what it offered.
 *
 * <p>Per DataNode's metrics: one fetched from the client and fed the next, one
 * was fed and fed the next, one was fed and fed none; every landing buffer
 * returns.
 */
public class TestChainAcrossProcesses {

  private static final Logger LOG =
      LoggerFactory.getLogger(TestChainAcrossProcesses.class);

  @After
  public void shutdown() {
    UcxRuntime.shutdown();
  }

  @Test(timeout = 300_000)
  public void testChainThroughEachOthersSharedMemory() throws Exception {
    chain("chain-shm", new String[0]);
  }

  @Test(timeout = 300_000)
  public void testChainByGetsBetweenDataNodes() throws Exception {
    chain("chain-gets", new String[] {"dfs.rdma.ucx.tls=tcp",
        "dfs.rdma.ucx.allow-tcp=true",
        "dfs.datanode.rdma.allow-emulated-gets=true"});
  }

  private void chain(String name, String[] ucx) throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    UcxRuntime.shutdown();
    ProcessCluster processes = new ProcessCluster(name).start(3, -1,
        ProcessCluster.Jvm.PATCHED, ucx);
    try {
      Configuration conf = new Configuration();
      conf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY, true);
      conf.set(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_DISTRIBUTION_KEY, "chain");
      for (String kv : ucx) {
        String[] pair = kv.split("=", 2);
        conf.set(pair[0], pair[1]);
      }
      DistributedFileSystem fs = processes.client(conf, 3);
      byte[] data = new byte[3 * 1024 * 1024 + 5];
      new Random(13).nextBytes(data);
      Path path = new Path("/" + name);
      try {
        try (FSDataOutputStream out = fs.create(path, (short) 3)) {
          out.write(data);
        }
        assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
      } finally {
        fs.close();
      }
      assertEquals(1, UcxRuntime.current().metrics().pipelines(
          PipelineOutcome.CHAIN));
      // Per DataNode: fetched from a DataNode, offered the next one.
      List<String> shapes = new ArrayList<String>();
      for (DataNodeProcess dn : processes.dataNodes()) {
        long fetched = ProcessCluster.rdmaBean(dn, "DataBytesFetched");
        long fromDataNode =
            ProcessCluster.rdmaBean(dn, "DataBytesFetchedFromDataNodes");
        long offered = ProcessCluster.rdmaBean(dn, "DataBytesForwarded");
        LOG.info("{} {}: fetched {}, from a DataNode {}, offered {}", name,
            dn.xferAddress(), fetched, fromDataNode, offered);
        assertEquals(dn.xferAddress(), data.length, fetched);
        shapes.add((fromDataNode == data.length ? "fed" : fromDataNode == 0
            ? "from-client" : "partly-fed " + fromDataNode) + ","
            + (offered == data.length ? "feeds" : offered == 0 ? "last"
                : "partly-feeds " + offered));
        WaitFor.waitFor(() -> {
          try {
            return ProcessCluster.rdmaBeanAsServed(dn, "LandingPoolInUseBytes")
                == 0;
          } catch (Exception e) {
            return false;
          }
        }, 100, 10_000);
      }
      Collections.sort(shapes);
      assertEquals("[fed,feeds, fed,last, from-client,feeds]",
          shapes.toString());
    } finally {
      UcxRuntime.shutdown();
      processes.close();
    }
  }
}
