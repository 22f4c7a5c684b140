package org.hdfsrdma.hadoop.client;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;
import java.util.zip.CRC32;
import java.util.zip.Checksum;

import org.apache.hadoop.util.PureJavaCrc32C;

/**
 * Checks the stock packets of a read buffer that a get brought into this
 * JVM against their chunk checksums, before the buffer is credited
 * (DESIGN.md section 9). Hadoop verifies every packet again as it reads
 * it, and reports a replica whose packet fails; a failure here means the
 * bytes may have been damaged on their way (the get, the landing memory),
 * so the reader asks the DataNode for the buffer again as stock packets,
 * which Hadoop then judges as it would any DataNode's. A replica is
 * reported only for what TCP delivered too.
 *
 * <p>Release-neutral: the checksum comes as Hadoop's type id, chunk and
 * checksum size. CRC32 and CRC32C (Java 9 and later) are checked with the
 * JDK's intrinsics; on Java 8, which has no CRC32C, with Hadoop's own
 * {@code PureJavaCrc32C} (every release has it), the chunk copied to the
 * heap in pieces first, slower but as strict: Hadoop 2 clusters often run
 * Java 8, and CRC32C is HDFS's default. One reader thread; nothing is
 * allocated unless a check fails.
 */
final class PacketVerifier {

  /** {@code DataChecksum.Type} ids, as on the wire. */
  static final int TYPE_NULL = 0;
  static final int TYPE_CRC32 = 1;
  static final int TYPE_CRC32C = 2;

  /** A stock packet's length field (itself included) and header length. */
  static final int PACKET_PREFIX = 6;

  /** {@code Checksum.update(ByteBuffer)}: Java 9 and later, else null. */
  private static final MethodHandle UPDATE_FROM_BUFFER = updateFromBuffer();

  /** Heap bytes a chunk passes through on its way to Hadoop's CRC32C. */
  private static final int PIECE_BYTES = 4096;

  private final CRC32 crc32;
  /** The JDK's CRC32C, updated through {@link #UPDATE_FROM_BUFFER}. */
  private final Checksum crc32c;
  /** Hadoop's CRC32C where the JDK has none, with its piece of heap. */
  private final Checksum pureCrc32c;
  private final byte[] piece;
  private final int bytesPerChecksum;
  private final int checksumSize;

  private PacketVerifier(CRC32 crc32, Checksum crc32c, Checksum pureCrc32c,
      int bytesPerChecksum, int checksumSize) {
    this.crc32 = crc32;
    this.crc32c = crc32c;
    this.pureCrc32c = pureCrc32c;
    this.piece = pureCrc32c == null ? null : new byte[PIECE_BYTES];
    this.bytesPerChecksum = bytesPerChecksum;
    this.checksumSize = checksumSize;
  }

  /**
   * The verifier of a read whose checksum is of Hadoop type {@code type}
   * with {@code checksumSize} bytes per {@code bytesPerChecksum}. Any
   * other type (NULL, or one Hadoop may add) gets its packets' bounds
   * checked only.
   */
  static PacketVerifier of(int type, int bytesPerChecksum,
      int checksumSize) {
    return of(type, bytesPerChecksum, checksumSize,
        UPDATE_FROM_BUFFER == null ? null : newCrc32c());
  }

  /**
   * As {@link #of(int, int, int)}, with {@code jdkCrc32c} the JDK's CRC32C,
   * or null where it has none (Java 8): Hadoop's then.
   */
  static PacketVerifier of(int type, int bytesPerChecksum,
      int checksumSize, Checksum jdkCrc32c) {
    if (bytesPerChecksum < 1 || checksumSize < 0) {
      throw new IllegalArgumentException("chunks of " + bytesPerChecksum
          + " bytes with checksums of " + checksumSize);
    }
    CRC32 crc32 = null;
    Checksum crc32c = null;
    Checksum pureCrc32c = null;
    if (checksumSize == 4 && type == TYPE_CRC32) {
      crc32 = new CRC32();
    } else if (checksumSize == 4 && type == TYPE_CRC32C) {
      if (jdkCrc32c != null) {
        crc32c = jdkCrc32c;
      } else {
        pureCrc32c = new PureJavaCrc32C();
      }
    }
    return new PacketVerifier(crc32, crc32c, pureCrc32c, bytesPerChecksum,
        checksumSize);
  }

