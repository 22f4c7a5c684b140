package org.hdfsrdma.ucx;

import java.io.Closeable;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Connections by peer address, reused across blocks and files: connection
 * set-up is what made RDMA lose to sockets on small transfers in the seed
 * paper, so a client connects to each DataNode once. A connection that
 * fails or closes leaves the cache, and the next request for that peer
 * connects again.
 */
public final class EndpointCache implements Closeable {

  private final UcxWorker worker;
  private final ConcurrentHashMap<InetSocketAddress,
      CompletableFuture<UcxConnection>> connections =
      new ConcurrentHashMap<InetSocketAddress, CompletableFuture<UcxConnection>>();
  private final AtomicLong connects = new AtomicLong();
  private final AtomicLong hits = new AtomicLong();
  private volatile boolean closed;

  public EndpointCache(UcxWorker worker) {
    this.worker = worker;
  }

  /**
   * The connection to {@code peer}: the cached one while it is usable,
   * otherwise a new one.
   */
  public CompletableFuture<UcxConnection> get(InetSocketAddress peer) {
    if (closed) {
      CompletableFuture<UcxConnection> f = new CompletableFuture<UcxConnection>();
      f.completeExceptionally(new IllegalStateException(
          "endpoint cache is closed"));
      return f;
    }
    while (true) {
      CompletableFuture<UcxConnection> current = connections.get(peer);
      if (current != null && isLiveOrPending(current)) {
        hits.incrementAndGet();
        return current;
      }
      CompletableFuture<UcxConnection> fresh = new CompletableFuture<UcxConnection>();
      boolean installed = current == null
          ? connections.putIfAbsent(peer, fresh) == null
          : connections.replace(peer, current, fresh);
      if (!installed) {
        continue;
      }
      connects.incrementAndGet();
      UcxConnection.connect(worker, peer).whenComplete((c, error) -> {
        if (error != null) {
          connections.remove(peer, fresh);
          fresh.completeExceptionally(error);
          return;
        }
        c.addCloseListener(closedOne -> connections.remove(peer, fresh));
        fresh.complete(c);
      });
      return fresh;
    }
  }

  private static boolean isLiveOrPending(CompletableFuture<UcxConnection> f) {
    if (!f.isDone()) {
      return true;
    }
    if (f.isCompletedExceptionally()) {
      return false;
    }
    return f.join().isUsable();
  }

  /** Drops the connection to {@code peer} if it is {@code connection}. */
  public void evict(InetSocketAddress peer, UcxConnection connection) {
    CompletableFuture<UcxConnection> current = connections.get(peer);
    if (current != null && current.isDone()
        && !current.isCompletedExceptionally() && current.join() == connection) {
      connections.remove(peer, current);
      connection.close();
    }
  }

  /** Connections opened over the cache's life. */
  public long connectCount() {
    return connects.get();
  }

  /** Requests served by a cached connection. */
  public long hitCount() {
    return hits.get();
  }

  /** Connections currently cached. */
  public int size() {
    return connections.size();
  }

  /** Closes every cached connection. Idempotent. */
  @Override
  public void close() {
    closed = true;
    List<CompletableFuture<UcxConnection>> all =
        new ArrayList<CompletableFuture<UcxConnection>>(connections.values());
    connections.clear();
    for (CompletableFuture<UcxConnection> f : all) {
      f.thenAccept(UcxConnection::close);
    }
  }
}
