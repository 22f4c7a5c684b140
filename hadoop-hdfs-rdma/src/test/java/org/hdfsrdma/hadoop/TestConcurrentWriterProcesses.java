package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.File;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.hdfsrdma.hadoop.ProcessCluster.DataNodeProcess;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.Test;

/**
 * Several writer processes on one host fill the same DataNodes' receive
 * queues at once, as the tasks of a MapReduce or Spark job do. UCX 1.13
 * aborted such writers ("arbiter.c:117 ... while it's being dispatched")
 * when a connect's completion sent the hello inside UCX's callback while
 * the DataNode's queue was full (with queues of 16, in every run of this
 * test before the fix; in {@code benchmarks/run.sh}, four writers of 512
 * MiB). Every writer must exit normally with its file intact and carried
 * by UCX, and the writers must have met full queues (their
 * {@code queued-sends}), or the test did not exercise what it is about.
 *
 * <p>Six {@code hdfs dfs -put} JVMs write 48 MiB each at once to three DataNode
 * JVMs, every JVM with shared-memory receive queues of 16 messages, the
 * descriptors over UCX (not on the pipelines' sockets, which keep them out
 * of the queues); UCX carries every replica, and no JVM writes a crash
 * report.
 */
public class TestConcurrentWriterProcesses {

  private static final int WRITERS = 6;
  private static final int SIZE = 48 * 1024 * 1024 + 7;

  @Test(timeout = 600_000)
  public void testWritersSharingFullQueues() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    // Receive queues of 16 messages in every JVM (peers must agree), so
    // that six writers fill the DataNodes' queues as hundreds would fill
    // the bridge's default of 256.
    ProcessCluster cluster = new ProcessCluster("writers")
        .environment("UCX_MM_FIFO_SIZE", "16").start(3, -1,
            ProcessCluster.Jvm.PATCHED);
    DistributedFileSystem fs = null;
    try {
      fs = cluster.client(new Configuration(), 3);
      List<byte[]> data = new ArrayList<byte[]>();
      List<Process> puts = new ArrayList<Process>();
      for (int w = 0; w < WRITERS; w++) {
        byte[] bytes = new byte[SIZE];
        new Random(w).nextBytes(bytes);
        data.add(bytes);
        File local = new File(cluster.work(), "input-" + w);
        Files.write(local.toPath(), bytes);
      }
      for (int w = 0; w < WRITERS; w++) {
        puts.add(cluster.start("put-" + w, ProcessCluster.Jvm.PATCHED,
            "org.apache.hadoop.fs.FsShell", "-D",
            "fs.defaultFS=" + cluster.fsUri(), "-D", "dfs.replication=3",
            "-D", HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY + "=true",
            // Descriptors over UCX: on the sockets, only hellos and region
            // announcements would reach the queues.
            "-D", HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_SOCKET_DESCRIPTORS_KEY
                + "=false",
            "-put", new File(cluster.work(), "input-" + w).getAbsolutePath(),
            "/w" + w));
      }
      long queued = 0;
      Pattern queuedSends = Pattern.compile("queued-sends=(\\d+)");
      for (int w = 0; w < WRITERS; w++) {
        Process put = puts.get(w);
        assertTrue("writer " + w + " finished",
            put.waitFor(300, TimeUnit.SECONDS));
        String log = cluster.log("put-" + w);
        assertEquals("writer " + w + ": " + log, 0, put.exitValue());
        Matcher m = queuedSends.matcher(log);
        assertTrue("writer " + w + " reported its UCX totals: " + log,
            m.find());
        queued += Long.parseLong(m.group(1));
      }
      assertTrue("no writer met a full DataNode queue: the test did not"
          + " exercise what it is about", queued > 0);

      long fetched = 0;
      for (DataNodeProcess dn : cluster.dataNodes()) {
        fetched += ProcessCluster.rdmaBean(dn, "DataBytesFetched");
        assertEquals(0, ProcessCluster.rdmaBean(dn, "BlocksOverTcp"));
      }
      assertEquals("UCX carried every replica", 3L * SIZE * WRITERS,
          fetched);
      for (int w = 0; w < WRITERS; w++) {
        assertArrayEquals(data.get(w), DFSTestUtil.readFileBuffer(fs,
            new Path("/w" + w)));
      }
      cluster.assertNoCrash();
    } finally {
      if (fs != null) {
        fs.close();
      }
      cluster.close();
    }
  }
}
