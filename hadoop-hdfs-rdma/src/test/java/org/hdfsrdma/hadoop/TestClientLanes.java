package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.metrics2.AbstractMetric;
import org.apache.hadoop.metrics2.MetricsRecord;
import org.apache.hadoop.metrics2.impl.MetricsCollectorImpl;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.runtime.ClientLanes;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Client lanes ({@code dfs.client.rdma.workers}): several UCX workers the
 * streams of one client JVM send on, each stream on one for life, so that
 * streams on different lanes do not take turns at one worker.
 *
 * <p>With four lanes, eight streams opened one after the other take lanes
 * 0, 1, 2, 3, 0, 1, 2, 3 (the fewest streams, the lowest on a tie, a new
 * lane only when every lane has one) and are written by eight threads at
 * once: every byte of every replica came by UCX (the DataNodes' counters,
 * as in TestUcxWritePath), and each of the four lanes' connections carried
 * messages. With one lane the streams share the runtime's own worker and
 * no other worker is made. A value out of range is the default, said once,
 * as for every other setting.
 */
public class TestClientLanes {

  private static final Logger LOG =
      LoggerFactory.getLogger(TestClientLanes.class);
  private static final int BLOCK_SIZE = 1024 * 1024;
  private static final int CHUNK = 64 * 1024;
  private static final short REPLICATION = 3;

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
    conf.setInt(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_WORKERS_KEY, workers);
    return conf;
  }

  private static long fetchedTotal() {
    long total = 0;
    for (long n : UcxCounters.dataBytesFetchedByDataNode().values()) {
      total += n;
    }
    return total;
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
      if (t.getName().startsWith("hdfs-rdma-lane")) {
        n++;
      }
    }
    return n;
  }

  /**
   * Opens {@code streams} files one after the other (each stream takes its
   * lane as it opens), then writes them from as many threads at once, in
   * chunks with an hflush every four, and checks every replica's bytes
   * came over UCX and read back equal.
   */
  private void writeConcurrently(FileSystem fs, String dir, int streams,
      int size) throws Exception {
    byte[][] data = new byte[streams][size];
    List<FSDataOutputStream> outs = new ArrayList<FSDataOutputStream>();
    long before = fetchedTotal();
    long directBefore = UcxCounters.dataBytesReadDirectly();
    long tcpBlocks = UcxCounters.blocksOverTcp();
    ExecutorService writers = Executors.newFixedThreadPool(streams);
    try {
      for (int i = 0; i < streams; i++) {
        new Random(31L * i + size).nextBytes(data[i]);
        outs.add(fs.create(new Path(dir, "f" + i), REPLICATION));
      }
      final CountDownLatch go = new CountDownLatch(1);
      List<Future<Void>> done = new ArrayList<Future<Void>>();
      for (int i = 0; i < streams; i++) {
        final FSDataOutputStream out = outs.get(i);
        final byte[] bytes = data[i];
        done.add(writers.submit(() -> {
          go.await();
          try {
            for (int off = 0, n = 0; off < bytes.length; off += CHUNK, n++) {
              out.write(bytes, off, Math.min(CHUNK, bytes.length - off));
              if (n % 4 == 3) {
                out.hflush();
              }
            }
          } finally {
            out.close();
          }
          return null;
        }));
      }
      go.countDown();
      for (Future<Void> f : done) {
        f.get(240, TimeUnit.SECONDS);
      }
    } finally {
      writers.shutdownNow();
      for (FSDataOutputStream out : outs) {
        out.close();
      }
    }
    for (int i = 0; i < streams; i++) {
      Path p = new Path(dir, "f" + i);
      DFSTestUtil.waitReplication(fs, p, REPLICATION);
      assertArrayEquals(p.toString(), data[i],
          DFSTestUtil.readFileBuffer(fs, p));
    }
    long fetched = fetchedTotal() - before;
    assertEquals("bytes read through UCX descriptors",
        (long) streams * size * REPLICATION, fetched);
    assertEquals("every byte read directly from the client's segment",
        fetched, UcxCounters.dataBytesReadDirectly() - directBefore);
    assertEquals("replicas whose packets came on the socket", tcpBlocks,
        UcxCounters.blocksOverTcp());
  }

  @Test(timeout = 300_000)
  public void testEightWritersOnFourLanes() throws Exception {
    cluster = new MiniDFSCluster.Builder(conf(4)).numDataNodes(3).build();
    cluster.waitActive();
    FileSystem fs = cluster.getFileSystem();
    final UcxRuntime runtime = UcxRuntime.current();
    assertNotNull("the DataNodes started UCX", runtime);
    assertEquals(4, runtime.conf().clientWorkers());
    final ClientLanes lanes = runtime.clientLanes();
    assertEquals(4, lanes.capacity());
    assertEquals("no lane made before a stream needs it", 1, lanes.made());
    assertEquals(0, laneThreads());
    assertSame(runtime.worker(), lanes.lane(0).worker());
    long connectsBefore = jvmMetric(runtime, "ClientConnects");

    writeConcurrently(fs, "/lanes/w4", 8, 2 * BLOCK_SIZE + 4321);

    assertEquals("lanes made", 4, lanes.made());
    assertEquals("a progress thread per lane beyond 0", 3, laneThreads());
    long total = 0;
    for (int i = 0; i < lanes.made(); i++) {
      long sent = lanes.lane(i).messagesSent();
      LOG.info("{}: {} messages sent, {} connections", lanes.lane(i), sent,
          lanes.lane(i).connects());
      assertTrue("lane " + i + " carried descriptors: " + sent, sent > 0);
      // The DataNodes of a MiniDFSCluster share their JVM's one worker:
      // one connection per lane reaches all three.
      assertTrue("lane " + i + " connected to the DataNodes' worker",
          lanes.lane(i).connects() >= 1);
      total += sent;
    }
    assertEquals(total, lanes.messagesSent());
    // The metrics sum over the lanes: each lane made its own connection.
    long connects = jvmMetric(runtime, "ClientConnects") - connectsBefore;
    assertTrue("ClientConnects " + connects, connects >= 4);
    // Closed streams count on no lane.
    WaitFor.waitFor(() -> {
      for (int i = 0; i < lanes.made(); i++) {
        if (lanes.lane(i).streams() != 0) {
          return false;
        }
      }
      return true;
    }, 50, 30_000);

    // The lanes stay: a second round makes none and still uses UCX only.
    writeConcurrently(fs, "/lanes/w4-again", 8, BLOCK_SIZE / 2 + 17);
    assertEquals(4, lanes.made());
  }

  @Test(timeout = 300_000)
  public void testOneLaneIsTheRuntimesWorker() throws Exception {
    cluster = new MiniDFSCluster.Builder(conf(1)).numDataNodes(3).build();
    cluster.waitActive();
    UcxRuntime runtime = UcxRuntime.current();
    assertNotNull("the DataNodes started UCX", runtime);
    ClientLanes lanes = runtime.clientLanes();
    assertEquals(1, lanes.capacity());

    writeConcurrently(cluster.getFileSystem(), "/lanes/w1", 4,
        BLOCK_SIZE + 99);

    assertEquals("one lane", 1, lanes.made());
    assertSame("the runtime's own worker", runtime.worker(),
        lanes.lane(0).worker());
    assertEquals("no other worker's thread", 0, laneThreads());
    assertTrue(lanes.lane(0).messagesSent() > 0);
  }

  @Test(timeout = 60_000)
  public void testWorkersOutOfRangeAreTheDefault() throws Exception {
    for (int bad : new int[] {0, 17, -3}) {
      Configuration conf = conf(bad);
      RdmaConf rdma = new RdmaConf(conf);
      assertEquals(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_WORKERS_DEFAULT,
          rdma.clientWorkers());
      assertEquals(rdma.problems().toString(), 1, rdma.problems().size());
      assertTrue(rdma.problems().get(0), rdma.problems().get(0).startsWith(
          "hdfs-rdma: " + HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_WORKERS_KEY
          + "=" + bad + " is outside 1..16"));
      // The runtime takes the checked value: one lane, no failure.
      UcxRuntime runtime = UcxRuntime.get(conf);
      try {
        assertEquals(1, runtime.clientLanes().capacity());
        assertSame(runtime.worker(), runtime.clientLanes().take().worker());
      } finally {
        UcxRuntime.shutdown();
      }
    }
  }
}
