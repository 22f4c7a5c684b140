package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Random;
import java.util.Set;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSOutputStream;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.hdfsrdma.hadoop.ProcessCluster.DataNodeProcess;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.metrics.PipelineOutcome;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.Test;

/**
 * DataNode JVMs that refuse the client's remote keys: their UCX has POSIX
 * shared memory only ({@code dfs.rdma.ucx.tls=posix}), and the client's
 * packet memory is a SysV segment, so no entry of its keys is in a memory
 * domain their endpoints reach, and their checks refuse every region the
 * client announces (a real refusal, of real keys, by real UCX). Each
 * DataNode asks the client to continue over TCP: the pipeline restarts
 * over TCP with the same three DataNodes, none marked bad, and every
 * byte arrives.
 *
 * <p>Three DataNode JVMs: the write completes with the same three DataNodes
 * before and after, each holding every block; nothing is fetched over UCX, the
 * fallbacks are counted on both sides, and no JVM writes a crash report.
 */
public class TestRefusingDataNodes {

  @Test(timeout = 300_000)
  public void testKeysRefusedByEveryDataNode() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    UcxRuntime.shutdown();
    try (ProcessCluster cluster = new ProcessCluster("refusing").start(3,
        -1, ProcessCluster.Jvm.PATCHED,
        HdfsRdmaConfigKeys.DFS_RDMA_UCX_TLS_KEY + "=posix")) {
      Configuration conf = new Configuration();
      conf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY, true);
      DistributedFileSystem fs = cluster.client(conf, 3);
      byte[] data = new byte[3 * 1024 * 1024 + 11];
      new Random(17).nextBytes(data);
      Path path = new Path("/refused-keys");
      try {
        DatanodeInfo[] before;
        DatanodeInfo[] after;
        try (FSDataOutputStream out = fs.create(path, (short) 3)) {
          out.write(data, 0, 1000);
          out.hflush();
          before = pipeline(out);
          out.write(data, 1000, data.length - 1000);
          out.hflush();
          after = pipeline(out);
        }
        assertEquals("every DataNode kept", Arrays.asList(before),
            Arrays.asList(after));
        assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
        Set<String> holders = new HashSet<String>();
        for (BlockLocation b : fs.getFileBlockLocations(path, 0,
            data.length)) {
          assertEquals(b.toString(), 3, b.getNames().length);
          holders.addAll(Arrays.asList(b.getNames()));
        }
        assertEquals("the three DataNodes hold every block", 3,
            holders.size());
      } finally {
        fs.close();
      }
      assertTrue(UcxRuntime.current().metrics().pipelines(
          PipelineOutcome.FELL_BACK_DATANODE) >= 1);
      long fetched = 0;
      long fellBack = 0;
      for (DataNodeProcess d : cluster.dataNodes()) {
        fetched += ProcessCluster.rdmaBean(d, "DataBytesFetched");
        fellBack += ProcessCluster.rdmaBean(d, "BlocksFellBack");
      }
      assertEquals("nothing fetched over UCX", 0, fetched);
      assertTrue("DataNodes that asked for TCP: " + fellBack, fellBack >= 1);
      cluster.assertNoCrash();
    } finally {
      UcxRuntime.shutdown();
    }
  }

  private static DatanodeInfo[] pipeline(FSDataOutputStream out) {
    return ((DFSOutputStream) out.getWrappedStream()).getPipeline();
  }
}
