package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.File;
import java.nio.file.Files;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.hdfsrdma.hadoop.ProcessCluster.DataNodeProcess;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * Clients and DataNodes of one host on different UCX releases, or with
 * different shared-memory receive queues. Releases: this JVM's
 * (the system's, Debian 12's 1.13) and the one whose libraries
 * {@code -Dhdfsrdma.test.other-ucx=LIBDIR} names (the test command passes
 * the newest release PyPI has, {@code dev-support/ucx-wheel.sh}). UCX's
 * shared-memory queues are laid out by each sender's own release, so the
 * two must not exchange messages there: the pipeline stays on TCP, the
 * write succeeds and no JVM dies. The DataNodes then serve a client of
 * their own release over UCX, every byte.
 *
 * <p>Three DataNode JVMs on one release and an {@code hdfs dfs -put} JVM on the
 * other, and the reverse (Debian's 1.13.1; 1.22.0 in the test command): the put
 * goes over TCP, nothing is fetched, the client's log names both releases, and
 * no JVM writes a crash report.
 *
 * <p>Queues: DataNodes at UCX's own 64 entries, as JVMs of an hdfs-rdma
 * release before the bridge's default of 256 run, and a client at the
 * default; UCX indexes a peer's queue by the sender's own size, so they
 * too must keep apart.
 */
public class TestMixedUcxReleases {

  private static final int SIZE = 20 * 1024 * 1024 + 17;

  private static final String QUEUE_SIZE = "UCX_MM_FIFO_SIZE";

  private File otherUcx;
  private ProcessCluster cluster;
  /** The DataNodes' queue size; null: the bridge's default. */
  private String dataNodesQueue;

  @Before
  public void ucx() {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    UcxRuntime.shutdown();
  }

  private void otherRelease() {
    String dir = System.getProperty("hdfsrdma.test.other-ucx", "");
    assumeTrue("no other UCX release (-Dhdfsrdma.test.other-ucx)",
        !dir.isEmpty());
    otherUcx = new File(dir);
    assertTrue(otherUcx + " holds no libucp.so.0",
        new File(otherUcx, "libucp.so.0").isFile());
  }

  @After
  public void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  /** DataNodes on the system's UCX; a client on the other release. */
  @Test(timeout = 300_000)
  public void testClientOnAnotherRelease() throws Exception {
    otherRelease();
    cluster = new ProcessCluster("mixed-client").start(3, -1,
        ProcessCluster.Jvm.PATCHED);
    mixedThenSame(libraryPath(), null);
  }

  /** DataNodes on the other release; a client on the system's UCX. */
  @Test(timeout = 300_000)
  public void testDataNodesOnAnotherRelease() throws Exception {
    otherRelease();
    cluster = new ProcessCluster("mixed-datanodes")
        .environment("LD_LIBRARY_PATH", libraryPath())
        .start(3, -1, ProcessCluster.Jvm.PATCHED);
    mixedThenSame(null, libraryPath());
  }

  /** DataNodes with UCX's default queue; a client with the bridge's. */
  @Test(timeout = 300_000)
  public void testDataNodesWithAnotherQueueSize() throws Exception {
    assumeTrue("the environment sets the queue's size",
        System.getenv("UCX_MM_FIFO_SIZE") == null);
    dataNodesQueue = "64";
    cluster = new ProcessCluster("mixed-queues")
        .environment(QUEUE_SIZE, dataNodesQueue)
        .start(3, -1, ProcessCluster.Jvm.PATCHED);
    mixedThenSame(null, null);
  }

  private String libraryPath() {
    String path = System.getenv("LD_LIBRARY_PATH");
    return otherUcx.getAbsolutePath()
        + (path == null || path.isEmpty() ? "" : ":" + path);
  }

  /**
   * A put from a client JVM on {@code mixed}'s UCX (its loader path, null:
   * this JVM's), which must go over TCP, then one on {@code same}'s, the
   * DataNodes' release, which must go over UCX in full.
   */
  private void mixedThenSame(String mixed, String same) throws Exception {
    DistributedFileSystem fs = cluster.client(new Configuration(), 3);
    try {
      long before = fetched();
      // The mixed client at the bridge's queue size, the other one at the
      // DataNodes'.
      cluster.environment(QUEUE_SIZE, null);
      byte[] first = put("mixed", mixed, 1);
      cluster.environment(QUEUE_SIZE, dataNodesQueue);
      assertEquals("nothing over UCX between releases", before, fetched());
      String log = cluster.log("put-mixed");
      assertTrue(log, log.contains("whose shared-memory queues need not"
          + " agree"));
      assertArrayEquals(first, DFSTestUtil.readFileBuffer(fs,
          new Path("/mixed")));

      byte[] second = put("same", same, 2);
      assertEquals("every byte of a client on the DataNodes' release over"
          + " UCX", before + 3L * SIZE, fetched());
      assertArrayEquals(second, DFSTestUtil.readFileBuffer(fs,
          new Path("/same")));
      cluster.assertNoCrash();
    } finally {
      fs.close();
    }
  }

  /**
   * Puts a file of random bytes with FsShell in a JVM of its own, on the
   * UCX found first on {@code libraryPath} (null: this JVM's).
   */
  private byte[] put(String name, String libraryPath, long seed)
      throws Exception {
    byte[] data = new byte[SIZE];
    new Random(seed).nextBytes(data);
    File local = new File(cluster.work(), name + ".bin");
    Files.write(local.toPath(), data);
    cluster.environment("LD_LIBRARY_PATH", libraryPath);
    Process p = cluster.start("put-" + name, ProcessCluster.Jvm.PATCHED,
        "org.apache.hadoop.fs.FsShell", "-put", local.getAbsolutePath(),
        "/" + name);
    assertTrue("put " + name + " still runs", p.waitFor(180,
        TimeUnit.SECONDS));
    assertEquals(cluster.log("put-" + name), 0, p.exitValue());
    return data;
  }

  /** Data bytes the DataNodes fetched over UCX so far. */
  private long fetched() throws Exception {
    long n = 0;
    for (DataNodeProcess d : cluster.dataNodes()) {
      n += ProcessCluster.rdmaBean(d, "DataBytesFetched");
    }
    return n;
  }
}
