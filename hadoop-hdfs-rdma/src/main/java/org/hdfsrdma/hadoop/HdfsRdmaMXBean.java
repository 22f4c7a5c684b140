package org.hdfsrdma.hadoop;

import java.util.Map;

/**
 * What this JVM moved over the UCX data path, as JMX attributes: a
 * DataNode registers it as {@code Hadoop:service=DataNode,name=HdfsRdma},
 * so {@code http://DATANODE:HTTP_PORT/jmx?qry=Hadoop:service=DataNode,name=HdfsRdma}
 * shows an operator whether the path is active, and the benchmarks read
 * per-put deltas from it.
 */
public interface HdfsRdmaMXBean {

  /**
   * Data bytes (checksums excluded) the DataNodes fetched over UCX: by
   * one-sided get, or read directly from a same-host client's segment.
   */
  long getDataBytesFetched();

  /**
   * Of those, the bytes fetched from the DataNode feeding them (chain,
   * hybrid) rather than from the client.
   */
  long getDataBytesFetchedFromDataNodes();

  /** Data bytes the DataNodes offered the DataNode they feed. */
  long getDataBytesForwarded();

  /** Packets the DataNodes fetched over UCX (get or same-host read). */
  long getPacketsFetched();

  /** Client block replicas received with their packets fetched by get. */
  long getBlocksOverUcx();

  /** Client block replicas received with their packets on the socket. */
  long getBlocksOverTcp();

  /** Data bytes this JVM's HDFS clients sent as descriptors. */
  long getDataBytesSent();

  /** The UCX transports of the connections seen, one entry each. */
  String getTransports();

  /** UCX messages the DataNodes refused (malformed, forged, stale). */
  long getRejectedMessages();

  /**
   * Messages dropped before any handler: an unregistered active-message id,
   * oversized, or offered by rendezvous.
   */
  long getStrayMessages();

  /** UCX connections from clients open now. */
  int getClientConnections();

  /** Registered bytes of the DataNode landing pool, and in use. */
  long getLandingPoolRegisteredBytes();

  long getLandingPoolInUseBytes();

  /**
   * Per-phase nanosecond totals and packet counts when packet timers are
   * on (see {@link PacketPhaseTimes}); empty otherwise.
   */
  Map<String, Long> getPacketPhaseTimes();
}
