package org.hdfsrdma.hadoop;

import static org.apache.hadoop.test.MetricsAsserts.getLongCounter;
import static org.apache.hadoop.test.MetricsAsserts.getMetrics;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.IOException;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.Random;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.test.GenericTestUtils;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.metrics.ClientReads;
import org.hdfsrdma.hadoop.datanode.DataNodeServer;
import org.hdfsrdma.hadoop.datanode.UcxDataNode;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * Block reads over UCX in a MiniDFSCluster (DESIGN.md section 9): a client
 * with {@code dfs.client.rdma.read.enabled} reads files sequentially and
 * positionally, byte for byte what was written, and the counters of both
 * sides prove the packets came from the DataNodes' registered memory, not
 * the socket: every read a DataNode served, the client answered, with the
 * bytes the client took equal to those the DataNodes exposed. Client and
 * DataNodes share one JVM and host here, so the client reads the
 * DataNodes' shared memory directly.
 *
 * <p>Runs on the release lines whose patch series hooks the block reader
 * (the others read stock; the test is skipped there).
 */
public class TestUcxReads {

  private static final int BLOCK_SIZE = 1024 * 1024;

  private static MiniDFSCluster cluster;
  private static FileSystem writer;
  private static FileSystem reader;

  @BeforeClass
  public static void startCluster() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    assumeTrue("this release's block reader has no UCX read hook",
        readHooked());
    Configuration conf = TestUcxWritePath.ucxConf();
    cluster = new MiniDFSCluster.Builder(conf).numDataNodes(3).build();
    cluster.waitActive();
    writer = cluster.getFileSystem();
    Configuration readConf = new Configuration(cluster.getConfiguration(0));
    readConf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_READ_ENABLED_KEY,
        true);
    reader = FileSystem.newInstance(writer.getUri(), readConf);
  }

  /**
   * Whether the release's default block reader carries the hook (its
   * channel replaceable): BlockReaderRemote2 on Hadoop 2, BlockReaderRemote
   * on Hadoop 3, which has no BlockReaderRemote2.
   */
  static boolean readHooked() throws Exception {
    Class<?> c;
    try {
      c = Class.forName(
          "org.apache.hadoop.hdfs.client.impl.BlockReaderRemote2");
    } catch (ClassNotFoundException hadoop3) {
      c = Class.forName(
          "org.apache.hadoop.hdfs.client.impl.BlockReaderRemote");
    }
    return !Modifier.isFinal(c.getDeclaredField("in").getModifiers());
  }

  @AfterClass
  public static void stopCluster() throws IOException {
    if (reader != null) {
      reader.close();
    }
    if (cluster != null) {
      cluster.shutdown();
    }
    UcxRuntime.shutdown();
  }

  private static ClientReads clientCounters() {
    return UcxRuntime.current().metrics().reads();
  }

  private static long[] dataNodeReads() {
    long reads = 0;
    long bytes = 0;
    for (DataNode dn : cluster.getDataNodes()) {
      UcxDataNode u = UcxDataNode.of(dn);
      reads += u.metrics().readsOverUcx();
      bytes += u.metrics().readBytesOverUcx();
    }
    return new long[] {reads, bytes};
  }

  /**
   * Packets the DataNodes sent with transferTo (Hadoop's own
   * SendDataPacketTransferNanos): a UCX read's data goes into registered
   * memory through it, in packets of 64 KiB as over TCP.
   */
  private static long transferToPackets() {
    long n = 0;
    for (DataNode dn : cluster.getDataNodes()) {
      n += getLongCounter("SendDataPacketTransferNanosNumOps",
          getMetrics(dn.getMetrics().name()));
    }
    return n;
  }

  private static byte[] write(String name, int size) throws Exception {
    byte[] data = new byte[size];
    new Random(size * 17L + name.hashCode()).nextBytes(data);
    Path path = new Path("/reads/" + name);
    try (FSDataOutputStream out = writer.create(path, (short) 3)) {
      out.write(data);
    }
    DFSTestUtil.waitReplication(writer, path, (short) 3);
    return data;
  }

  /**
   * Every read the client took over UCX was served so by a DataNode, with
   * the same bytes: the client's counters against the DataNodes' (which
   * count a read once its client's status arrived, so they are awaited).
   */
  private static void assertUcxCarried(long[] dnBefore, long clientBefore,
      long answeredBefore, int minReads) throws Exception {
    long answered = clientCounters().readsAnswered() - answeredBefore;
    assertTrue("reads taken over UCX: " + answered + " (offers served"
        + " stock: " + clientCounters().readsStock() + ")",
        answered >= minReads);
    GenericTestUtils.waitFor(() -> dataNodeReads()[0] - dnBefore[0]
        >= answered, 50, 30_000);
    long[] dn = dataNodeReads();
    assertEquals("reads the DataNodes served over UCX", answered,
        dn[0] - dnBefore[0]);
    assertEquals("bytes the client took = bytes the DataNodes exposed",
        dn[1] - dnBefore[1], clientCounters().bytesRead() - clientBefore);
  }

  @Test(timeout = 300_000)
  public void testSequentialReads() throws Exception {
    for (int size : new int[] {1, 511, 64 * 1024 + 1, BLOCK_SIZE,
        3 * BLOCK_SIZE + 12345}) {
      byte[] data = write("seq-" + size, size);
      long[] dn = dataNodeReads();
      long taken = clientCounters().bytesRead();
      long answered = clientCounters().readsAnswered();
      long packets = transferToPackets();
      assertArrayEquals("file of " + size + " bytes", data,
          DFSTestUtil.readFileBuffer(reader, new Path("/reads/seq-"
              + size)));
      assertTrue("packets of at most 64 KiB sent with transferTo",
          transferToPackets() - packets >= (size + 65535) / 65536);
      assertUcxCarried(dn, taken, answered,
          (size + BLOCK_SIZE - 1) / BLOCK_SIZE);
      assertTrue("bytes over UCX cover the file",
          clientCounters().bytesRead() - taken >= size);
    }
  }

  /**
   * A read shorter than dfs.client.rdma.read.min-bytes (the tests' own
   * hdfs-site.xml sets 0) offers nothing and stays stock; a longer one on
   * the same stream goes over UCX.
   */
  @Test(timeout = 300_000)
  public void testReadsBelowTheThresholdStayOnTcp() throws Exception {
    byte[] data = write("threshold", BLOCK_SIZE);
    Configuration conf = new Configuration(reader.getConf());
    conf.setLong(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_READ_MIN_BYTES_KEY,
        256 * 1024);
    try (FileSystem fs = FileSystem.newInstance(writer.getUri(), conf);
        FSDataInputStream in = fs.open(new Path("/reads/threshold"))) {
      long answered = clientCounters().readsAnswered();
      long taken = clientCounters().bytesRead();
      byte[] got = new byte[256 * 1024 - 1];
      in.readFully(1000, got);
      assertArrayEquals(Arrays.copyOfRange(data, 1000, 1000 + got.length),
          got);
      assertEquals("no UCX read below the threshold", answered,
          clientCounters().readsAnswered());
      assertEquals(taken, clientCounters().bytesRead());
      got = new byte[256 * 1024];
      in.readFully(1000, got);
      assertArrayEquals(Arrays.copyOfRange(data, 1000, 1000 + got.length),
          got);
      assertEquals("a UCX read at the threshold", answered + 1,
          clientCounters().readsAnswered());
      assertTrue(clientCounters().bytesRead() - taken >= got.length);
    }
  }

  @Test(timeout = 300_000)
  public void testPositionalReads() throws Exception {
    int size = 2 * BLOCK_SIZE + 4321;
    byte[] data = write("pread", size);
    long[] dn = dataNodeReads();
    long taken = clientCounters().bytesRead();
    long answered = clientCounters().readsAnswered();
    Random r = new Random(7);
    try (FSDataInputStream in = reader.open(new Path("/reads/pread"))) {
      for (int i = 0; i < 40; i++) {
        int len = 1 + r.nextInt(200 * 1024);
        int at = r.nextInt(size - len);
        byte[] got = new byte[len];
        in.readFully(at, got);
        for (int k = 0; k < len; k++) {
          if (got[k] != data[at + k]) {
            throw new AssertionError("pread of " + len + " at " + at
                + " differs at " + (at + k));
          }
        }
      }
    }
    assertUcxCarried(dn, taken, answered, 40);
  }

  /**
   * A reader that stops mid-block: the DataNode retires the reader's pool,
   * holds no buffer afterwards, and the next reads go over UCX again.
   */
  @Test(timeout = 300_000)
  public void testReaderClosingEarly() throws Exception {
    int size = 3 * BLOCK_SIZE;
    byte[] data = write("early", size);
    for (int i = 0; i < 5; i++) {
      try (FSDataInputStream in = reader.open(new Path("/reads/early"))) {
        byte[] head = new byte[1000 + i * 70_000];
        in.readFully(head);
        for (int k = 0; k < head.length; k++) {
          assertEquals(data[k], head[k]);
        }
      }
    }
    GenericTestUtils.waitFor(() -> DataNodeServer.of(UcxRuntime.current())
        .readers().held() == 0, 100, 30_000);
    long[] dn = dataNodeReads();
    long taken = clientCounters().bytesRead();
    long answered = clientCounters().readsAnswered();
    assertArrayEquals(data, DFSTestUtil.readFileBuffer(reader,
        new Path("/reads/early")));
    assertUcxCarried(dn, taken, answered, 3);
  }

  /** A client without the setting reads stock: no offer, no UCX bytes. */
  @Test(timeout = 300_000)
  public void testWithoutTheSettingReadsStock() throws Exception {
    byte[] data = write("stock", BLOCK_SIZE + 99);
    long[] dn = dataNodeReads();
    long taken = clientCounters().bytesRead();
    assertArrayEquals(data, DFSTestUtil.readFileBuffer(writer,
        new Path("/reads/stock")));
    assertEquals(dn[0], dataNodeReads()[0]);
    assertEquals(taken, clientCounters().bytesRead());
  }
}
