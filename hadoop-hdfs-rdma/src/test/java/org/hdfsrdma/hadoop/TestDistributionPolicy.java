package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeFalse;
import static org.junit.Assume.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FileUtil;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.test.GenericTestUtils;
import org.hdfsrdma.hadoop.ProcessCluster.DataNodeProcess;
import org.hdfsrdma.hadoop.client.DistributionPolicy;
import org.hdfsrdma.hadoop.conf.DistributionMode;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.metrics.PipelineOutcome;
import org.hdfsrdma.hadoop.protocol.WriteRequest;
import org.hdfsrdma.hadoop.runtime.LocalDataNodeMarker;
import org.hdfsrdma.hadoop.runtime.Reach;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.hadoop.util.LogOnce;
import org.hdfsrdma.ucx.TransportReport;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Test;
import org.slf4j.LoggerFactory;

/**
 * {@code dfs.client.rdma.distribution}: which pipelines fan out by get, and
 * whether a client JVM starts UCX at all.
 *
 * <p>The lanes UCX reports decide which gets are one-sided (rc, dc, shared
 * memory) and which emulated (tcp, ud, none). Two DataNode JVMs that only UCX's
 * tcp reaches: in auto both files' pipelines stay on TCP (nothing fetched, no
 * descriptor sent, counted as emulated-gets). Without RDMA devices or a local
 * DataNode serving UCX, the client says so once.
 */
public class TestDistributionPolicy {

  private MiniDFSCluster cluster;
  /** The markers' directory of the test's own processes, or null. */
  private File markers;

  /**
   * Points this JVM's markers (and those of processes it passes the
   * property to) at a directory of the test's own: DataNodes of other
   * tests on the host (the test command runs lanes side by side) mark
   * /dev/shm, and a test that counts markers there would count theirs.
   */
  private void ownMarkers() throws IOException {
    markers = Files.createTempDirectory("hdfs-rdma-markers").toFile();
    System.setProperty(LocalDataNodeMarker.DIRECTORY_PROPERTY,
        markers.getPath());
  }

  @After
  public void tearDown() {
    if (cluster != null) {
      cluster.shutdown();
    }
    UcxRuntime.shutdown();
    if (markers != null) {
      System.clearProperty(LocalDataNodeMarker.DIRECTORY_PROPERTY);
      FileUtil.fullyDelete(markers);
    }
  }

  private static String lane(int i, String transport, String roles) {
    return "lane[" + i + "]:  8:" + transport + "/dev.0 md[4]     -> md[4]/"
        + transport + "/sysdev[255] " + roles + "\n";
  }

  /** The lanes UCX reports decide, and the mode decides what they allow. */
  @Test(timeout = 10_000)
  public void testOnlyOneSidedLanesFanOutInAuto() {
    assertEquals(Reach.EMULATED, Reach.of(
        TransportReport.parse(lane(0, "tcp", "rma_bw#0 am"))));
    assertEquals(Reach.ONE_SIDED, Reach.of(
        TransportReport.parse(lane(0, "rc_mlx5", "rma_bw#0 am"))));
    assertEquals(Reach.ONE_SIDED, Reach.of(
        TransportReport.parse(lane(0, "dc_mlx5", "rma_bw#0")
            + lane(1, "ud_mlx5", "am"))));
    assertEquals(Reach.ONE_SIDED, Reach.of(
        TransportReport.parse(lane(0, "cma", "rma_bw#0")
            + lane(1, "sysv", "am"))));
    assertEquals("ud alone has no RMA lane", Reach.EMULATED,
        Reach.of(TransportReport.parse(
            lane(0, "ud_verbs", "am am_bw"))));
    assertEquals("one tcp RMA lane emulates some gets", Reach.EMULATED,
        Reach.of(TransportReport.parse(
            lane(0, "rc_verbs", "rma_bw#0") + lane(1, "tcp", "rma_bw#1"))));
    assertEquals(Reach.EMULATED,
        Reach.of(TransportReport.unknown()));

    for (Reach r : Reach.values()) {
      boolean oneSided = r == Reach.SHARED_MEMORY || r == Reach.ONE_SIDED;
      assertEquals(r.toString(), oneSided,
          DistributionPolicy.fetchesByGet(DistributionMode.AUTO, r));
      assertEquals(r.toString(), r != Reach.UNREACHABLE,
          DistributionPolicy.fetchesByGet(DistributionMode.FAN_OUT, r));
      assertFalse(r.toString(),
          DistributionPolicy.fetchesByGet(DistributionMode.TCP, r));
    }

    assertEquals(DistributionMode.AUTO,
        new RdmaConf(new Configuration()).distribution());
    assertEquals(DistributionMode.FAN_OUT,
        distribution(" Fan-Out ").distribution());
    assertEquals(DistributionMode.TCP, distribution("tcp").distribution());
    assertEquals("a typo falls back to auto", DistributionMode.AUTO,
        distribution("fanout").distribution());
  }

