package org.hdfsrdma.hadoop.client;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;
import java.util.zip.CRC32;
import java.util.zip.Checksum;

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
 * JDK's intrinsics; on Java 8 a CRC32C buffer is checked for its packets'
 * bounds only. One reader thread; nothing is allocated unless a check
 * fails.
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

  private final CRC32 crc32;
  /** The CRC32C to update through {@link #UPDATE_FROM_BUFFER}, or null. */
  private final Checksum crc32c;
  private final int bytesPerChecksum;
  private final int checksumSize;

  private PacketVerifier(CRC32 crc32, Checksum crc32c, int bytesPerChecksum,
      int checksumSize) {
    this.crc32 = crc32;
    this.crc32c = crc32c;
    this.bytesPerChecksum = bytesPerChecksum;
    this.checksumSize = checksumSize;
  }

  /**
   * The verifier of a read whose checksum is of Hadoop type {@code type}
   * with {@code checksumSize} bytes per {@code bytesPerChecksum}. A type
   * this JVM cannot compute (CRC32C on Java 8, one Hadoop added later)
   * gets its packets' bounds checked only.
   */
  static PacketVerifier of(int type, int bytesPerChecksum,
      int checksumSize) {
    if (bytesPerChecksum < 1 || checksumSize < 0) {
      throw new IllegalArgumentException("chunks of " + bytesPerChecksum
          + " bytes with checksums of " + checksumSize);
    }
    CRC32 crc32 = null;
    Checksum crc32c = null;
    if (checksumSize == 4 && type == TYPE_CRC32) {
      crc32 = new CRC32();
    } else if (checksumSize == 4 && type == TYPE_CRC32C
        && UPDATE_FROM_BUFFER != null) {
      crc32c = newCrc32c();
    }
    return new PacketVerifier(crc32, crc32c, bytesPerChecksum,
        checksumSize);
  }

  /** Whether checksums are checked, not just the packets' bounds. */
  boolean checksChecksums() {
    return crc32 != null || crc32c != null;
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
