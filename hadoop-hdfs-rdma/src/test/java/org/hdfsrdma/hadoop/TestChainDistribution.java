package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSOutputStream;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.tools.DFSck;
import org.apache.hadoop.test.GenericTestUtils;
import org.apache.hadoop.util.ToolRunner;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.datanode.UcxDataNode;
import org.hdfsrdma.hadoop.metrics.PipelineOutcome;
import org.hdfsrdma.hadoop.metrics.UcxDataNodeMetrics;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Chain and hybrid pipelines in a MiniDFSCluster: per DataNode of the
 * pipeline, the counters show whom it fetched from (the client, or the
 * DataNode feeding it) and what it offered the next, every byte of every
 * replica went through UCX descriptors (read directly here: one JVM and
 * host; by get across hosts in TestChainAcrossProcesses), and the files
 * read back byte for byte, also after the middle DataNode of a chain
 * stopped in the middle of a block.
 *
 * <p>Five DataNodes. The shapes: chain at replication 3 and 5, hybrid with two
 * feeders at 4 and 5, and a pipeline no longer than the feeders fans out. Every
 * landing buffer returns with its ack; files of 0 bytes to 3 blocks; the
 * DataNodes' measured ingest rate reaches the client in their commits; after
 * the middle DataNode of a chain stopped, the buffers offered to it return
 * after the get timeout.
 */
public class TestChainDistribution {

  private static final Logger LOG =
      LoggerFactory.getLogger(TestChainDistribution.class);
  private static final int BLOCK_SIZE = 1024 * 1024;
  /**
   * The DataNodes' get timeout, which is also how long a DataNode keeps the
   * landing buffers of a block it gave up before their downstream ack.
   */
  private static final long GET_TIMEOUT_MS = 10_000;

  private static MiniDFSCluster cluster;

