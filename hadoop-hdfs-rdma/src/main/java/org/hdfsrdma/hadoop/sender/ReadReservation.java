package org.hdfsrdma.hadoop.sender;

import java.io.Closeable;

import org.hdfsrdma.ucx.RegisteredBufferPool;

/**
 * One read's window of buffers, or why it has none
 * ({@link #declined()}). Ends once: {@link #finish} or {@link #retire};
 * {@link #close} retires a reservation that did not end.
 */
public final class ReadReservation implements Closeable {

  static final ReadReservation[] DECLINED =
      new ReadReservation[ReaderPools.Decline.values().length];

  static {
    for (ReaderPools.Decline d : ReaderPools.Decline.values()) {
      DECLINED[d.ordinal()] = new ReadReservation(d);
    }
  }

  private final ReaderPools owner;
  private final ReaderPools.ReaderPool pool;
  private final long[] tokens;
  private final ReaderPools.Decline declined;
  private boolean ended;

  ReadReservation(ReaderPools owner, ReaderPools.ReaderPool pool,
      long[] tokens) {
    this.owner = owner;
    this.pool = pool;
    this.tokens = tokens;
    this.declined = null;
  }

  private ReadReservation(ReaderPools.Decline declined) {
    this.owner = null;
    this.pool = null;
    this.tokens = new long[0];
    this.declined = declined;
    this.ended = true;
  }

  /** Why the read got no buffers, or null when it has its window. */
  public ReaderPools.Decline declined() {
    return declined;
  }

  /** Buffers in the window. */
  public int window() {
    return tokens.length;
  }

  /** The lease of buffer {@code i} of the window. */
  public long token(int i) {
    return tokens[i];
  }

  /** The reader's pool the buffers are leased from (regions, keys). */
  public RegisteredBufferPool buffers() {
    return pool == null ? null : pool.buffers;
  }

  /**
   * The read ended as agreed (its final credit, or its cancel): the
   * buffers go back to the reader's pool for its next read.
   */
  public void finish() {
    end(false);
  }

  /**
   * The read ended any other way (a dead socket, a fallback, an error):
   * the reader's pool serves no further read and is deregistered when
   * its last read ends.
   */
  public void retire() {
    end(true);
  }

  /** Retires the reservation unless it ended. */
  @Override
  public void close() {
    end(true);
  }

  private void end(boolean retire) {
    if (owner == null) {
      return; // declined: nothing to give back
    }
    synchronized (owner) {
      if (ended) {
        return;
      }
      ended = true;
    }
    owner.ended(pool, tokens, retire);
  }
}
