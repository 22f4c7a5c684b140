package org.hdfsrdma.hadoop.datanode;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.metrics.PacketPhaseTimes;
import org.hdfsrdma.hadoop.metrics.UcxDataNodeMetrics;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;

/**
 * One DataNode serving the UCX data path: its own settings (read once from
 * the DataNode's configuration, as Hadoop's {@code DNConf} is), its metrics
 * source, its measured ingest rate, and the JVM's shared DataNode side it
 * receives through. Registered while the DataNode runs, found by the
 * DataNode object itself ({@link #of}), once per block.
 */
public final class UcxDataNode {

  private static final Map<Object, UcxDataNode> SERVING =
      new ConcurrentHashMap<Object, UcxDataNode>();

  private final Object dataNode;
  private final String name;
  private final RdmaConf conf;
  private final DataNodeServer server;
  private final IngestRate ingest = new IngestRate();
  private final UcxDataNodeMetrics metrics;

  private UcxDataNode(Object dataNode, String name, Configuration conf,
      DataNodeServer server) {
    this.dataNode = dataNode;
    this.name = name;
    this.conf = new RdmaConf(conf);
    this.server = server;
    this.metrics = new UcxDataNodeMetrics(name,
        this.conf.dataNodeTimers() ? new PacketPhaseTimes() : null,
        ingest::bytesPerSecond);
  }

  /**
   * Starts serving UCX for {@code dataNode} (its display name
   * {@code name}, host:port): attaches the JVM's DataNode side to
   * {@code runtime} if no DataNode did yet, and publishes the DataNode's
   * metrics source.
   */
  public static UcxDataNode start(Object dataNode, String name,
      Configuration conf, UcxRuntime runtime) {
    UcxDataNode d = new UcxDataNode(dataNode, name, conf,
        DataNodeServer.of(runtime));
    runtime.metrics().add(d.metrics);
    d.metrics.register();
    runtime.metrics().register();
    SERVING.put(dataNode, d);
    return d;
  }

  /** The UCX side of {@code dataNode}, or null when it serves none. */
  public static UcxDataNode of(Object dataNode) {
    return SERVING.get(dataNode);
  }

  /** Stops serving: later blocks of the DataNode stay on TCP. */
  public void stop() {
    SERVING.remove(dataNode, this);
    metrics.unregister();
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
