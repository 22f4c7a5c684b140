package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.File;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.hdfsrdma.hadoop.ProcessCluster.DataNodeProcess;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * A JVM's first block goes over TCP while UCX is not started
 * ({@code dfs.client.rdma.defer-start}, on by default), on a cluster of
 * separate JVMs (a NameNode and three DataNodes serving UCX): each put is
 * {@code hdfs dfs -put} (FsShell) in a JVM of its own, with blocks of
 * 1 MiB, so that what UCX carried is whole blocks the DataNodes count.
 * A put shorter than a quarter block never starts UCX; a longer put sends
 * every block but the first over UCX; the second file of a JVM goes over
 * UCX whole.
 */
public class TestFirstBlockOverTcp {

  private static final int BLOCK = 1024 * 1024;
  private static final int REPLICATION = 3;
  private static final String TOTALS = "hdfs-rdma totals:";

  private static ProcessCluster cluster;
  private static DistributedFileSystem fs;
  private static int puts;

  @BeforeClass
  public static void startCluster() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    cluster = new ProcessCluster("firstblock").start(REPLICATION, -1,
        ProcessCluster.Jvm.PATCHED);
    fs = cluster.client(new Configuration(), REPLICATION);
  }

  @AfterClass
  public static void stopCluster() throws Exception {
    try {
      if (fs != null) {
        fs.close();
      }
    } finally {
      if (cluster != null) {
        cluster.close();
      }
    }
  }

  /** Bytes the DataNodes fetched over UCX so far, summed. */
  private static long fetched() throws Exception {
    long n = 0;
    for (DataNodeProcess d : cluster.dataNodes()) {
      n += ProcessCluster.rdmaBean(d, "DataBytesFetched");
    }
    return n;
  }

  /**
   * Puts local files of random bytes of {@code sizes} into directory
   * {@code dir} with one FsShell JVM, the product's defaults but for the
   * block size; returns the JVM's log once it exited normally, after
   * checking each file reads back intact.
   */
  private static String put(String dir, int... sizes) throws Exception {
    String name = "put-" + puts++;
    List<String> args = new ArrayList<String>();
    Collections.addAll(args, "-D", "fs.defaultFS=" + cluster.fsUri(),
        "-D", "dfs.replication=" + REPLICATION,
        "-D", "dfs.blocksize=" + BLOCK,
        "-D", HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY + "=true",
        // The test resources turn it off; this is the default.
        "-D", HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_DEFER_START_KEY + "=true",
        "-put");
    List<byte[]> data = new ArrayList<byte[]>();
    for (int i = 0; i < sizes.length; i++) {
      byte[] bytes = new byte[sizes[i]];
      new Random(31 * puts + i).nextBytes(bytes);
      data.add(bytes);
      File local = new File(cluster.work(), name + "-file" + i);
      Files.write(local.toPath(), bytes);
      args.add(local.getAbsolutePath());
    }
    fs.mkdirs(new Path(dir));
    args.add(dir);
    Process p = cluster.start(name, ProcessCluster.Jvm.PATCHED,
        "org.apache.hadoop.fs.FsShell", args.toArray(new String[0]));
    assertTrue(name + " finished", p.waitFor(120, TimeUnit.SECONDS));
    String log = cluster.log(name);
    assertEquals(log, 0, p.exitValue());
    for (int i = 0; i < sizes.length; i++) {
      assertArrayEquals(log, data.get(i), DFSTestUtil.readFileBuffer(fs,
          new Path(dir, name + "-file" + i)));
    }
    return log;
  }

  /** The value of {@code key} in the JVM's totals line, or -1. */
  private static long total(String log, String key) {
    int line = log.indexOf(TOTALS);
    if (line < 0) {
      return -1;
    }
    int at = log.indexOf(" " + key + "=", line);
    assertTrue(key + " in " + log, at > 0);
    int from = at + key.length() + 2;
    int to = from;
    while (to < log.length() && Character.isDigit(log.charAt(to))) {
      to++;
    }
    return Long.parseLong(log.substring(from, to));
  }

  /** Below a quarter of a block: UCX is not even started. */
  @Test(timeout = 300_000)
  public void testSmallPutNeverStartsUcx() throws Exception {
    long before = fetched();
    String log = put("/small", BLOCK / 4 - 5);
    assertFalse("the JVM started no UCX runtime: " + log,
        log.contains(TOTALS));
    assertEquals("UCX carried nothing", before, fetched());
  }

  @Test(timeout = 300_000)
  public void testEveryBlockButTheFirstOverUcx() throws Exception {
    int size = 4 * BLOCK + 100;
    long before = fetched();
    String log = put("/five-blocks", size);
    long later = size - BLOCK;
    assertEquals("the client sent every block but the first: " + log,
        later, total(log, "ucx-data-bytes-sent"));
    assertEquals(log, 1, total(log, "pipelines-tcp-deferred"));
    assertEquals("the DataNodes fetched every replica of those blocks",
        REPLICATION * later, fetched() - before);
  }

  @Test(timeout = 300_000)
  public void testSecondFileOfAJvmOverUcxWhole() throws Exception {
    int first = BLOCK / 2;
    int second = 2 * BLOCK + BLOCK / 2;
    long before = fetched();
    String log = put("/two-files", first, second);
    assertEquals("only the second file went over UCX: " + log, second,
        total(log, "ucx-data-bytes-sent"));
    assertEquals(log, 1, total(log, "pipelines-tcp-deferred"));
    assertEquals(REPLICATION * (long) second, fetched() - before);
  }
}
