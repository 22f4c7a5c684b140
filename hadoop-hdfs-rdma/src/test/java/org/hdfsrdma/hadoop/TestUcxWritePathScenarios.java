package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.ByteArrayOutputStream;
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
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.client.HdfsDataOutputStream;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.tools.DFSck;
import org.apache.hadoop.test.GenericTestUtils;
import org.apache.hadoop.util.ToolRunner;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * The UCX write path in the situations a cluster meets: hflush and hsync in
 * the middle of a file, append, concurrent writers, a DataNode stopped in
 * the middle of a block, and a DataNode that does not serve UCX.
 */
public class TestUcxWritePathScenarios {

  private static final int BLOCK_SIZE = 1024 * 1024;

  private MiniDFSCluster cluster;
  private DistributedFileSystem fs;

  @Before
  public void checkUcx() {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
  }

  @After
  public void tearDown() {
    if (cluster != null) {
      cluster.shutdown();
    }
    UcxRuntime.shutdown();
  }

  private void start(int dataNodes) throws Exception {
    Configuration conf = TestUcxWritePath.ucxConf();
    cluster = new MiniDFSCluster.Builder(conf).numDataNodes(dataNodes)
        .build();
    cluster.waitActive();
    fs = cluster.getFileSystem();
  }

  private static long fetched() {
    long total = 0;
    for (long n : UcxRuntime.current().dataBytesFetched().values()) {
      total += n;
    }
    return total;
  }

  private static byte[] random(int size, long seed) {
    byte[] data = new byte[size];
    new Random(seed).nextBytes(data);
    return data;
  }

