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
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import org.openucx.jucx.UcxCallback;
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
 *
 * <p>The UCX endpoint itself, the threads inside it and how UCX is made to
 * let go of it are a {@link NativeEndpoint}'s; this class is what the
 * connection means: its wire-up, its failure, its listeners, its
 * operations.
 */
public final class UcxEndpoint implements Closeable {

  private static final Logger LOG = LoggerFactory.getLogger(UcxEndpoint.class);

  /** Deadlines of connects, one daemon thread for the JVM. */
  private static final ScheduledExecutorService TIMERS =
      Executors.newSingleThreadScheduledExecutor(
          r -> DaemonThreads.newThread(r, "ucx-connect-timer"));

  private final UcxWorker worker;
  private final String peer;
  private final NativeEndpoint ucx;
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
    this.ucx = new NativeEndpoint(worker, peer, address, peerErrorHandling,
        (ep, status, message) -> onError(status, message));
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
      e.ucx.flush(new UcxCallback() {
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
    return failure == null && !ucx.isClosed();
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
    if (ucx.isClosed()) {
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
    if (!ucx.enter()) {
      throw unusable("send of a message");
    }
    // No progress runs meanwhile: an endpoint UCX marked failed has had its
    // error callback, so the check below refuses it (see NativeWorker).
    boolean gated = ucx.enterOperation();
    try {
      if (failure != null) {
        throw unusable("send of a message");
      }
      int rc = NativeUcx.amSend(ucx.handle(), UcxWorker.MESSAGE_AM_ID,
          address, length, slot);
      if (rc < 0) {
        throw new UcxOperationException(peer, "send of a message", rc,
            NativeUcx.describe(rc));
      }
      messagesSent.incrementAndGet();
      return rc;
    } finally {
      ucx.leaveOperation(gated);
      ucx.leave();
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
    if (!ucx.enter()) {
      throw unusable("get of " + length + " bytes");
    }
    boolean gated = ucx.enterOperation();
    try {
      if (failure != null) {
        throw unusable("get of " + length + " bytes");
      }
      int rc = NativeUcx.get(ucx.handle(), remote, rkey, local, length,
          slot);
      if (rc < 0) {
        throw new UcxOperationException(peer, "get of " + length + " bytes",
            rc, NativeUcx.describe(rc));
      }
      return rc;
    } finally {
      ucx.leaveOperation(gated);
      ucx.leave();
    }
  }

  /** Why {@code operation} cannot start: the failure, or the close. */
  private UcxOperationException unusable(String operation) {
    IOException f = failure;
    return new UcxOperationException(peer, operation, 0, f != null
        ? "the connection failed: " + f.getMessage()
        : "the connection is closed", f);
  }

  /** The ucp_ep_h, to recognise it as a message's reply endpoint. */
  public long handle() {
    return ucx.handle();
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
    if (!ucx.enter()) {
      return TransportReport.unknown();
    }
    try {
      return TransportReport.parse(NativeIntrospection.endpointInfo(
          ucx.handle()));
    } finally {
      ucx.leave();
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
      if (!ucx.isClosed()) {
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
    if (!ucx.release(wait, () -> failure == null)) {
      return;
    }
    for (Consumer<UcxEndpoint> listener : closeListeners) {
      notifyClosed(listener);
    }
    closedFuture.complete(null);
  }

  @Override
  public String toString() {
    return "UcxEndpoint(to " + peer + (failure != null ? ", failed"
        : ucx.isClosed() ? ", closed" : "") + ")";
  }
}
