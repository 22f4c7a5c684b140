package org.apache.hadoop.hdfs;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;

import java.lang.reflect.Field;
import java.util.Random;
import java.util.zip.Checksum;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FSOutputSummer;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.util.DataChecksum;
import org.apache.hadoop.util.NativeCodeLoader;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.junit.Test;

/**
 * A writing client's checksums: the JDK's CRC32C gives Hadoop's values,
 * output streams use it for CRC32C files, and the DataNodes (which verify
 * every chunk with Hadoop's own code) accept what it wrote.
 *
 * <p>Patch 0005 (DFSOutputStream). Other checksum types keep Hadoop's own.
 */
public class TestUcxClientChecksums {

  @Test(timeout = 60_000)
  public void testSameValuesAsHadoopsCrc32c() {
    assertTrue("this JVM has no java.util.zip.CRC32C, or libhadoop is"
        + " loaded", UcxClientChecksums.usesJdkCrc32c());
    DataChecksum hadoops = DataChecksum.newDataChecksum(
        DataChecksum.Type.CRC32C, 512);
    DataChecksum jdks = UcxClientChecksums.forCompute(hadoops);
    assertEquals(hadoops.getChecksumType(), jdks.getChecksumType());
    assertEquals(hadoops.getBytesPerChecksum(), jdks.getBytesPerChecksum());
    Random random = new Random(11);
    for (int i = 0; i < 2000; i++) {
      byte[] data = new byte[random.nextInt(70_000)];
      random.nextBytes(data);
      int off = data.length == 0 ? 0 : random.nextInt(data.length);
      int len = data.length - off;
      int sums = (len + 511) / 512 * 4;
      byte[] expected = new byte[sums + 3];
      byte[] actual = new byte[sums + 3];
      hadoops.calculateChunkedSums(data, off, len, expected, 3);
      jdks.calculateChunkedSums(data, off, len, actual, 3);
      assertArrayEquals("case " + i, expected, actual);
    }
  }

  @Test(timeout = 60_000)
  public void testOtherTypesKeepHadoopsChecksum() {
    for (DataChecksum.Type type : new DataChecksum.Type[] {
        DataChecksum.Type.CRC32, DataChecksum.Type.NULL}) {
      DataChecksum c = DataChecksum.newDataChecksum(type, 512);
      assertSame(c, UcxClientChecksums.forCompute(c));
    }
    assertEquals(null, UcxClientChecksums.forCompute(null));
  }

  /**
   * Files written over TCP (UCX off in this test) with the JDK's CRC32C:
   * DataNodes verify each chunk as it arrives and accept them, the stream
   * computed with the JDK's class, and the bytes read back (the reader
   * verifies the stored checksums once more).
   */
  @Test(timeout = 120_000)
  public void testDataNodesAcceptWhatItWrote() throws Exception {
    assertTrue(!NativeCodeLoader.isNativeCodeLoaded());
    Configuration conf = new Configuration();
    conf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY, false);
    conf.setBoolean(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY, false);
    conf.set(DFSConfigKeys.DFS_DATANODE_PLUGINS_KEY, "");
    MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf)
        .numDataNodes(3).build();
    try {
      cluster.waitActive();
      FileSystem fs = cluster.getFileSystem();
      Random random = new Random(5);
      for (int size : new int[] {1, 511, 512, 65_537, 3 << 20}) {
        byte[] data = new byte[size];
        random.nextBytes(data);
        Path p = new Path("/checksums-" + size);
        try (FSDataOutputStream out = fs.create(p, (short) 3)) {
          assertEquals("java.util.zip.CRC32C",
              summerOf(out).getClass().getName());
          out.write(data);
        }
        assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, p));
      }
    } finally {
      cluster.shutdown();
    }
  }

  private static Checksum summerOf(FSDataOutputStream out) throws Exception {
    Field sum = FSOutputSummer.class.getDeclaredField("sum");
    sum.setAccessible(true);
    DataChecksum checksum = (DataChecksum) sum.get(out.getWrappedStream());
    Field summer = DataChecksum.class.getDeclaredField("summer");
    summer.setAccessible(true);
    return (Checksum) summer.get(checksum);
  }
}
