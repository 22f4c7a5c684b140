package org.hdfsrdma.ucx;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.IntFunction;

/**
 * The leases of a {@link RegisteredBufferPool}: which buffer a token names,
 * whether its lease is still held, how many are held (now, at most, ever),
 * and, when asked, where each was taken. The pool decides which buffer to
 * lease and owns the memory; this class only keeps the books, so that a
 * stale or forged token can do nothing.
 *
 * <p>A token is {@code (generation << 32) | buffer index}. A buffer's
 * generation is odd while it is leased and is incremented by every lease
 * and every release, so a token released once, or kept past its release,
 * no longer matches: releasing it again changes nothing and using it
 * fails. Leasing and releasing allocate nothing (unless lease sites are
 * recorded: a stack trace per lease, for tests and debugging) and take no
 * lock; a release is one compare-and-set.
 */
final class LeaseLedger {

  /** Frames of these classes are not where a lease was taken. */
  private static final String POOL = RegisteredBufferPool.class.getName();
  private static final String LEDGER = LeaseLedger.class.getName();

  private final int buffers;
  /** Per buffer: odd while leased; incremented by lease and release. */
  private final AtomicIntegerArray generations;
  private final Throwable[] sites;
  private final AtomicInteger leased = new AtomicInteger();
  private final AtomicInteger peak = new AtomicInteger();
  private final LongAdder acquisitions = new LongAdder();

  /** Books for {@code buffers} buffers, none leased. */
  LeaseLedger(int buffers, boolean recordSites) {
    this.buffers = buffers;
    this.generations = new AtomicIntegerArray(buffers);
    this.sites = recordSites ? new Throwable[buffers] : null;
  }

  /**
   * Leases buffer {@code index}, which the caller took off its free list
   * (so nobody holds it), and returns the lease's token.
   */
  long lease(int index) {
    int generation = generations.incrementAndGet(index);
    int now = leased.incrementAndGet();
    int most;
    while (now > (most = peak.get()) && !peak.compareAndSet(most, now)) {
      // retry
    }
    acquisitions.increment();
    if (sites != null) {
      sites[index] = new Throwable("acquired here");
    }
    return ((long) generation << 32) | index;
  }

  /**
   * Ends the lease {@code token} names: the index of the buffer it held,
   * now the caller's to free, or -1 when the token names no lease held now
   * (released already, forged, {@link RegisteredBufferPool#NO_LEASE});
   * then nothing changes.
   */
  int release(long token) {
    if (token == RegisteredBufferPool.NO_LEASE) {
      return -1;
    }
    int index = (int) token;
    int generation = (int) (token >>> 32);
    if (index < 0 || index >= buffers
        || !generations.compareAndSet(index, generation, generation + 1)) {
      return -1;
    }
    leased.decrementAndGet();
    return index;
  }

  /** Whether {@code token} no longer names a lease. */
  boolean isReleased(long token) {
    int index = (int) token;
    return token == RegisteredBufferPool.NO_LEASE || index < 0
        || index >= buffers || generations.get(index) != (int) (token >>> 32);
  }

  /**
   * The buffer a held lease's token names.
   *
   * @throws IllegalStateException when the token names no lease held now
   */
  int indexOf(long token) {
    if (isReleased(token)) {
      throw new IllegalStateException("buffer used after release");
    }
    return (int) token;
  }

  /** Leases held now. */
  int leased() {
    return leased.get();
  }

  /** The most leases ever held at once. */
  int peak() {
    return peak.get();
  }

  /** Leases taken so far. */
  long acquisitions() {
    return acquisitions.sum();
  }

  /**
   * One line per lease held among the first {@code count} buffers: where
   * the buffer is ({@code position}) and, with lease sites recorded, the
   * first frame outside the pool that took it.
   */
  List<String> outstanding(int count, IntFunction<String> position) {
    List<String> out = new ArrayList<String>();
    for (int i = 0; i < count; i++) {
      if ((generations.get(i) & 1) == 0) {
        continue;
      }
      StringBuilder sb = new StringBuilder(position.apply(i));
      Throwable site = sites == null ? null : sites[i];
      if (site != null) {
        for (StackTraceElement e : site.getStackTrace()) {
          String c = e.getClassName();
          if (!c.startsWith(POOL) && !c.startsWith(LEDGER)) {
            sb.append(" acquired at ").append(e);
            break;
          }
        }
      }
      out.add(sb.toString());
    }
    return out;
  }
}
