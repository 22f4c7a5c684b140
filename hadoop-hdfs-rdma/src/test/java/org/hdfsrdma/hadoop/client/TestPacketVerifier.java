package org.hdfsrdma.hadoop.client;

import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.util.Random;

import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.apache.hadoop.util.DataChecksum;
import org.junit.Test;

/**
 * The check a get's buffer passes before it is credited, against packets
 * laid out by Hadoop's own {@code PacketHeader} and summed by Hadoop's own
 * {@code DataChecksum}, as a DataNode's {@code BlockSender} writes them.
 */
public class TestPacketVerifier {

  private static final int BYTES_PER_CHECKSUM = 512;
  /** Where the packets start in the buffer: not at 0, as in a region. */
  private static final int FROM = 100;

  /** A full packet, one ending in a partial chunk, an empty last one. */
  private static final int[] DATA_LENGTHS = {65_536, 70_000 % 4096, 0};

  @Test(timeout = 60_000)
  public void testWholePacketsPass() {
    for (DataChecksum.Type type : new DataChecksum.Type[] {
        DataChecksum.Type.CRC32C, DataChecksum.Type.CRC32}) {
      ByteBuffer buf = packets(type);
      PacketVerifier v = verifier(type);
      assertTrue(type + " checked", v.checksChecksums());
      assertNull(type.toString(), v.verify(buf, FROM, buf.capacity()));
    }
  }

  @Test(timeout = 60_000)
  public void testADamagedDataByteIsFound() {
    ByteBuffer buf = packets(DataChecksum.Type.CRC32C);
    int at = buf.capacity() - 100; // in the second packet's last chunk
    buf.put(at, (byte) ~buf.get(at));
    String wrong = verifier(DataChecksum.Type.CRC32C).verify(buf, FROM,
        buf.capacity());
    assertTrue(wrong, wrong.contains("failing its checksum")
        && wrong.contains("packet at byte " + packetLength(
            DataChecksum.Type.CRC32C, DATA_LENGTHS[0])));
  }

  @Test(timeout = 60_000)
  public void testADamagedChecksumIsFound() {
    ByteBuffer buf = packets(DataChecksum.Type.CRC32);
    // the first packet's eleventh checksum (a header's size does not
    // depend on the packet's length, which precedes it)
    int at = FROM + header(4, DATA_LENGTHS[0], false).getSerializedSize()
        + 40;
    buf.put(at, (byte) (buf.get(at) + 1));
    String wrong = verifier(DataChecksum.Type.CRC32).verify(buf, FROM,
        buf.capacity());
    assertTrue(wrong, wrong != null && wrong.contains("chunk"));
  }

  @Test(timeout = 60_000)
  public void testLengthsBeyondTheBufferAreFound() {
    ByteBuffer buf = packets(DataChecksum.Type.CRC32C);
    PacketVerifier v = verifier(DataChecksum.Type.CRC32C);
    assertTrue(v.verify(buf, FROM, buf.capacity() - 1)
        .contains("a packet of length"));
    assertTrue(v.verify(buf, FROM, FROM + 5).contains("cut off"));
    ByteBuffer lying = packets(DataChecksum.Type.CRC32C);
    lying.putInt(FROM, Integer.MAX_VALUE);
    assertTrue(v.verify(lying, FROM, lying.capacity())
        .contains("a packet of length"));
    lying = packets(DataChecksum.Type.CRC32C);
    lying.putShort(FROM + 4, (short) -1);
    assertTrue(v.verify(lying, FROM, lying.capacity())
        .contains("header -1"));
  }

  /**
   * A packet whose length leaves its last chunk a checksum without data
   * (a DataNode that lies) is refused, not read past.
   */
  @Test(timeout = 60_000)
  public void testALengthNoChunkingMakesIsFound() {
    int bytes = BYTES_PER_CHECKSUM + 4 + 2; // one chunk, then 2 bytes
    ByteBuffer buf = ByteBuffer.allocate(FROM + 6 + bytes);
    buf.putInt(FROM, 4 + bytes).putShort(FROM + 4, (short) 0);
    String wrong = verifier(DataChecksum.Type.CRC32C).verify(buf, FROM,
        buf.capacity());
    assertTrue(wrong, wrong.contains("no chunking makes"));
  }

