package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
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
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.hdfsrdma.hadoop.ProcessCluster.DataNodeProcess;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.runtime.ClientLanes;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Client lanes against DataNodes in JVMs of their own, where each lane
 * connects to each DataNode's worker and a DataNode dies under them: UCX
 * 1.13 once tripped an assertion with two workers in one process on
 * descriptor reuse (jucx-bridge's README), and this is where a client's
 * workers see peers come and go.
 *
 * <p>Four DataNodes, replication 2; this JVM writes eight streams at once
 * on four lanes. First round: every replica over UCX, every lane carried
 * descriptors. Second round: one DataNode is killed (SIGKILL) while the
 * streams write; every file still completes and reads back equal (its
 * pipelines recover over TCP), the lanes' failed connections leave their
 * caches, and no JVM writes a crash report.
 */
public class TestClientLanesAcrossProcesses {

  private static final Logger LOG =
      LoggerFactory.getLogger(TestClientLanesAcrossProcesses.class);
  private static final int STREAMS = 8;
  private static final int LANES = 4;
  private static final int DATANODES = 4;
  private static final short REPLICATION = 2;
  private static final int CHUNK = 64 * 1024;
  private static final int SIZE = 6 * 1024 * 1024 + 11;
  private static final String TIMEOUT_MS = "5000";

  /**
   * Opens the streams one after the other (lanes 0-3, twice), writes them
   * from as many threads, and runs {@code midway} once every stream wrote
   * a third of its bytes.
   */
  private static byte[][] writeConcurrently(DistributedFileSystem fs,
      String dir, Runnable midway) throws Exception {
    byte[][] data = new byte[STREAMS][SIZE];
    List<FSDataOutputStream> outs = new ArrayList<FSDataOutputStream>();
    ExecutorService writers = Executors.newFixedThreadPool(STREAMS);
    try {
      for (int i = 0; i < STREAMS; i++) {
        new Random(dir.hashCode() * 31L + i).nextBytes(data[i]);
        outs.add(fs.create(new Path(dir, "f" + i), REPLICATION));
      }
      final CountDownLatch third = new CountDownLatch(STREAMS);
      final CountDownLatch resume = new CountDownLatch(1);
      List<Future<Void>> done = new ArrayList<Future<Void>>();
      for (int i = 0; i < STREAMS; i++) {
        final FSDataOutputStream out = outs.get(i);
        final byte[] bytes = data[i];
        done.add(writers.submit(() -> {
          try {
            boolean paused = false;
            for (int off = 0, n = 0; off < bytes.length; off += CHUNK, n++) {
              out.write(bytes, off, Math.min(CHUNK, bytes.length - off));
              if (n % 4 == 3) {
                out.hflush();
              }
              if (!paused && off >= bytes.length / 3) {
                paused = true;
                third.countDown();
                resume.await();
              }
            }
          } finally {
            out.close();
          }
          return null;
        }));
      }
      assertTrue("every stream wrote a third",
          third.await(120, TimeUnit.SECONDS));
      midway.run();
      resume.countDown();
      for (Future<Void> f : done) {
        f.get(300, TimeUnit.SECONDS);
      }
    } finally {
      writers.shutdownNow();
      for (FSDataOutputStream out : outs) {
        out.close();
      }
    }
    for (int i = 0; i < STREAMS; i++) {
      assertArrayEquals(dir + "/f" + i, data[i],
          DFSTestUtil.readFileBuffer(fs, new Path(dir, "f" + i)));
    }
    return data;
  }

  private static long fetched(ProcessCluster cluster, boolean live)
      throws Exception {
    long n = 0;
    for (DataNodeProcess d : cluster.dataNodes()) {
      if (!live || d.process.isAlive()) {
        n += ProcessCluster.rdmaBean(d, "DataBytesFetched");
      }
    }
    return n;
  }

  @Test(timeout = 900_000)
  public void testEightStreamsOnFourLanesWhileADataNodeDies()
      throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    // This JVM's runtime must start with the lanes.
    UcxRuntime.shutdown();
    ProcessCluster cluster = new ProcessCluster("lanes").daemonConf(
        "dfs.heartbeat.interval=1",
        "dfs.client.socket-timeout=" + TIMEOUT_MS).start(DATANODES, -1,
            ProcessCluster.Jvm.PATCHED);
    DistributedFileSystem fs = null;
    try {
      Configuration conf = new Configuration();
      conf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY, true);
      conf.setInt(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_WORKERS_KEY, LANES);
      conf.set(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_CONNECT_TIMEOUT_MS_KEY,
          TIMEOUT_MS);
      conf.set("dfs.client.socket-timeout", TIMEOUT_MS);
      // Four DataNodes, one killed: recovery goes on with the survivor.
      conf.setBoolean(
          "dfs.client.block.write.replace-datanode-on-failure.enable", false);
      fs = cluster.client(conf, DATANODES);

      long before = fetched(cluster, false);
      writeConcurrently(fs, "/round1", () -> { });
      assertEquals("UCX carried every replica",
          (long) STREAMS * SIZE * REPLICATION, fetched(cluster, false)
          - before);
      ClientLanes lanes = UcxRuntime.current().clientLanes();
      assertEquals(LANES, lanes.made());
      long[] sent = new long[LANES];
      for (int i = 0; i < LANES; i++) {
        sent[i] = lanes.lane(i).messagesSent();
        LOG.info("round 1: {}: {} messages, {} connections", lanes.lane(i),
            sent[i], lanes.lane(i).connects());
        assertTrue("lane " + i + " carried descriptors", sent[i] > 0);
      }

      final DataNodeProcess victim = cluster.dataNodes().get(DATANODES - 1);
      writeConcurrently(fs, "/round2", () -> {
        LOG.info("killing {}", victim.name);
        victim.process.destroyForcibly();
        try {
          assertTrue(victim.process.waitFor(60, TimeUnit.SECONDS));
        } catch (InterruptedException e) {
          throw new AssertionError(e);
        }
      });
      for (int i = 0; i < LANES; i++) {
        LOG.info("round 2: {}: {} messages, {} connections", lanes.lane(i),
            lanes.lane(i).messagesSent(), lanes.lane(i).connects());
        assertTrue("lane " + i + " carried descriptors in round 2",
            lanes.lane(i).messagesSent() > sent[i]);
      }
      assertEquals("lanes made", LANES, lanes.made());
      cluster.assertNoCrash();
    } finally {
      try {
        if (fs != null) {
          fs.close();
        }
        UcxRuntime.shutdown();
      } finally {
        cluster.close();
      }
    }
  }
}
