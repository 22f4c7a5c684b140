package org.hdfsrdma.hadoop.bench;

import java.util.Random;

/**
 * The bytes an {@link AppWorkload} file holds: byte {@code p} of the file
 * with shift {@code s} is {@code base[(p + s) % PERIOD]}, where
 * {@code base} is random bytes of a fixed seed. Writing costs no
 * generation (every write is a slice of {@code base}, so the writer's CPU
 * goes to HDFS, as an application's would), and a read-back is checked
 * against the same slices without keeping what was written.
 *
 * <p>{@link #PERIOD} is a prime, so a packet, chunk or block landing at
 * the wrong offset (any multiple of 512 bytes off, within a period), or
 * in another file (another shift), differs from what belongs there.
 */
final class AppContent {

  /** The content repeats every PERIOD bytes: a prime a bit over 1 MiB. */
  static final int PERIOD = 1048583;
  private static final long SEED = 0x5eed_a995L;

  private final byte[] base;
  private final int maxSlice;

  /** Content whose slices are at most {@code maxSlice} bytes long. */
  AppContent(int maxSlice) {
    this.maxSlice = maxSlice;
    base = new byte[PERIOD + maxSlice];
    byte[] period = new byte[PERIOD];
    new Random(SEED).nextBytes(period);
    for (int i = 0; i < base.length; i++) {
      base[i] = period[i % PERIOD];
    }
  }

  /** The shift of file {@code id}: files differ from one another. */
  static int shift(long id) {
    long z = (id + 1) * 0x9E3779B97F4A7C15L;
    z = (z ^ (z >>> 31)) * 0xBF58476D1CE4E5B9L;
    return (int) Math.floorMod(z ^ (z >>> 29), (long) PERIOD);
  }

  /** The array the slices are in. */
  byte[] array() {
    return base;
  }

  /** Where in {@link #array()} the file's byte {@code pos} starts. */
  int offset(int shift, long pos) {
    return (int) ((pos + shift) % PERIOD);
  }

  /** The longest slice. */
  int maxSlice() {
    return maxSlice;
  }

  /**
   * The index in b[0, len) of the first byte that is not the file's byte
   * at {@code pos} onwards, or -1 when all are.
   */
  int firstMismatch(int shift, long pos, byte[] b, int len) {
    int at = offset(shift, pos);
    for (int i = 0; i < len; i++) {
      if (b[i] != base[at + i]) {
        return i;
      }
    }
    return -1;
  }
}