  /** Whether checksums are checked, not just the packets' bounds. */
  boolean checksChecksums() {
    return crc32 != null || crc32c != null || pureCrc32c != null;
  }

  /** Whether CRC32C goes through Hadoop's own code (Java 8). */
  boolean usesHadoopCrc32c() {
    return pureCrc32c != null;
  }

  /**
   * Checks the whole stock packets in {@code buf}'s bytes {@code from} to
   * {@code to}: each packet within those bounds and, where this verifier
   * computes the read's checksum, each chunk against its checksum. Moves
   * {@code buf}'s position and limit.
   *
   * @return null when every packet checks out, else what failed
   */
  String verify(ByteBuffer buf, int from, int to) {
    buf.limit(to);
    int at = from;
    while (at < to) {
      if (to - at < PACKET_PREFIX) {
        return "a packet's length cut off at byte " + (at - from);
      }
      int length = intAt(buf, at);
      int headerLength = (short) ((buf.get(at + 4) & 0xff) << 8
          | buf.get(at + 5) & 0xff);
      long end = (long) at + PACKET_PREFIX + headerLength + length - 4;
      if (length < 4 || headerLength < 0 || end > to) {
        return "a packet of length " + length + ", header " + headerLength
            + " at byte " + (at - from) + " of " + (to - from);
      }
      String wrong = verifyChunks(buf,
          at + PACKET_PREFIX + headerLength, length - 4, to);
      if (wrong != null) {
        return wrong + " in the packet at byte " + (at - from);
      }
      at = (int) end;
    }
    return null;
  }

  /**
   * Checks {@code bytes} of checksums and then data from {@code at}, all
   * below {@code to}, {@code buf}'s limit, which it leaves there.
   */
  private String verifyChunks(ByteBuffer buf, int at, int bytes, int to) {
    if (checksumSize == 0 || !checksChecksums()) {
      return null;
    }
    // Only the last chunk may be partial: chunks * checksumSize + data.
    int chunks = (int) (((long) bytes + bytesPerChecksum + checksumSize - 1)
        / ((long) bytesPerChecksum + checksumSize));
    int dataStart = at + chunks * checksumSize;
    int dataEnd = at + bytes;
    if (dataEnd - dataStart <= (chunks - 1L) * bytesPerChecksum) {
      return bytes + " bytes of checksums and data that no chunking makes";
    }
    for (int i = 0; i < chunks; i++) {
      // below dataEnd, as checked above
      int chunk = (int) (dataStart + (long) i * bytesPerChecksum);
      int chunkEnd = (int) Math.min((long) chunk + bytesPerChecksum,
          dataEnd);
      int expected = intAt(buf, at + i * checksumSize);
      buf.limit(chunkEnd).position(chunk);
      int sum = update(buf);
      buf.limit(to);
      if (sum != expected) {
        return "chunk " + i + " (" + (chunkEnd - chunk) + " bytes) failing"
            + " its checksum";
      }
    }
    return null;
  }

  /** The read's checksum of {@code buf}'s remaining bytes. */
  private int update(ByteBuffer buf) {
    if (crc32 != null) {
      crc32.reset();
      crc32.update(buf);
      return (int) crc32.getValue();
    }
    if (pureCrc32c != null) {
      pureCrc32c.reset();
      while (buf.hasRemaining()) {
        int n = Math.min(piece.length, buf.remaining());
        buf.get(piece, 0, n);
        pureCrc32c.update(piece, 0, n);
      }
      return (int) pureCrc32c.getValue();
    }
    crc32c.reset();
    try {
      UPDATE_FROM_BUFFER.invokeExact(crc32c, buf);
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
    return (int) crc32c.getValue();
  }

  /** A big-endian int at {@code at}, whatever {@code buf}'s order. */
  private static int intAt(ByteBuffer buf, int at) {
    return (buf.get(at) & 0xff) << 24 | (buf.get(at + 1) & 0xff) << 16
        | (buf.get(at + 2) & 0xff) << 8 | buf.get(at + 3) & 0xff;
  }

  private static MethodHandle updateFromBuffer() {
    try {
      return MethodHandles.publicLookup().findVirtual(Checksum.class,
          "update", MethodType.methodType(void.class, ByteBuffer.class));
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null; // Java 8
    }
  }

  private static Checksum newCrc32c() {
    try {
      return Class.forName("java.util.zip.CRC32C")
          .asSubclass(Checksum.class).getConstructor().newInstance();
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }
}
