package org.hdfsrdma.hadoop.datanode;

import java.io.Closeable;
import java.util.ArrayList;
import java.util.List;
import java.util.function.ToLongFunction;

import org.hdfsrdma.hadoop.runtime.RegionCache;
import org.hdfsrdma.hadoop.util.LogOnce;
import org.hdfsrdma.ucx.Closeables;
import org.hdfsrdma.ucx.UcxContext;
import org.hdfsrdma.ucx.UcxUnavailableException;
import org.hdfsrdma.ucx.UcxWorker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The UCX workers this JVM's DataNodes receive blocks on
 * ({@code dfs.datanode.rdma.workers}), called lanes.
 *
 * <p><b>Why.</b> UCX wakes one thread per worker when a client's descriptor
 * arrives (the worker's event fd). With every block on one worker, the
 * thread it wakes is whichever receiver holds the waiter role, and unless
 * the descriptor is its own it must progress the worker and wake the
 * receiver it is for: two wake-ups per packet where a socket read has one.
 * A block alone on its lane is woken directly, as by its socket in stock.
 *
 * <p><b>Lane 0 is the runtime's own worker</b>, whatever the number of
 * lanes: with one lane (the default) nothing differs from a single worker.
 * Reads are served there, and so are blocks this DataNode feeds onward
 * (chain and hybrid pipelines), whose forwarder sends on the runtime's
 * worker.
 *
 * <p><b>Choice.</b> A block takes the lane with the fewest open sessions,
 * the lowest on a tie; when every lane made so far has one and fewer than
 * the configured number exist, the next is made and taken. Lanes live as
 * long as the runtime's DataNode side. Clients need no change: a block's
 * commit entry carries its lane's worker address, and a client connects
 * (hello first) to whatever address a DataNode commits. Per packet nothing
 * changes; the lock here is taken to make a lane or close.
 */
public final class ServerLanes implements Closeable {

  private static final Logger LOG = LoggerFactory.getLogger(ServerLanes.class);

  private final UcxContext context;
  private final long connectTimeoutMs;
  private final long unboundConnectionTimeoutMs;
  private final RegionCache regions;
  /** Index i is set before {@link #made} passes i (published by it). */
  private final ServerLane[] lanes;
  private volatile int made;
  /** A lane could not be made: use those there are from now on. */
  private volatile boolean growthFailed;
  private boolean closed;

  /**
   * @param workers how many lanes at most, lane 0 included
   * @param shared the runtime's own worker, lane 0's (closed by the runtime)
   */
  ServerLanes(int workers, UcxWorker shared, long connectTimeoutMs,
      long unboundConnectionTimeoutMs, RegionCache regions) {
    if (workers < 1) {
      throw new IllegalArgumentException("lanes: " + workers);
    }
    this.context = shared.context();
    this.connectTimeoutMs = connectTimeoutMs;
    this.unboundConnectionTimeoutMs = unboundConnectionTimeoutMs;
    this.regions = regions;
    this.lanes = new ServerLane[workers];
    this.lanes[0] = new ServerLane(0, shared, false, connectTimeoutMs,
        unboundConnectionTimeoutMs, regions);
    this.made = 1;
  }

  /** How many lanes there may be ({@code dfs.datanode.rdma.workers}). */
  public int capacity() {
    return lanes.length;
  }

  /** How many lanes were made so far (lane 0 always is). */
  public int made() {
    return made;
  }

  /** Lane {@code i}, one of the {@link #made} ones. */
  public ServerLane lane(int i) {
    if (i < 0 || i >= made) {
      throw new IndexOutOfBoundsException("lane " + i + " of " + made);
    }
    return lanes[i];
  }

  /**
   * The lane for a new block; never null and never throws: when a lane
   * cannot be made the block takes one that exists (said once). Two blocks
   * choosing at once may take the same lane.
   */
  ServerLane take() {
    int n = made;
    ServerLane best = lanes[0];
    int least = best.sessions().size();
    for (int i = 1; i < n && least > 0; i++) {
      int s = lanes[i].sessions().size();
      if (s < least) {
        best = lanes[i];
        least = s;
      }
    }
    if (least > 0 && n < lanes.length && !growthFailed) {
      ServerLane grown = grow(n);
      if (grown != null) {
        best = grown;
      }
    }
    return best;
  }

  /**
   * Lane {@code n}, made now unless another block made it meanwhile; null
   * when the lanes are closed or the lane cannot be made.
   */
  private synchronized ServerLane grow(int n) {
    if (closed || growthFailed) {
      return null;
    }
    if (made > n) {
      return lanes[n];
    }
    UcxWorker w = null;
    ServerLane lane;
    try {
      w = new UcxWorker(context, "hdfs-rdma-dn-lane" + n);
      lane = new ServerLane(n, w, true, connectTimeoutMs,
          unboundConnectionTimeoutMs, regions);
      w.start();
    } catch (UcxUnavailableException | RuntimeException ex) {
      Closeables.closeAfterFailure(ex, w);
      growthFailed = true;
      LogOnce.warn("datanode-lane", "hdfs-rdma: could not make DataNode UCX"
          + " lane " + n + " (" + ex.getMessage() + "); blocks share the "
          + n + " lanes there are");
      return null;
    }
    lanes[n] = lane;
    made = n + 1;
    // At most workers - 1 times in a runtime's life.
    LOG.info("hdfs-rdma: DataNode UCX {} made: every earlier lane has a"
        + " block", lane);
    return lane;
  }

  /** Sums {@code value} over every lane. */
  long sum(ToLongFunction<ServerLane> value) {
    long sum = 0;
    int n = made;
    for (int i = 0; i < n; i++) {
      sum += value.applyAsLong(lanes[i]);
    }
    return sum;
  }

  /**
   * Sums {@code value} over the workers of lanes 1 and up (lane 0's worker
   * is the runtime's, which counts it itself).
   */
  long sumOverOwnWorkers(ToLongFunction<UcxWorker> value) {
    long sum = 0;
    int n = made;
    for (int i = 1; i < n; i++) {
      sum += value.applyAsLong(lanes[i].worker());
    }
    return sum;
  }

  /**
   * Closes every lane in reverse order of creation (lane 0's worker is the
   * runtime's to close). Idempotent.
   */
  @Override
  public void close() {
    List<AutoCloseable> order = new ArrayList<AutoCloseable>();
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      for (int i = made - 1; i >= 0; i--) {
        order.add(lanes[i]);
      }
    }
    Closeables.closeAll(order);
  }
}
