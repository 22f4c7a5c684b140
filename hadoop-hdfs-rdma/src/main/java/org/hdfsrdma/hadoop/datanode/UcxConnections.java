package org.hdfsrdma.hadoop.datanode;

import java.io.Closeable;
import java.io.IOException;
import java.util.Arrays;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.hdfsrdma.ucx.UcxEndpoint;
import org.hdfsrdma.ucx.UcxWorker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A DataNode's own UCX endpoints back to the clients that connected to it,
 * one per client connection, made from the worker address each client sends
 * first ({@code HelloMessage}).
 *
 * <p>UCX pairs such an endpoint with the one the client's connection made
 * on this side, which is what lets the DataNode issue gets over it (UCX
 * refuses RMA on an endpoint a message handler is handed until it is
 * paired) and hear, through the endpoint's error callback, when the client
 * dies. An endpoint is made only when a block first needs gets (a region
 * that is not read directly: RDMA hardware, or tcp where allowed): UCX
 * parses a worker address with no length and trusts every byte, so with
 * the default transports (shared memory) a DataNode never hands UCX an
 * address a peer sent. Endpoints are created on the worker's progress
 * thread, never inside UCX's callback. A connection whose peer opens no
 * block within {@code dfs.datanode.rdma.unbound-connection-timeout-ms} is
 * closed. One that opened a block and has an endpoint back stays while its
 * peer lives, however long it idles: the peer keeps its end for its next
 * block and greets only a new connection, so a connection forgotten here
 * would leave that block with no endpoint back for its gets (a chain
 * between hosts stalled for the get timeout whenever a feeder came back
 * after the sweep). One read directly needs no endpoint back and is
 * forgotten once idle that long. At most
 * {@link #MAX_CONNECTIONS} are known at once; older unused ones are
 * forgotten first.
 */
final class UcxConnections implements Closeable {

  private static final Logger LOG =
      LoggerFactory.getLogger(UcxConnections.class);

  /** One client connection: this side's endpoint and its use. */
  static final class Connection {
    final long replyEndpoint;
    final byte[] address;
    final long createdNanos = System.nanoTime();
    final AtomicInteger sessions = new AtomicInteger();
    volatile long lastUsedNanos = createdNanos;
    volatile boolean everBound;
    boolean connecting;
    volatile UcxEndpoint endpoint;

    Connection(long replyEndpoint, byte[] address) {
      this.replyEndpoint = replyEndpoint;
      this.address = address;
    }

    /** Whether an endpoint back was made or is being made. */
    synchronized boolean hasEndpointBack() {
      return connecting || endpoint != null;
    }
  }

  private final UcxWorker worker;
  private final byte[] ownAddress;
  private final long connectTimeoutMs;
  private final long idleTimeoutNanos;
  /** Client connections remembered at once, at most. */
  static final int MAX_CONNECTIONS = 4096;

  private final Map<Long, Connection> byReplyEndpoint =
      new ConcurrentHashMap<Long, Connection>();
  private final AtomicLong hellos = new AtomicLong();
  private final AtomicLong closedIdle = new AtomicLong();

  UcxConnections(UcxWorker worker, long connectTimeoutMs,
      long idleTimeoutMs) {
    this.worker = worker;
    this.ownAddress = worker.address();
    this.connectTimeoutMs = connectTimeoutMs;
    this.idleTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(idleTimeoutMs);
  }

  /**
   * A client's hello, inside UCX's callback: remember its address for an
   * endpoint back, made when a block first needs one ({@link #connect}). A
   * client in this very JVM (MiniDFSCluster) needs none: its regions are
   * read directly.
   */
  void onHello(byte[] address, long replyEndpoint) {
    hellos.incrementAndGet();
    if (replyEndpoint == 0 || Arrays.equals(address, ownAddress)
        || byReplyEndpoint.containsKey(replyEndpoint)) {
      return;
    }
    if (byReplyEndpoint.size() >= MAX_CONNECTIONS) {
      forgetOldestUnused();
    }
    byReplyEndpoint.put(replyEndpoint,
        new Connection(replyEndpoint, address));
  }

  /**
   * Starts making the endpoint back to a connection's client, once; on the
   * progress thread.
   */
  void connect(final Connection c) {
    synchronized (c) {
      if (c.connecting) {
        return;
      }
      c.connecting = true;
    }
    final long replyEndpoint = c.replyEndpoint;
    worker.execute(() -> UcxEndpoint.connect(worker, c.address,
        "client at endpoint 0x" + Long.toHexString(replyEndpoint),
        connectTimeoutMs).whenComplete((e, error) -> {
          if (error != null) {
            LOG.debug("hdfs-rdma: no endpoint back to a client: {}",
                error.toString());
            byReplyEndpoint.remove(replyEndpoint, c);
            return;
          }
          c.endpoint = e;
          e.addCloseListener(closed -> {
            logFailure(c, closed);
            byReplyEndpoint.remove(replyEndpoint, c);
          });
        }));
  }

  /**
   * A client's endpoint failed: news only while it had blocks open (the
   * blocks fail too, each naming its own cause); a client that exited
   * after its last block is the normal case, at DEBUG.
   */
  private static void logFailure(Connection c, UcxEndpoint e) {
    IOException failure = e.failure();
    if (failure == null) {
      return;
    }
    int open = c.sessions.get();
    if (open > 0) {
      LOG.warn("hdfs-rdma: the UCX connection to a client with {} block(s)"
          + " open failed: {}", open, failure.getMessage());
    } else {
      LOG.debug("hdfs-rdma: a client with no block open went away: {}",
          failure.getMessage());
    }
  }

  private void forgetOldestUnused() {
    Connection oldest = null;
    for (Connection c : byReplyEndpoint.values()) {
      if (c.sessions.get() == 0 && (oldest == null
          || c.lastUsedNanos < oldest.lastUsedNanos)) {
        oldest = c;
      }
    }
    if (oldest != null && byReplyEndpoint.remove(oldest.replyEndpoint,
        oldest) && oldest.endpoint != null) {
      final UcxEndpoint e = oldest.endpoint;
      worker.execute(e::close);
    }
  }

  /** The connection a message's reply endpoint belongs to, or null. */
  Connection get(long replyEndpoint) {
    return replyEndpoint == 0 ? null : byReplyEndpoint.get(replyEndpoint);
  }

  /** A block of this connection's client opened. */
  static void bound(Connection c) {
    if (c != null) {
      c.everBound = true;
      c.sessions.incrementAndGet();
      c.lastUsedNanos = System.nanoTime();
    }
  }

  /** A block of this connection's client closed. */
  static void unbound(Connection c) {
    if (c != null) {
      c.sessions.decrementAndGet();
      c.lastUsedNanos = System.nanoTime();
    }
  }

  /**
   * Closes connections that opened no block within the timeout, and
   * forgets idle ones that opened blocks but hold no endpoint back; the
   * maintenance thread.
   */
  void sweep() {
    long now = System.nanoTime();
    Iterator<Connection> it = byReplyEndpoint.values().iterator();
    while (it.hasNext()) {
      Connection c = it.next();
      if (c.sessions.get() > 0 || now - c.lastUsedNanos <= idleTimeoutNanos) {
        continue;
      }
      if (c.everBound) {
        // A peer read directly (shared memory) has no endpoint back here
        // and its next block needs none: its entry is only bookkeeping,
        // forgotten once idle so that a gone peer leaves nothing behind.
        // One with an endpoint back stays until that endpoint fails: the
        // peer reuses the connection for its next block's gets.
        if (!c.hasEndpointBack()) {
          it.remove();
        }
      } else {
        it.remove();
        closedIdle.incrementAndGet();
        UcxEndpoint e = c.endpoint;
        LOG.debug("hdfs-rdma: closing a UCX connection that opened no block"
            + " in {} ms", TimeUnit.NANOSECONDS.toMillis(now - c.createdNanos));
        if (e != null) {
          worker.execute(e::close);
        }
      }
    }
  }

  /** Client connections open now. */
  int size() {
    return byReplyEndpoint.size();
  }

  /** Hellos received. */
  long hellos() {
    return hellos.get();
  }

  /** Connections closed for idleness. */
  long closedIdle() {
    return closedIdle.get();
  }

  /** Closes every connection. Idempotent. */
  @Override
  public void close() {
    for (Connection c : byReplyEndpoint.values()) {
      UcxEndpoint e = c.endpoint;
      if (e != null) {
        e.close();
      }
    }
    byReplyEndpoint.clear();
  }
}
