package org.hdfsrdma.ucx;

import java.io.Closeable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.openucx.jucx.UcxUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The native handlers of a worker's active messages
 * (native/src/hdfsrdma_fastpath.c): a message of {@link
 * UcxWorker#MESSAGE_AM_ID} is copied to a scratch buffer and handed to the
 * {@link MessageHandler} inside UCX's callback; every other id the wire can
 * carry has a handler that only counts it (UCX 1.13 indexes its handler
 * table with the id from the wire unchecked, so a stray id must find an
 * entry). The counters live in native memory, written by the handlers.
 *
 * <p>{@link #close()} frees the handlers' native state, once, and only
 * after the worker is destroyed: UCX calls the handlers until then.
 */
final class MessageDispatch implements Closeable {

  /** Its lines are the worker's. */
  private static final Logger LOG = LoggerFactory.getLogger(UcxWorker.class);

  /** How often counted stray messages are reported, at most. */
  private static final long REPORT_INTERVAL_MS = 10_000;

  private final String name;
  private final CallbackFailures failures;
  private final ByteBuffer scratch;
  private final ByteBuffer counters;
  private final long handle;
  private final AtomicBoolean released = new AtomicBoolean();
  private volatile MessageHandler handler;
  private long lastReportNanos = System.nanoTime();
  private long reportedForeign;
  private long reportedOversized;

  /**
   * Installs the handlers on the worker {@code worker} (a ucp_worker_h).
   *
   * @throws UcxUnavailableException when UCX refuses them
   */
  MessageDispatch(long worker, String name, CallbackFailures failures)
      throws UcxUnavailableException {
    this.name = name;
    this.failures = failures;
    this.scratch = ByteBuffer.allocateDirect(UcxWorker.MAX_MESSAGE_BYTES)
        .order(ByteOrder.BIG_ENDIAN);
    this.counters = ByteBuffer.allocateDirect(8 * NativeUcx.COUNTER_COUNT)
        .order(ByteOrder.nativeOrder());
    long installed = NativeUcx.installHandlers(worker,
        UcxWorker.MESSAGE_AM_ID, new Upcall(), UcxUtils.getAddress(scratch),
        UcxWorker.MAX_MESSAGE_BYTES, UcxUtils.getAddress(counters));
    if (installed <= 0) {
      throw new UcxUnavailableException("cannot install the message"
          + " handlers of UCX worker " + name + ": "
          + NativeUcx.describe((int) installed));
    }
    this.handle = installed;
  }

  /** The upcall target of the native handler; never throws. */
  private final class Upcall {
    @SuppressWarnings("unused") // called from native code
    void onMessage(int length, long replyEndpoint) {
      MessageHandler h = handler;
      if (h == null) {
        return;
      }
      try {
        h.onMessage(scratch, length, replyEndpoint);
      } catch (Throwable t) {
        failures.record(CallbackFailures.Kind.MESSAGE_HANDLER, t);
      }
    }
  }

  void setHandler(MessageHandler handler) {
    this.handler = handler;
  }

  private long counter(int index) {
    return counters.getLong(8 * index);
  }

  /** Messages handed to the message handler. */
  long delivered() {
    return counter(NativeUcx.COUNTER_DELIVERED);
  }

  /** Messages with an active-message id nobody registered. */
  long stray() {
    return counter(NativeUcx.COUNTER_FOREIGN);
  }

  /**
   * Messages of our id refused before the handler: too long, with a user
   * header, or offered by rendezvous.
   */
  long oversized() {
    return counter(NativeUcx.COUNTER_OVERSIZED)
        + counter(NativeUcx.COUNTER_RENDEZVOUS);
  }

  /**
   * Messages the native code could not hand to the handler (no JNI
   * environment, or an exception escaped the upcall).
   */
  long upcallFailures() {
    return counter(NativeUcx.COUNTER_UPCALL_FAILED);
  }

  /** Logs stray and refused messages, at most every 10 s; progress thread. */
  void reportStrayMessages() {
    long now = System.nanoTime();
    if (now - lastReportNanos < TimeUnit.MILLISECONDS.toNanos(
        REPORT_INTERVAL_MS)) {
      return;
    }
    lastReportNanos = now;
    long stray = stray();
    long oversized = oversized();
    if (stray != reportedForeign || oversized != reportedOversized) {
      LOG.warn("UCX worker {} dropped {} message(s) with an unregistered"
          + " active-message id and {} oversized or rendezvous message(s)"
          + " in the last {} s (totals {} and {})", name,
          stray - reportedForeign, oversized - reportedOversized,
          REPORT_INTERVAL_MS / 1000, stray, oversized);
      reportedForeign = stray;
      reportedOversized = oversized;
    }
  }

  /** Frees the handlers' native state, once; after the worker is destroyed. */
  @Override
  public void close() {
    if (released.compareAndSet(false, true)) {
      NativeUcx.releaseHandlers(handle);
    }
  }
}
