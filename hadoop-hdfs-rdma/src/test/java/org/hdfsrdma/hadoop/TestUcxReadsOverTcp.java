package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;
import static org.junit.Assume.assumeTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.test.GenericTestUtils;
import org.apache.hadoop.test.GenericTestUtils.LogCapturer;
import org.hdfsrdma.hadoop.client.ReadFaultInjector;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.metrics.ClientReads;
import org.hdfsrdma.hadoop.datanode.DataNodeServer;
import org.hdfsrdma.hadoop.datanode.UcxDataNode;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;
import org.slf4j.LoggerFactory;

/**
 * UCX reads where the DataNode's memory is not shared with the client:
 * UCX restricted to its tcp transport, as between hosts without RDMA
 * hardware. With gets UCX emulates over tcp allowed, the client takes
 * every buffer with a get into its own landing memory (the path RDMA
 * hardware takes); with them refused (the default), the client cannot
 * open the DataNode's regions, asks for stock packets, and every read
 * still returns every byte: UCX never costs a read.
 */
public class TestUcxReadsOverTcp {

  private static final int BLOCK_SIZE = 1024 * 1024;
  /** Where the NameNode logs a client's report of a bad block. */
  private static final String STATE_CHANGE_LOG =
      "org.apache.hadoop.hdfs.StateChange";

  private MiniDFSCluster cluster;
  private FileSystem reader;

