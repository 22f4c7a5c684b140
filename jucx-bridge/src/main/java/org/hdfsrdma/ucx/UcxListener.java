package org.hdfsrdma.ucx;

import java.io.Closeable;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import org.openucx.jucx.ucp.UcpConnectionRequest;
import org.openucx.jucx.ucp.UcpListener;
import org.openucx.jucx.ucp.UcpListenerParams;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Accepts UCX connections on a socket address (the serving side: a
 * DataNode). Accepted connections belong to the worker and outlive the
 * listener; closing the listener only stops new connections.
 */
public final class UcxListener implements Closeable, UcxWorker.WorkerResource {

  private static final Logger LOG = LoggerFactory.getLogger(UcxListener.class);

  private final UcxWorker worker;
  private final Consumer<UcxConnection> onAccept;
  private final AtomicLong accepted = new AtomicLong();
  private final AtomicLong rejected = new AtomicLong();
  /**
   * Held for the listener's whole life: JUCX crashes the JVM when a
   * listener is collected while its worker is progressed.
   */
  private UcpListener listener;
  private InetSocketAddress address;
  private volatile boolean closed;

  private UcxListener(UcxWorker worker, Consumer<UcxConnection> onAccept) {
    this.worker = worker;
    this.onAccept = onAccept;
  }

  /**
   * Listens on {@code bindAddress} (port 0 picks a free port).
   *
   * @param onAccept called on the progress thread with each new connection
   */
  public static CompletableFuture<UcxListener> open(UcxWorker worker,
      InetSocketAddress bindAddress, Consumer<UcxConnection> onAccept) {
    return worker.call(() -> {
      UcxListener l = new UcxListener(worker, onAccept);
      l.listener = worker.ucp().newListener(new UcpListenerParams()
          .setSockAddr(bindAddress)
          .setConnectionHandler(l::onConnectionRequest));
      l.address = l.listener.getAddress();
      worker.register(l);
      LOG.info("UCX listener of {} on {}", worker.name(), l.address);
      return l;
    });
  }

  /** The bound address, with the real port. */
  public InetSocketAddress address() {
    return address;
  }

  public long acceptedCount() {
    return accepted.get();
  }

  public long rejectedCount() {
    return rejected.get();
  }

  private void onConnectionRequest(UcpConnectionRequest request) {
    try {
      if (closed) {
        request.reject();
        rejected.incrementAndGet();
        return;
      }
      UcxConnection connection = UcxConnection.accept(worker, request);
      accepted.incrementAndGet();
      onAccept.accept(connection);
    } catch (Throwable t) {
      rejected.incrementAndGet();
      LOG.warn("UCX listener {} could not accept a connection from {}",
          address, request.getClientAddress(), t);
      try {
        request.reject();
      } catch (Throwable ignored) {
        // Already consumed by a failed endpoint creation.
      }
    }
  }

  /** Stops accepting. Idempotent. */
  @Override
  public void close() {
    if (!closed) {
      worker.closeOnProgressThread(this);
    }
  }

  @Override
  public void closeOnProgressThread() {
    if (closed) {
      return;
    }
    closed = true;
    worker.unregister(this);
    try {
      listener.close();
    } catch (RuntimeException e) {
      LOG.warn("Closing UCX listener {} failed", address, e);
    }
  }

  @Override
  public String toString() {
    return "UcxListener(" + address + ")";
  }
}