  /** How many DataNodes the client feeds, as the offer carries it. */
  @Test(timeout = 10_000)
  public void testFeedersOfEachShape() throws Exception {
    assertEquals(DistributionMode.CHAIN, distribution("chain").distribution());
    assertEquals(DistributionMode.HYBRID,
        distribution(" Hybrid").distribution());
    assertEquals(0, DistributionPolicy.feeders(DistributionMode.AUTO, 3, 2));
    assertEquals(0, DistributionPolicy.feeders(DistributionMode.FAN_OUT, 3, 2));
    assertEquals(1, DistributionPolicy.feeders(DistributionMode.CHAIN, 3, 2));
    assertEquals("one DataNode: nothing to chain", 0,
        DistributionPolicy.feeders(DistributionMode.CHAIN, 1, 2));
    assertEquals(2, DistributionPolicy.feeders(DistributionMode.HYBRID, 4, 2));
    assertEquals("as wide as the pipeline: a fan-out", 0,
        DistributionPolicy.feeders(DistributionMode.HYBRID, 2, 2));
    assertEquals(PipelineOutcome.FAN_OUT, DistributionPolicy.outcomeOf(0));
    assertEquals(PipelineOutcome.CHAIN, DistributionPolicy.outcomeOf(1));
    assertEquals(PipelineOutcome.HYBRID, DistributionPolicy.outcomeOf(3));
    for (Reach r : Reach.values()) {
      assertEquals(r != Reach.UNREACHABLE,
          DistributionPolicy.fetchesByGet(DistributionMode.CHAIN, r));
    }

    Configuration conf = new Configuration();
    conf.setInt(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_HYBRID_FEEDERS_KEY, 3);
    assertEquals(3, new RdmaConf(conf).hybridFeeders());
    conf.setInt(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_HYBRID_FEEDERS_KEY, 16);
    assertEquals("outside what the offer carries: the default",
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_HYBRID_FEEDERS_DEFAULT,
        new RdmaConf(conf).hybridFeeders());

    WriteRequest request = WriteRequest.create(65536, 2);
    assertEquals(2, request.feeders());
  }

  private static RdmaConf distribution(String value) {
    Configuration conf = new Configuration();
    conf.set(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_DISTRIBUTION_KEY, value);
    return new RdmaConf(conf);
  }

