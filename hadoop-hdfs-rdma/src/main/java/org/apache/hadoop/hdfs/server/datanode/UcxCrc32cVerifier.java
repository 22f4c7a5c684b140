package org.apache.hadoop.hdfs.server.datanode;

import java.nio.ByteBuffer;
import java.util.zip.Checksum;

import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.util.DataChecksum;
import org.apache.hadoop.util.NativeCodeLoader;

/**
 * Verifies a packet's CRC32C chunk checksums with the JDK's CRC32C (Java
 * 9 and later, a CPU instruction on x86 and ARM) when Hadoop has no
 * native library: Hadoop 2.9 then falls back to its pure-Java CRC, at
 * about a tenth of the speed, and on the UCX path every DataNode of the
 * pipeline verifies, not only the last. Same result and same
 * {@link ChecksumException} as {@code DataChecksum.verifyChunkedSums}.
 */
final class UcxCrc32cVerifier {

  /** A new JDK CRC32C, or null before Java 9. */
  private static final Class<?> JDK_CRC32C = jdkCrc32c();

  private final Checksum crc;

  private UcxCrc32cVerifier(Checksum crc) {
    this.crc = crc;
  }

  private static Class<?> jdkCrc32c() {
    try {
      Class<?> c = Class.forName("java.util.zip.CRC32C");
      return Checksum.class.isAssignableFrom(c) ? c : null;
    } catch (ClassNotFoundException e) {
      return null;
    }
  }

  /**
   * A verifier for {@code checksum}'s packets, or null where Hadoop's own
   * verification is as good: another checksum type, Hadoop's native CRC
   * loaded, or a JDK without CRC32C.
   */
  static UcxCrc32cVerifier forChecksum(DataChecksum checksum) {
    if (JDK_CRC32C == null
        || checksum.getChecksumType() != DataChecksum.Type.CRC32C
        || NativeCodeLoader.isNativeCodeLoaded()) { // Hadoop's native CRC
      return null;
    }
    try {
      return new UcxCrc32cVerifier((Checksum) JDK_CRC32C.newInstance());
    } catch (ReflectiveOperationException e) {
      return null;
    }
  }

  /**
   * Checks every chunk of {@code data} (heap buffers, as BlockReceiver's)
   * against its 4-byte big-endian CRC in {@code sums}.
   *
   * @throws ChecksumException at the first chunk that does not match, with
   *     its position in the packet, as Hadoop's verification reports it
   */
  void verify(int bytesPerChecksum, ByteBuffer data, ByteBuffer sums,
      String fileName) throws ChecksumException {
    byte[] d = data.array();
    int dataStart = data.arrayOffset() + data.position();
    int remaining = data.remaining();
    int sumAt = sums.position();
    for (int pos = 0; pos < remaining; pos += bytesPerChecksum) {
      int n = Math.min(bytesPerChecksum, remaining - pos);
      crc.reset();
      crc.update(d, dataStart + pos, n);
      int computed = (int) crc.getValue();
      int expected = sums.getInt(sumAt);
      sumAt += 4;
      if (computed != expected) {
        throw new ChecksumException("Checksum error: " + fileName + " at "
            + pos + " exp: " + expected + " got: " + computed, pos);
      }
    }
  }
}