  private String fsck(String path) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ToolRunner.run(new DFSck(cluster.getConfiguration(0),
        new java.io.PrintStream(out, true)), new String[] {path});
    return out.toString();
  }

  @Test(timeout = 300_000)
  public void testHflushHsyncAndAppend() throws Exception {
    start(3);
    Path path = new Path("/flush");
    byte[] first = random(300_000, 1);
    byte[] second = random(700_123, 2);
    byte[] third = random(1_500_000, 3);
    long before = fetched();
    try (FSDataOutputStream out = fs.create(path, (short) 3)) {
      out.write(first, 0, 100_001);
      out.hflush();
      // What was flushed is visible to a reader, byte for byte.
      try (HdfsDataInputStream in = (HdfsDataInputStream) fs.open(path)) {
        assertEquals(100_001, in.getVisibleLength());
        byte[] flushed = new byte[100_001];
        in.readFully(0, flushed);
        assertArrayEquals(java.util.Arrays.copyOf(first, 100_001), flushed);
      }
      out.write(first, 100_001, first.length - 100_001);
      ((HdfsDataOutputStream) out).hsync();
      out.write(second);
    }
    try (FSDataOutputStream out = fs.append(path)) {
      out.write(third);
      out.hflush();
    }
    DFSTestUtil.waitReplication(fs, path, (short) 3);
    byte[] expected = new byte[first.length + second.length + third.length];
    System.arraycopy(first, 0, expected, 0, first.length);
    System.arraycopy(second, 0, expected, first.length, second.length);
    System.arraycopy(third, 0, expected, first.length + second.length,
        third.length);
    assertArrayEquals(expected, DFSTestUtil.readFileBuffer(fs, path));
    // A flushed partial chunk is sent again with the bytes that follow it,
    // as on the socket path: at least every byte once per replica.
    assertTrue("fetched " + (fetched() - before),
        fetched() - before >= 3L * expected.length);
  }

  @Test(timeout = 300_000)
  public void testEightConcurrentWriters() throws Exception {
    start(3);
    ExecutorService pool = Executors.newFixedThreadPool(8);
    long before = fetched();
    try {
      List<Future<byte[]>> writes = new ArrayList<Future<byte[]>>();
      for (int i = 0; i < 8; i++) {
        final int writer = i;
        writes.add(pool.submit(() -> {
          byte[] data = random(2 * BLOCK_SIZE + writer * 1000, writer);
          try (FSDataOutputStream out = fs.create(new Path("/w" + writer),
              (short) 3)) {
            out.write(data);
          }
          return data;
        }));
      }
      long total = 0;
      for (int i = 0; i < 8; i++) {
        byte[] data = writes.get(i).get(200, TimeUnit.SECONDS);
        assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs,
            new Path("/w" + i)));
        total += data.length;
      }
      assertEquals(3 * total, fetched() - before);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test(timeout = 300_000)
  public void testDataNodeStoppedMidBlock() throws Exception {
    start(4);
    Path path = new Path("/recovery");
    byte[] data = random(3 * BLOCK_SIZE / 2, 9);
    try (FSDataOutputStream out = fs.create(path, (short) 3)) {
      out.write(data, 0, BLOCK_SIZE / 2);
      out.hflush();
      assertEquals("the first half went over UCX to all three", 3L
          * BLOCK_SIZE / 2, fetched());
      DatanodeInfo[] pipeline =
          DFSTestUtil.getAllBlocks(fs, path).get(0).getLocations();
      // Stop the middle DataNode of the pipeline, then keep writing.
      cluster.stopDataNode(pipeline[1].getXferAddr());
      out.write(data, BLOCK_SIZE / 2, data.length - BLOCK_SIZE / 2);
    }
    assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
    DFSTestUtil.waitReplication(fs, path, (short) 3);
    String report = fsck("/recovery");
    assertTrue(report, report.contains("HEALTHY"));
  }

  @Test(timeout = 300_000)
  public void testPipelineWithADataNodeWithoutUcxStaysOnTcp()
      throws Exception {
    Configuration conf = TestUcxWritePath.ucxConf();
    cluster = new MiniDFSCluster.Builder(conf).numDataNodes(2).build();
    Configuration noUcx = new Configuration(conf);
    noUcx.setBoolean(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY, false);
    cluster.startDataNodes(noUcx, 1, true, null, null);
    cluster.waitActive();
    fs = cluster.getFileSystem();
    Path path = new Path("/mixed");
    byte[] data = random(BLOCK_SIZE + 4321, 5);
    long before = fetched();
    try (FSDataOutputStream out = fs.create(path, (short) 3)) {
      out.write(data);
    }
    assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
    assertEquals("every pipeline includes the DataNode without UCX", 0,
        fetched() - before);
    assertEquals("no replica came over UCX", 0,
        UcxRuntime.current().blocksOverUcx());
  }

  @Test(timeout = 300_000)
  public void testClientWithoutUcxWritesOverTcp() throws Exception {
    start(3);
    Configuration clientConf = new Configuration(cluster.getConfiguration(0));
    clientConf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY,
        false);
    FileSystem plain = FileSystem.newInstance(fs.getUri(), clientConf);
    try {
      Path path = new Path("/stock-client");
      byte[] data = random(BLOCK_SIZE + 99, 6);
      long before = fetched();
      try (FSDataOutputStream out = plain.create(path, (short) 3)) {
        out.write(data);
      }
      assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
      assertEquals(0, fetched() - before);
    } finally {
      plain.close();
    }
  }

  @Test(timeout = 300_000)
  public void testUnreachableListenerSendsThePipelineOverTcp()
      throws Exception {
    start(3);
    UcxRuntime runtime = UcxRuntime.current();
    runtime.stopAcceptingForTesting();
    GenericTestUtils.LogCapturer clientLog =
        GenericTestUtils.LogCapturer.captureLogs(
            org.slf4j.LoggerFactory.getLogger(
                org.apache.hadoop.hdfs.UcxStreamerState.class));
    try {
      Path path = new Path("/unreachable");
      byte[] data = random(2 * BLOCK_SIZE + 77, 12);
      long before = fetched();
      try (FSDataOutputStream out = fs.create(path, (short) 3)) {
        out.write(data);
      }
      assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
      assertEquals("nothing fetched by get", 0, fetched() - before);
      assertEquals("every replica came over the socket", 9,
          runtime.blocksOverTcp());
      assertEquals(0, runtime.blocksOverUcx());
      assertTrue(clientLog.getOutput(),
          clientLog.getOutput().contains("is unreachable"));
      String report = fsck("/unreachable");
      assertTrue(report, report.contains("HEALTHY"));

      // The client remembers: later pipelines skip UCX without trying.
      long connects = runtime.endpoints().connectCount();
      byte[] more = random(BLOCK_SIZE / 3, 13);
      try (FSDataOutputStream out = fs.create(new Path("/later"),
          (short) 3)) {
        out.write(more);
      }
      assertArrayEquals(more, DFSTestUtil.readFileBuffer(fs,
          new Path("/later")));
      assertEquals(connects, runtime.endpoints().connectCount());
    } finally {
      clientLog.stopCapturing();
    }
  }

  @Test(timeout = 300_000)
  public void testUcxFailureMidBlockRecoversAndCompletes() throws Exception {
    start(4);
    UcxRuntime runtime = UcxRuntime.current();
    Path path = new Path("/ucx-lost");
    byte[] data = random(3 * BLOCK_SIZE / 2, 14);
    try (FSDataOutputStream out = fs.create(path, (short) 3)) {
      out.write(data, 0, BLOCK_SIZE / 2);
      out.hflush();
      assertEquals("the first half went over UCX to all three", 3L
          * BLOCK_SIZE / 2, fetched());
      // Only UCX fails: the client's connection to the DataNodes'
      // listener goes away, sockets stay up.
      runtime.endpoints().get(runtime.listenerAddress())
          .get(10, TimeUnit.SECONDS).close();
      out.write(data, BLOCK_SIZE / 2, data.length - BLOCK_SIZE / 2);
    }
    assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
    DFSTestUtil.waitReplication(fs, path, (short) 3);
    String report = fsck("/ucx-lost");
    assertTrue(report, report.contains("HEALTHY"));
  }

  @Test(timeout = 300_000)
  public void testAbortedStreamsGiveTheirBuffersBack() throws Exception {
    start(3);
    UcxRuntime runtime = UcxRuntime.current();
    org.hdfsrdma.ucx.RegisteredBufferPool pool = runtime.clientPool(
        cluster.getConfiguration(0).getInt(
            HdfsClientConfigKeys.DFS_CLIENT_WRITE_PACKET_SIZE_KEY,
            HdfsClientConfigKeys.DFS_CLIENT_WRITE_PACKET_SIZE_DEFAULT));
    for (int i = 0; i < 4; i++) {
      FSDataOutputStream out = fs.create(new Path("/aborted" + i),
          (short) 3);
      out.write(random(100_000, 30 + i));
      out.hflush();
      out.write(random(10_000, 40 + i)); // a packet under construction
    }
    assertTrue(pool.metrics().inUseBytes() > 0);
    // What a lease expiry or a client shutting down does to its streams.
    fs.getClient().closeAllFilesBeingWritten(true);
    GenericTestUtils.waitFor(() -> {
      System.gc();
      org.apache.hadoop.hdfs.UcxTestAccess.reclaimAbandoned();
      return pool.metrics().inUseBytes() == 0;
    }, 100, 60_000);
  }
}
