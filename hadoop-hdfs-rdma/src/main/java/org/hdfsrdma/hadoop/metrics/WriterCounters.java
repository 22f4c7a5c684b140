package org.hdfsrdma.hadoop.metrics;

import java.io.Closeable;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Counters that many threads bump per packet, each only through a slot of
 * its own, as Agrona's counters are kept: the one writer of a slot adds
 * with an ordered store ({@code lazySet}), so the data path pays no
 * compare-and-swap, no lock and no cache line another writer dirties;
 * readers sum the live slots and what closed slots left behind.
 *
 * <p>A slot belongs to one stream or one block receiver and lives as long
 * as it does: opening and closing one is per block, never per packet.
 */
public final class WriterCounters {

  private final int width;
  private final Set<Slot> live = ConcurrentHashMap.newKeySet();
  /** What closed slots counted; guarded by this. */
  private final long[] retired;

  /** @param width how many counters each slot holds */
  public WriterCounters(int width) {
    this.width = width;
    this.retired = new long[width];
  }

  /** One writer's counters; closing it keeps what it counted. */
  public final class Slot implements Closeable {
    private final AtomicLongArray values = new AtomicLongArray(width);
    private boolean closed;

    private Slot() {
    }

    /** Adds {@code n} to counter {@code counter}; its owner thread only. */
    public void add(int counter, long n) {
      values.lazySet(counter, values.get(counter) + n);
    }

    /** Folds this slot into the totals. Idempotent. */
    @Override
    public void close() {
      retire(this);
    }
  }

  /** A new slot for one writer thread. */
  public Slot open() {
    Slot s = new Slot();
    live.add(s);
    return s;
  }

  private synchronized void retire(Slot s) {
    if (s.closed) {
      return;
    }
    s.closed = true;
    for (int i = 0; i < width; i++) {
      retired[i] += s.values.get(i);
    }
    live.remove(s);
  }

  /** Counter {@code counter} summed over every slot, open or closed. */
  public synchronized long sum(int counter) {
    long total = retired[counter];
    for (Slot s : live) {
      total += s.values.get(counter);
    }
    return total;
  }
}
