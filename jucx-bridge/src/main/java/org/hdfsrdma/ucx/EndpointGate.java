package org.hdfsrdma.ucx;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * The gate between progressing a worker (shared: any number of threads)
 * and starting a send or a get on one of its endpoints (exclusive), which
 * UCX 1.13 needs: it fails an endpoint whose peer died inside a progress
 * call, and an operation started on it afterwards crashes the process
 * (see {@link NativeWorker}).
 *
 * <p>One atomic word, no queue: entering and leaving never allocate, which
 * a lock that queues its waiters (StampedLock, ReentrantReadWriteLock)
 * does whenever a reader meets a writer, that is per packet on a busy
 * DataNode. A waiting side spins briefly, then yields: both sides hold the
 * gate for one native call. A writer waiting keeps new readers out, so
 * sends and gets are not starved by a stream of progress calls. A thread
 * already inside progress (a message handler or callback that sends)
 * passes without entering: UCX's worker lock, which it holds, already
 * keeps every other progress call out.
 */
final class EndpointGate {

  /** Set while a writer holds or waits for the gate; the rest count readers. */
  private static final int WRITER = 1 << 30;
  private static final int SPINS = 64;

  private final AtomicInteger state = new AtomicInteger();
  /** How deep the calling thread is inside progress. */
  private final ThreadLocal<int[]> depth = ThreadLocal.withInitial(
      () -> new int[1]);

  /** Enters the shared side (progress). */
  void enterShared() {
    int[] d = depth.get();
    if (d[0]++ > 0) {
      return;
    }
    int spins = 0;
    while (true) {
      int s = state.get();
      if ((s & WRITER) == 0 && state.compareAndSet(s, s + 1)) {
        return;
      }
      spins = pause(spins);
    }
  }

  void leaveShared() {
    int[] d = depth.get();
    if (--d[0] > 0) {
      return;
    }
    state.decrementAndGet();
  }

  /**
   * Enters the exclusive side (a send or a get), unless the calling thread
   * is inside progress; returns whether it entered.
   */
  boolean enterExclusive() {
    if (depth.get()[0] > 0) {
      return false;
    }
    int spins = 0;
    while (true) {
      int s = state.get();
      if ((s & WRITER) == 0 && state.compareAndSet(s, s | WRITER)) {
        break;
      }
      spins = pause(spins);
    }
    spins = 0;
    while ((state.get() & ~WRITER) != 0) {
      spins = pause(spins);
    }
    return true;
  }

  /** Leaves the exclusive side if {@code entered}. */
  void leaveExclusive(boolean entered) {
    if (entered) {
      state.addAndGet(-WRITER);
    }
  }

  private static int pause(int spins) {
    if (spins < SPINS) {
      return spins + 1;
    }
    Thread.yield();
    return spins;
  }
}
