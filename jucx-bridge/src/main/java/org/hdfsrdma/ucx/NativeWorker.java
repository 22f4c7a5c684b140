package org.hdfsrdma.ucx;

import java.io.Closeable;
import java.util.Collections;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;

/**
 * The UCX worker of a {@link UcxWorker} and the threads inside it. Every
 * native call on the worker {@linkplain #enter() enters} first and leaves
 * after, so that closing can stop new calls and wait until none is inside
 * before UCX frees the worker; endpoint closes UCX has not finished are
 * kept here too, because UCX 1.13 aborts when a worker is destroyed under
 * one.
 *
 * <p>{@link #close()} destroys the worker, once (JUCX's own close fails
 * the second time); its owner calls it only when no thread is inside and
 * no endpoint close is pending.
 */
final class NativeWorker implements Closeable {

  /** What {@link #sleep} answers when the worker is closing. */
  static final int CLOSING = Integer.MIN_VALUE;

  private final UcpWorker worker;
  private final long handle;
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
  NativeWorker(UcxContext context, String name)
      throws UcxUnavailableException {
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

  /** The JUCX worker, for the control path (endpoints, addresses). */
  UcpWorker ucp() {
    return worker;
  }

  /**
   * Counts the calling thread in before a native call; false (nothing
   * counted) once the worker is closing.
   */
  boolean enter() {
    inside.incrementAndGet();
    if (closing) {
      inside.decrementAndGet();
      return false;
    }
    return true;
  }

  /** Counts out what {@link #enter()} counted in. */
  void leave() {
    inside.decrementAndGet();
  }

  boolean isClosing() {
    return closing;
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
   * Waits until no thread is inside, waking sleepers, until {@code
   * deadline} (System.nanoTime); whether none is.
   */
  boolean awaitNoneInside(long deadline) {
    while (inside.get() != 0 && System.nanoTime() < deadline) {
      NativeUcx.signal(handle);
      Thread.yield();
    }
    return inside.get() == 0;
  }

  /**
   * Progresses the worker from the calling thread until the pending
   * endpoint closes finish or {@code deadline} passes; how many did not.
   * Only once no other thread is inside.
   */
  int finishEndpointCloses(long deadline) {
    closes.removeIf(UcpRequest::isCompleted);
    while (!closes.isEmpty() && System.nanoTime() < deadline) {
      NativeUcx.progress(handle);
      closes.removeIf(UcpRequest::isCompleted);
    }
    return closes.size();
  }

  /** Destroys the UCX worker; only the first call does anything. */
  @Override
  public void close() {
    if (destroyed.compareAndSet(false, true)) {
      worker.close();
    }
  }
}
