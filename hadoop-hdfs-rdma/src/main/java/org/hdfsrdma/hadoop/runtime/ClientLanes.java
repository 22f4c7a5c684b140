package org.hdfsrdma.hadoop.runtime;

import java.io.Closeable;
import java.util.ArrayList;
import java.util.List;
import java.util.function.ToLongFunction;

import org.hdfsrdma.hadoop.util.LogOnce;
import org.hdfsrdma.ucx.Closeables;
import org.hdfsrdma.ucx.EndpointCache;
import org.hdfsrdma.ucx.UcxContext;
import org.hdfsrdma.ucx.UcxUnavailableException;
import org.hdfsrdma.ucx.UcxWorker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The UCX workers this JVM's client streams send on
 * ({@code dfs.client.rdma.workers}), called lanes. Every send on a worker
 * waits for every other send and progress on it (its EndpointGate, then
 * UCX's worker lock inside {@code ucp_am_send_nbx}), so streams of one JVM
 * that share a worker take turns; streams on different lanes do not.
 *
 * <p><b>Lane 0 is the runtime's own worker</b> and its endpoint cache,
 * whatever the number of lanes. With one lane (the default) this is
 * exactly the single worker of earlier releases: no second worker, thread
 * or descriptor, and none of the risk UCX 1.13 runs with two workers in a
 * process (jucx-bridge's README). With more, a JVM that writes one stream
 * at a time (an {@code hdfs dfs -put}) still never makes a second worker,
 * because lanes are made only when needed; and a JVM with no DataNode,
 * where worker 0 would otherwise sit idle, has exactly as many workers as
 * lanes. In a JVM that also runs DataNodes (MiniDFSCluster) lane 0 shares
 * its worker with them, as every stream did before.
 *
 * <p><b>Choice.</b> A new stream takes the lane with the fewest streams
 * that have work in hand ({@link ClientLane#streams}), the lowest lane on a
 * tie; when every lane made so far has one, and fewer than the configured
 * number exist, it makes the next one and takes it. A stream keeps its lane
 * for life: its send memory is kept by its worker while sends are in
 * flight, and a DataNode's session binds to the first connection that
 * speaks for it. The count is a heuristic and needs no lock: two streams
 * choosing at once may take the same lane.
 *
 * <p><b>Memory.</b> Registration and remote keys belong to the UCX
 * context, not to a worker (slabs are {@code ucp_mem_map}ped on the
 * context, RegisteredSlab), so one client pool, its region ids and
 * announcements serve every lane, and a DataNode maps a region once
 * whichever lane announced it.
 *
 * <p><b>Cost per packet: none.</b> A lane is picked once per stream and its
 * count moves once per pipeline. The only lock is taken to make a lane (at
 * most {@code workers - 1} times in a runtime's life) and to close.
 */
public final class ClientLanes implements Closeable {

  private static final Logger LOG = LoggerFactory.getLogger(ClientLanes.class);

  private final UcxContext context;
  private final long connectTimeoutMs;
  /** Index i is set before {@link #made} passes i (published by it). */
  private final ClientLane[] lanes;
  private volatile int made;
  /** A lane could not be made: use those there are from now on. */
  private volatile boolean growthFailed;
  private boolean closed;

  /**
   * @param workers how many lanes at most, lane 0 included
   * @param shared the runtime's own worker, lane 0 (closed by the runtime)
   * @param sharedEndpoints its endpoint cache (closed by the runtime)
   */
  ClientLanes(int workers, UcxContext context, long connectTimeoutMs,
      UcxWorker shared, EndpointCache sharedEndpoints) {
    if (workers < 1) {
      throw new IllegalArgumentException("lanes: " + workers);
    }
    this.context = context;
    this.connectTimeoutMs = connectTimeoutMs;
    this.lanes = new ClientLane[workers];
    this.lanes[0] = new ClientLane(0, shared, sharedEndpoints);
    this.made = 1;
  }

  /** How many lanes there may be ({@code dfs.client.rdma.workers}). */
  public int capacity() {
    return lanes.length;
  }

  /** How many lanes were made so far (lane 0 always is). */
  public int made() {
    return made;
  }

  /** Lane {@code i}, one of the {@link #made} ones. */
  public ClientLane lane(int i) {
    if (i < 0 || i >= made) {
      throw new IndexOutOfBoundsException("lane " + i + " of " + made);
    }
    return lanes[i];
  }

  /**
   * The lane for a new stream, with the stream counted on it
   * ({@link ClientLane#engage}); never null, and never throws: when a lane
   * cannot be made the stream takes one that exists (said once).
   */
  public ClientLane take() {
    int n = made;
    ClientLane best = lanes[0];
    int least = best.streams();
    for (int i = 1; i < n && least > 0; i++) {
      int s = lanes[i].streams();
      if (s < least) {
        best = lanes[i];
        least = s;
      }
    }
    if (least > 0 && n < lanes.length && !growthFailed) {
      ClientLane grown = grow(n);
      if (grown != null) {
        best = grown;
      }
    }
    best.engage();
    return best;
  }

  /**
   * Lane {@code n}, made now unless another stream made it meanwhile; null
   * when the lanes are closed or the lane cannot be made.
   */
  private synchronized ClientLane grow(int n) {
    if (closed || growthFailed) {
      return null;
    }
    if (made > n) {
      return lanes[n];
    }
    UcxWorker w = null;
    EndpointCache e = null;
    try {
      w = new UcxWorker(context, "hdfs-rdma-lane" + n);
      byte[] address = w.address();
      w.start();
      e = new EndpointCache(w, connectTimeoutMs, address);
    } catch (UcxUnavailableException | RuntimeException ex) {
      Closeables.closeAfterFailure(ex, e, w);
      growthFailed = true;
      LogOnce.warn("client-lane", "hdfs-rdma: could not make client UCX"
          + " lane " + n + " (" + ex.getMessage() + "); this JVM's streams"
          + " share the " + n + " lanes there are");
      return null;
    }
    ClientLane lane = new ClientLane(n, w, e);
    lanes[n] = lane;
    made = n + 1;
    // At most workers - 1 times in a runtime's life.
    LOG.info("hdfs-rdma: client UCX {} made: every earlier lane has a"
        + " stream", lane);
    return lane;
  }

  /** Messages sent on every lane's connections. */
  public long messagesSent() {
    long sent = 0;
    int n = made;
    for (int i = 0; i < n; i++) {
      sent += lanes[i].messagesSent();
    }
    return sent;
  }

  /**
   * Closes the lanes this object made, in reverse order of creation, each
   * lane's connections before its worker; lane 0 is the runtime's to
   * close. A stream that asks for a lane afterwards gets an existing one,
   * whose closed connections keep its pipelines on TCP. Idempotent.
   */
  @Override
  public void close() {
    List<AutoCloseable> order = new ArrayList<AutoCloseable>();
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      for (int i = made - 1; i >= 1; i--) {
        order.add(lanes[i].endpoints());
        order.add(lanes[i].worker());
      }
    }
    Closeables.closeAll(order);
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

  /** Connections opened on lanes 1 and up (lane 0's are the runtime's). */
  long connectsOnOwnLanes() {
    long sum = 0;
    int n = made;
    for (int i = 1; i < n; i++) {
      sum += lanes[i].connects();
    }
    return sum;
  }
}
