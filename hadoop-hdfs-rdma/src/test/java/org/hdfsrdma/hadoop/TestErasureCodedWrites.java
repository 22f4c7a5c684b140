package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.util.Random;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.test.GenericTestUtils;
import org.apache.hadoop.util.Tool;
import org.apache.hadoop.util.ToolRunner;
import org.apache.hadoop.util.VersionInfo;
import org.hdfsrdma.hadoop.metrics.ClientOutcomes;
import org.hdfsrdma.hadoop.metrics.PipelineOutcome;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.hadoop.util.LogOnce;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;
import org.slf4j.LoggerFactory;

/**
 * Erasure-coded files (Hadoop 3) are written by one {@code
 * StripedDataStreamer} per internal block, with block-group and recovery
 * logic of their own that the UCX path does not take part in: they stay on
 * Hadoop's TCP path, are counted ({@code StripedStreamersOverTcp}), and
 * leave the replicated files of the same client on UCX. Runs on the Hadoop
 * 3 lines ({@code dev-support/hadoop-tests.sh RELEASE project}); Hadoop 2
 * has no erasure coding.
 *
 * <p>{@code hdfs ec} enables XOR-2-1 on a directory; a striped file written
 * between two replicated ones reads back intact; its three streamers are
 * counted in {@code StripedStreamersOverTcp} (also as the JVM's metrics source
 * publishes it), its three internal blocks arrive over TCP, nothing is fetched
 * by get, and the three streamers log one WARN; the replicated files before and
 * after go over UCX.
 */
public class TestErasureCodedWrites {

  private static final int CELL = 1024 * 1024;
  /** XOR-2-1: two data cells and one parity cell per stripe, 3 nodes. */
  private static final String POLICY = "XOR-2-1-1024k";
  private static final int STREAMERS = 3;

  private MiniDFSCluster cluster;
  private DistributedFileSystem fs;

  @Before
  public void setUp() throws Exception {
    assumeTrue("erasure coding came with Hadoop 3, this is "
        + VersionInfo.getVersion(), !VersionInfo.getVersion().startsWith("2."));
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    Configuration conf = TestUcxWritePath.ucxConf();
    // One block group holds the whole striped file: 3 internal blocks.
    conf.setLong(DFSConfigKeys.DFS_BLOCK_SIZE_KEY, 8L * CELL);
    cluster = new MiniDFSCluster.Builder(conf).numDataNodes(3).build();
    cluster.waitActive();
    fs = cluster.getFileSystem();
  }

  @After
  public void tearDown() {
    if (cluster != null) {
      cluster.shutdown();
    }
    UcxRuntime.shutdown();
  }

  /**
   * Runs Hadoop's {@code hdfs ec} command, as an operator would; by name,
   * for these classes are compiled against Hadoop 2.9.2, which has none.
   */
  private String ec(String... args) throws Exception {
    Tool ecAdmin = (Tool) Class.forName("org.apache.hadoop.hdfs.tools.ECAdmin")
        .getConstructor(Configuration.class).newInstance(fs.getConf());
    PrintStream stdout = System.out;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    System.setOut(new PrintStream(out, true));
    int exit;
    try {
      exit = ToolRunner.run(ecAdmin, args);
    } finally {
      System.setOut(stdout);
    }
    assertEquals("hdfs ec " + String.join(" ", args) + ": " + out, 0, exit);
    return out.toString();
  }

  private byte[] write(Path path, int size, long seed) throws Exception {
    byte[] data = new byte[size];
    new Random(seed).nextBytes(data);
    try (FSDataOutputStream out = fs.create(path)) {
      out.write(data);
    }
    return data;
  }

  @Test(timeout = 300_000)
  public void testStripedWritesStayOnTcp() throws Exception {
    Path replicated = new Path("/replicated/before");
    long fetched = UcxCounters.dataBytesFetched();
    byte[] before = write(replicated, 2 * CELL + 5, 1);
    assertArrayEquals(before, DFSTestUtil.readFileBuffer(fs, replicated));
    assertEquals("a replicated file before: over UCX, 3 replicas",
        fetched + 3L * before.length, UcxCounters.dataBytesFetched());

    ec("-enablePolicy", "-policy", POLICY);
    fs.mkdirs(new Path("/ec"));
    ec("-setPolicy", "-path", "/ec", "-policy", POLICY);
    Path striped = new Path("/ec/file");
    fetched = UcxCounters.dataBytesFetched();
    long tcpBlocks = UcxCounters.blocksOverTcp();
    long ucxBlocks = UcxCounters.blocksOverUcx();
    long streamers = ClientOutcomes.stripedStreamersOverTcp();
    long pipelines = ClientOutcomes.pipelines(
        PipelineOutcome.TCP_ERASURE_CODED);
    LogOnce.forgetAll();
    GenericTestUtils.LogCapturer warnings =
        GenericTestUtils.LogCapturer.captureLogs(
            LoggerFactory.getLogger(LogOnce.class));
    byte[] data;
    try {
      data = write(striped, 5 * CELL + 3, 2);
    } finally {
      warnings.stopCapturing();
    }
    assertEquals("one WARN for the three streamers: " + warnings.getOutput(),
        1, TestFallbackWarnings.count(warnings.getOutput(),
            "StripedDataStreamer streams (erasure-coded files) write over"
            + " TCP"));
    assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, striped));
    assertEquals(POLICY, ec("-getPolicy", "-path", striped.toString())
        .trim());
    assertEquals("one streamer per internal block, left on TCP", STREAMERS,
        ClientOutcomes.stripedStreamersOverTcp() - streamers);
    assertEquals("nothing fetched over UCX", fetched,
        UcxCounters.dataBytesFetched());
    assertEquals("no block over UCX", ucxBlocks, UcxCounters.blocksOverUcx());
    assertEquals("every internal block over TCP", tcpBlocks + STREAMERS,
        UcxCounters.blocksOverTcp());
    assertTrue("their pipelines are counted as erasure-coded",
        ClientOutcomes.pipelines(PipelineOutcome.TCP_ERASURE_CODED)
            - pipelines >= STREAMERS);
    assertEquals("the JVM's metrics source counts them too",
        ClientOutcomes.stripedStreamersOverTcp(), UcxCounters.clientMetric(
            "StripedStreamersOverTcp"));

    // The same client's next replicated file is on UCX again.
    replicated = new Path("/replicated/after");
    fetched = UcxCounters.dataBytesFetched();
    byte[] after = write(replicated, CELL + 7, 3);
    assertArrayEquals(after, DFSTestUtil.readFileBuffer(fs, replicated));
    assertEquals("a replicated file after: over UCX, 3 replicas",
        fetched + 3L * after.length, UcxCounters.dataBytesFetched());
  }
}
