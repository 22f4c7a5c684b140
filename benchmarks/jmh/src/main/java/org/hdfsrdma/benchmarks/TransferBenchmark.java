package org.hdfsrdma.benchmarks;

import java.io.FileWriter;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.Writer;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.hdfsrdma.ucx.EndpointCache;
import org.hdfsrdma.ucx.RegionAnnouncement;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.RemoteRegion;
import org.hdfsrdma.ucx.StatusSlots;
import org.hdfsrdma.ucx.UcxContext;
import org.hdfsrdma.ucx.UcxEndpoint;
import org.hdfsrdma.ucx.UcxWorker;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * Cost of one transfer of {@code size} bytes to or from another JVM on this
 * host, the paper's Fig. 4 (transfer time against data size, RDMA against
 * sockets), three ways, all through public APIs (the JDK's, the bridge's):
 *
 * <ul>
 * <li>{@code socketTransfer}: a blocking Java socket over loopback TCP
 * (TCP_NODELAY): write {@code size} bytes, the peer reads exactly that many
 * and answers 8 bytes; one operation ends when the answer is read. An
 * HDFS packet and its ack.</li>
 * <li>{@code ucxSend}: the payload as bridge messages
 * ({@link UcxEndpoint#send}, eager, from registered memory) of at most
 * {@link UcxWorker#MAX_MESSAGE_BYTES} bytes each, the most a message
 * handler is given (one message up to 8 KiB, {@code size / 8 KiB} above);
 * the peer copies each into a landing buffer and after the last answers
 * with an 8-byte message over its own endpoint back to this JVM; one
 * operation ends when the answer arrived. This thread sends and then
 * drives the worker ({@link UcxWorker#drive}) until the answer is there, as
 * the write path's threads do.</li>
 * <li>{@code ucxGet}: {@code size} bytes of a region the peer announced
 * ({@link RegionAnnouncement}, opened with {@link RemoteRegion#open}) into
 * this JVM's memory. On one host with the product's transports the region
 * is the peer's SysV segment, attached here: the "get" is a direct read, a
 * copy into a heap array as the DataNode's receiver makes. Where UCX cannot
 * map it (UCX_TLS=tcp, or RDMA hardware between hosts) it is a UCX get
 * ({@link RemoteRegion#startGet}) into registered memory, ending when the
 * get completed. What a DataNode does for each packet of the write
 * path.</li>
 * </ul>
 *
 * Each has a {@code WithSetup} variant that also makes and closes the
 * connection in every operation: socket connect, transfer, close; bridge
 * connect by the peer's worker address ({@link UcxEndpoint#connect}, which
 * waits for UCX's wire-up), transfer, close of the endpoint; for the get
 * the region is opened again on the new endpoint (remote key unpacked,
 * segment checked with the kernel and attached) and released. For sends
 * the peer's answers keep coming over its endpoint back to the connection
 * this JVM made (and greeted) at the trial's start: the bridge sends only
 * on an endpoint of one's own, and a DataNode keeps its endpoints back to
 * clients.
 *
 * <p>The peer is a separate JVM ({@link TransferPeer}) started per trial;
 * this JVM plays the client for sends and the DataNode for gets. UCX runs
 * with the product's settings ({@link Wire#ucxOptions()}: UCX_TLS ^tcp
 * unless the environment sets it, peer error handling on). The lanes and
 * how the region is read are printed and, when the environment variable
 * {@code HDFSRDMA_BENCH_TRANSPORTS} names a file, appended to it. Nothing
 * here asserts a timing.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Benchmark)
@Fork(1)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 5, time = 1)
public class TransferBenchmark {

  static {
    Wire.defaultLogLevel();
  }

  /** Bound on one operation; a stuck transfer fails the trial. */
  private static final long OP_TIMEOUT_MS = 30_000;
  private static final long OP_TIMEOUT_NANOS =
      TimeUnit.MILLISECONDS.toNanos(OP_TIMEOUT_MS);
  /**
   * Longest sleep of one {@link UcxWorker#drive} call. The worker's
   * progress thread sweeps the worker every few ms while a driver exists;
   * a completion it takes just before this thread arms the event wait
   * wakes nobody (over tcp nothing is left for the wait to see: a 20 s
   * stall was seen). Waits are made of drives this long, so such a loss
   * costs at most this.
   */
  private static final long DRIVE_SLICE_NANOS =
      TimeUnit.MILLISECONDS.toNanos(1);
  /** Appends benchmark, size and UCX lanes here when set. */
  static final String TRANSPORTS_ENV = "HDFSRDMA_BENCH_TRANSPORTS";
  /** The peer's name in the bridge's messages. */
  private static final String PEER = "transfer peer";

  @Param({"1024", "4096", "16384", "65536", "262144", "1048576", "4194304"})
  public int size;

  private PeerProcess peer;

  // Socket benchmarks.
  private SocketChannel channel;
  private ByteBuffer payload;
  private ByteBuffer ack;

  // UCX benchmarks.
  private UcxContext context;
  private UcxWorker worker;
  private byte[] peerAddress;
  private StatusSlots slots;
  /** Sends: the payload. Gets that are not direct reads: where they land. */
  private RegisteredBufferPool pool;
  private long token = RegisteredBufferPool.NO_LEASE;
  /** Sends: the connection greeted with this JVM's address. */
  private EndpointCache greeted;
  /** The open connection (sends: the greeted one). */
  private UcxEndpoint endpoint;
  // Gets.
  private RegionAnnouncement announcement;
  private RemoteRegion.Policy policy;
  private RemoteRegion region;
  private ByteBuffer reader;
  private byte[] packet;
  // This thread as a driver of the worker.
  private UcxWorker.Driver driver;
  private volatile Thread driverThread;
  /** Answers the peer sent; counted by the message handler. */
  private volatile long answers;
  /** Answers this thread waits for. */
  private long answersAwaited;
  private final UcxWorker.Readiness answered = () -> answers >= answersAwaited;
  private final UcxWorker.Readiness slotDone = () -> !slots.inProgress(0);

  @Setup(Level.Trial)
  public void setUp(BenchmarkParams params) throws Exception {
    String benchmark = params.getBenchmark();
    String method = benchmark.substring(benchmark.lastIndexOf('.') + 1);
    boolean withSetup = method.endsWith("WithSetup");
    peer = PeerProcess.start(size);
    if (method.startsWith("socket")) {
      payload = ByteBuffer.allocateDirect(size);
      for (int i = 0; i < size; i++) {
        payload.put(i, Wire.payloadByte(i));
      }
      ack = ByteBuffer.allocateDirect(Wire.ACK_BYTES);
      channel = openSocket();
      transfer(channel);
      if (withSetup) {
        channel.close();
        channel = null;
      }
      record(method, "java socket over TCP loopback");
      return;
    }
    context = new UcxContext(Wire.ucxOptions());
    worker = new UcxWorker(context, "bench");
    // Handler calls never overlap: a plain increment of the volatile is safe.
    // An answer another thread delivered (the progress thread's sweep)
    // wakes this thread from the event wait: nothing else would.
    worker.setMessageHandler((message, length, replyEndpoint) -> {
      if (length == Wire.ACK_BYTES) {
        answers++;
        if (Thread.currentThread() != driverThread) {
          worker.signal();
        }
      }
    });
    worker.start();
    slots = new StatusSlots(1);
    peerAddress = peer.workerAddress();
    pool = new RegisteredBufferPool(context, "bench", size, size, size, false);
    token = pool.acquire(1000);
    if (method.startsWith("ucxSend")) {
      ByteBuffer bytes = pool.buffer(token);
      for (int i = 0; i < size; i++) {
        bytes.put(i, Wire.payloadByte(i));
      }
      // The hello makes the peer connect back; it answers once it has.
      greeted = new EndpointCache(worker, OP_TIMEOUT_MS, worker.address());
      endpoint = await(greeted.get(peerAddress, PEER), "connect");
      awaitAnswer();
      send(endpoint);
      int messages = (size + UcxWorker.MAX_MESSAGE_BYTES - 1)
          / UcxWorker.MAX_MESSAGE_BYTES;
      record(method, messages + " message(s) per transfer; "
          + endpoint.transports());
      // WithSetup: the greeted connection stays, the answers come back
      // over the peer's endpoint paired with it.
      return;
    }
    byte[] encoded = peer.announcement();
    ByteBuffer message = ByteBuffer.allocateDirect(encoded.length);
    message.put(encoded).clear();
    announcement = new RegionAnnouncement().wrap(message, 0, encoded.length)
        .validate();
    // The peer's segments are another process's: none of ours may be named.
    // Emulated gets are allowed: with UCX_TLS=tcp they are the point.
    policy = new RemoteRegion.Policy(shmid -> false, true);
    packet = new byte[size];
    endpoint = connect();
    region = open(endpoint);
    reader = region.isDirect() ? region.reader() : null;
    read(region, endpoint, reader);
    verify(reader != null ? ByteBuffer.wrap(packet) : pool.buffer(token));
    record(method, (region.isDirect()
        ? "direct read of the peer's shared memory"
        : "UCX get: " + region) + "; endpoint " + endpoint.transports());
    if (withSetup) {
      region.release();
      region = null;
      reader = null;
      endpoint.close();
      endpoint = null;
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws Exception {
    try {
      if (channel != null) {
        channel.close();
      }
      if (region != null) {
        region.release();
      }
      if (greeted != null) {
        greeted.close();
      } else if (endpoint != null) {
        endpoint.close();
      }
      if (driver != null) {
        worker.unregisterDriver(driver);
      }
      if (worker != null) {
        worker.close();
      }
      if (pool != null) {
        pool.release(token);
        pool.close();
      }
      if (context != null) {
        context.close();
      }
    } finally {
      if (peer != null) {
        peer.close();
      }
    }
  }

  @Benchmark
  public long socketTransfer() throws IOException {
    return transfer(channel);
  }

  @Benchmark
  public long socketTransferWithSetup() throws IOException {
    try (SocketChannel c = openSocket()) {
      return transfer(c);
    }
  }

  @Benchmark
  public void ucxSend() throws IOException {
    send(endpoint);
  }

  @Benchmark
  public void ucxSendWithSetup() throws IOException {
    UcxEndpoint c = connect();
    try {
      send(c);
    } finally {
      c.close();
    }
  }

  @Benchmark
  public int ucxGet() throws IOException {
    return read(region, endpoint, reader);
  }

  @Benchmark
  public int ucxGetWithSetup() throws IOException {
    UcxEndpoint c = connect();
    RemoteRegion r = null;
    try {
      r = open(c);
      return read(r, c, r.isDirect() ? r.reader() : null);
    } finally {
      if (r != null) {
        r.release();
      }
      c.close();
    }
  }

  private SocketChannel openSocket() throws IOException {
    SocketChannel c = SocketChannel.open();
    try {
      c.setOption(StandardSocketOptions.TCP_NODELAY, true);
      c.connect(peer.socketAddress());
      return c;
    } catch (IOException e) {
      c.close();
      throw e;
    }
  }

  /** Writes the payload, reads the 8-byte ack. */
  private long transfer(SocketChannel c) throws IOException {
    payload.clear();
    while (payload.hasRemaining()) {
      c.write(payload);
    }
    ack.clear();
    while (ack.hasRemaining()) {
      if (c.read(ack) < 0) {
        throw new IOException("peer closed the connection before its ack");
      }
    }
    return ack.getLong(0);
  }

  /** This thread as a driver of the worker (JMH may change threads). */
  private UcxWorker.Driver driver() {
    Thread t = Thread.currentThread();
    if (driverThread != t) {
      if (driver != null) {
        worker.unregisterDriver(driver);
      }
      driver = worker.registerDriver();
      driverThread = t;
    }
    return driver;
  }

  /** Connects to the peer's worker; this thread drives the wire-up. */
  private UcxEndpoint connect() throws IOException {
    return await(UcxEndpoint.connect(worker, peerAddress, PEER,
        OP_TIMEOUT_MS), "connect");
  }

  /**
   * Opens the peer's region on endpoint {@code e}: every check of
   * {@link RemoteRegion#open}, the key unpacked on {@code e}. (The product
   * passes the endpoint a message handler was handed with the
   * announcement; this benchmark has the announcement from the peer's
   * first line and passes its own endpoint to the same peer.)
   */
  private RemoteRegion open(UcxEndpoint e) throws IOException {
    return RemoteRegion.open(e.handle(), announcement, policy, PEER);
  }

  /**
   * The first {@code size} bytes of the region (the peer's payload): a
   * direct read into {@link #packet} when {@code direct} is given, else a
   * UCX get into the pool's buffer over {@code e}.
   */
  private int read(RemoteRegion r, UcxEndpoint e, ByteBuffer direct)
      throws IOException {
    if (direct != null) {
      direct.clear();
      direct.get(packet, 0, size);
      return packet[size - 1];
    }
    if (r.startGet(e, r.base(), pool.address(token), size,
        slots.address(0)) != 0) {
      drive(slotDone, "a get");
    }
    int status = slots.status(0);
    if (status != 0) {
      throw new IOException("get failed: " + StatusSlots.describe(status));
    }
    return status;
  }

  /** Fails unless the first {@code size} bytes are the peer's payload. */
  private void verify(ByteBuffer bytes) throws IOException {
    for (int i = 0; i < size; i++) {
      if (bytes.get(i) != Wire.payloadByte(i)) {
        throw new IOException("byte " + i + " read from the peer is wrong");
      }
    }
  }

  /**
   * Sends the payload as messages of at most
   * {@link UcxWorker#MAX_MESSAGE_BYTES} bytes and waits for the peer's
   * answer. A send UCX had to queue (the peer's receive queue full) is
   * awaited at once, progressing the worker, as the write path's client
   * does: UCX retries it only when this side progresses.
   */
  private void send(UcxEndpoint e) throws IOException {
    long base = pool.address(token);
    for (int offset = 0; offset < size;
        offset += UcxWorker.MAX_MESSAGE_BYTES) {
      int length = Math.min(UcxWorker.MAX_MESSAGE_BYTES, size - offset);
      if (e.send(base + offset, length, slots.address(0)) != 0) {
        awaitSent();
      }
    }
    awaitAnswer();
  }

  private void awaitSent() throws IOException {
    long deadline = System.nanoTime() + OP_TIMEOUT_NANOS;
    while (slots.inProgress(0)) {
      if (worker.progress() == 0) {
        Thread.yield();
      }
      if (System.nanoTime() > deadline) {
        throw new IOException("a send took over " + OP_TIMEOUT_MS + " ms");
      }
    }
    int status = slots.status(0);
    if (status != 0) {
      throw new IOException("send failed: " + StatusSlots.describe(status));
    }
  }

  /** Drives the worker until the peer's next answer arrived. */
  private void awaitAnswer() throws IOException {
    answersAwaited++;
    drive(answered, "the peer's answer");
  }

  /**
   * Drives the worker from this thread until {@code ready}, in slices of
   * {@link #DRIVE_SLICE_NANOS}; fails after {@link #OP_TIMEOUT_MS}.
   */
  private void drive(UcxWorker.Readiness ready, String what)
      throws IOException {
    UcxWorker.Driver d = driver();
    long deadline = System.nanoTime() + OP_TIMEOUT_NANOS;
    while (!worker.drive(d, ready, DRIVE_SLICE_NANOS)) {
      if (System.nanoTime() - deadline > 0) {
        throw new IOException(what + " took over " + OP_TIMEOUT_MS + " ms");
      }
    }
  }

  /** Waits for {@code future}, driving the worker from this thread. */
  private <T> T await(CompletableFuture<T> future, String what)
      throws IOException {
    if (!future.isDone()) {
      drive(future::isDone, what);
    }
    try {
      return future.get();
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      throw cause instanceof IOException ? (IOException) cause
          : new IOException(what + " failed: " + cause, cause);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException(what + " interrupted");
    }
  }

  /** Prints the transport and appends it to the file named in the env. */
  private void record(String method, String transport) throws IOException {
    System.out.println("transport of " + method + " at " + size + " B: "
        + transport);
    String file = System.getenv(TRANSPORTS_ENV);
    if (file != null && !file.isEmpty()) {
      try (Writer w = new FileWriter(file, true)) {
        w.write(String.format(Locale.ROOT, "%s\t%d\t%s%n", method, size,
            transport));
      }
    }
  }
}
