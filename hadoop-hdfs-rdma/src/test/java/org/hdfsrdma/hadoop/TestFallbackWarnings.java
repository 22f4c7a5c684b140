package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.util.Random;

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
 * What an operator sees when a client's writes stay on TCP although it
 * asked for UCX: one WARN per reason per JVM, however many pipelines the
 * reason holds back, naming the reason (and the DataNode, when one
 * declined), and each such pipeline counted under its outcome in the
 * JVM's {@code HdfsRdmaClient} metrics source. Each case writes two files
 * and checks that every byte arrived over TCP. The other reasons are
 * checked where they can be produced: a stock DataNode and a client
 * without UCX libraries in {@code TestUcxMultiProcessCluster},
 * erasure-coded files in {@code TestErasureCodedWrites}.
 *
 * <p>The reasons produced here: configured protection,
 * {@code dfs.client.rdma.distribution=tcp}, and a DataNode with UCX off; each
 * counts both pipelines under its {@code PipelinesTcp...} counter.
 */
public class TestFallbackWarnings {

  private static final int SIZE = 300 * 1024 + 7;

  private MiniDFSCluster cluster;
  private GenericTestUtils.LogCapturer warnings;

  @Before
  public void setUp() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    Configuration conf = TestUcxWritePath.ucxConf();
    // The one-switch configuration: the agent's hook starts the DataNodes'
    // UCX side.
    conf.set(DFSConfigKeys.DFS_DATANODE_PLUGINS_KEY, "");
    cluster = new MiniDFSCluster.Builder(conf).numDataNodes(3).build();
    cluster.waitActive();
    // Earlier tests of this JVM may have logged these reasons already.
    LogOnce.forgetAll();
    warnings = GenericTestUtils.LogCapturer.captureLogs(
        LoggerFactory.getLogger(LogOnce.class));
  }

  @After
  public void tearDown() {
    if (warnings != null) {
      warnings.stopCapturing();
    }
    if (cluster != null) {
      cluster.shutdown();
    }
    UcxRuntime.shutdown();
  }

  /** How often {@code text} holds {@code part}. */
  static int count(String text, String part) {
    int n = 0;
    for (int i = text.indexOf(part); i >= 0;
        i = text.indexOf(part, i + part.length())) {
      n++;
    }
    return n;
  }

  /**
   * Writes two files with {@code clientConf} and replication
   * {@code replicas}; checks that they read back, that the DataNodes
   * fetched nothing over UCX, that both pipelines were counted as
   * {@code outcome} (by the source and as published), and that exactly one
   * WARN holding {@code warning} was logged. Returns the log.
   */
  private String twoFilesOverTcp(Configuration clientConf, int replicas,
      PipelineOutcome outcome, String warning) throws Exception {
    long fetched = UcxCounters.dataBytesFetched();
    long counted = ClientOutcomes.pipelines(outcome);
    try (FileSystem fs = FileSystem.newInstance(
        cluster.getFileSystem().getUri(), clientConf)) {
      for (int i = 0; i < 2; i++) {
        Path path = new Path("/" + outcome.metric() + "/" + i);
        byte[] data = new byte[SIZE];
        new Random(i).nextBytes(data);
        try (FSDataOutputStream out = fs.create(path, (short) replicas)) {
          out.write(data);
        }
        assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
      }
    }
    assertEquals("nothing fetched over UCX", fetched,
        UcxCounters.dataBytesFetched());
    assertEquals("both pipelines counted as " + outcome, counted + 2,
        ClientOutcomes.pipelines(outcome));
    assertEquals("published as " + outcome.metric(),
        ClientOutcomes.pipelines(outcome),
        UcxCounters.clientMetric(outcome.metric()));
    String log = warnings.getOutput();
    assertEquals("one WARN for two pipelines: " + log, 1,
        count(log, warning));
    assertTrue(log, log.contains("WARN"));
    return log;
  }

  private Configuration client() {
    return new Configuration(cluster.getConfiguration(0));
  }

  @Test(timeout = 120_000)
  public void testProtectedTransfersStayOnTcp() throws Exception {
    Configuration conf = client();
    // The NameNode's server defaults decide encryption; the client's own
    // setting is what hdfs-rdma reads, and it does not write around it.
    conf.setBoolean("dfs.encrypt.data.transfer", true);
    twoFilesOverTcp(conf, 3, PipelineOutcome.TCP_PROTECTED,
        "hdfs-rdma: writes stay on TCP: ");
  }

  @Test(timeout = 120_000)
  public void testTcpDistributionIsNamed() throws Exception {
    Configuration conf = client();
    conf.set(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_DISTRIBUTION_KEY, "tcp");
    twoFilesOverTcp(conf, 3, PipelineOutcome.TCP_POLICY,
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_DISTRIBUTION_KEY + " is tcp");
  }

  @Test(timeout = 120_000)
  public void testDataNodeWithUcxOffIsNamed() throws Exception {
    // The same client writes over UCX while its pipelines hold only
    // DataNodes that serve it.
    long fetched = UcxCounters.dataBytesFetched();
    Path control = new Path("/control");
    DFSTestUtil.createFile(cluster.getFileSystem(), control, SIZE, (short) 3,
        1);
    assertEquals("the control file went over UCX", fetched + 3L * SIZE,
        UcxCounters.dataBytesFetched());
    assertEquals(warnings.getOutput(), 0,
        count(warnings.getOutput(), "over TCP"));

    Configuration off = new Configuration(cluster.getConfiguration(0));
    off.setBoolean(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY, false);
    cluster.startDataNodes(off, 1, true, null, null);
    cluster.waitActive();
    DataNode ucxOff = cluster.getDataNodes().get(3);
    String log = twoFilesOverTcp(client(), 4,
        PipelineOutcome.TCP_DATANODE_OFF,
        "counted as " + PipelineOutcome.TCP_DATANODE_OFF.metric());
    assertTrue("the WARN names the DataNode: " + log,
        log.contains(ucxOff.getDatanodeId().getXferAddr()));
  }
}
