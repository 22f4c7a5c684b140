package org.hdfsrdma.hadoop.datanode;

import java.io.Closeable;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.metrics.UcxJvmMetrics;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.hadoop.sender.ReaderPools;
import org.hdfsrdma.ucx.Closeables;
import org.hdfsrdma.ucx.UcxWorker;

/**
 * The DataNode side of this JVM's UCX runtime, shared by every DataNode in
 * the JVM: the DataNodes serving, the lanes their blocks receive on (each a
 * worker with the session table that routes its messages to their blocks
 * and its client connections; one lane, the runtime's worker, unless
 * configured otherwise) and the readers' pools of registered buffers.
 * Attached to the runtime when the first DataNode starts serving
 * ({@link #of}); closed with the runtime, before its worker.
 */
public final class DataNodeServer
    implements Closeable, UcxJvmMetrics.ServerGauges {

  /** Client connections known at once, at most. */
  public static final int MAX_CLIENT_CONNECTIONS =
      UcxConnections.MAX_CONNECTIONS;

  /** Readers with a pool of read buffers at once, at most. */
  static final int MAX_READERS = 1024;
  /** A reader's pool unused this long is deregistered. */
  static final long READER_IDLE_NANOS = TimeUnit.SECONDS.toNanos(60);

  /** How often idle connections and regions are swept. */
  private static final long SWEEP_MS = 1000;

  private final UcxRuntime runtime;
  private final ServerLanes lanes;
  private final ReaderPools readers;
  /** The DataNodes serving through this side, by their DataNode object. */
  private final Map<Object, UcxDataNode> serving =
      new ConcurrentHashMap<Object, UcxDataNode>();

  private DataNodeServer(UcxRuntime runtime) {
    this.runtime = runtime;
    RdmaConf conf = runtime.conf();
    this.lanes = new ServerLanes(conf.dataNodeWorkers(), runtime.worker(),
        conf.connectTimeoutMs(), conf.dataNodeUnboundConnectionTimeoutMs(),
        runtime.regions());
    this.readers = new ReaderPools(runtime.worker().context(),
        conf.dataNodeReadBufferBytes(), conf.dataNodeReadUserBuffers(),
        conf.dataNodeReadMaxBuffers(), MAX_READERS);
    runtime.pools().alsoOwns(readers::ownsSegment);
    runtime.maintenance().every(SWEEP_MS, () -> {
      for (int i = 0; i < lanes.made(); i++) {
        lanes.lane(i).connections().sweep();
      }
      readers.sweep(System.nanoTime(), READER_IDLE_NANOS);
    });
    runtime.metrics().serve(this);
  }

  /** The DataNode side of {@code runtime}, attached on first call. */
  public static DataNodeServer of(UcxRuntime runtime) {
    return runtime.extension(DataNodeServer.class, DataNodeServer::new);
  }

  /**
   * The DataNode side of {@code runtime} if a DataNode attached it, else
   * null; attaches nothing.
   */
  static DataNodeServer ifAttached(UcxRuntime runtime) {
    return runtime == null ? null : runtime.attached(DataNodeServer.class);
  }

  void serve(Object dataNode, UcxDataNode d) {
    serving.put(dataNode, d);
  }

  void stopServing(Object dataNode, UcxDataNode d) {
    serving.remove(dataNode, d);
  }

  /** The UCX side of {@code dataNode}, or null. */
  UcxDataNode serving(Object dataNode) {
    return serving.get(dataNode);
  }

  /** The UCX side of the DataNode called {@code name}, or null. */
  UcxDataNode servingNamed(String name) {
    for (UcxDataNode d : serving.values()) {
      if (d.name().equals(name)) {
        return d;
      }
    }
    return null;
  }

  public UcxRuntime runtime() {
    return runtime;
  }

  /** The lanes this JVM's DataNodes receive blocks on. */
  public ServerLanes lanes() {
    return lanes;
  }

  /**
   * The session table of lane 0, the runtime's worker: reads, fed blocks,
   * and every block with one lane.
   */
  public SessionTable sessions() {
    return lanes.lane(0).sessions();
  }

  /** The registered buffers reads are served from. */
  public ReaderPools readers() {
    return readers;
  }

  @Override
  public long rejectedMessages() {
    return lanes.sum(l -> l.sessions().rejectedCount());
  }

  @Override
  public long clientHellos() {
    return lanes.sum(l -> l.connections().hellos());
  }

  @Override
  public long idleConnectionsClosed() {
    return lanes.sum(l -> l.connections().closedIdle());
  }

  @Override
  public int clientConnections() {
    return (int) lanes.sum(l -> l.connections().size());
  }

  @Override
  public int openSessions() {
    return (int) lanes.sum(l -> l.sessions().size());
  }

  @Override
  public int dataNodeLanes() {
    return lanes.made();
  }

  @Override
  public long laneStrayMessages() {
    return lanes.sumOverOwnWorkers(
        w -> w.strayMessages() + w.oversizedMessages());
  }

  @Override
  public long laneCallbackFailures() {
    return lanes.sumOverOwnWorkers(UcxWorker::callbackFailures);
  }

  /**
   * Stops every DataNode serving through it (their later blocks stay on
   * TCP, their host markers go), closes the lanes (they stop routing
   * messages and close their client connections, and lanes 1 and up their
   * workers). Idempotent (the regions read are the runtime's).
   */
  @Override
  public void close() {
    for (UcxDataNode d : serving.values().toArray(new UcxDataNode[0])) {
      d.stop();
    }
    Closeables.closeAll(lanes, readers);
  }
}
