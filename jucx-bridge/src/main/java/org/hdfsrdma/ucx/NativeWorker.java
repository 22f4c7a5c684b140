package org.hdfsrdma.ucx;

import java.io.Closeable;
import java.nio.ByteBuffer;
import java.util.Collections;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The UCX worker of a {@link UcxWorker} and the threads inside it. Every
 * native call on the worker (progress, sleep, signal, description) goes
 * through here and enters first and leaves after, so that closing can stop
 * new calls and wait until none is inside before UCX frees the worker;
 * endpoint closes UCX has not finished are kept here too, because UCX 1.13
 * aborts when a worker is destroyed under one.
 *
 * <p>Progress holds the shared side of the worker's {@link EndpointGate},
 * a send or a get on one of its endpoints the exclusive side
 * ({@link #enterOperation}). UCX 1.13 marks an endpoint whose peer failed
 * as failed, discards its lanes and calls its error callback, all inside
 * one progress call; a get or a send started on it after that crashes the
 * process (SIGSEGV in ucp_get_nbx, and in ucp_am_send_nbx, each seen in
 * about one run in twenty of TestPeerFailure; the get fixed in UCX by
 * openucx/ucx#11629). An operation that holds the gate sees either an
 * endpoint whose error callback already ran (and is refused in Java) or
 * one UCX has not marked yet (whose operation then fails UCX's way).
 *
 * <p>{@link #close()} destroys the worker, once (JUCX's own close fails
 * the second time); {@link #destroyWhenIdle} calls it only when no thread
 * is inside and no endpoint close is pending, and otherwise leaves the
 * worker allocated.
 */
final class NativeWorker implements Closeable {

  /** Its lines are the worker's. */
  private static final Logger LOG = LoggerFactory.getLogger(UcxWorker.class);

  /** What {@link #sleep} answers when the worker is closing. */
  static final int CLOSING = Integer.MIN_VALUE;

  private final UcpWorker worker;
  private final String name;
  private final long handle;
  private final CallbackFailures failures;
  private final EndpointGate endpointGate = new EndpointGate();
  private final int eventFd;
  /** Threads inside a native call on this worker; close waits for 0. */
  private final AtomicInteger inside = new AtomicInteger();
  private volatile boolean closing;
  private final AtomicLong sleeps = new AtomicLong();
  /** Endpoint closes UCX has not finished; drained before destroying. */
  private final Set<UcpRequest> closes = Collections.newSetFromMap(
      new ConcurrentHashMap<UcpRequest, Boolean>());
  private final AtomicBoolean destroyed = new AtomicBoolean();

  /**
   * Creates the worker in UCX's multi-thread mode, with wake-ups.
   *
   * @throws UcxUnavailableException when UCX cannot create it or it has no
   *     event fd
   */
  NativeWorker(UcxContext context, String name, CallbackFailures failures)
      throws UcxUnavailableException {
    this.name = name;
    this.failures = failures;
    UcpWorker w;
    try {
      w = context.ucp().newWorker(new UcpWorkerParams()
          .requestThreadSafety()
          .requestWakeupRX()
          .requestWakeupTX()
          .requestWakeupRMA());
    } catch (RuntimeException e) {
      throw new UcxUnavailableException("cannot create UCX worker " + name
          + ": " + e.getMessage(), e);
    }
    try {
      this.handle = w.getNativeId();
      int fd = NativeUcx.eventFd(handle);
      if (fd < 0) {
        throw new UcxUnavailableException("UCX worker " + name
            + " has no event fd: " + NativeUcx.describe(fd));
      }
      this.eventFd = fd;
    } catch (UcxUnavailableException | RuntimeException | Error e) {
      Closeables.closeAfterFailure(e, w);
      throw e;
    }
    this.worker = w;
  }

  /** The ucp_worker_h. */
  long handle() {
    return handle;
  }

  /** The JUCX worker, for the control path (endpoints). */
  UcpWorker ucp() {
    return worker;
  }

  /** A copy of the worker's UCX address. */
  byte[] address() {
    ByteBuffer a = worker.getAddress();
    byte[] copy = new byte[a.remaining()];
    a.duplicate().get(copy);
    return copy;
  }

  /**
   * Counts the calling thread in before a native call; false (nothing
   * counted) once the worker is closing.
   */
  private boolean enter() {
    inside.incrementAndGet();
    if (closing) {
      inside.decrementAndGet();
      return false;
    }
    return true;
  }

  /** Counts out what {@link #enter()} counted in. */
  private void leave() {
    inside.decrementAndGet();
  }

  boolean isClosing() {
    return closing;
  }

  /**
   * Progresses the worker once on the calling thread, inside the shared
   * side of the gate: the number of events, 0 when the worker is closing.
   * Never throws: an exception a JUCX callback threw inside UCX's progress
   * (ours catch their own) surfaces after UCX's call returned, and is
   * counted as the event it was.
   */
  int progress() {
    if (!enter()) {
      return 0;
    }
    int events;
    Throwable escaped = null;
    endpointGate.enterShared();
    try {
      events = NativeUcx.progress(handle);
    } catch (Throwable t) {
      escaped = t;
      events = 1;
    } finally {
      endpointGate.leaveShared();
      leave();
    }
    if (escaped != null) {
      failures.record(CallbackFailures.Kind.PROGRESS, escaped);
    }
    return events;
  }

  /**
   * Enters the exclusive side of the gate between progress and endpoint
   * operations: no thread is inside progress until {@link #leaveOperation}.
   * From inside progress (a message handler, a callback) it enters nothing
   * and returns false: UCX's worker lock already excludes other progress.
   */
  boolean enterOperation() {
    return endpointGate.enterExclusive();
  }

  /** Leaves what {@link #enterOperation} entered. */
  void leaveOperation(boolean entered) {
    endpointGate.leaveExclusive(entered);
  }

  /**
   * UCX's description of the worker (transports, configuration).
   *
   * @throws IllegalStateException when the worker is closing
   */
  String describe() {
    if (!enter()) {
      throw new IllegalStateException("worker " + name + " is closed");
    }
    try {
      return NativeIntrospection.workerInfo(handle);
    } finally {
      leave();
    }
  }

  /**
   * Arms the worker and sleeps in its event wait for at most {@code
   * timeoutMs}: the native call's answer (non-zero when woken or when UCX
   * had events already), or {@link #CLOSING}.
   */
  int sleep(int timeoutMs) {
    if (!enter()) {
      return CLOSING;
    }
    try {
      sleeps.incrementAndGet();
      return NativeUcx.waitEvents(handle, eventFd, timeoutMs);
    } finally {
      leave();
    }
  }

  /** Times a thread slept in the event wait. */
  long sleeps() {
    return sleeps.get();
  }

  /** Wakes whichever thread sleeps in the event wait. */
  void signal() {
    if (!enter()) {
      return;
    }
    try {
      NativeUcx.signal(handle);
    } finally {
      leave();
    }
  }

  /** An endpoint close UCX must finish before the worker is destroyed. */
  void completeBeforeDestroy(UcpRequest request) {
    closes.add(request);
  }

  /** Lets no new call in and wakes the sleeper. */
  void beginClose() {
    closing = true;
    NativeUcx.signal(handle);
  }

  /**
   * Destroys the worker once it is safe, waiting up to {@code waitMs}: when
   * no thread is inside (sleepers are woken) and the pending endpoint
   * closes finished (progressed from the calling thread, once no other
   * thread is inside). Whether it destroyed it; otherwise, logged, it left
   * it allocated, because UCX may still use it and freeing it under UCX
   * aborts the process. After {@link #beginClose()} let no new call in,
   * and once no progress thread runs.
   */
  boolean destroyWhenIdle(long waitMs) {
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(waitMs);
    while (inside.get() != 0 && System.nanoTime() < deadline) {
      NativeUcx.signal(handle);
      Thread.yield();
    }
    if (inside.get() != 0) {
      LOG.error("UCX worker {}: a thread is still inside it after {} ms;"
          + " leaving it allocated rather than free it under that thread",
          name, waitMs);
      return false;
    }
    closes.removeIf(UcpRequest::isCompleted);
    while (!closes.isEmpty() && System.nanoTime() < deadline) {
      NativeUcx.progress(handle);
      closes.removeIf(UcpRequest::isCompleted);
    }
    if (!closes.isEmpty()) {
      LOG.error("UCX worker {}: {} endpoint close(s) did not finish in {} ms;"
          + " leaving the worker allocated rather than abort", name,
          closes.size(), waitMs);
      return false;
    }
    try {
      close();
    } catch (RuntimeException e) {
      // Perhaps not destroyed: UCX may still call its handlers.
      LOG.warn("Closing UCX worker {} failed; leaving its handlers and its"
          + " context allocated", name, e);
      return false;
    }
    return true;
  }

  /** Destroys the UCX worker; only the first call does anything. */
  @Override
  public void close() {
    if (destroyed.compareAndSet(false, true)) {
      worker.close();
    }
  }
}
