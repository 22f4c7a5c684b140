package org.hdfsrdma.ucx;

import java.io.Closeable;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.UcxUtils;
import org.openucx.jucx.ucp.UcpConnectionRequest;
import org.openucx.jucx.ucp.UcpConstants;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpRemoteKey;
import org.openucx.jucx.ucp.UcpRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One UCX endpoint to a peer: descriptors are sent over it and gets of the
 * peer's exposed memory go over it.
 *
 * <p>Every operation returns a future and never throws: a peer failure,
 * a timeout or a rejected remote key completes the future exceptionally
 * with a {@link UcxOperationException} naming the peer and the operation.
 * A failed or timed-out connection is closed for good (UCX cannot cancel a
 * get in flight, so closing the endpoint is what guarantees a late get no
 * longer writes into a buffer the caller has reused); callers reconnect,
 * for example through an {@link EndpointCache}.
 *
 * <p>Thread-safe: calls from any thread run on the worker's progress thread.
 */
public final class UcxConnection implements Closeable,
    UcxWorker.WorkerResource {

  private static final Logger LOG = LoggerFactory.getLogger(UcxConnection.class);

  /** Unpacked remote keys kept per connection, least recently used out. */
  private static final int RKEY_CACHE_ENTRIES = 1024;
  /** Zero bytes after a copied remote key, so UCX never reads past it. */
  private static final int RKEY_PADDING = 256;
  private static final long DEFAULT_CONNECT_TIMEOUT_MS = 30_000;
  /** Whether remote keys are checked against the packed layout we know. */
  private static final boolean CHECK_KEY_LAYOUT =
      PackedRemoteKey.layoutKnown(NativeIntrospection.loadedUcxVersion());

  /** An unpacked remote key and the region it was announced for. */
  private static final class CachedKey {
    final byte[] packed;
    final long regionBase;
    final long regionLength;
    final UcpRemoteKey key;

    CachedKey(byte[] packed, long regionBase, long regionLength,
        UcpRemoteKey key) {
      this.packed = packed;
      this.regionBase = regionBase;
      this.regionLength = regionLength;
      this.key = key;
    }
  }

  /**
   * An operation UCX has not completed yet. Per packet, so it holds what
   * describes the operation and builds the text only when it fails.
   */
  private final class Pending extends UcxCallback {
    private final String kind;
    private final Object subject;
    final long bytes;
    final CompletableFuture<Void> future = new CompletableFuture<Void>();
    /** System.nanoTime() by which UCX must complete it; 0: no deadline. */
    long deadlineNanos;
    long timeoutMs;

    Pending(String kind, Object subject, long bytes) {
      this.kind = kind;
      this.subject = subject;
      this.bytes = bytes;
    }

    String operation() {
      return subject == null ? kind : kind + " (" + subject + ")";
    }

    @Override
    public void onSuccess(UcpRequest request) {
      if (finish()) {
        if (bytes > 0) {
          bytesFetched.addAndGet(bytes);
          getsCompleted.incrementAndGet();
        }
        future.complete(null);
      }
    }

    @Override
    public void onError(int status, String message) {
      fail(new UcxOperationException(peer, operation(), status, message));
    }

    void fail(IOException e) {
      if (finish()) {
        if (bytes > 0) {
          getsFailed.incrementAndGet();
        }
        future.completeExceptionally(e);
      }
    }

    /** Removes this operation from the pending set; true the first time. */
    private boolean finish() {
      if (!pending.remove(this)) {
        return false;
      }
      if (deadlineNanos != 0) {
        worker.deadlineDone();
      }
      return true;
    }
  }

  private final UcxWorker worker;
  private final String peer;
  private final boolean accepted;
  private final LinkedHashSet<Pending> pending = new LinkedHashSet<Pending>();
  private final LinkedHashMap<Integer, CachedKey> rkeys =
      new LinkedHashMap<Integer, CachedKey>(16, 0.75f, true) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<Integer, CachedKey> e) {
          if (size() > RKEY_CACHE_ENTRIES) {
            e.getValue().key.close();
            return true;
          }
          return false;
        }
      };
  private final List<Consumer<UcxConnection>> closeListeners =
      new CopyOnWriteArrayList<Consumer<UcxConnection>>();
  private final AtomicLong bytesFetched = new AtomicLong();
  private final AtomicLong getsCompleted = new AtomicLong();
  private final AtomicLong getsFailed = new AtomicLong();
  private final AtomicLong descriptorsSent = new AtomicLong();
  private final CompletableFuture<Void> closedFuture =
      new CompletableFuture<Void>();

  /** Progress thread only. */
  private UcpEndpoint endpoint;
  private long endpointHandle;
  private volatile IOException failure;
  private volatile boolean closed;

  private UcxConnection(UcxWorker worker, String peer, boolean accepted) {
    this.worker = worker;
    this.peer = peer;
    this.accepted = accepted;
  }

  /**
   * Connects to a peer's listener. The future completes once UCX finished
   * the wire-up (an endpoint flush completed), so an unreachable peer fails
   * here, within {@code timeoutMs}, rather than on the first descriptor.
   * Waiting also avoids a UCX 1.13 fault: a message of more than about 92
   * bytes sent over a shared-memory lane before the wire-up finished fails
   * with "Invalid parameter".
   *
   * <p>A plain TCP connect to the address comes first: UCX 1.13 aborts the
   * whole process (assertion in wireup_ep.c) when a socket-address connect
   * fails during wire-up, for example when nothing listens on the port.
   */
  public static CompletableFuture<UcxConnection> connect(UcxWorker worker,
      InetSocketAddress address, long timeoutMs) {
    CompletableFuture<UcxConnection> connected =
        new CompletableFuture<UcxConnection>();
    try {
      PROBES.execute(() -> {
        long started = System.nanoTime();
        try (java.net.Socket probe = new java.net.Socket()) {
          probe.connect(address, (int) Math.max(1, Math.min(timeoutMs,
              Integer.MAX_VALUE)));
        } catch (IOException | RuntimeException e) {
          connected.completeExceptionally(new UcxOperationException(
              format(address), "connect", 0, "nothing accepts connections"
              + " there: " + e, e));
          return;
        }
        long left = timeoutMs - TimeUnit.NANOSECONDS.toMillis(
            System.nanoTime() - started);
        connectUcx(worker, address, Math.max(1, left), connected);
      });
    } catch (java.util.concurrent.RejectedExecutionException e) {
      connected.completeExceptionally(new UcxOperationException(
          format(address), "connect", 0, "cannot start the connect: " + e, e));
    }
    return connected;
  }

  /** Daemon threads for the TCP probes that precede UCX connects. */
  private static final java.util.concurrent.ExecutorService PROBES =
      java.util.concurrent.Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "ucx-connect-probe");
        t.setDaemon(true);
        return t;
      });

  private static void connectUcx(UcxWorker worker, InetSocketAddress address,
      long timeoutMs, CompletableFuture<UcxConnection> connected) {
    worker.call(() -> {
      UcxConnection c = new UcxConnection(worker, format(address), false);
      c.open(new UcpEndpointParams().setSocketAddress(address)
          .setName("hdfs-rdma to " + format(address)));
      c.submit("connect", null, 0, timeoutMs,
          op -> c.endpoint.flushNonBlocking(op))
          .whenComplete((ok, error) -> {
            if (error == null) {
              connected.complete(c);
            } else {
              c.close();
              connected.completeExceptionally(error);
            }
          });
      return c;
    }).whenComplete((c, error) -> {
      if (error != null) {
        connected.completeExceptionally(error);
      }
    });
  }

  /** {@link #connect(UcxWorker, InetSocketAddress, long)}, 30 s timeout. */
  public static CompletableFuture<UcxConnection> connect(UcxWorker worker,
      InetSocketAddress address) {
    return connect(worker, address, DEFAULT_CONNECT_TIMEOUT_MS);
  }

  /** Accepts a connection request; on the progress thread. */
  static UcxConnection accept(UcxWorker worker, UcpConnectionRequest request)
      throws IOException {
    InetSocketAddress from = request.getClientAddress();
    UcxConnection c = new UcxConnection(worker, format(from), true);
    c.open(new UcpEndpointParams().setConnectionRequest(request)
        .setName("hdfs-rdma from " + format(from)));
    return c;
  }

  private void open(UcpEndpointParams params) throws IOException {
    params.setErrorHandler(this::onEndpointError);
    if (worker.context().options().peerErrorHandling()) {
      params.setPeerErrorHandlingMode();
    }
    try {
      endpoint = worker.ucp().newEndpoint(params);
    } catch (RuntimeException e) {
      throw new UcxOperationException(peer, "connect", 0, e.getMessage(), e);
    }
    endpointHandle = endpoint.getNativeId();
    worker.mapEndpoint(endpointHandle, this);
    worker.register(this);
  }

  private static String format(InetSocketAddress address) {
    return address == null ? "unknown" : address.getHostString() + ":"
        + address.getPort();
  }

  /** The peer as host:port. */
  public String peer() {
    return peer;
  }

  /** True for connections a listener accepted. */
  public boolean isAccepted() {
    return accepted;
  }

  /** The JUCX endpoint; progress thread only (tools and benchmarks). */
  UcpEndpoint ucp() {
    return endpoint;
  }

  /** The worker this connection runs on. */
  public UcxWorker worker() {
    return worker;
  }

  /** True until the connection fails or is closed. */
  public boolean isUsable() {
    return !closed && failure == null;
  }

  /** Why the connection failed, or null. */
  public IOException failure() {
    return failure;
  }

  /** Completes when the connection is closed, for whatever reason. */
  public CompletableFuture<Void> closedFuture() {
    return closedFuture;
  }

  /** Called once, on the progress thread, when the connection closes. */
  public void addCloseListener(Consumer<UcxConnection> listener) {
    closeListeners.add(listener);
    if (closed) {
      listener.accept(this);
    }
  }

  /** Bytes this side fetched with completed gets. */
  public long bytesFetched() {
    return bytesFetched.get();
  }

  public long getsCompleted() {
    return getsCompleted.get();
  }

  public long getsFailed() {
    return getsFailed.get();
  }

  public long descriptorsSent() {
    return descriptorsSent.get();
  }

  /**
   * Sends a descriptor to the peer. The descriptor's buffer must be direct
   * and must not change until the future completes.
   */
  public CompletableFuture<Void> sendDescriptor(PacketDescriptor descriptor,
      long timeoutMs) {
    return sendMessage(descriptor.buffer(), descriptor.offset(),
        descriptor.length(), timeoutMs);
  }

  /**
   * Sends raw bytes as a descriptor message. Active messages rather than
   * tagged sends: UCX hands the receiver the endpoint the message came on,
   * so the getter fetches over that very connection with no id registry,
   * and no receive buffers need to be posted per session.
   */
  CompletableFuture<Void> sendMessage(ByteBuffer buffer, int offset,
      int length, long timeoutMs) {
    if (!buffer.isDirect()) {
      CompletableFuture<Void> f = new CompletableFuture<Void>();
      f.completeExceptionally(new IllegalArgumentException(
          "descriptor buffers must be direct"));
      return f;
    }
    final long address = UcxUtils.getAddress(buffer) + offset;
    return submit("send of a descriptor", length, 0, timeoutMs,
        op -> {
          descriptorsSent.incrementAndGet();
          return endpoint.sendAmNonBlocking(UcxWorker.DESCRIPTOR_AM_ID, 0, 0,
              address, length, UcpConstants.UCP_AM_SEND_FLAG_REPLY, op);
        });
  }

  /**
   * Fetches the packet a validated descriptor describes into local
   * registered memory.
   *
   * @param descriptor validated; must not change until the future completes
   * @param localAddress where the packet lands; registered memory of this
   *     process with room for {@code descriptor.packetLength()} bytes
   * @param localCapacity bytes available at localAddress
   */
  public CompletableFuture<Void> get(PacketDescriptor descriptor,
      long localAddress, int localCapacity, long timeoutMs) {
    final int length = descriptor.packetLength();
    if (length > localCapacity) {
      CompletableFuture<Void> f = new CompletableFuture<Void>();
      f.completeExceptionally(new MalformedDescriptorException("get of "
          + length + " bytes (" + descriptor + ") does not fit a local"
          + " buffer of " + localCapacity + " bytes"));
      return f;
    }
    return submit("get", descriptor, length, timeoutMs, op -> {
      UcpRemoteKey key = remoteKeyFor(descriptor);
      return endpoint.getNonBlocking(descriptor.address(), key, localAddress,
          length, op);
    });
  }

  /** Fetches a packet into a pooled buffer; see the other overload. */
  public CompletableFuture<Void> get(PacketDescriptor descriptor,
      RegisteredBuffer into, long timeoutMs) {
    return get(descriptor, into.address(), into.capacity(), timeoutMs);
  }

  /** What starts one UCX operation on the progress thread. */
  private interface Starter {
    UcpRequest start(Pending op) throws IOException;
  }

  private CompletableFuture<Void> submit(String kind, Object subject,
      long bytes, long timeoutMs, Starter starter) {
    Pending op = new Pending(kind, subject, bytes);
    try {
      worker.execute(() -> start(op, timeoutMs, starter));
    } catch (IllegalStateException e) {
      op.future.completeExceptionally(new UcxOperationException(peer,
          op.operation(), 0, "worker " + worker.name() + " is closed"));
    }
    return op.future;
  }

  private void start(Pending op, long timeoutMs, Starter starter) {
    IOException reason = failure;
    if (reason == null && closed) {
      reason = new UcxOperationException(peer, op.operation(), 0,
          "connection is closed");
    }
    if (reason != null) {
      op.future.completeExceptionally(new UcxOperationException(peer,
          op.operation(), 0, "connection failed earlier: " + reason.getMessage(),
          reason));
      return;
    }
    pending.add(op);
    try {
      starter.start(op);
    } catch (IOException e) {
      op.fail(e);
      return;
    } catch (RuntimeException e) {
      // JUCX throws on immediate failure (and may also call onError).
      op.fail(new UcxOperationException(peer, op.operation(), 0,
          String.valueOf(e.getMessage()), e));
      return;
    }
    if (!op.future.isDone() && timeoutMs > 0) {
      op.timeoutMs = timeoutMs;
      op.deadlineNanos = System.nanoTime()
          + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
      worker.deadlineAdded();
    }
  }

  /**
   * Fails the connection if an operation is past its deadline. Called by
   * the worker's deadline sweep on the progress thread.
   */
  void expireOverdue(long nowNanos) {
    for (Pending op : pending) {
      if (op.deadlineNanos != 0 && nowNanos - op.deadlineNanos >= 0) {
        onDeadline(op);
        return; // the connection is closed now, with all its operations
      }
    }
  }

  private void onDeadline(Pending op) {
    UcxTimeoutException timeout =
        new UcxTimeoutException(peer, op.operation(), op.timeoutMs);
    // Unusable before anyone hears of the timeout.
    if (failure == null) {
      failure = timeout;
    }
    op.fail(timeout);
    // RMA cannot be cancelled: only closing the endpoint guarantees the
    // operation no longer touches the caller's memory.
    failAndClose(timeout);
  }

  /** The unpacked remote key for a descriptor's region; progress thread. */
  private UcpRemoteKey remoteKeyFor(PacketDescriptor d) throws IOException {
    CachedKey cached = rkeys.get(d.regionId());
    if (cached != null) {
      if (cached.regionBase != d.regionBase()
          || cached.regionLength != d.regionLength()
          || !d.rkeyEquals(cached.packed)) {
        throw new MalformedDescriptorException("region " + d.regionId()
            + " from " + peer + " was announced with other bounds or another"
            + " remote key");
      }
      return cached.key;
    }
    byte[] packed = d.rkey();
    if (CHECK_KEY_LAYOUT) {
      String problem = PackedRemoteKey.check(packed);
      if (problem != null) {
        throw new MalformedDescriptorException(problem + " (region "
            + d.regionId() + " from " + peer + ")");
      }
    }
    ByteBuffer direct = ByteBuffer.allocateDirect(packed.length + RKEY_PADDING);
    direct.put(packed);
    direct.clear();
    UcpRemoteKey key;
    try {
      key = endpoint.unpackRemoteKey(direct);
    } catch (RuntimeException e) {
      // A garbage key, or a dead peer's shared memory segment that is gone.
      throw new UcxOperationException(peer, "unpack of the remote key of"
          + " region " + d.regionId(), 0, String.valueOf(e.getMessage()), e);
    }
    rkeys.put(d.regionId(), new CachedKey(packed, d.regionBase(),
        d.regionLength(), key));
    return key;
  }

  /**
   * Which transports UCX chose for this connection. Meaningful once an
   * operation has completed (UCX finishes the wire-up lazily).
   */
  public CompletableFuture<TransportReport> transports() {
    return worker.call(() -> closed ? TransportReport.unknown()
        : TransportReport.parse(NativeIntrospection.endpointInfo(
            endpointHandle)));
  }

  /** Endpoint error callback from UCX; progress thread; never throws. */
  private void onEndpointError(UcpEndpoint ep, int status, String message) {
    try {
      LOG.warn("UCX connection {} failed: {} (status {})", peer, message,
          status);
      failAndClose(new UcxOperationException(peer, "connection", status,
          message));
    } catch (Throwable t) {
      LOG.error("Handling the failure of UCX connection {} failed", peer, t);
    }
  }

  private void failAndClose(IOException reason) {
    if (failure == null) {
      failure = reason;
    }
    closeOnProgressThread();
  }

  /**
   * Closes the endpoint: operations still pending fail, cached remote keys
   * are released, close listeners run. Idempotent; waits (bounded) for the
   * progress thread when called elsewhere.
   */
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
    IOException reason = failure != null ? failure
        : new UcxOperationException(peer, "connection", 0, "closed locally");
    if (endpoint != null) {
      try {
        if (worker.context().options().peerErrorHandling()) {
          // Force: a flush towards a dead peer could wait for ever. UCX
          // completes the endpoint's outstanding requests with an error.
          endpoint.closeNonBlockingForce();
        } else {
          // UCX refuses a forced close without peer error handling.
          endpoint.closeNonBlockingFlush();
        }
      } catch (RuntimeException e) {
        LOG.warn("Closing the endpoint to {} failed", peer, e);
      }
    }
    for (Pending op : new ArrayList<Pending>(pending)) {
      op.fail(new UcxOperationException(peer, op.operation(), 0,
          "connection closed: " + reason.getMessage(), reason));
    }
    for (CachedKey cached : rkeys.values()) {
      try {
        cached.key.close();
      } catch (RuntimeException e) {
        LOG.debug("Releasing a remote key of {} failed", peer, e);
      }
    }
    rkeys.clear();
    worker.unmapEndpoint(endpointHandle);
    worker.unregister(this);
    for (Consumer<UcxConnection> listener : closeListeners) {
      try {
        listener.accept(this);
      } catch (Throwable t) {
        LOG.warn("Close listener of UCX connection {} failed", peer, t);
      }
    }
    closedFuture.complete(null);
    LOG.debug("UCX connection {} closed: {}", peer, reason.getMessage());
  }

  @Override
  public String toString() {
    return "UcxConnection(" + (accepted ? "from " : "to ") + peer
        + (failure != null ? ", failed" : closed ? ", closed" : "") + ")";
  }
}
