package org.hdfsrdma.hadoop.datanode;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import org.hdfsrdma.ucx.MalformedMessageException;
import org.hdfsrdma.ucx.MessageHeader;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.UcxWorker;

/**
 * A block's descriptors as its socket carries them, where stock carries
 * the packets: the client writes each packet's {@link PacketDescriptor}
 * (session field 0: the socket, bound to the block by Hadoop's op, says
 * whose it is) to DataNode 1, and every DataNode passes the descriptors on
 * to its mirror as stock passes packets. So each receiver is woken by its
 * own block's socket, and a same-host pipeline makes no UCX call per
 * packet.
 *
 * <p>Each descriptor read is checked as one that came over UCX
 * ({@link UcxBlockSession#offerFromSocket}) and queued in the session; a
 * descriptor pointing into a region the client's UCX announcement has not
 * brought yet waits for it, driving the worker, up to the timeout. A
 * malformed or refused descriptor fails the block's UCX path
 * ({@link UcxPathException}: the client continues over TCP); a socket that
 * breaks or times out fails the block as stock's does.
 *
 * <p>The descriptors read are held until Hadoop mirrors their packet
 * ({@link #forwardTo}); where it does not (the last DataNode, a failed
 * mirror) the oldest are dropped once more than a window's worth wait.
 * Memory is allocated once per block; the block's receiver thread only.
 */
final class SocketDescriptors {

  /** The first byte of every descriptor (of its magic). */
  static final int FIRST_BYTE = MessageHeader.MAGIC >>> 24;

  /** Whether the region a descriptor points into is there; reused. */
  private final class RegionArrived implements UcxWorker.Readiness {
    int regionId;

    @Override
    public boolean isReady() {
      return session.region(regionId) != null || session.failure() != null
          || !worker.isRunning();
    }
  }

  private final UcxBlockSession session;
  private final UcxWorker worker;
  private final UcxWorker.Driver driver;
  private final long timeoutMs;
  private final RegionArrived regionArrived = new RegionArrived();
  private final ByteBuffer frame =
      ByteBuffer.allocate(PacketDescriptor.LENGTH);
  private final PacketDescriptor view = new PacketDescriptor();
  /** Descriptors read and not yet passed on, a ring of whole ones. */
  private final byte[] held;
  private final int capacity;
  private int heldFirst;
  private int heldCount;
  private long read;

  /**
   * @param window descriptors the receiver reads ahead at most
   * @param timeoutMs how long a descriptor waits for its region
   */
  SocketDescriptors(UcxBlockSession session, UcxWorker worker,
      UcxWorker.Driver driver, int window, long timeoutMs) {
    this.session = session;
    this.worker = worker;
    this.driver = driver;
    this.timeoutMs = timeoutMs;
    // The packet being presented, those read ahead, one to spare.
    this.capacity = window + 2;
    this.held = new byte[capacity * PacketDescriptor.LENGTH];
  }

  /** Descriptors read from the socket so far. */
  long read() {
    return read;
  }

  /**
   * Reads one descriptor from {@code in}, checks it and queues it in the
   * session.
   *
   * @param firstByte its first byte when already read off the socket,
   *     else -1
   */
  void take(InputStream in, int firstByte) throws IOException {
    byte[] bytes = frame.array();
    int from = 0;
    if (firstByte >= 0) {
      bytes[0] = (byte) firstByte;
      from = 1;
    }
    readFully(in, bytes, from, PacketDescriptor.LENGTH - from);
    try {
      view.wrap(frame, 0).validate(PacketDescriptor.LENGTH);
    } catch (MalformedMessageException e) {
      throw new UcxPathException("hdfs-rdma: " + session.description()
          + ": malformed descriptor on the socket: " + e.getMessage());
    }
    if (view.session() != 0) {
      // Only UCX messages name their session; one here is not the client's.
      throw new UcxPathException("hdfs-rdma: " + session.description()
          + ": a descriptor on the socket names a session");
    }
    if (view.packetLength() > 0 && session.region(view.regionId()) == null) {
      awaitRegion(view.regionId());
    }
    String refusal = session.offerFromSocket(view);
    if (refusal != null) {
      IOException f = session.failure();
      throw f != null ? f : new UcxPathException("hdfs-rdma: "
          + session.description() + ": " + refusal);
    }
    hold(bytes);
    read++;
  }

  /** Whether a whole descriptor is already buffered in {@code in}. */
  static boolean buffered(InputStream in) throws IOException {
    return in.available() >= PacketDescriptor.LENGTH;
  }

  /**
   * Writes the descriptors read so far to the mirror, in order: where
   * Hadoop mirrors the packet presented last.
   */
  void forwardTo(OutputStream mirror) throws IOException {
    int first = heldFirst;
    int count = heldCount;
    int upToEnd = Math.min(count, capacity - first);
    mirror.write(held, first * PacketDescriptor.LENGTH,
        upToEnd * PacketDescriptor.LENGTH);
    if (count > upToEnd) {
      mirror.write(held, 0, (count - upToEnd) * PacketDescriptor.LENGTH);
    }
    heldFirst = 0;
    heldCount = 0;
  }

  private void hold(byte[] descriptor) {
    if (heldCount == capacity) {
      // Nobody mirrors: the oldest will never be passed on.
      heldFirst = (heldFirst + 1) % capacity;
      heldCount--;
    }
    int slot = (heldFirst + heldCount) % capacity;
    System.arraycopy(descriptor, 0, held, slot * PacketDescriptor.LENGTH,
        PacketDescriptor.LENGTH);
    heldCount++;
  }

  /** Drives the worker until the client's announcement of a region came. */
  private void awaitRegion(int regionId) throws IOException {
    regionArrived.regionId = regionId;
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    while (!regionArrived.isReady()) {
      long remaining = deadline - System.nanoTime();
      if (remaining <= 0) {
        throw new UcxPathException("hdfs-rdma: " + session.description()
            + ": region " + regionId + " of a descriptor on the socket was"
            + " not announced in " + timeoutMs + " ms");
      }
      worker.drive(driver, regionArrived, remaining);
      if (Thread.interrupted()) {
        throw new InterruptedIOException("interrupted waiting for region "
            + regionId + " of " + session.description());
      }
    }
    if (!worker.isRunning()) {
      throw new UcxPathException("hdfs-rdma: the UCX worker closed while"
          + " receiving " + session.description());
    }
  }

  private void readFully(InputStream in, byte[] b, int off, int len)
      throws IOException {
    while (len > 0) {
      int n = in.read(b, off, len);
      if (n < 0) {
        throw new EOFException("the upstream of "
            + session.description() + " closed its connection "
            + (off == 0 ? "while waiting for" : "inside") + " a descriptor");
      }
      off += n;
      len -= n;
    }
  }
}
