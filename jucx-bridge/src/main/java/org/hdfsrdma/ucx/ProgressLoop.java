package org.hdfsrdma.ucx;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A worker's own progress thread: it runs the control tasks handed to it,
 * lets go of operation memory no longer in use, progresses, and then
 * waits: in the worker's event wait while no driver is registered, for at
 * most {@value UcxWorker#MAX_SLEEP_MS} ms; otherwise it sweeps every
 * {@value UcxWorker#SWEEP_MS} ms, promoting a parked driver if nobody
 * waits (see {@link UcxWorker}).
 */
final class ProgressLoop {

  /** Its lines are the worker's. */
  private static final Logger LOG = LoggerFactory.getLogger(UcxWorker.class);

  /** How often the loop sweeps {@link InFlightMemory}, at most. */
  private static final long IN_FLIGHT_SWEEP_NANOS =
      TimeUnit.MILLISECONDS.toNanos(100);

  private final UcxWorker worker;
  private final String name;
  private final NativeWorker ucx;
  private final WaiterHandoff waiters;
  private final MessageDispatch dispatch;
  private final InFlightMemory inFlight;
  private final CallbackFailures failures;
  private final ConcurrentLinkedQueue<Runnable> tasks =
      new ConcurrentLinkedQueue<Runnable>();
  private volatile Thread thread;
  private long lastInFlightSweep = System.nanoTime();

  ProgressLoop(UcxWorker worker, NativeWorker ucx, WaiterHandoff waiters,
      MessageDispatch dispatch, InFlightMemory inFlight,
      CallbackFailures failures) {
    this.worker = worker;
    this.name = worker.name();
    this.ucx = ucx;
    this.waiters = waiters;
    this.dispatch = dispatch;
    this.inFlight = inFlight;
    this.failures = failures;
  }

  /** Starts the thread; once. */
  void start() {
    Thread t = DaemonThreads.newThread(this::run, name + "-progress");
    thread = t;
    t.start();
  }

  /** The thread, or null before {@link #start()}. */
  Thread thread() {
    return thread;
  }

  /**
   * Once the worker is closing: waits up to {@code timeoutMs} for the
   * thread to end (not when called on it); whether it has ended, or never
   * started. A thread that stays is logged.
   */
  boolean awaitEnd(long timeoutMs) {
    Thread t = thread;
    if (t == null) {
      return true;
    }
    if (t != Thread.currentThread()) {
      try {
        t.join(timeoutMs);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (t.isAlive()) {
      LOG.error("UCX worker {}: its progress thread still runs after {} ms;"
          + " leaving the worker allocated rather than free it under that"
          + " thread", name, timeoutMs);
      return false;
    }
    return true;
  }

  /** Queues {@code task} for the thread and wakes it. */
  void execute(Runnable task) {
    tasks.add(task);
    Thread t = thread;
    if (t != null) {
      LockSupport.unpark(t);
      if (waiters.isWaiter(t)) {
        worker.signal();
      }
    }
  }

  private void runTasks() {
    Runnable task;
    while ((task = tasks.poll()) != null) {
      try {
        task.run();
      } catch (Throwable e) {
        failures.record(CallbackFailures.Kind.TASK, e);
      }
    }
  }

  private void run() {
    LOG.debug("UCX worker {} progress thread started", name);
    Thread self = Thread.currentThread();
    try {
      while (!ucx.isClosing()) {
        try {
          runTasks();
          sweepInFlight();
          if (worker.progress() > 0) {
            continue;
          }
        } catch (RuntimeException escaped) {
          // The worker still needs this thread: the loop goes on.
          failures.record(CallbackFailures.Kind.PROGRESS_LOOP, escaped);
          continue;
        }
        dispatch.reportStrayMessages();
        if (!waiters.hasDrivers()) {
          if (waiters.take(self)) {
            try {
              if (!waiters.hasDrivers() && tasks.isEmpty()) {
                ucx.sleep(UcxWorker.MAX_SLEEP_MS);
              }
            } finally {
              waiters.leave();
            }
          } else {
            LockSupport.parkNanos(this,
                TimeUnit.MILLISECONDS.toNanos(UcxWorker.SWEEP_MS));
          }
        } else {
          waiters.promoteParked(null);
          LockSupport.parkNanos(this,
              TimeUnit.MILLISECONDS.toNanos(UcxWorker.SWEEP_MS));
        }
      }
    } catch (Throwable t) {
      failures.record(CallbackFailures.Kind.PROGRESS_THREAD, t);
    }
    LOG.debug("UCX worker {} progress thread ends after {} sleeps", name,
        ucx.sleeps());
  }

  /** Lets go of operation memory no longer in use, at most every 100 ms. */
  private void sweepInFlight() {
    long now = System.nanoTime();
    if (now - lastInFlightSweep >= IN_FLIGHT_SWEEP_NANOS) {
      lastInFlightSweep = now;
      inFlight.sweep();
    }
  }
}