  @BeforeClass
  public static void startCluster() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    Configuration conf = TestUcxWritePath.ucxConf();
    conf.setLong(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_GET_TIMEOUT_MS_KEY,
        GET_TIMEOUT_MS);
    cluster = new MiniDFSCluster.Builder(conf).numDataNodes(5).build();
    cluster.waitActive();
  }

  @AfterClass
  public static void stopCluster() {
    if (cluster != null) {
      cluster.shutdown();
    }
    UcxRuntime.shutdown();
  }

  private static FileSystem client(String mode, int hybridFeeders)
      throws Exception {
    Configuration conf = new Configuration(cluster.getConfiguration(0));
    conf.set(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_DISTRIBUTION_KEY, mode);
    conf.setInt(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_HYBRID_FEEDERS_KEY,
        hybridFeeders);
    return FileSystem.newInstance(cluster.getURI(), conf);
  }

  /** Bytes of the DataNodes' landing pool leased now. */
  private static long landingInUse() {
    org.hdfsrdma.ucx.RegisteredBufferPool p =
        UcxRuntime.current().pools().landingIfCreated();
    return p == null ? 0 : p.metrics().inUseBytes();
  }

  /** One DataNode's counters: fetched, fetched from a DataNode, offered. */
  /**
   * Per DataNode (host:port): data bytes fetched, of them from the DataNode
   * feeding it, offered the DataNode it feeds, and read directly.
   */
  private static Map<String, long[]> counters() {
    int[] kinds = {UcxDataNodeMetrics.FETCHED_BYTES,
        UcxDataNodeMetrics.FETCHED_FROM_DATANODES,
        UcxDataNodeMetrics.FORWARDED_BYTES, UcxDataNodeMetrics.READ_DIRECTLY};
    Map<String, long[]> c = new HashMap<String, long[]>();
    for (int k = 0; k < kinds.length; k++) {
      for (Map.Entry<String, Long> e
          : UcxCounters.byDataNode(kinds[k]).entrySet()) {
        c.computeIfAbsent(e.getKey(), n -> new long[4])[k] = e.getValue();
      }
    }
    return c;
  }

  private static long[] delta(Map<String, long[]> before,
      Map<String, long[]> after, String node) {
    long[] a = after.getOrDefault(node, new long[4]);
    long[] b = before.getOrDefault(node, new long[4]);
    long[] d = new long[4];
    for (int k = 0; k < d.length; k++) {
      d[k] = a[k] - b[k];
    }
    return d;
  }

  /** Live DataNodes with their transfers and space, as the NameNode sees. */
  private static String liveDataNodes(FileSystem fs) throws Exception {
    StringBuilder b = new StringBuilder();
    for (DatanodeInfo d : ((org.apache.hadoop.hdfs.DistributedFileSystem) fs)
        .getDataNodeStats()) {
      b.append(d.getXferAddr()).append(" xceivers=")
          .append(d.getXceiverCount()).append(" remaining=")
          .append(d.getRemaining()).append(' ');
    }
    return b.toString();
  }

  /**
   * Writes one block of {@code size} bytes with {@code fs}, learning the
   * pipeline after the first packet, and checks who fetched from whom: the
   * first {@code fed} DataNodes from the client, each other one from the
   * DataNode {@code fed} places before it, and each DataNode that has one
   * that far behind it offered it every byte.
   */
  private void writeAndCheckShape(FileSystem fs, String name, int size,
      short replication, int fed, PipelineOutcome outcome) throws Exception {
    byte[] data = new byte[size];
    new Random(size * 31L + replication + fed).nextBytes(data);
    Path path = new Path("/chain/" + name);
    Map<String, long[]> before = counters();
    long pipelines = UcxRuntime.current().metrics().pipelines(outcome);
    long tcpBlocks = UcxCounters.blocksOverTcp();
    long leased = landingInUse();
    DatanodeInfo[] pipeline;
    try (FSDataOutputStream out = fs.create(path, replication)) {
      out.write(data, 0, 4096);
      out.hflush();
      pipeline = ((DFSOutputStream) out.getWrappedStream()).getPipeline();
      out.write(data, 4096, size - 4096);
    }
    DFSTestUtil.waitReplication(fs, path, replication);
    assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
    Map<String, long[]> after = counters();
    assertEquals("pipeline " + java.util.Arrays.toString(pipeline)
        + "; the NameNode's view: " + liveDataNodes(fs), replication,
        pipeline.length);
    for (int i = 0; i < pipeline.length; i++) {
      long[] d = delta(before, after, pipeline[i].getXferAddr());
      LOG.info("{}: DataNode {} of the pipeline ({}): fetched {}, from a"
          + " DataNode {}, offered the next {}", name, i + 1, pipeline[i],
          d[0], d[1], d[2]);
      assertEquals("bytes DataNode " + (i + 1) + " fetched", size, d[0]);
      // One JVM and host: read directly from the memory of whoever feeds
      // it (the client's segment, or the feeding DataNode's landing pool).
      assertEquals("bytes DataNode " + (i + 1) + " read directly", size,
          d[3]);
      assertEquals("bytes DataNode " + (i + 1) + " fetched from the"
          + " DataNode feeding it", i < fed ? 0 : size, d[1]);
      assertEquals("bytes DataNode " + (i + 1) + " offered the DataNode it"
          + " feeds", i + fed < pipeline.length ? size : 0, d[2]);
    }
    assertEquals(pipelines + 1,
        UcxRuntime.current().metrics().pipelines(outcome));
    assertEquals("replicas whose packets came on the socket", tcpBlocks,
        UcxCounters.blocksOverTcp());
    // Every landing buffer offered downstream came back with its ack.
    GenericTestUtils.waitFor(() -> landingInUse() <= leased, 20, 10_000);
  }

  @Test(timeout = 300_000)
  public void testChainFetchesFromTheDataNodeBefore() throws Exception {
    try (FileSystem fs = client("chain", 2)) {
      writeAndCheckShape(fs, "chain-r3", BLOCK_SIZE - 777, (short) 3, 1,
          PipelineOutcome.CHAIN);
      writeAndCheckShape(fs, "chain-r5", 300_000, (short) 5, 1,
          PipelineOutcome.CHAIN);
      // One DataNode: nothing to chain, the client feeds it.
      writeAndCheckShape(fs, "chain-r1", 100_000, (short) 1, 1,
          PipelineOutcome.FAN_OUT);
    }
  }

  @Test(timeout = 300_000)
  public void testHybridFeedsTheFirstDataNodes() throws Exception {
    try (FileSystem fs = client("hybrid", 2)) {
      writeAndCheckShape(fs, "hybrid-r4", BLOCK_SIZE, (short) 4, 2,
          PipelineOutcome.HYBRID);
      writeAndCheckShape(fs, "hybrid-r5", 200_000, (short) 5, 2,
          PipelineOutcome.HYBRID);
      // A pipeline no longer than the feeders is a fan-out.
      writeAndCheckShape(fs, "hybrid-r2", 200_000, (short) 2, 2,
          PipelineOutcome.FAN_OUT);
    }
  }

  /** Files of several blocks and odd sizes, every byte through UCX. */
  @Test(timeout = 300_000)
  public void testChainCarriesEveryByte() throws Exception {
    try (FileSystem fs = client("chain", 2)) {
      for (int size : new int[] {0, 1, 511, 64 * 1024 + 1,
          3 * BLOCK_SIZE + 12345}) {
        byte[] data = new byte[size];
        new Random(size).nextBytes(data);
        Path path = new Path("/chain/bytes-" + size);
        long fetched = UcxCounters.dataBytesFetched();
        long fromDataNodes = UcxCounters.dataBytesFetchedFromDataNodes();
        try (FSDataOutputStream out = fs.create(path, (short) 3)) {
          out.write(data);
        }
        DFSTestUtil.waitReplication(fs, path, (short) 3);
        assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
        assertEquals("bytes fetched through UCX descriptors", 3L * size,
            UcxCounters.dataBytesFetched() - fetched);
        assertEquals("bytes fetched from DataNodes", 2L * size,
            UcxCounters.dataBytesFetchedFromDataNodes()
                - fromDataNodes);
      }
      // A block of 1 MiB on every DataNode: which DataNodes the blocks
      // above landed on is the NameNode's random choice.
      Path everywhere = new Path("/chain/on-every-datanode");
      DFSTestUtil.createFile(fs, everywhere, BLOCK_SIZE, (short) 5, 1);
      DFSTestUtil.waitReplication(fs, everywhere, (short) 5);
      // The DataNodes measured their ingest rate on the blocks of 1 MiB
      // (replicas finalized: their receivers closed), and the commits of
      // the next pipeline carry it to the client.
      int measured = 0;
      for (org.apache.hadoop.hdfs.server.datanode.DataNode d
          : cluster.getDataNodes()) {
        if (UcxDataNode.of(d).ingest().bytesPerSecond() > 0) {
          measured++;
        }
      }
      assertTrue("some DataNode measured its ingest rate", measured > 0);
      Path next = new Path("/chain/after-measuring");
      DFSTestUtil.createFile(fs, next, 1000, (short) 3, 1);
      for (DatanodeInfo dn : DFSTestUtil.getAllBlocks(fs, next).get(0)
          .getLocations()) {
        assertTrue(dn + " committed its ingest rate",
            UcxRuntime.current().ingestRates().of(dn.getXferAddr()) > 0);
      }
    }
  }

  /**
   * The middle DataNode of a chain stops in the middle of a block: Hadoop's
   * pipeline recovery goes on without it, the file reads back intact and
   * fsck finds it healthy.
   */
  @Test(timeout = 300_000)
  public void testMiddleDataNodeStoppedMidBlock() throws Exception {
    byte[] data = new byte[BLOCK_SIZE + BLOCK_SIZE / 2];
    new Random(7).nextBytes(data);
    Path path = new Path("/chain/middle-stopped");
    MiniDFSCluster.DataNodeProperties stopped = null;
    try (FileSystem fs = client("chain", 2)) {
      try (FSDataOutputStream out = fs.create(path, (short) 3)) {
        out.write(data, 0, BLOCK_SIZE / 2);
        out.hflush();
        DatanodeInfo[] pipeline =
            ((DFSOutputStream) out.getWrappedStream()).getPipeline();
        assertEquals(3, pipeline.length);
        stopped = cluster.stopDataNode(pipeline[1].getXferAddr());
        assertTrue("stopped " + pipeline[1], stopped != null);
        out.write(data, BLOCK_SIZE / 2, data.length - BLOCK_SIZE / 2);
      }
      assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
      ByteArrayOutputStream report = new ByteArrayOutputStream();
      int rc = ToolRunner.run(new DFSck(cluster.getConfiguration(0),
          new PrintStream(report, true, "UTF-8")),
          new String[] {path.toString()});
      String fsck = report.toString("UTF-8");
      LOG.info("fsck after the middle DataNode stopped:\n{}", fsck);
      assertEquals(fsck, 0, rc);
      assertTrue(fsck, fsck.contains("is HEALTHY"));
      // What the first DataNode had offered the stopped one comes back
      // after the get timeout.
      GenericTestUtils.waitFor(() -> landingInUse() == 0, 100,
          (int) GET_TIMEOUT_MS * 3);
    } finally {
      if (stopped != null) {
        // On new ports: its old ones are ephemeral (the cluster binds
        // port 0), and one may meanwhile be a connection's source port
        // ("Address already in use" in CI).
        cluster.restartDataNode(stopped, false);
        cluster.waitActive();
      }
    }
  }
}
