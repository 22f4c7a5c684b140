package org.hdfsrdma.hadoop.datanode;

import java.io.IOException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.IOUtils;
import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.metrics.PacketPhaseTimes;
import org.hdfsrdma.hadoop.metrics.UcxDataNodeMetrics;
import org.hdfsrdma.hadoop.runtime.LocalDataNodeMarker;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One DataNode serving the UCX data path: its own settings (read once from
 * the DataNode's configuration, as Hadoop's {@code DNConf} is), its metrics
 * source, its measured ingest rate, and the JVM's shared DataNode side it
 * receives through. Registered with that side while the DataNode runs
 * (and forgotten if the runtime closes), found by the DataNode object
 * itself ({@link #of}), once per block.
 */
public final class UcxDataNode {

  private static final Logger LOG =
      LoggerFactory.getLogger(UcxDataNode.class);

  private final Object dataNode;
  private final String name;
  private final RdmaConf conf;
  private final DataNodeServer server;
  private final IngestRate ingest = new IngestRate();
  private final UcxDataNodeMetrics metrics;
  /** Tells clients on this host that a DataNode here serves UCX. */
  private LocalDataNodeMarker marker;

  private UcxDataNode(Object dataNode, String name, Configuration conf,
      DataNodeServer server) {
    this.dataNode = dataNode;
    this.name = name;
    this.conf = new RdmaConf(conf);
    this.server = server;
    this.metrics = new UcxDataNodeMetrics(name,
        this.conf.dataNodeTimers() ? new PacketPhaseTimes() : null,
        ingest::bytesPerSecond, server.readers()::held);
  }

  /**
   * Starts serving UCX for {@code dataNode} (its display name
   * {@code name}, host:port): attaches the JVM's DataNode side to
   * {@code runtime} if no DataNode did yet, publishes the DataNode's
   * metrics source and marks the host as one with a DataNode serving UCX.
   * Called through {@link DataNodeStart}.
   */
  public static UcxDataNode start(Object dataNode, String name,
      Configuration conf, UcxRuntime runtime) {
    UcxDataNode d = new UcxDataNode(dataNode, name, conf,
        DataNodeServer.of(runtime));
    runtime.metrics().add(d.metrics);
    d.metrics.register();
    runtime.metrics().register();
    d.announce();
    d.server.serve(dataNode, d);
    return d;
  }

  /**
   * Marks this host as one with a DataNode serving UCX: without RDMA
   * devices, clients start UCX only where one does.
   */
  private synchronized void announce() {
    try {
      marker = LocalDataNodeMarker.announce(server.runtime());
    } catch (IOException | RuntimeException e) {
      LOG.warn("hdfs-rdma: cannot mark {} as serving UCX in {} ({}); clients"
          + " on this host without RDMA devices will not start UCX", name,
          LocalDataNodeMarker.directory(), e.toString());
    }
  }

  /** The UCX side of {@code dataNode}, or null when it serves none. */
  public static UcxDataNode of(Object dataNode) {
    DataNodeServer s = DataNodeServer.ifAttached(UcxRuntime.current());
    return s == null ? null : s.serving(dataNode);
  }

  /** The UCX side of the DataNode called {@code name}, or null. */
  static UcxDataNode named(String name) {
    DataNodeServer s = DataNodeServer.ifAttached(UcxRuntime.current());
    return s == null ? null : s.servingNamed(name);
  }

  /** Stops serving: later blocks of the DataNode stay on TCP. */
  public void stop() {
    server.stopServing(dataNode, this);
    metrics.unregister();
    LocalDataNodeMarker m;
    synchronized (this) {
      m = marker;
      marker = null;
    }
    IOUtils.cleanupWithLogger(LOG, m);
  }

  /** The DataNode's display name, host:port. */
  public String name() {
    return name;
  }

  /** This DataNode's hdfs-rdma settings. */
  public RdmaConf conf() {
    return conf;
  }

  public DataNodeServer server() {
    return server;
  }

  public UcxRuntime runtime() {
    return server.runtime();
  }

  public UcxDataNodeMetrics metrics() {
    return metrics;
  }

  public IngestRate ingest() {
    return ingest;
  }
}
