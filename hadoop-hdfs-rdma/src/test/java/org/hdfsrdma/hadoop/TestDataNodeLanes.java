package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.metrics2.AbstractMetric;
import org.apache.hadoop.metrics2.MetricsRecord;
import org.apache.hadoop.metrics2.impl.MetricsCollectorImpl;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.datanode.DataNodeServer;
import org.hdfsrdma.hadoop.datanode.ServerLanes;
import org.hdfsrdma.hadoop.metrics.PipelineOutcome;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * DataNode lanes ({@code dfs.datanode.rdma.workers}): several UCX workers
 * the DataNodes of one JVM receive blocks on, a block on the lane with the
 * fewest blocks, its commit entry naming that lane's worker, so that the
 * receivers of concurrent blocks are woken by their own lane's events.
 *
 * <p>Three DataNodes in this JVM (so 24 blocks at once for eight streams
 * at replication 3) with four lanes: the lanes are made as blocks find the
 * earlier ones busy, every lane's worker delivered descriptors, every
 * replica's bytes came over UCX and read back equal, nothing was refused,
 * and a second round makes no lane. With one lane the runtime's worker
 * receives every block and no other worker is made; blocks fed onward
 * (chain pipelines) stay on the runtime's worker whatever the lanes.
 */
public class TestDataNodeLanes {

  private static final Logger LOG =
      LoggerFactory.getLogger(TestDataNodeLanes.class);
  private static final int BLOCK_SIZE = 1024 * 1024;

  private MiniDFSCluster cluster;

  @Before
  public void setUp() {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    // The runtime is JVM-wide and its first configuration decides the
    // lanes: start from none.
    UcxRuntime.shutdown();
  }

  @After
  public void tearDown() {
    try {
      if (cluster != null) {
        cluster.shutdown();
      }
    } finally {
      cluster = null;
      UcxRuntime.shutdown();
    }
  }

  private static Configuration conf(int workers) {
    Configuration conf = TestUcxWritePath.ucxConf();
    conf.setInt(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_WORKERS_KEY, workers);
    return conf;
  }

  /** A metric of the JVM's source, as a snapshot reads it. */
  private static long jvmMetric(UcxRuntime runtime, String name) {
    MetricsCollectorImpl collector = new MetricsCollectorImpl();
    runtime.metrics().getMetrics(collector, true);
    for (MetricsRecord record : collector.getRecords()) {
      for (AbstractMetric metric : record.metrics()) {
        if (metric.name().equals(name)) {
          return metric.value().longValue();
        }
      }
    }
    throw new AssertionError("no metric " + name);
  }

  private static int laneThreads() {
    int n = 0;
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().startsWith("hdfs-rdma-dn-lane")) {
        n++;
      }
    }
    return n;
  }

  private ServerLanes start(Configuration conf) throws Exception {
    cluster = new MiniDFSCluster.Builder(conf).numDataNodes(3).build();
    cluster.waitActive();
    UcxRuntime runtime = UcxRuntime.current();
    assertNotNull("the DataNodes started UCX", runtime);
    ServerLanes lanes = DataNodeServer.of(runtime).lanes();
    assertEquals("no lane made before a block needs it", 1, lanes.made());
    assertSame(runtime.worker(), lanes.lane(0).worker());
    assertEquals(0, laneThreads());
    return lanes;
  }

  @Test(timeout = 300_000)
  public void testConcurrentBlocksOnFourLanes() throws Exception {
    ServerLanes lanes = start(conf(4));
    UcxRuntime runtime = UcxRuntime.current();
    assertEquals(4, runtime.conf().dataNodeWorkers());
    assertEquals(4, lanes.capacity());
    FileSystem fs = cluster.getFileSystem();
    long rejectedBefore = jvmMetric(runtime, "RejectedMessages");

    TestClientLanes.writeConcurrently(fs, "/dnlanes/r1", 8,
        2 * BLOCK_SIZE + 4321);

    assertEquals("lanes made", 4, lanes.made());
    assertEquals("a progress thread per lane beyond 0", 3, laneThreads());
    assertEquals(4, jvmMetric(runtime, "DataNodeLanes"));
    long[] delivered = new long[lanes.made()];
    for (int i = 0; i < lanes.made(); i++) {
      delivered[i] = lanes.lane(i).worker().messagesDelivered();
      LOG.info("{}: {} messages delivered", lanes.lane(i), delivered[i]);
      assertTrue("lane " + i + " received descriptors: " + delivered[i],
          delivered[i] > 0);
    }
    assertEquals("messages refused", rejectedBefore,
        jvmMetric(runtime, "RejectedMessages"));
    assertEquals(0, jvmMetric(runtime, "StrayMessages"));
    WaitFor.waitFor(() -> jvmMetric(runtime, "OpenSessions") == 0, 50,
        30_000);

    // The lanes stay: a second round makes none and still uses UCX only.
    TestClientLanes.writeConcurrently(fs, "/dnlanes/r2", 8,
        BLOCK_SIZE / 2 + 17);
    assertEquals(4, lanes.made());
    long laterLanes = 0;
    for (int i = 1; i < lanes.made(); i++) {
      laterLanes += lanes.lane(i).worker().messagesDelivered() - delivered[i];
    }
    assertTrue("lanes 1-3 received in round 2: " + laterLanes,
        laterLanes > 0);
  }

  @Test(timeout = 300_000)
  public void testOneLaneIsTheRuntimesWorker() throws Exception {
    ServerLanes lanes = start(conf(1));
    TestClientLanes.writeConcurrently(cluster.getFileSystem(), "/dnlanes/w1",
        4, BLOCK_SIZE + 99);
    assertEquals("one lane", 1, lanes.made());
    assertEquals("no other worker's thread", 0, laneThreads());
    assertTrue(lanes.lane(0).worker().messagesDelivered() > 0);
  }

  @Test(timeout = 300_000)
  public void testFedBlocksStayOnTheRuntimesWorker() throws Exception {
    Configuration conf = conf(4);
    conf.set(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_DISTRIBUTION_KEY, "chain");
    ServerLanes lanes = start(conf);
    TestClientLanes.writeConcurrently(cluster.getFileSystem(),
        "/dnlanes/chain", 4, BLOCK_SIZE + 99);
    assertEquals("chain pipelines' blocks on lane 0 only", 1, lanes.made());
    assertTrue("chain pipelines", UcxRuntime.current().metrics()
        .pipelines(PipelineOutcome.CHAIN) > 0);
  }
}
