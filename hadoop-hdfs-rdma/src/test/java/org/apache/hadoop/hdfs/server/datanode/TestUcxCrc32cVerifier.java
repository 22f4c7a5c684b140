package org.apache.hadoop.hdfs.server.datanode;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.fail;

import java.nio.ByteBuffer;
import java.util.Random;

import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.util.DataChecksum;
import org.junit.Test;

/**
 * The JDK CRC32C verifier agrees with Hadoop's CRC32C on every chunk, full
 * and partial, and reports a corrupted chunk at the same position.
 */
public class TestUcxCrc32cVerifier {

  @Test
  public void testAgreesWithHadoopAndFindsEveryCorruptChunk()
      throws Exception {
    DataChecksum hadoop =
        DataChecksum.newDataChecksum(DataChecksum.Type.CRC32C, 512);
    UcxCrc32cVerifier verifier = UcxCrc32cVerifier.forChecksum(hadoop);
    assertNotNull("Java 9+ has java.util.zip.CRC32C", verifier);
    Random random = new Random(5);
    for (int length : new int[] {1, 511, 512, 513, 64 * 1024 - 1024 + 7,
        126 * 512}) {
      // Heap buffers at an offset, as BlockReceiver's slices are.
      byte[] packet = new byte[40 + length + (length + 511) / 512 * 4];
      random.nextBytes(packet);
      int sumsLength = (length + 511) / 512 * 4;
      ByteBuffer sums = ByteBuffer.wrap(packet, 40, sumsLength).slice();
      ByteBuffer data = ByteBuffer.wrap(packet, 40 + sumsLength, length)
          .slice();
      hadoop.calculateChunkedSums(data, sums);
      verifier.verify(512, data, sums, "f");
      hadoop.verifyChunkedSums(data, sums, "f", 0);

      int corrupt = random.nextInt(length);
      data.put(corrupt, (byte) (data.get(corrupt) ^ 0x10));
      try {
        verifier.verify(512, data, sums, "f");
        fail("missed a flipped bit at " + corrupt + " of " + length);
      } catch (ChecksumException e) {
        assertEquals(corrupt / 512 * 512, e.getPos());
      }
      try {
        hadoop.verifyChunkedSums(data, sums, "f", 0);
        fail("Hadoop missed it too?");
      } catch (ChecksumException e) {
        assertEquals(corrupt / 512 * 512, e.getPos());
      }
    }
  }

  @Test
  public void testOtherChecksumTypesStayWithHadoop() {
    assertNull(UcxCrc32cVerifier.forChecksum(
        DataChecksum.newDataChecksum(DataChecksum.Type.CRC32, 512)));
    assertNull(UcxCrc32cVerifier.forChecksum(
        DataChecksum.newDataChecksum(DataChecksum.Type.NULL, 512)));
  }
}