  @Before
  public void check() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    assumeTrue("this release's block reader has no UCX read hook",
        TestUcxReads.readHooked());
  }

  @After
  public void stop() throws Exception {
    try {
      if (reader != null) {
        reader.close();
      }
      if (cluster != null) {
        cluster.shutdown();
      }
    } finally {
      UcxRuntime.shutdown();
    }
  }

  private byte[] start(boolean emulatedGets, int size) throws Exception {
    Configuration conf = TestUcxWritePath.ucxConf();
    conf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY, false);
    conf.set(HdfsRdmaConfigKeys.DFS_RDMA_UCX_TLS_KEY, "tcp");
    conf.setBoolean(HdfsRdmaConfigKeys.DFS_RDMA_UCX_ALLOW_TCP_KEY, true);
    conf.setBoolean(
        HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ALLOW_EMULATED_GETS_KEY,
        emulatedGets);
    cluster = new MiniDFSCluster.Builder(conf).numDataNodes(2).build();
    cluster.waitActive();
    FileSystem writer = cluster.getFileSystem();
    byte[] data = new byte[size];
    new Random(size).nextBytes(data);
    try (FSDataOutputStream out = writer.create(new Path("/f"), (short) 2)) {
      out.write(data);
    }
    DFSTestUtil.waitReplication(writer, new Path("/f"), (short) 2);
    Configuration readConf = new Configuration(cluster.getConfiguration(0));
    readConf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_READ_ENABLED_KEY,
        true);
    // A read that finds no good replica retries after this (3 s by default).
    readConf.setInt("dfs.client.retry.window.base", 100);
    reader = FileSystem.newInstance(writer.getUri(), readConf);
    return data;
  }

  private long dataNodeFallbacks() {
    long n = 0;
    for (DataNode dn : cluster.getDataNodes()) {
      n += UcxDataNode.of(dn).metrics().readsFellBack();
    }
    return n;
  }

  private long dataNodeReadBytes() {
    long n = 0;
    for (DataNode dn : cluster.getDataNodes()) {
      n += UcxDataNode.of(dn).metrics().readBytesOverUcx();
    }
    return n;
  }

  /** Gets over tcp land in the client's memory, every byte verified. */
  @Test(timeout = 300_000)
  public void testReadsByGet() throws Exception {
    int size = 3 * BLOCK_SIZE + 777;
    byte[] data = start(true, size);
    ClientReads c = UcxRuntime.current().metrics().reads();
    assertArrayEquals(data, DFSTestUtil.readFileBuffer(reader,
        new Path("/f")));
    try (FSDataInputStream in = reader.open(new Path("/f"))) {
      byte[] got = new byte[100_000];
      in.readFully(BLOCK_SIZE - 50_000, got);
      for (int i = 0; i < got.length; i++) {
        assertEquals(data[BLOCK_SIZE - 50_000 + i], got[i]);
      }
    }
    assertTrue("reads answered: " + c.readsAnswered(),
        c.readsAnswered() >= 5);
    assertEquals("reads that fell back", 0, c.readsFellBack());
    assertEquals("bytes read directly", 0, c.bytesReadDirectly());
    assertTrue("bytes got: " + c.bytesRead(), c.bytesRead() > size);
    GenericTestUtils.waitFor(() -> dataNodeReadBytes() == c.bytesRead(),
        50, 30_000);
  }

  /**
   * Emulated gets refused: each answered read asks for stock packets and
   * returns every byte; the DataNodes count the fallbacks and keep no
   * buffer. A DataNode whose reads fell back twice is offered nothing
   * more: of 9 block reads over 3 DataNodes, at least one goes stock
   * without an offer, and every other one was answered and fell back.
   */
  @Test(timeout = 300_000)
  public void testRefusedRegionsFallBackToStockPackets() throws Exception {
    int size = 2 * BLOCK_SIZE + 99;
    byte[] data = start(false, size);
    ClientReads c = UcxRuntime.current().metrics().reads();
    long withheld = c.readsWithheld();
    for (int i = 0; i < 3; i++) {
      assertArrayEquals(data, DFSTestUtil.readFileBuffer(reader,
          new Path("/f")));
    }
    assertTrue("reads withheld: " + c.readsWithheld(),
        c.readsWithheld() > withheld);
    assertEquals("every block read answered or withheld", 9,
        c.readsAnswered() + c.readsWithheld() - withheld);
    assertEquals("every answered read fell back", c.readsAnswered(),
        c.readsFellBack());
    assertEquals("bytes over UCX", 0, c.bytesRead());
    GenericTestUtils.waitFor(() -> dataNodeFallbacks() == c.readsFellBack(),
        50, 30_000);
    GenericTestUtils.waitFor(() -> DataNodeServer.of(UcxRuntime.current())
        .readers().held() == 0, 50, 30_000);
  }

  /**
   * A buffer damaged after its get (a fault real UCX does not produce on
   * demand) fails verification before it is credited: the DataNode sends
   * it again as stock packets, every byte arrives, and the NameNode hears
   * of no bad block, where Hadoop's own verification would have reported
   * the replica the damaged buffer came from.
   */
  @Test(timeout = 300_000)
  public void testDamagedGetIsReadAgainAsStock() throws Exception {
    int size = 3 * BLOCK_SIZE + 777;
    byte[] data = start(true, size);
    ClientReads c = UcxRuntime.current().metrics().reads();
    AtomicInteger landed = new AtomicInteger();
    ReadFaultInjector.set(new ReadFaultInjector() {
      @Override
      public void landed(ByteBuffer buf, int length) {
        if (landed.incrementAndGet() == 2) {
          int at = length / 2;
          buf.put(at, (byte) ~buf.get(at));
        }
      }
    });
    LogCapturer nameNode = LogCapturer.captureLogs(
        LoggerFactory.getLogger(STATE_CHANGE_LOG));
    try {
      assertArrayEquals(data, DFSTestUtil.readFileBuffer(reader,
          new Path("/f")));
    } finally {
      ReadFaultInjector.set(null);
      nameNode.stopCapturing();
    }
    assertFalse("a replica reported: " + nameNode.getOutput(),
        nameNode.getOutput().contains("reportBadBlocks"));
    assertTrue("buffers got: " + landed.get(), landed.get() > 2);
    assertEquals("buffers that failed verification", 1,
        c.buffersFailedVerification());
    assertEquals("reads that fell back", 1, c.readsFellBack());
    assertTrue("bytes got: " + c.bytesRead(), c.bytesRead() > BLOCK_SIZE);
    GenericTestUtils.waitFor(() -> dataNodeFallbacks() == 1, 50, 30_000);
  }

  /**
   * A replica corrupt on disk fails the UCX read's verification, is read
   * again as stock packets, and Hadoop reports it exactly as stock does:
   * the read of its only replica fails, and the NameNode marks it corrupt.
   */
  @Test(timeout = 300_000)
  public void testCorruptReplicaIsReportedAsStock() throws Exception {
    start(true, BLOCK_SIZE);
    Path single = new Path("/single");
    DFSTestUtil.createFile(cluster.getFileSystem(), single, BLOCK_SIZE,
        (short) 1, 7L);
    ExtendedBlock block = DFSTestUtil.getFirstBlock(cluster.getFileSystem(),
        single);
    assertEquals(1, cluster.corruptBlockOnDataNodes(block));
    ClientReads c = UcxRuntime.current().metrics().reads();
    try {
      DFSTestUtil.readFileBuffer(reader, single);
      fail("a read of a corrupt only replica succeeded");
    } catch (IOException expected) {
      // as stock: ChecksumException, then no replica left
    }
    assertTrue("buffers that failed verification: "
        + c.buffersFailedVerification(), c.buffersFailedVerification() > 0);
    GenericTestUtils.waitFor(
        () -> cluster.getNamesystem().getCorruptReplicaBlocks() == 1, 50,
        30_000);
  }
}
