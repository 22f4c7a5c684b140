package org.hdfsrdma.ucx;

import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import org.hdfsrdma.ucx.UcxWorker.Driver;
import org.hdfsrdma.ucx.UcxWorker.Readiness;

/**
 * Who sleeps in a worker's event wait: one thread at a time holds the
 * waiter role (UCX releases its lock during that sleep); a driver that
 * finds the role taken parks, and whoever delivers its message, or leaves
 * the role, unparks it. The worker's progress thread takes the role only
 * while no driver is registered (see {@link UcxWorker}). Nothing here
 * allocates per wait.
 */
final class WaiterHandoff {

  private final UcxWorker worker;
  private final NativeWorker ucx;
  private final AtomicReference<Thread> waiter = new AtomicReference<Thread>();
  /** Registered drivers; copied on write (per block, not per packet). */
  private volatile Driver[] drivers = new Driver[0];
  private final AtomicLong promotions = new AtomicLong();

  WaiterHandoff(UcxWorker worker, NativeWorker ucx) {
    this.worker = worker;
    this.ucx = ucx;
  }

  /** See {@link UcxWorker#registerDriver()}. */
  Driver register() {
    Driver d = new Driver(Thread.currentThread());
    synchronized (this) {
      Driver[] next = Arrays.copyOf(drivers, drivers.length + 1);
      next[next.length - 1] = d;
      drivers = next;
    }
    // The progress thread may be asleep in the waiter role: make it leave.
    if (waiter.get() == worker.progressThread()) {
      worker.signal();
    }
    return d;
  }

  /** See {@link UcxWorker#unregisterDriver}. */
  void unregister(Driver d) {
    if (!d.registered) {
      return;
    }
    d.registered = false;
    boolean none;
    synchronized (this) {
      Driver[] cur = drivers;
      int i = Arrays.asList(cur).indexOf(d);
      if (i < 0) {
        return;
      }
      Driver[] next = new Driver[cur.length - 1];
      System.arraycopy(cur, 0, next, 0, i);
      System.arraycopy(cur, i + 1, next, i, cur.length - i - 1);
      drivers = next;
      none = next.length == 0;
    }
    promoteParked(d);
    Thread progressThread = worker.progressThread();
    if (none && progressThread != null) {
      // Back to waiting for events instead of sweeping.
      LockSupport.unpark(progressThread);
    }
  }

  /** See {@link UcxWorker#drive}. */
  boolean drive(Driver d, Readiness ready, long timeoutNanos) {
    long deadline = System.nanoTime() + timeoutNanos;
    boolean waited = false;
    try {
      while (true) {
        if (ready.isReady()) {
          return true;
        }
        if (ucx.isClosing()) {
          return false;
        }
        worker.progress();
        if (ready.isReady()) {
          return true;
        }
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return false;
        }
        if (waiter.compareAndSet(null, d.thread)) {
          waited = true;
          try {
            awaitEvents(ready, deadline);
          } finally {
            waiter.set(null);
          }
        } else {
          d.parked = true;
          // Either the waiter sees this flag when it leaves the role, or
          // this thread sees the role vacant: no wake-up is lost.
          if (waiter.get() != null && !ready.isReady()) {
            LockSupport.parkNanos(this, left);
          }
          d.parked = false;
        }
      }
    } finally {
      if (waited) {
        promoteParked(d);
      }
    }
  }

  /**
   * Sleeps in the worker's event wait, in the waiter role, until an event
   * or a signal ends the sleep, {@code ready} says so, or the deadline
   * passes. A sleep that ran out its {@value UcxWorker#MAX_SLEEP_MS} ms
   * with nothing to show progresses and arms the worker again without
   * giving up the role, so that parked drivers are not promoted for
   * nothing.
   */
  private void awaitEvents(Readiness ready, long deadline) {
    while (true) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return;
      }
      int woken = ucx.sleep((int) Math.max(1, Math.min(
          UcxWorker.MAX_SLEEP_MS, TimeUnit.NANOSECONDS.toMillis(left))));
      if (woken != 0 || ready.isReady() || worker.progress() > 0
          || ready.isReady()) {
        return;
      }
    }
  }

  /**
   * When nobody holds the waiter role, unparks one parked driver other than
   * {@code except} so that someone watches the worker's events.
   */
  void promoteParked(Driver except) {
    if (waiter.get() != null) {
      return;
    }
    for (Driver o : drivers) {
      if (o != except && o.parked) {
        promotions.incrementAndGet();
        LockSupport.unpark(o.thread);
        return;
      }
    }
  }

  /**
   * After progress on the calling thread: what it completed (a get, a
   * message) may be what the driver asleep in the event wait waits for,
   * and the events that announced it are consumed, so nothing else would
   * wake that driver before its timeout. Wake it to look (leaving the
   * role, it promotes a parked driver, whose completion may have come too).
   */
  void wakeWaitingDriver() {
    Thread w = waiter.get();
    if (w != null && w != worker.progressThread()
        && w != Thread.currentThread()) {
      worker.signal();
    }
  }

  boolean hasDrivers() {
    return drivers.length != 0;
  }

  /** Whether {@code thread} holds the waiter role. */
  boolean isWaiter(Thread thread) {
    return waiter.get() == thread;
  }

  /** Takes the waiter role for {@code thread} if nobody holds it. */
  boolean take(Thread thread) {
    return waiter.compareAndSet(null, thread);
  }

  /** Leaves the waiter role taken with {@link #take}. */
  void leave() {
    waiter.set(null);
  }

  /** Unparks every driver, so that each sees the worker closing. */
  void unparkDrivers() {
    for (Driver d : drivers) {
      LockSupport.unpark(d.thread);
    }
  }

  /** Times a parked driver was woken to take the waiter role. */
  long promotions() {
    return promotions.get();
  }
}
