package org.hdfsrdma.ucx;

import java.io.Closeable;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointErrorHandler;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The UCX endpoint of a {@link UcxEndpoint} and the threads inside it, the
 * way {@link NativeWorker} is a worker's: every native call on the endpoint
 * {@linkplain #enter() enters} first and leaves after, so that closing can
 * stop new calls and wait for those inside before UCX tears the endpoint
 * down. It also knows how UCX 1.13 must be made to let go of an endpoint:
 * a flush while the connection is healthy, then always a forced close, and
 * a close UCX has not finished by then handed to the worker, which
 * finishes it before it is destroyed.
 *
 * <p>What the connection means (its failure, its listeners, its sends and
 * gets) is the {@link UcxEndpoint}'s; this class is the native resource
 * alone. {@link #close()} and {@link #release} act once, whoever calls
 * them and however often.
 */
final class NativeEndpoint implements Closeable {

  /** Its lines are the endpoint's. */
  private static final Logger LOG = LoggerFactory.getLogger(UcxEndpoint.class);

  /** Zero bytes after a copied worker address. */
  private static final int ADDRESS_PADDING = 4096;

  /** How long closing waits for threads inside, and for UCX. */
  static final long CLOSE_WAIT_MS = 5_000;

  /**
   * The closing flush's callback. JUCX's own default throws from
   * {@code onError}, on whichever thread progresses: a flush that failed
   * because the peer reset the connection ended a DataNode's progress
   * thread.
   */
  private static final UcxCallback QUIET = new UcxCallback() {
    @Override
    public void onError(int status, String message) {
      LOG.debug("Flush before closing a UCX endpoint failed: {} ({})",
          message, status);
    }
  };

  private final UcxWorker worker;
  private final NativeWorker natives;
  private final String peer;
  private final UcpEndpoint endpoint;
  private final long handle;
  /** Threads inside a native call on this endpoint; closing waits for 0. */
  private final AtomicInteger inside = new AtomicInteger();
  private final AtomicBoolean closed = new AtomicBoolean();

  /**
   * Creates the endpoint to the worker at {@code address}; UCX calls
   * {@code onError} (on whichever thread progresses) when the peer fails.
   * Nothing can fail after UCX created it, so nothing is left to undo.
   *
   * @throws RuntimeException when UCX refuses the address
   */
  NativeEndpoint(UcxWorker worker, String peer, byte[] address,
      boolean peerErrorHandling, UcpEndpointErrorHandler onError) {
    this.worker = worker;
    this.natives = worker.natives();
    this.peer = peer;
    // UCX parses a worker address with no length: zeros after it keep any
    // read past its end inside this buffer.
    ByteBuffer a = ByteBuffer.allocateDirect(address.length + ADDRESS_PADDING);
    a.put(address).clear();
    UcpEndpointParams params = new UcpEndpointParams().setUcpAddress(a)
        .setName("hdfs-rdma to " + peer)
        .setErrorHandler(onError);
    if (peerErrorHandling) {
      params.setPeerErrorHandlingMode();
    }
    this.endpoint = natives.ucp().newEndpoint(params);
    this.handle = endpoint.getNativeId();
  }

  /** The ucp_ep_h. */
  long handle() {
    return handle;
  }

  /** Starts a flush of the endpoint (the wire-up, on connect). */
  void flush(UcxCallback callback) {
    endpoint.flushNonBlocking(callback);
  }

  /**
   * Counts the calling thread in before a native call; false (nothing
   * counted) once the endpoint is closed or closing.
   */
  boolean enter() {
    inside.incrementAndGet();
    if (closed.get()) {
      inside.decrementAndGet();
      return false;
    }
    return true;
  }

  /** Counts out what {@link #enter()} counted in. */
  void leave() {
    inside.decrementAndGet();
  }

  /**
   * Before a send or a get, once entered: keeps the worker's progress out
   * until {@link #leaveOperation} (see {@link NativeWorker}); false, with
   * nothing taken, from inside progress.
   */
  boolean enterOperation() {
    return natives.enterOperation();
  }

  /** Lets progress in again after {@link #enterOperation}. */
  void leaveOperation(boolean entered) {
    natives.leaveOperation(entered);
  }

  /** Whether closing began. */
  boolean isClosed() {
    return closed.get();
  }

  /** {@link #release}, flushing first and waiting for UCX. */
  @Override
  public void close() {
    release(true, () -> true);
  }

  /**
   * Closes the endpoint, once: lets no new call in and waits for those
   * inside; then, if {@code wait} and {@code healthy} (asked once the
   * threads are out), flushes, so that the peer sees an orderly
   * disconnect; then closes by force. With {@code wait} it progresses the
   * worker from the calling thread until UCX is done, for at most
   * {@value #CLOSE_WAIT_MS} ms each; without (inside UCX's callback, where
   * no progress may run) it only starts the close. A close UCX has not
   * finished is left to the worker to finish before it is destroyed.
   *
   * @return whether this call closed it (false: closed already)
   */
  boolean release(boolean wait, BooleanSupplier healthy) {
    if (!closed.compareAndSet(false, true)) {
      return false;
    }
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(CLOSE_WAIT_MS);
    while (inside.get() != 0 && System.nanoTime() < deadline) {
      Thread.yield();
    }
    if (wait && healthy.getAsBoolean()) {
      // What was sent reaches the peer before the endpoint goes.
      try {
        UcpRequest flush = endpoint.flushNonBlocking(QUIET);
        if (flush != null && !awaitCompletion(flush, deadline)) {
          LOG.debug("The UCX endpoint to {} did not flush in {} ms; closing"
              + " it anyway", peer, CLOSE_WAIT_MS);
        }
      } catch (RuntimeException e) {
        LOG.debug("Flushing the UCX endpoint to {}: {}", peer, e.toString());
      }
    }
    // Always by force: UCX 1.13 destroys an endpoint closed in flush mode
    // only with its worker once the peer has connected to it
    // (ucp_ep_disconnected), keeping its sockets and its mappings of the
    // peer's shared memory for the worker's life.
    UcpRequest request = null;
    try {
      request = endpoint.closeNonBlockingForce();
    } catch (RuntimeException e) {
      LOG.debug("Closing the UCX endpoint to {}: {}", peer, e.toString());
    }
    if (request != null && !request.isCompleted()) {
      if (wait) {
        awaitCompletion(request, System.nanoTime()
            + TimeUnit.MILLISECONDS.toNanos(CLOSE_WAIT_MS));
      }
      if (!request.isCompleted()) {
        natives.completeBeforeDestroy(request);
      }
    }
    return true;
  }

  private boolean awaitCompletion(UcpRequest request, long deadline) {
    while (!request.isCompleted() && System.nanoTime() < deadline
        && worker.isRunning()) {
      if (worker.progress() == 0) {
        Thread.yield();
      }
    }
    return request.isCompleted();
  }
}