  /**
   * DataNodes only UCX's tcp transport reaches (their UCX and the client's
   * on tcp, as between hosts without RDMA NICs): in auto the pipeline stays
   * on TCP without connecting, nothing is fetched by get, and the next
   * pipeline skips the offer; forced fan-out fetches every byte by get.
   */
  @Test(timeout = 300_000)
  public void testAutoKeepsPipelinesWithEmulatedGetsOnTcp() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    UcxRuntime.shutdown();
    ProcessCluster processes = new ProcessCluster("distribution").start(2,
        -1, ProcessCluster.Jvm.PATCHED, "dfs.rdma.ucx.tls=tcp",
        "dfs.rdma.ucx.allow-tcp=true",
        "dfs.datanode.rdma.allow-emulated-gets=true");
    try {
      Configuration conf = new Configuration();
      conf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY, true);
      conf.set(HdfsRdmaConfigKeys.DFS_RDMA_UCX_TLS_KEY, "tcp");
      conf.setBoolean(HdfsRdmaConfigKeys.DFS_RDMA_UCX_ALLOW_TCP_KEY, true);
      DistributedFileSystem auto = processes.client(conf, 2);
      byte[] data = new byte[3 * 1024 * 1024 + 5];
      new Random(11).nextBytes(data);
      write(auto, new Path("/auto-1"), data);
      write(auto, new Path("/auto-2"), data);
      UcxRuntime runtime = UcxRuntime.current();
      assertNotNull("the DataNodes' markers let the client start UCX",
          runtime);
      assertEquals(2,
          runtime.metrics().pipelines(PipelineOutcome.TCP_EMULATED_GETS));
      assertEquals(0, runtime.metrics().pipelines(PipelineOutcome.FAN_OUT));
      assertEquals("no descriptor was sent", 0,
          runtime.metrics().dataBytesSent());
      for (DataNodeProcess dn : processes.dataNodes()) {
        assertEquals(0, ProcessCluster.rdmaBean(dn, "DataBytesFetched"));
        assertEquals(2, ProcessCluster.rdmaBean(dn, "BlocksOverTcp"));
      }

