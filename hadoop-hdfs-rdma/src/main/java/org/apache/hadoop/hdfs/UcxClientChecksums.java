package org.apache.hadoop.hdfs;

import java.lang.reflect.Constructor;
import java.util.zip.Checksum;

import org.apache.hadoop.util.DataChecksum;
import org.apache.hadoop.util.NativeCodeLoader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The checksums a writing client computes for its packets, with the JDK's
 * CRC32C where Hadoop 2.9 would use its pure-Java one.
 *
 * <p>Without libhadoop (as in many containers, and on every JVM Hadoop 2.9
 * does not ship native code for) Hadoop 2.9 computes CRC32C chunk by chunk
 * with {@code PureJavaCrc32C}: about 1 s of CPU per GiB written, a fifth of
 * a put's client CPU. Java 9 and later have {@code java.util.zip.CRC32C},
 * which the JIT compiles to the CPU's CRC instructions: the same values at
 * a tenth of the cost. This applies to every pipeline the client writes,
 * over TCP or UCX alike. Java 8, libhadoop present, or another checksum
 * type: Hadoop's own checksum, untouched.
 */
public final class UcxClientChecksums {

  private static final Logger LOG =
      LoggerFactory.getLogger(UcxClientChecksums.class);

  /** DataChecksum's private constructor, or null where not to be used. */
  private static final Constructor<DataChecksum> WITH_SUMMER = withSummer();

  /** java.util.zip.CRC32C's constructor (Java 9+), or null. */
  private static final Constructor<? extends Checksum> JDK_CRC32C =
      jdkCrc32c();

  private UcxClientChecksums() {
  }

  /**
   * The checksum an output stream computes with: {@code checksum} itself,
   * or one of the same type and chunk size that uses the JDK's CRC32C.
   */
  public static DataChecksum forCompute(DataChecksum checksum) {
    if (checksum == null || !usesJdkCrc32c()
        || checksum.getChecksumType() != DataChecksum.Type.CRC32C) {
      return checksum;
    }
    try {
      return WITH_SUMMER.newInstance(DataChecksum.Type.CRC32C,
          JDK_CRC32C.newInstance(), checksum.getBytesPerChecksum());
    } catch (ReflectiveOperationException | RuntimeException e) {
      LOG.debug("hdfs-rdma: keeping Hadoop's CRC32C", e);
      return checksum;
    }
  }

  /** Whether {@link #forCompute} hands out the JDK's CRC32C. */
  public static boolean usesJdkCrc32c() {
    return WITH_SUMMER != null && JDK_CRC32C != null
        && !NativeCodeLoader.isNativeCodeLoaded();
  }

  private static Constructor<DataChecksum> withSummer() {
    try {
      Constructor<DataChecksum> c = DataChecksum.class.getDeclaredConstructor(
          DataChecksum.Type.class, Checksum.class, int.class);
      c.setAccessible(true);
      return c;
    } catch (ReflectiveOperationException | RuntimeException e) {
      // Another Hadoop, or a JVM that keeps Hadoop's constructor closed.
      LOG.debug("hdfs-rdma: DataChecksum cannot take the JDK's CRC32C", e);
      return null;
    }
  }

  private static Constructor<? extends Checksum> jdkCrc32c() {
    try {
      return Class.forName("java.util.zip.CRC32C").asSubclass(Checksum.class)
          .getConstructor();
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null; // Java 8
    }
  }
}
