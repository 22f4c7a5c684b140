package org.hdfsrdma.ucx;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A connection to a peer's worker, made from the peer's UCX worker address
 * (the sending side: an HDFS client connects to each DataNode of a
 * pipeline). Messages go out with {@link #send} from the calling thread,
 * with no hand-over to another thread and no object per message.
 *
 * <p>There is no listening socket: the worker address arrives inside
 * Hadoop's authenticated data-transfer protocol, so nothing reaches UCX on
 * either side before Hadoop's own checks passed.
 *
 * <p>Peer failure (UCX's error callback, with peer error handling on)
 * makes the endpoint unusable for good and closes it; every later send
 * fails with an {@link UcxOperationException} naming the peer. Thread-safe.
 */
public final class UcxEndpoint implements Closeable {

  private static final Logger LOG = LoggerFactory.getLogger(UcxEndpoint.class);

  /** Deadlines of connects, one daemon thread for the JVM. */
  private static final ScheduledExecutorService TIMERS =
      Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "ucx-connect-timer");
        t.setDaemon(true);
        return t;
      });

  /** Zero bytes after a copied worker address. */
  private static final int ADDRESS_PADDING = 4096;

  /** How long close() waits for threads inside a send. */
  private static final long CLOSE_WAIT_MS = 5_000;

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
  private final String peer;
  private final UcpEndpoint endpoint;
  private final long handle;
  private final AtomicInteger inside = new AtomicInteger();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final AtomicLong messagesSent = new AtomicLong();
  private final List<Consumer<UcxEndpoint>> closeListeners =
      new CopyOnWriteArrayList<Consumer<UcxEndpoint>>();
  private final CompletableFuture<Void> closedFuture =
      new CompletableFuture<Void>();
  private volatile IOException failure;
  /** The hello this side sent, kept until the endpoint closes. */
  private ByteBuffer hello;
  private final StatusSlots helloSlot = new StatusSlots(1);

  private UcxEndpoint(UcxWorker worker, String peer, byte[] address,
      boolean peerErrorHandling) {
    this.worker = worker;
    this.peer = peer;
    // UCX parses a worker address with no length: zeros after it keep any
    // read past its end inside this buffer.
    ByteBuffer a = ByteBuffer.allocateDirect(address.length + ADDRESS_PADDING);
    a.put(address).clear();
    UcpEndpointParams params = new UcpEndpointParams().setUcpAddress(a)
        .setName("hdfs-rdma to " + peer)
        .setErrorHandler((ep, status, message) -> onError(status, message));
    if (peerErrorHandling) {
      params.setPeerErrorHandlingMode();
    }
    this.endpoint = worker.ucp().newEndpoint(params);
    this.handle = endpoint.getNativeId();
  }

  /**
   * Connects to the worker at {@code address}. The future completes once
   * UCX finished the wire-up (an endpoint flush completed), so an
   * unreachable peer fails here, within {@code timeoutMs}, rather than on
   * the first message; waiting also avoids a UCX 1.13 fault (a message of
   * more than about 92 bytes sent over a shared-memory lane before the
   * wire-up finished fails with "Invalid parameter").
   *
   * @param peer the peer's name for messages (a DataNode's address)
   */
  public static CompletableFuture<UcxEndpoint> connect(UcxWorker worker,
      byte[] address, String peer, long timeoutMs) {
    CompletableFuture<UcxEndpoint> connected =
        new CompletableFuture<UcxEndpoint>();
    final UcxEndpoint e;
    try {
      e = new UcxEndpoint(worker, peer, address,
          worker.context().options().peerErrorHandling());
    } catch (RuntimeException ex) {
      connected.completeExceptionally(new UcxOperationException(peer,
          "connect", 0, String.valueOf(ex.getMessage()), ex));
      return connected;
    }
    try {
      e.endpoint.flushNonBlocking(new UcxCallback() {
        @Override
        public void onSuccess(UcpRequest request) {
          IOException f = e.failure;
          if (f != null) {
            connected.completeExceptionally(f);
          } else {
            connected.complete(e);
          }
        }

        @Override
        public void onError(int status, String message) {
          connected.completeExceptionally(new UcxOperationException(peer,
              "connect", status, message));
        }
      });
    } catch (RuntimeException ex) {
      connected.completeExceptionally(new UcxOperationException(peer,
          "connect", 0, String.valueOf(ex.getMessage()), ex));
    }
    // The wire-up needs progress: whoever waits for events does it.
    worker.signal();
    TIMERS.schedule(() -> {
      if (connected.completeExceptionally(new UcxTimeoutException(peer,
          "connect", timeoutMs))) {
        e.fail(new UcxTimeoutException(peer, "connect", timeoutMs));
      }
    }, timeoutMs, TimeUnit.MILLISECONDS);
    connected.whenComplete((ok, error) -> {
      if (error != null) {
        e.fail(error instanceof IOException ? (IOException) error
            : new UcxOperationException(peer, "connect", 0,
                String.valueOf(error), error));
      }
    });
    return connected;
  }

  /** The peer's name, as given to {@link #connect}. */
  public String peer() {
    return peer;
  }

  /** The worker this endpoint belongs to. */
  public UcxWorker worker() {
    return worker;
  }

  /** True until the endpoint failed or was closed. */
  public boolean isUsable() {
    return failure == null && !closed.get();
  }

  /** Why the endpoint failed, or null. */
  public IOException failure() {
    return failure;
  }

  /** Messages sent (started) on this endpoint. */
  public long messagesSent() {
    return messagesSent.get();
  }

  /** Completes when the endpoint is closed, for whatever reason. */
  public CompletableFuture<Void> closedFuture() {
    return closedFuture;
  }

  /**
   * Called once, when the endpoint closes (at once when it is closed
   * already), on the closing thread. One that throws is counted
   * ({@link UcxWorker#callbackFailures()}).
   */
  public void addCloseListener(Consumer<UcxEndpoint> listener) {
    closeListeners.add(listener);
    if (closed.get()) {
      notifyClosed(listener);
    }
  }

  private void notifyClosed(Consumer<UcxEndpoint> listener) {
    try {
      listener.accept(this);
    } catch (Throwable t) {
      worker.failures().record(CallbackFailures.Kind.CLOSE_LISTENER, t);
    }
  }

  /**
   * Sends {@code length} bytes at native address {@code address} as one
   * message, from the calling thread. Returns 0 when UCX is done with the
   * bytes, or {@link NativeUcx#IN_PROGRESS} when the bytes must stay intact
   * until {@code slot}'s status ({@link StatusSlots}) is no longer in
   * progress (whoever progresses the worker completes it).
   *
   * @throws IOException naming the peer when the endpoint failed or UCX
   *     refused the send
   */
  public int send(long address, int length, long slot) throws IOException {
    inside.incrementAndGet();
    // No progress runs meanwhile: an endpoint UCX marked failed has had its
    // error callback, so the check below refuses it (see UcxWorker).
    boolean gated = worker.enterOperation();
    try {
      IOException f = failure;
      if (f != null || closed.get()) {
        throw new UcxOperationException(peer, "send of a message", 0,
            f != null ? "the connection failed: " + f.getMessage()
                : "the connection is closed", f);
      }
      int rc = NativeUcx.amSend(handle, UcxWorker.MESSAGE_AM_ID, address,
          length, slot);
      if (rc < 0) {
        throw new UcxOperationException(peer, "send of a message", rc,
            NativeUcx.describe(rc));
      }
      messagesSent.incrementAndGet();
      return rc;
    } finally {
      worker.leaveOperation(gated);
      inside.decrementAndGet();
    }
  }

  /**
   * Starts a get of {@code length} bytes at the peer's {@code remote}
   * address, under remote key {@code rkey} (a {@code ucp_rkey_h}), into
   * local registered memory, from the calling thread. Returns as
   * {@link #send}.
   */
  int get(long remote, long rkey, long local, int length, long slot)
      throws IOException {
    inside.incrementAndGet();
    boolean gated = worker.enterOperation();
    try {
      IOException f = failure;
      if (f != null || closed.get()) {
        throw new UcxOperationException(peer, "get of " + length + " bytes",
            0, f != null ? "the connection failed: " + f.getMessage()
                : "the connection is closed", f);
      }
      int rc = NativeUcx.get(handle, remote, rkey, local, length, slot);
      if (rc < 0) {
        throw new UcxOperationException(peer, "get of " + length + " bytes",
            rc, NativeUcx.describe(rc));
      }
      return rc;
    } finally {
      worker.leaveOperation(gated);
      inside.decrementAndGet();
    }
  }

  /** The ucp_ep_h, to recognise it as a message's reply endpoint. */
  public long handle() {
    return handle;
  }

  /**
   * Sends this side's worker address as a {@link HelloMessage}, the first
   * message of a connection, so that the peer can connect back. May run
   * inside UCX's callback: it does not wait; the message buffer stays with
   * the endpoint.
   */
  synchronized void greet(byte[] ownAddress) throws IOException {
    hello = ByteBuffer.allocateDirect(HelloMessage.encodedLength(
        ownAddress.length));
    HelloMessage m = new HelloMessage().wrap(hello, 0, hello.capacity())
        .encode(ownAddress);
    // A hello still queued when this endpoint is dropped completes later.
    worker.keepWhileInFlight(this, hello, helloSlot);
    send(org.openucx.jucx.UcxUtils.getAddress(hello), m.length(),
        helloSlot.address(0));
  }

  /**
   * Which transports UCX chose for this endpoint (meaningful once the
   * wire-up is done).
   */
  public TransportReport transports() {
    inside.incrementAndGet();
    try {
      if (closed.get()) {
        return TransportReport.unknown();
      }
      return TransportReport.parse(NativeIntrospection.endpointInfo(handle));
    } finally {
      inside.decrementAndGet();
    }
  }

  /** UCX's error callback; whichever thread progresses; never throws. */
  private void onError(int status, String message) {
    try {
      fail(new UcxOperationException(peer, "connection", status, message));
    } catch (Throwable t) {
      worker.failures().record(
          CallbackFailures.Kind.ENDPOINT_ERROR_HANDLER, t);
    }
  }

  private void fail(IOException reason) {
    if (failure == null) {
      failure = reason;
      // Whoever uses the endpoint hears of it (sends fail naming the peer,
      // close listeners see failure()); a peer that merely went away,
      // like a client JVM that exited, is no news for the log.
      if (!closed.get()) {
        LOG.debug("UCX connection to {} failed: {}", peer,
            reason.getMessage());
      }
    }
    // Possibly inside UCX's callback: no progress here; the worker
    // completes the close before it is destroyed.
    close(false);
  }

  /**
   * Closes the endpoint: gracefully (flushing, so the peer sees an orderly
   * disconnect) while it is healthy, forcibly once it failed or when the
   * graceful close does not finish in time. Waits, progressing the worker
   * from the calling thread, until UCX is done with the endpoint.
   * Idempotent.
   */
  @Override
  public void close() {
    close(true);
  }

  private void close(boolean wait) {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(CLOSE_WAIT_MS);
    while (inside.get() != 0 && System.nanoTime() < deadline) {
      Thread.yield();
    }
    if (failure == null && wait) {
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
        worker.completeBeforeDestroy(request);
      }
    }
    for (Consumer<UcxEndpoint> listener : closeListeners) {
      notifyClosed(listener);
    }
    closedFuture.complete(null);
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

  @Override
  public String toString() {
    return "UcxEndpoint(to " + peer + (failure != null ? ", failed"
        : closed.get() ? ", closed" : "") + ")";
  }
}