      conf.set(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_DISTRIBUTION_KEY,
          "fan-out");
      FileSystem fanOut = FileSystem.newInstance(auto.getUri(), conf);
      try {
        write(fanOut, new Path("/fan-out"), data);
      } finally {
        fanOut.close();
      }
      assertEquals(1, runtime.metrics().pipelines(PipelineOutcome.FAN_OUT));
      long fetched = 0;
      for (DataNodeProcess dn : processes.dataNodes()) {
        fetched += ProcessCluster.rdmaBean(dn, "DataBytesFetched");
        assertEquals(1, ProcessCluster.rdmaBean(dn, "BlocksOverUcx"));
      }
      assertEquals("forced fan-out: every replica's bytes by get",
          2L * data.length, fetched);
      for (String p : new String[] {"/auto-1", "/auto-2", "/fan-out"}) {
        assertArrayEquals(p, data, DFSTestUtil.readFileBuffer(auto,
            new Path(p)));
      }
      auto.close();
    } finally {
      UcxRuntime.shutdown();
      processes.close();
    }
  }

  private static void write(FileSystem fs, Path path, byte[] data)
      throws Exception {
    try (FSDataOutputStream out = fs.create(path, (short) 2)) {
      out.write(data);
    }
  }

  /**
   * A marker says "a DataNode serving UCX lives here" exactly while its
   * process lives: a killed process leaves a stale file, which the next
   * probe removes.
   */
  @Test(timeout = 120_000)
  public void testMarkerLivesExactlyAsLongAsTheDataNodeProcess()
      throws Exception {
    ownMarkers();
    int before = LocalDataNodeMarker.countAlive();
    LocalDataNodeMarker own = LocalDataNodeMarker.announce(
        UcxRuntime.get(new Configuration()));
    try {
      assertEquals(before + 1, LocalDataNodeMarker.countAlive());
    } finally {
      own.close();
      own.close();
    }
    assertFalse(own.file().exists());
    assertEquals(before, LocalDataNodeMarker.countAlive());

    File ready = File.createTempFile("marker", ".ready");
    assertTrue(ready.delete());
    List<String> command = ChildJvm.command("-D"
        + LocalDataNodeMarker.DIRECTORY_PROPERTY + "=" + markers.getPath());
    command.add("-cp");
    command.add(ChildJvm.classPath());
    command.add(MarkingProcess.class.getName());
    command.add(ready.getAbsolutePath());
    Process child = new ProcessBuilder(command).inheritIO().start();
    try {
      GenericTestUtils.waitFor(() -> ready.exists() || !child.isAlive(), 50,
          60_000);
      assertTrue("the child announced", child.isAlive());
      assertEquals(before + 1, LocalDataNodeMarker.countAlive());
      // Writers probe as their streams open, several threads at once (a
      // Spark executor's tasks): no probe may fail a write.
      ExecutorService writers = Executors.newFixedThreadPool(4);
      try {
        List<Future<Integer>> probes = new ArrayList<Future<Integer>>();
        for (int i = 0; i < 400; i++) {
          probes.add(writers.submit(LocalDataNodeMarker::countAlive));
        }
        for (Future<Integer> probe : probes) {
          assertEquals(before + 1, probe.get().intValue());
        }
      } finally {
        writers.shutdownNow();
      }
      child.destroyForcibly();
      assertTrue(child.waitFor(30, TimeUnit.SECONDS));
      assertEquals("the killed process's marker is stale", before,
          LocalDataNodeMarker.countAlive());
      File[] left = LocalDataNodeMarker.directory().listFiles(
          (dir, name) -> name.contains("-" + ProcessCluster.pid(child) + "-"));
      assertEquals("and was removed", 0, left == null ? 0 : left.length);
    } finally {
      child.destroyForcibly();
      ready.delete();
    }
  }

  /** A process that holds a marker until it is killed. */
  public static final class MarkingProcess {
    public static void main(String[] args) throws Exception {
      LocalDataNodeMarker marker = LocalDataNodeMarker.announce(
          UcxRuntime.get(new Configuration()));
      if (!new File(args[0]).createNewFile()) {
        throw new IllegalStateException("cannot signal readiness");
      }
      Thread.sleep(Long.MAX_VALUE);
      marker.close();
    }
  }

  /**
   * Without RDMA devices and without a DataNode serving UCX on the host,
   * an auto client writes over TCP and never starts UCX (about 150 ms of
   * CPU saved per JVM); a DataNode serving UCX marks the host while it
   * runs.
   */
  @Test(timeout = 300_000)
  public void testNoUcxStartWithoutRdmaDevicesOrALocalDataNode()
      throws Exception {
    assumeFalse("this host has RDMA devices",
        Reach.rdmaDevicesPresent());
    ownMarkers();
    UcxRuntime.shutdown();
    Configuration conf = new Configuration();
    conf.set(DFSConfigKeys.DFS_DATANODE_PLUGINS_KEY,
        UcxDataNodePlugin.class.getName());
    conf.setBoolean(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY, false);
    conf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY, true);
    RdmaConf rdma = new RdmaConf(conf);
    assertNotNull(DistributionPolicy.reasonNotToStart(rdma));
    assertNull("fan-out is the operator's word",
        DistributionPolicy.reasonNotToStart(distribution("fan-out")));
    assertNotNull(DistributionPolicy.reasonNotToStart(distribution("tcp")));

    LogOnce.forget("client-not-started");
    GenericTestUtils.LogCapturer log = GenericTestUtils.LogCapturer
        .captureLogs(LoggerFactory.getLogger(LogOnce.class));
    try {
      cluster = new MiniDFSCluster.Builder(conf).numDataNodes(1).build();
      cluster.waitActive();
      byte[] data = new byte[1024 * 1024 + 3];
      new Random(12).nextBytes(data);
      DistributedFileSystem fs = cluster.getFileSystem();
      try (FSDataOutputStream out = fs.create(new Path("/tcp"), (short) 1)) {
        out.write(data);
      }
      assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs,
          new Path("/tcp")));
      assertNull("UCX was not started", UcxRuntime.current());
      assertTrue(log.getOutput(), log.getOutput().contains(
          "UCX not started, writes use Hadoop's TCP pipeline"));
      cluster.shutdown();

      conf.setBoolean(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY, true);
      cluster = new MiniDFSCluster.Builder(conf).numDataNodes(2).build();
      cluster.waitActive();
      assertEquals("each DataNode serving UCX marks the host", 2,
          LocalDataNodeMarker.countAlive());
      assertNull(DistributionPolicy.reasonNotToStart(rdma));
      cluster.shutdown();
      cluster = null;
      assertEquals("stopped DataNodes unmark it", 0,
          LocalDataNodeMarker.countAlive());
    } finally {
      log.stopCapturing();
    }
  }
}
