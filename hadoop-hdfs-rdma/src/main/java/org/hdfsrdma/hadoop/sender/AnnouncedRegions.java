package org.hdfsrdma.hadoop.sender;

import java.util.Arrays;

/**
 * Which of an exposer's pool regions each destination session of one
 * pipeline was told about: a region is announced to a session once, before
 * the first descriptor that points into it. A bit per region; grows only
 * when the pool does.
 */
public final class AnnouncedRegions {

  private final long[][] bits;

  public AnnouncedRegions(int destinations) {
    bits = new long[destinations][1];
  }

  /** Whether {@code region} was announced to {@code destination}. */
  public boolean contains(int destination, int region) {
    long[] b = bits[destination];
    int word = region >>> 6;
    return word < b.length && (b[word] & (1L << (region & 63))) != 0;
  }

  /** Notes that {@code region} was announced to {@code destination}. */
  public void add(int destination, int region) {
    int word = region >>> 6;
    if (word >= bits[destination].length) {
      bits[destination] = Arrays.copyOf(bits[destination], word + 1);
    }
    bits[destination][word] |= 1L << (region & 63);
  }
}
