package org.hdfsrdma.hadoop.soak;

/**
 * The content of a soak file: every byte a function of the file's seed and
 * its offset, so a writer generates any range on demand and verifies a
 * read-back without keeping what it wrote. An append continues the same
 * sequence at the file's length, so a file is one sequence however many
 * streams wrote it.
 *
 * <p>Each 8-byte word is SplitMix64 of (seed, word index): neighbouring
 * words, files and offsets differ, so a packet landing at the wrong
 * offset, in the wrong file or twice is seen, not just a flipped bit.
 */
final class SoakData {

  private SoakData() {
  }

  /** The word at {@code index} of the sequence of {@code seed}. */
  static long word(long seed, long index) {
    long z = seed + (index + 1) * 0x9E3779B97F4A7C15L;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** Writes bytes [offset, offset + len) of the file into b[off..]. */
  static void fill(long seed, long offset, byte[] b, int off, int len) {
    long p = offset;
    int i = off;
    int end = off + len;
    while (i < end) {
      long w = word(seed, p >>> 3);
      int shift = (int) (p & 7);
      int n = Math.min(8 - shift, end - i);
      for (int k = 0; k < n; k++) {
        b[i + k] = (byte) (w >>> ((shift + k) << 3));
      }
      i += n;
      p += n;
    }
  }

  /**
   * The index in b[off, off + len) of the first byte that is not the
   * file's byte at that offset, or -1 when all are; {@code scratch} holds
   * at least {@code len} bytes.
   */
  static int firstMismatch(long seed, long offset, byte[] b, int off,
      int len, byte[] scratch) {
    fill(seed, offset, scratch, 0, len);
    for (int i = 0; i < len; i++) {
      if (b[off + i] != scratch[i]) {
        return i;
      }
    }
    return -1;
  }
}
