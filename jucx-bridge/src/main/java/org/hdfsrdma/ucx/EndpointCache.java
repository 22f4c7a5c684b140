package org.hdfsrdma.ucx;

import java.io.Closeable;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Connections by peer worker address, reused across blocks and files:
 * connection set-up is what made RDMA lose to sockets on small transfers in
 * the seed paper, so a client connects to each DataNode once. A connection
 * that fails or closes leaves the cache, and the next request for that peer
 * connects again.
 */
public final class EndpointCache implements Closeable {

  private final UcxWorker worker;
  private final long connectTimeoutMs;
  private final byte[] greeting;
  private final ConcurrentHashMap<ByteBuffer,
      CompletableFuture<UcxEndpoint>> endpoints =
      new ConcurrentHashMap<ByteBuffer, CompletableFuture<UcxEndpoint>>();
  private final AtomicLong connects = new AtomicLong();
  private final AtomicLong hits = new AtomicLong();
  /** Messages sent on connections that left the cache. */
  private final AtomicLong retiredMessages = new AtomicLong();
  private volatile boolean closed;

  /**
   * @param greeting this side's worker address, sent as the first message
   *     of every new connection (the peer connects back with it), or null
   */
  public EndpointCache(UcxWorker worker, long connectTimeoutMs,
      byte[] greeting) {
    this.worker = worker;
    this.connectTimeoutMs = connectTimeoutMs;
    this.greeting = greeting == null ? null : greeting.clone();
  }

  /**
   * The connection to the worker at {@code address}: the cached one while it
   * is usable, otherwise a new one.
   *
   * @param peer the peer's name for messages
   */
  public CompletableFuture<UcxEndpoint> get(byte[] address, String peer) {
    if (closed) {
      CompletableFuture<UcxEndpoint> f = new CompletableFuture<UcxEndpoint>();
      f.completeExceptionally(new IllegalStateException(
          "endpoint cache is closed"));
      return f;
    }
    ByteBuffer key = ByteBuffer.wrap(address.clone());
    while (true) {
      CompletableFuture<UcxEndpoint> current = endpoints.get(key);
      if (current != null && isLiveOrPending(current)) {
        hits.incrementAndGet();
        return current;
      }
      CompletableFuture<UcxEndpoint> fresh =
          new CompletableFuture<UcxEndpoint>();
      boolean installed = current == null
          ? endpoints.putIfAbsent(key, fresh) == null
          : endpoints.replace(key, current, fresh);
      if (!installed) {
        continue;
      }
      connects.incrementAndGet();
      UcxEndpoint.connect(worker, key.array(), peer, connectTimeoutMs)
          .whenComplete((e, error) -> {
            if (error != null) {
              endpoints.remove(key, fresh);
              fresh.completeExceptionally(error);
              return;
            }
            // Inside UCX's flush callback: the hello (a send) and a close
            // wait for the progress thread. Done here, they aborted writer
            // JVMs in UCX 1.13 whenever the DataNode's receive queue was
            // full during the connect ("arbiter.c:117": an endpoint's send
            // queue purged while UCX dispatched it).
            try {
              worker.execute(() -> publish(key, fresh, e));
            } catch (IllegalStateException workerClosing) {
              endpoints.remove(key, fresh);
              fresh.completeExceptionally(workerClosing);
            }
          });
      return fresh;
    }
  }

  /** Says hello on a new connection and hands it out; progress thread. */
  private void publish(ByteBuffer key, CompletableFuture<UcxEndpoint> fresh,
      UcxEndpoint e) {
    if (greeting != null) {
      try {
        e.greet(greeting);
      } catch (java.io.IOException ex) {
        e.close();
        endpoints.remove(key, fresh);
        fresh.completeExceptionally(ex);
        return;
      }
    }
    // Once, even where a close races this registration and both call it.
    final AtomicBoolean retired = new AtomicBoolean();
    e.addCloseListener(closedOne -> {
      endpoints.remove(key, fresh);
      if (retired.compareAndSet(false, true)) {
        retiredMessages.addAndGet(closedOne.messagesSent());
      }
    });
    fresh.complete(e);
    // Either close() sees it made, or this sees the cache closed.
    if (closed) {
      e.close();
    }
  }

  private static boolean isLiveOrPending(CompletableFuture<UcxEndpoint> f) {
    if (!f.isDone()) {
      return true;
    }
    if (f.isCompletedExceptionally()) {
      return false;
    }
    return f.join().isUsable();
  }

  /** Connections opened over the cache's life. */
  public long connectCount() {
    return connects.get();
  }

  /** Requests served by a cached connection. */
  public long hitCount() {
    return hits.get();
  }

  /**
   * Messages sent on this cache's connections over its life: those of the
   * cached ones, read now, and of those closed since. A connection that
   * failed and was replaced but is not closed yet is missing until it
   * closes; none is counted twice. For metrics and tests, not the data
   * path.
   */
  public long messagesSent() {
    long sent = retiredMessages.get();
    for (CompletableFuture<UcxEndpoint> f : endpoints.values()) {
      if (f.isDone() && !f.isCompletedExceptionally()) {
        sent += f.join().messagesSent();
      }
    }
    return sent;
  }

  /** Connections currently cached. */
  public int size() {
    return endpoints.size();
  }

  /**
   * Closes every cached connection, each one even when closing another
   * fails (the first failure is thrown); a connection still being made is
   * closed once it is. Idempotent.
   */
  @Override
  public void close() {
    closed = true;
    List<UcxEndpoint> made = new ArrayList<UcxEndpoint>();
    for (CompletableFuture<UcxEndpoint> f : endpoints.values()) {
      if (f.isDone() && !f.isCompletedExceptionally()) {
        made.add(f.join());
      }
    }
    endpoints.clear();
    Closeables.closeAll(made);
  }
}
