package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assume.assumeTrue;

import java.util.Map;
import java.util.Random;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.test.GenericTestUtils;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Files written through the UCX path in a MiniDFSCluster, read back byte
 * for byte. Client and DataNodes share one JVM and host here, so each
 * DataNode reads every packet directly from the client's shared-memory
 * segment: UCX carried the descriptors and region announcements, not the
 * bytes. The DataNodes' counters prove that every byte of every replica
 * came that way (none on the socket, none by get); the get path is tested
 * over tcp in TestFetchByGet and across hosts in
 * TestChainAcrossProcesses.
 *
 * <p>Three DataNodes, blocks of 1 MiB; files of 0 B, 1 B, 511 B, 512 B,
 * 64 KiB - 1, 64 KiB + 1, one block and several blocks, at replication 1
 * and 3: the DataNodes' counters of bytes fetched add up to size x
 * replication.
 */
public class TestUcxWritePath {

  private static final Logger LOG =
      LoggerFactory.getLogger(TestUcxWritePath.class);
  private static final int BLOCK_SIZE = 1024 * 1024;

  private static MiniDFSCluster cluster;
  private static FileSystem fs;

  static Configuration ucxConf() {
    Configuration conf = new Configuration();
    conf.set(DFSConfigKeys.DFS_DATANODE_PLUGINS_KEY,
        UcxDataNodePlugin.class.getName());
    conf.setBoolean(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY, true);
    conf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY, true);
    conf.setLong(DFSConfigKeys.DFS_BLOCK_SIZE_KEY, BLOCK_SIZE);
    // The tests count replicas and whom each DataNode fetched from, so a
    // pipeline must hold every DataNode asked for. With load-based placement
    // the NameNode skips a DataNode whose last heartbeat reported more than
    // twice the average transfers ("NODE_TOO_BUSY"), which one lingering
    // read or write connection is enough for in a small idle cluster.
    conf.setBoolean(ReleaseApi.CONSIDER_LOAD_KEY,
        false);
    return conf;
  }

  @BeforeClass
  public static void startCluster() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    cluster = new MiniDFSCluster.Builder(ucxConf()).numDataNodes(3).build();
    cluster.waitActive();
    fs = cluster.getFileSystem();
  }

  @AfterClass
  public static void stopCluster() {
    if (cluster != null) {
      cluster.shutdown();
    }
    UcxRuntime.shutdown();
  }

  private static long fetchedTotal() {
    long total = 0;
    for (long n : UcxCounters.dataBytesFetchedByDataNode().values()) {
      total += n;
    }
    return total;
  }

  /**
   * Writes, reads back, and checks every replica's bytes were read directly
   * from the client's registered memory, as the descriptors named them.
   */
  private void writeAndCheck(String name, int size, short replication)
      throws Exception {
    writeAndCheck(fs, name, size, replication, true);
  }

  /**
   * As {@link #writeAndCheck(String, int, short)} through {@code client},
   * whose descriptors come on the block's socket or over UCX.
   */
  private void writeAndCheck(FileSystem client, String name, int size,
      short replication, boolean descriptorsOnSocket) throws Exception {
    byte[] data = new byte[size];
    new Random(size * 31L + replication).nextBytes(data);
    Path path = new Path("/ucx/" + name);
    long before = fetchedTotal();
    long directBefore = UcxCounters.dataBytesReadDirectly();
    long tcpBlocks = UcxCounters.blocksOverTcp();
    long ucxBlocks = UcxCounters.blocksOverUcx();
    long onSocket = UcxCounters.blocksWithSocketDescriptors();
    try (FSDataOutputStream out = client.create(path, replication)) {
      out.write(data);
    }
    DFSTestUtil.waitReplication(fs, path, replication);
    assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
    long fetched = fetchedTotal() - before;
    Map<String, Long> byNode = UcxCounters.dataBytesFetchedByDataNode();
    LOG.info("{}: {} bytes x {} replicas, {} read through UCX descriptors"
        + " ({})", name, size, replication, fetched, byNode);
    assertEquals("bytes read through UCX descriptors",
        (long) size * replication, fetched);
    assertEquals("every byte read directly from the client's segment",
        fetched, UcxCounters.dataBytesReadDirectly() - directBefore);
    assertEquals("replicas whose packets came on the socket", tcpBlocks,
        UcxCounters.blocksOverTcp());
    // Counted as each receiver closes, which may follow the client's close.
    long replicas = (size + BLOCK_SIZE - 1L) / BLOCK_SIZE * replication;
    GenericTestUtils.waitFor(() -> UcxCounters.blocksOverUcx() - ucxBlocks
        == replicas, 10, 10_000);
    assertEquals("replicas whose descriptors came on the socket",
        descriptorsOnSocket ? replicas : 0,
        UcxCounters.blocksWithSocketDescriptors() - onSocket);
  }

  /** A client that sends each DataNode its descriptors over UCX. */
  @Test(timeout = 300_000)
  public void testDescriptorsOverUcx() throws Exception {
    Configuration conf = new Configuration(fs.getConf());
    conf.setBoolean(
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_SOCKET_DESCRIPTORS_KEY, false);
    try (FileSystem client = FileSystem.newInstance(fs.getUri(), conf)) {
      for (int size : new int[] {1, 64 * 1024 + 1, 3 * BLOCK_SIZE + 12345}) {
        writeAndCheck(client, "ucx-descriptors-" + size, size, (short) 3,
            false);
      }
    }
  }

  @Test(timeout = 300_000)
  public void testReplicationOne() throws Exception {
    for (int size : new int[] {0, 1, 511, 512, 64 * 1024 - 1, 64 * 1024 + 1,
        BLOCK_SIZE, 3 * BLOCK_SIZE + 12345}) {
      writeAndCheck("r1-" + size, size, (short) 1);
    }
  }

  @Test(timeout = 300_000)
  public void testReplicationThree() throws Exception {
    for (int size : new int[] {0, 1, 511, 512, 64 * 1024 - 1, 64 * 1024 + 1,
        BLOCK_SIZE, 3 * BLOCK_SIZE + 12345}) {
      writeAndCheck("r3-" + size, size, (short) 3);
    }
  }
}
