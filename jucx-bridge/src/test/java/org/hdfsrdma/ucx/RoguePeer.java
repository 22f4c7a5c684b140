package org.hdfsrdma.ucx;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import org.openucx.jucx.UcxUtils;

/**
 * A hostile UCX peer for tests: connects to a worker address as any client
 * would and then sends whatever a test asks for, under any active-message
 * id, without the checks the write path makes. It also owns a small pool
 * of exposed memory whose regions it may announce honestly or not.
 * Public for other modules' tests (this module's test jar).
 */
public final class RoguePeer implements Closeable {

  /** The longest message {@link #send} takes. */
  public static final int MAX_MESSAGE = 32 << 20;

  private final UcxContext context;
  private final UcxWorker worker;
  private final RegisteredBufferPool pool;
  private final UcxEndpoint endpoint;
  private final ByteBuffer buffer = ByteBuffer.allocateDirect(MAX_MESSAGE);
  private final long bufferAddress = UcxUtils.getAddress(buffer);
  private final StatusSlots slot = new StatusSlots(1);

  /**
   * @param tls UCX_TLS of the peer's context (null: the product's default,
   *     every transport but tcp)
   * @param target the worker address to connect to
   * @param bufferSize size of each buffer of the peer's pool
   * @param buffers buffers in the pool (one slab)
   */
  public RoguePeer(String tls, byte[] target, int bufferSize, int buffers)
      throws Exception {
    context = new UcxContext(UcxContext.Options.defaults()
        .withUcxConfig("TLS", tls == null ? "^tcp" : tls));
    UcxWorker w = null;
    RegisteredBufferPool p = null;
    try {
      w = new UcxWorker(context, "rogue").start();
      p = new RegisteredBufferPool(context, "rogue", bufferSize,
          (long) bufferSize * buffers, (long) bufferSize * buffers, false);
      endpoint = UcxEndpoint.connect(w, target, "target", 30_000)
          .get(30, TimeUnit.SECONDS);
    } catch (Exception | Error e) {
      if (p != null) {
        p.close();
      }
      if (w != null) {
        w.close();
      }
      context.close();
      throw e;
    }
    worker = w;
    pool = p;
  }

  /** The peer's own worker address. */
  public byte[] address() {
    return worker.address();
  }

  /** The peer's exposed memory. */
  public RegisteredBufferPool pool() {
    return pool;
  }

  /** Whether the connection to the target is still up. */
  public boolean isUsable() {
    return endpoint.isUsable();
  }

  /** Sends {@code message} as an hdfs-rdma message; returns UCX's status. */
  public int send(byte[] message) throws IOException {
    return send(UcxWorker.MESSAGE_AM_ID, message, message.length);
  }

  /**
   * Sends the first {@code length} bytes of {@code message} (zeros beyond
   * it, up to {@link #MAX_MESSAGE}) under active-message id {@code amId}
   * (any value, even one the wire cannot carry) and waits up to 10 s for
   * UCX to be done with it, progressing this peer's worker.
   *
   * @return 0 when sent, or UCX's negative status
   * @throws IOException when the send did not finish in time
   */
  public synchronized int send(int amId, byte[] message, int length)
      throws IOException {
    if (length > MAX_MESSAGE) {
      throw new IllegalArgumentException("message of " + length + " bytes");
    }
    buffer.clear();
    buffer.put(message, 0, Math.min(message.length, length));
    int rc = NativeUcx.amSend(endpoint.handle(), amId, bufferAddress, length,
        slot.address(0));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (rc == NativeUcx.IN_PROGRESS && slot.inProgress(0)) {
      if (worker.progress() == 0) {
        Thread.yield();
      }
      if (System.nanoTime() > deadline) {
        throw new IOException("a rogue send of " + length + " bytes under id "
            + amId + " did not finish in 10 s");
      }
    }
    return rc < 0 ? rc : slot.status(0);
  }

  /** Progresses the peer's worker {@code rounds} times. */
  public void progress(int rounds) {
    for (int i = 0; i < rounds; i++) {
      worker.progress();
    }
  }

  @Override
  public void close() {
    endpoint.close();
    pool.close();
    worker.close();
    context.close();
  }
}
