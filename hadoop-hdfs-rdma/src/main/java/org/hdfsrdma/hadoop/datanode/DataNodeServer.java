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

/**
 * The DataNode side of this JVM's UCX runtime, shared by every DataNode in
 * the JVM (one worker serves them all): the DataNodes serving, the session
 * table that routes each message to its block, the client connections
 * and the readers' pools of registered buffers.
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
  private final UcxConnections connections;
  private final SessionTable sessions;
  private final ReaderPools readers;
  /** The DataNodes serving through this side, by their DataNode object. */
  private final Map<Object, UcxDataNode> serving =
      new ConcurrentHashMap<Object, UcxDataNode>();

  private DataNodeServer(UcxRuntime runtime) {
    this.runtime = runtime;
    this.connections = new UcxConnections(runtime.worker(),
        runtime.conf().connectTimeoutMs(),
        runtime.conf().dataNodeUnboundConnectionTimeoutMs());
    this.sessions = new SessionTable(connections, runtime.regions());
    RdmaConf conf = runtime.conf();
    this.readers = new ReaderPools(runtime.worker().context(),
        conf.dataNodeReadBufferBytes(), conf.dataNodeReadUserBuffers(),
        conf.dataNodeReadMaxBuffers(), MAX_READERS);
    runtime.pools().alsoOwns(readers::ownsSegment);
    runtime.worker().setMessageHandler(sessions);
    runtime.maintenance().every(SWEEP_MS, () -> {
      connections.sweep();
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

  public SessionTable sessions() {
    return sessions;
  }

  /** The registered buffers reads are served from. */
  public ReaderPools readers() {
    return readers;
  }

  UcxConnections connections() {
    return connections;
  }

  @Override
  public long rejectedMessages() {
    return sessions.rejectedCount();
  }

  @Override
  public long clientHellos() {
    return connections.hellos();
  }

  @Override
  public long idleConnectionsClosed() {
    return connections.closedIdle();
  }

  @Override
  public int clientConnections() {
    return connections.size();
  }

  @Override
  public int openSessions() {
    return sessions.size();
  }

  /**
   * Stops every DataNode serving through it (their later blocks stay on
   * TCP, their host markers go), stops routing messages, closes every
   * client connection. Idempotent (the regions read are the runtime's).
   */
  @Override
  public void close() {
    for (UcxDataNode d : serving.values().toArray(new UcxDataNode[0])) {
      d.stop();
    }
    runtime.worker().setMessageHandler(null);
    Closeables.closeAll(connections, readers);
  }
}
