package org.hdfsrdma.hadoop;

import java.io.Closeable;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.SocketTimeoutException;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.UcxConnection;

/**
 * One block being written to this DataNode over UCX: the descriptors the
 * client sent for it, in arrival order, waiting for the block's receiver.
 *
 * <p>The session is bound to the first UCX connection a valid descriptor
 * for it arrives on; descriptors on any other connection are refused. It
 * accepts only its block and generation stamp. Filled on the UCX progress
 * thread by {@link SessionTable}; drained by the BlockReceiver thread.
 */
public final class UcxBlockSession implements Closeable {

  /** A descriptor and the connection to get its packet over. */
  public static final class Arrival {
    private final UcxConnection connection;
    private final PacketDescriptor descriptor;

    Arrival(UcxConnection connection, PacketDescriptor descriptor) {
      this.connection = connection;
      this.descriptor = descriptor;
    }

    public UcxConnection connection() {
      return connection;
    }

    public PacketDescriptor descriptor() {
      return descriptor;
    }
  }

  /** Queued in place of a descriptor when the session fails. */
  private static final Arrival FAILED = new Arrival(null, null);

  private final SessionTable table;
  private final long sessionId;
  private final long blockId;
  private final long generationStamp;
  private final String description;
  private final BlockingQueue<Arrival> arrivals;
  private volatile UcxConnection boundTo;
  private volatile IOException failure;
  private volatile boolean closed;

  UcxBlockSession(SessionTable table, long sessionId, long blockId,
      long generationStamp, int maxQueued, String description) {
    this.table = table;
    this.sessionId = sessionId;
    this.blockId = blockId;
    this.generationStamp = generationStamp;
    this.description = description;
    this.arrivals = new ArrayBlockingQueue<Arrival>(maxQueued + 1);
  }

  public long sessionId() {
    return sessionId;
  }

  /** The block and what else identifies the session, for messages. */
  public String description() {
    return description;
  }

  /** Descriptors waiting for the receiver. */
  public int queued() {
    return arrivals.size();
  }

  /** The connection the session is bound to, or null before the first. */
  public UcxConnection boundConnection() {
    return boundTo;
  }

  /**
   * Offers an arriving descriptor; progress thread. Returns why it was
   * refused, or null when it was queued.
   */
  String offer(UcxConnection from, PacketDescriptor d) {
    if (closed || failure != null) {
      return "session " + description + " is closed";
    }
    if (d.blockId() != blockId || d.generationStamp() != generationStamp) {
      return "descriptor for block " + d.blockId() + "_"
          + d.generationStamp() + " under the session of " + description;
    }
    if (boundTo == null) {
      boundTo = from;
      from.addCloseListener(c -> fail(new IOException("UCX connection to "
          + c.peer() + " closed while receiving " + description,
          c.failure())));
    } else if (boundTo != from) {
      return "descriptor for " + description + " from " + from.peer()
          + " but the session is bound to " + boundTo.peer();
    }
    if (arrivals.remainingCapacity() <= 1) {
      fail(new IOException("client " + from.peer() + " sent more than "
          + (arrivals.size()) + " unread packets for " + description));
      return "queue of " + description + " overflowed";
    }
    arrivals.add(new Arrival(from, d));
    return null;
  }

  /** Fails the session; the receiver's next or current wait throws. */
  void fail(IOException reason) {
    if (failure == null) {
      failure = reason;
      arrivals.offer(FAILED);
    }
  }

  /**
   * The next descriptor, waiting at most {@code timeoutMs}.
   *
   * @throws SocketTimeoutException when none arrives in time, as a socket
   *     read would
   * @throws InterruptedIOException when interrupted (pipeline recovery
   *     stops a writer by interrupting it)
   * @throws IOException when the session failed
   */
  public Arrival take(long timeoutMs) throws IOException {
    Arrival next = poll(timeoutMs);
    if (next == null) {
      throw new SocketTimeoutException("no packet for " + description
          + " arrived over UCX in " + timeoutMs + " ms");
    }
    return next;
  }

  /**
   * The next descriptor, or null when none arrives within
   * {@code timeoutMs} (0: only one already waiting).
   *
   * @throws InterruptedIOException when interrupted
   * @throws IOException when the session failed
   */
  public Arrival poll(long timeoutMs) throws IOException {
    Arrival next;
    try {
      next = timeoutMs <= 0 ? arrivals.poll()
          : arrivals.poll(timeoutMs, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted waiting for a packet of "
          + description);
    }
    if (next == FAILED) {
      arrivals.offer(FAILED);
      throw failure;
    }
    return next;
  }

  /** Unregisters the session. Idempotent. */
  @Override
  public void close() {
    if (!closed) {
      closed = true;
      table.remove(this);
    }
  }
}
