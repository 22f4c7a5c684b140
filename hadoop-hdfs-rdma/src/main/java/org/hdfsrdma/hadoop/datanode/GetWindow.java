package org.hdfsrdma.hadoop.datanode;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.RemoteRegion;
import org.hdfsrdma.ucx.StatusSlots;
import org.hdfsrdma.ucx.UcxEndpoint;
import org.hdfsrdma.ucx.UcxWorker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The descriptors a block's receiver took from its session and has not
 * presented yet, oldest first, each with the get of its packet into a
 * landing buffer when its region is not read directly. Taking up to
 * {@code dfs.datanode.rdma.gets-in-flight} descriptors ahead keeps that many
 * gets in flight while BlockReceiver verifies and writes the packet before
 * them. A get cannot be called back, so the window also decides what a
 * block given up with gets in flight may return to the pool. Its memory is
 * allocated once per block; the block's receiver thread only.
 */
final class GetWindow {

  private static final Logger LOG = LoggerFactory.getLogger(GetWindow.class);

  /** Whether the get of one window entry is over; reused. */
  private final class GetDone implements UcxWorker.Readiness {
    int slot;

    @Override
    public boolean isReady() {
      return !gets.inProgress(slot);
    }
  }

  private final GetDone getDone = new GetDone();
  private final UcxBlockSession session;
  private final UcxWorker worker;
  private final UcxWorker.Driver driver;
  private final EndpointBack back;
  private final LandingLeases landing;
  private final long timeoutMs;
  private final int size;
  private final ByteBuffer taken;
  private final PacketDescriptor descriptor = new PacketDescriptor();
  private final long[] landingTokens;
  private final StatusSlots gets;
  private int first;
  private int count;

  /**
   * @param size descriptors taken ahead at most (gets in flight)
   * @param timeoutMs how long a get may take
   */
  GetWindow(UcxBlockSession session, UcxWorker worker,
      UcxWorker.Driver driver, EndpointBack back, LandingLeases landing,
      int size, long timeoutMs) {
    this.session = session;
    this.worker = worker;
    this.driver = driver;
    this.back = back;
    this.landing = landing;
    this.timeoutMs = timeoutMs;
    this.size = size;
    this.taken = ByteBuffer.allocate(size * PacketDescriptor.LENGTH)
        .order(ByteOrder.BIG_ENDIAN);
    this.landingTokens = new long[size];
    Arrays.fill(landingTokens, RegisteredBufferPool.NO_LEASE);
    this.gets = new StatusSlots(size);
    // A get still under way when the window is dropped completes later.
    worker.keepWhileInFlight(this, null, gets);
  }

  /** Descriptors the window could take before it is full. */
  int room() {
    return size - count;
  }

  /** Whether no descriptor waits in the window. */
  boolean isEmpty() {
    return count == 0;
  }

  /**
   * Takes the session's next descriptor into the window and starts its get
   * when its region is not read directly. Returns false when none is
   * there.
   */
  boolean take() throws IOException {
    int entry = (first + count) % size;
    if (!session.take(taken, entry * PacketDescriptor.LENGTH)) {
      return false;
    }
    count++;
    descriptor.wrap(taken, entry * PacketDescriptor.LENGTH);
    long length = descriptor.packetLength();
    if (length > 0) {
      RemoteRegion region = session.region(descriptor.regionId());
      if (!region.isDirect()) {
        startGet(entry, region, (int) length);
      }
    }
    return true;
  }

  /** Takes what already arrived, up to a full window. */
  void fill() throws IOException {
    while (count < size && take()) {
      // take started the gets
    }
  }

  private void startGet(int entry, RemoteRegion region, int length)
      throws IOException {
    try {
      UcxEndpoint e = back.get();
      long token = landing.lease();
      landingTokens[entry] = token;
      region.startGet(e, descriptor.address(), landing.address(token),
          length, gets.address(entry));
    } catch (UcxPathException | InterruptedIOException e) {
      throw e;
    } catch (IOException e) {
      throw new UcxPathException("hdfs-rdma: cannot start the get of a"
          + " packet of " + session.description() + ": " + e.getMessage(),
          e);
    }
  }

  /** The oldest descriptor of the window, until {@link #remove}. */
  PacketDescriptor oldest() {
    return descriptor.wrap(taken, first * PacketDescriptor.LENGTH);
  }

  /**
   * Waits for the get of the oldest descriptor's packet. Returns the
   * landing buffer it landed in, now the caller's.
   *
   * @throws UcxPathException when the get failed (its buffer goes back to
   *     the pool) or did not complete within the get timeout (its buffer
   *     stays with the window, for {@link #drain})
   */
  long awaitOldest() throws UcxPathException {
    int slot = first;
    getDone.slot = slot;
    if (!worker.drive(driver, getDone,
        TimeUnit.MILLISECONDS.toNanos(timeoutMs))) {
      throw new UcxPathException("hdfs-rdma: the get of a packet of "
          + session.description() + " did not complete in " + timeoutMs
          + " ms");
    }
    int status = gets.status(slot);
    long token = landingTokens[slot];
    landingTokens[slot] = RegisteredBufferPool.NO_LEASE;
    if (status != 0) {
      landing.release(token);
      throw new UcxPathException("hdfs-rdma: the get of a packet of "
          + session.description() + " failed: "
          + StatusSlots.describe(status));
    }
    return token;
  }

  /** Removes the oldest descriptor, presented. */
  void remove() {
    first = (first + 1) % size;
    count--;
  }

  /**
   * The block is over: returns the landing buffers of gets that ended,
   * waiting up to the get timeout and 2 s for those in flight. A get that
   * never completes keeps its buffer out of the pool rather than let a late
   * completion write into a reused one. Returns whether one is still
   * pending: then the client's remote keys must stay unpacked, since UCX may
   * still send that get with one of them.
   */
  boolean drain() {
    boolean getPending = false;
    for (int i = 0; i < size; i++) {
      long token = landingTokens[i];
      if (token == RegisteredBufferPool.NO_LEASE) {
        continue;
      }
      getDone.slot = i;
      worker.drive(driver, getDone,
          TimeUnit.MILLISECONDS.toNanos(timeoutMs + 2000));
      if (!gets.inProgress(i)) {
        landing.release(token);
      } else {
        getPending = true;
        LOG.warn("hdfs-rdma: a get of {} is still pending after {} ms;"
            + " its landing buffer stays out of the pool and the"
            + " client's remote keys stay unpacked",
            session.description(), timeoutMs + 2000);
      }
      landingTokens[i] = RegisteredBufferPool.NO_LEASE;
    }
    return getPending;
  }
}
