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
import java.util.concurrent.TimeoutException;

import org.hdfsrdma.ucx.BenchmarkAccess;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RegisteredBuffer;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.TransportReport;
import org.hdfsrdma.ucx.UcxConnection;
import org.hdfsrdma.ucx.UcxContext;
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
import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.ucp.UcpConstants;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucs.UcsConstants;

/**
 * Cost of one transfer of {@code size} bytes to another JVM on this host,
 * the paper's Fig. 4 (transfer time against data size, RDMA against
 * sockets), three ways:
 *
 * <ul>
 * <li>{@code socketTransfer}: a blocking Java socket over loopback TCP
 * (TCP_NODELAY): write {@code size} bytes, the peer reads exactly that many
 * and answers 8 bytes; one operation ends when the answer is read. An
 * HDFS packet and its ack.</li>
 * <li>{@code ucxSend}: a UCX active message of {@code size} bytes from
 * registered memory, on the bridge's worker and progress thread; the peer
 * receives it into registered memory and answers with an 8-byte active
 * message; one operation ends when the send has completed and the answer
 * arrived.</li>
 * <li>{@code ucxGet}: {@link UcxConnection#get} of {@code size} bytes of the
 * peer's registered memory, described once by the peer, into a registered
 * buffer; one operation ends when the get completed. What a DataNode does
 * for each packet of the UCX write path.</li>
 * </ul>
 *
 * Each has a {@code WithSetup} variant that opens and closes the
 * connection in every operation: socket connect, transfer, close; bridge
 * connect (which waits for UCX's wire-up), transfer (the get unpacks the
 * remote key again on the new endpoint), close of the endpoint. The peer's
 * listeners stay up.
 *
 * <p>The peer is a separate JVM ({@link TransferPeer}) started per trial;
 * this JVM plays the DataNode for gets. UCX runs with the product's
 * settings (UcxRuntime's: default options, UCX chooses the transports, peer
 * error handling on). The lanes UCX chose are printed and, when the
 * environment variable {@code HDFSRDMA_BENCH_TRANSPORTS} names a file,
 * appended to it. Nothing here asserts a timing.
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
  /** Appends benchmark, size and UCX lanes here when set. */
  static final String TRANSPORTS_ENV = "HDFSRDMA_BENCH_TRANSPORTS";

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
  private RegisteredBufferPool pool;
  private RegisteredBuffer buffer;
  private PacketDescriptor descriptor;
  private UcxConnection connection;
  private boolean ackHandlerSet;
  /** The send waiting for its ack; written by the benchmark thread. */
  private volatile SendOp currentSend;

  @Setup(Level.Trial)
  public void setUp(BenchmarkParams params) throws Exception {
    String benchmark = params.getBenchmark();
    String method = benchmark.substring(benchmark.lastIndexOf('.') + 1);
    boolean withSetup = method.endsWith("WithSetup");
    peer = PeerProcess.start(size);
    if (method.startsWith("socket")) {
      payload = ByteBuffer.allocateDirect(size);
      for (int i = 0; i < size; i++) {
        payload.put(i, (byte) i);
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
    context = new UcxContext(UcxContext.Options.defaults());
    worker = new UcxWorker(context, "bench").start();
    pool = new RegisteredBufferPool(context, "bench", size, size, size, false);
    buffer = pool.acquire(1000);
    for (int i = 0; i < size; i++) {
      buffer.buffer().put(i, (byte) i);
    }
    BenchmarkAccess.setActiveMessageHandler(worker, Wire.ACK_AM_ID,
        (headerAddress, headerLength, data, replyEndpoint) -> {
          SendOp op = currentSend;
          if (op != null) {
            op.acked();
          }
          return UcsConstants.STATUS.UCS_OK;
        });
    ackHandlerSet = true;
    byte[] encoded = peer.descriptor();
    ByteBuffer message = ByteBuffer.allocateDirect(encoded.length);
    message.put(encoded).clear();
    descriptor = new PacketDescriptor().wrap(message, 0, encoded.length)
        .validate(size);
    // One transfer finishes UCX's lazy wire-up and shows the lanes.
    connection = connect();
    if (method.startsWith("ucxSend")) {
      send(connection);
    } else {
      get(connection);
    }
    TransportReport report = connection.transports().get(30,
        TimeUnit.SECONDS);
    record(method, report.toString());
    if (withSetup) {
      connection.close();
      connection = null;
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws Exception {
    try {
      if (channel != null) {
        channel.close();
      }
      if (connection != null) {
        connection.close();
      }
      if (ackHandlerSet) {
        BenchmarkAccess.removeActiveMessageHandler(worker, Wire.ACK_AM_ID);
      }
      if (worker != null) {
        worker.close();
      }
      if (buffer != null) {
        buffer.release();
      }
      if (pool != null) {
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
    send(connection);
  }

  @Benchmark
  public void ucxSendWithSetup() throws IOException {
    UcxConnection c = connect();
    try {
      send(c);
    } finally {
      c.close();
    }
  }

  @Benchmark
  public void ucxGet() throws IOException {
    get(connection);
  }

  @Benchmark
  public void ucxGetWithSetup() throws IOException {
    UcxConnection c = connect();
    try {
      get(c);
    } finally {
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

  private UcxConnection connect() throws IOException {
    return await(UcxConnection.connect(worker, peer.ucxAddress(),
        OP_TIMEOUT_MS), "connect");
  }

  private void get(UcxConnection c) throws IOException {
    await(c.get(descriptor, buffer, OP_TIMEOUT_MS), "get");
  }

  /** Sends the payload as one active message and waits for the ack. */
  private void send(UcxConnection c) throws IOException {
    SendOp op = new SendOp();
    currentSend = op;
    final long address = buffer.address();
    final int length = size;
    worker.execute(() -> {
      try {
        // The reply flag hands the peer this endpoint to answer on.
        BenchmarkAccess.endpoint(c).sendAmNonBlocking(Wire.DATA_AM_ID, 0, 0,
            address, length, UcpConstants.UCP_AM_SEND_FLAG_REPLY, op);
      } catch (Throwable t) {
        op.done.completeExceptionally(t);
      }
    });
    await(op.done, "send");
    currentSend = null;
  }

  private static <T> T await(CompletableFuture<T> future, String what)
      throws IOException {
    try {
      return future.get(OP_TIMEOUT_MS, TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      throw cause instanceof IOException ? (IOException) cause
          : new IOException(what + " failed: " + cause, cause);
    } catch (TimeoutException e) {
      throw new IOException(what + " took over " + OP_TIMEOUT_MS + " ms");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException(what + " interrupted");
    }
  }

  /**
   * One active-message send: done when UCX completed the send and the
   * peer's ack arrived. Both callbacks run on the progress thread.
   */
  private static final class SendOp extends UcxCallback {
    final CompletableFuture<Void> done = new CompletableFuture<Void>();
    private int outstanding = 2;

    @Override
    public void onSuccess(UcpRequest request) {
      step();
    }

    @Override
    public void onError(int status, String message) {
      done.completeExceptionally(new IOException("UCX send failed: "
          + message + " (status " + status + ")"));
    }

    void acked() {
      step();
    }

    private void step() {
      if (--outstanding == 0) {
        done.complete(null);
      }
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