  /**
   * Where the JDK has no CRC32C (Java 8, on which Hadoop 2 clusters often
   * run), Hadoop's own checks it as strictly; where it has one (the JVM
   * this test runs on), the JDK's is used.
   */
  @Test(timeout = 60_000)
  public void testHadoopsCrc32cWhereTheJdkHasNone() {
    DataChecksum.Type type = DataChecksum.Type.CRC32C;
    assertFalse(verifier(type).usesHadoopCrc32c());
    PacketVerifier java8 = PacketVerifier.of(type.id, BYTES_PER_CHECKSUM,
        type.size, null);
    assertTrue(java8.usesHadoopCrc32c());
    assertTrue(java8.checksChecksums());
    ByteBuffer buf = packets(type);
    assertNull(java8.verify(buf, FROM, buf.capacity()));
    int at = buf.capacity() - 100;
    buf.put(at, (byte) ~buf.get(at));
    String wrong = java8.verify(buf, FROM, buf.capacity());
    assertTrue(wrong, wrong != null && wrong.contains("failing its checksum"));
  }

  /** Without checksums (Hadoop's NULL type) only the bounds are checked. */
  @Test(timeout = 60_000)
  public void testNullChecksumsCheckBoundsOnly() {
    ByteBuffer buf = packets(DataChecksum.Type.NULL);
    PacketVerifier v = verifier(DataChecksum.Type.NULL);
    assertFalse(v.checksChecksums());
    int at = buf.capacity() - 100;
    buf.put(at, (byte) ~buf.get(at));
    assertNull(v.verify(buf, FROM, buf.capacity()));
    assertTrue(v.verify(buf, FROM, buf.capacity() - 1) != null);
  }

  private static PacketVerifier verifier(DataChecksum.Type type) {
    return PacketVerifier.of(type.id, BYTES_PER_CHECKSUM, type.size);
  }

  private static int packetLength(DataChecksum.Type type, int dataLength) {
    int chunks = (dataLength + BYTES_PER_CHECKSUM - 1) / BYTES_PER_CHECKSUM;
    int payload = 4 + chunks * type.size + dataLength;
    // the header's size counts the length fields before it
    return header(payload, dataLength, false).getSerializedSize()
        + payload - 4;
  }

  private static PacketHeader header(int payload, int dataLength,
      boolean last) {
    return new PacketHeader(payload, 0, 1, last, dataLength, false);
  }

  /** {@link #DATA_LENGTHS}' packets from {@link #FROM} of a direct buffer. */
  private static ByteBuffer packets(DataChecksum.Type type) {
    int total = FROM;
    for (int n : DATA_LENGTHS) {
      total += packetLength(type, n);
    }
    ByteBuffer buf = ByteBuffer.allocateDirect(total);
    buf.position(FROM);
    DataChecksum sum = DataChecksum.newDataChecksum(type,
        BYTES_PER_CHECKSUM);
    Random random = new Random(type.id);
    for (int i = 0; i < DATA_LENGTHS.length; i++) {
      int n = DATA_LENGTHS[i];
      int chunks = (n + BYTES_PER_CHECKSUM - 1) / BYTES_PER_CHECKSUM;
      byte[] data = new byte[n];
      random.nextBytes(data);
      byte[] sums = new byte[chunks * type.size];
      if (type.size > 0 && n > 0) {
        sum.calculateChunkedSums(data, 0, n, sums, 0);
      }
      header(4 + sums.length + n, n, i == DATA_LENGTHS.length - 1)
          .putInBuffer(buf);
      buf.put(sums).put(data);
    }
    if (buf.hasRemaining()) {
      throw new IllegalStateException(buf.remaining() + " bytes left");
    }
    return buf;
  }
}
