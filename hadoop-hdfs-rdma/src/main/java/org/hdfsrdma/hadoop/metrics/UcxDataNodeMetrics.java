package org.hdfsrdma.hadoop.metrics;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

import org.apache.hadoop.classification.InterfaceAudience;
import org.apache.hadoop.metrics2.MetricsCollector;
import org.apache.hadoop.metrics2.MetricsSource;
import org.apache.hadoop.metrics2.annotation.Metrics;
import org.apache.hadoop.metrics2.lib.MetricsRegistry;
import org.apache.hadoop.metrics2.lib.MutableCounterLong;
import org.apache.hadoop.metrics2.lib.MutableGaugeLong;

/**
 * What one DataNode received over UCX, as the metrics2 source
 * {@code HdfsRdmaDataNode-<host>-<port>} (record {@value #RECORD_NAME},
 * context {@code dfs}), named like Hadoop's own
 * {@code DataNodeActivity-<host>-<port>}: in a DataNode's JMX it is
 * {@code Hadoop:service=DataNode,name=HdfsRdmaDataNode-<host>-<port>}. Its
 * records carry the tag {@code DataNode} (host:port), which tells apart
 * several DataNodes of one host in a sink.
 *
 * <p>Per packet a block's receiver adds to a {@link WriterCounters} slot of
 * its own (no lock, no compare-and-swap); per block it counts the block as
 * received over UCX or TCP. Snapshots (a sink's timer, a JMX read) bring
 * the metrics2 counters up to those totals. The runtime the DataNode
 * served on keeps it after the DataNode stopped
 * ({@link UcxJvmMetrics#dataNodes}), for its totals line.
 */
@InterfaceAudience.Private
@Metrics(about = "hdfs-rdma: what one DataNode received over UCX",
    context = "dfs")
public final class UcxDataNodeMetrics implements MetricsSource {

  /** The source name's prefix; the DataNode's host and port follow. */
  public static final String SOURCE_PREFIX = "HdfsRdmaDataNode-";

  /** The record name sinks print after the context. */
  public static final String RECORD_NAME = "HdfsRdmaDataNode";

  /** Slot counters of a block receiver, by index. */
  public static final int FETCHED_BYTES = 0;
  public static final int FETCHED_FROM_DATANODES = 1;
  public static final int FORWARDED_BYTES = 2;
  public static final int PACKETS_FETCHED = 3;
  public static final int READ_DIRECTLY = 4;

  private final String sourceName;
  private final WriterCounters perPacket = new WriterCounters(5);
  private final AtomicLong blocksOverUcx = new AtomicLong();
  private final AtomicLong blocksOverTcp = new AtomicLong();
  private final AtomicLong blocksFellBack = new AtomicLong();
  private final AtomicLong socketDescriptorBlocks = new AtomicLong();
  private final AtomicLong readsOverUcx = new AtomicLong();
  private final AtomicLong readBytesOverUcx = new AtomicLong();
  private final AtomicLong readsFellBack = new AtomicLong();
  private final PacketPhaseTimes times;
  private final LongSupplier ingest;
  private final LongSupplier readBuffersHeld;

  private final MetricsRegistry registry = new MetricsRegistry(RECORD_NAME)
      .setContext("dfs");
  private final MutableCounterLong dataBytesFetched = registry.newCounter(
      "DataBytesFetched", "Data bytes (checksums excluded) this DataNode"
          + " fetched over UCX", 0L);
  private final MutableCounterLong dataBytesFetchedFromDataNodes =
      registry.newCounter("DataBytesFetchedFromDataNodes", "Of those, data"
          + " bytes fetched from the DataNode feeding it (chain, hybrid)",
          0L);
  private final MutableCounterLong dataBytesForwarded = registry.newCounter(
      "DataBytesForwarded", "Data bytes this DataNode offered the DataNode"
          + " it feeds (chain, hybrid)", 0L);
  private final MutableCounterLong dataBytesReadDirectly =
      registry.newCounter("DataBytesReadDirectly", "Of DataBytesFetched,"
          + " the bytes read directly from a same-host exposer's shared"
          + " memory rather than by UCX get", 0L);
  private final MutableCounterLong packetsFetched = registry.newCounter(
      "PacketsFetched", "Packets this DataNode fetched over UCX", 0L);
  private final MutableCounterLong blocksOverUcxMetric = registry.newCounter(
      "BlocksOverUcx", "Client block replicas received with their packets"
          + " over UCX", 0L);
  private final MutableCounterLong blocksOverTcpMetric = registry.newCounter(
      "BlocksOverTcp", "Client block replicas received with their packets on"
          + " the socket", 0L);
  private final MutableCounterLong socketDescriptorBlocksMetric =
      registry.newCounter("BlocksWithSocketDescriptors", "Of BlocksOverUcx,"
          + " the replicas whose descriptors came on the block's socket", 0L);
  private final MutableCounterLong blocksFellBackMetric =
      registry.newCounter("BlocksFellBack", "Client blocks this DataNode's"
          + " UCX failed (a message refused, a get failed, no packet in"
          + " time), whose client it asked to continue over TCP", 0L);
  private final MutableCounterLong readsOverUcxMetric = registry.newCounter(
      "ReadsOverUcx", "Block reads this DataNode served from registered"
          + " memory whose client took every packet", 0L);
  private final MutableCounterLong readBytesOverUcxMetric =
      registry.newCounter("ReadBytesOverUcx", "Bytes of stock packets"
          + " (headers, checksums, data) clients took from registered memory,"
          + " of every read however it ended", 0L);
  private final MutableCounterLong readsFellBackMetric = registry.newCounter(
      "ReadsFellBack", "Block reads whose client could not take a buffer"
          + " over UCX and had the rest sent as stock packets", 0L);
  private final MutableGaugeLong ingestBytesPerSecond = registry.newGauge(
      "IngestBytesPerSecond", "Bytes this DataNode's receivers took in per"
          + " second of their busy time (moving average; 0 before a sample)",
      0L);
  private final MutableGaugeLong readBuffersHeldGauge = registry.newGauge(
      "ReadBuffersHeld", "Registered buffers the DataNode side of this JVM"
          + " holds for reads under way (0 once every read ended)", 0L);
  private final PhaseRates rates;

  /**
   * @param dataNode the DataNode's display name, host:port
   * @param times where its packet phases are timed, or null when untimed
   * @param ingest its measured ingest rate in bytes/s
   * @param readBuffersHeld the read buffers its JVM's DataNode side holds
   */
  public UcxDataNodeMetrics(String dataNode, PacketPhaseTimes times,
      LongSupplier ingest, LongSupplier readBuffersHeld) {
    this.sourceName = SOURCE_PREFIX + dataNode.replace(':', '-');
    registry.tag("DataNode", "The DataNode, host:port", dataNode);
    this.times = times;
    this.ingest = ingest;
    this.readBuffersHeld = readBuffersHeld;
    this.rates = times == null ? null : new PhaseRates(registry, times, false);
  }

  /** The metrics2 source name, also the JMX bean's {@code name=}. */
  public String sourceName() {
    return sourceName;
  }

  /** A block receiver's own per-packet counters; close with the block. */
  public WriterCounters.Slot openReceiver() {
    return perPacket.open();
  }

  /** A client block replica arrived: packets over UCX or the socket. */
  public void countBlock(boolean overUcx) {
    (overUcx ? blocksOverUcx : blocksOverTcp).incrementAndGet();
  }

  /** A replica over UCX had its descriptors on the block's socket. */
  public void countSocketDescriptorBlock() {
    socketDescriptorBlocks.incrementAndGet();
  }

  public long socketDescriptorBlocks() {
    return socketDescriptorBlocks.get();
  }

  /** This DataNode's UCX failed a client block; it asked for TCP. */
  public void countFallback() {
    blocksFellBack.incrementAndGet();
  }

  /** A read served over UCX ended as agreed: the client took it all. */
  public void countRead() {
    readsOverUcx.incrementAndGet();
  }

  /** A read's client took {@code bytes} of packets over UCX. */
  public void countReadBytes(long bytes) {
    readBytesOverUcx.addAndGet(bytes);
  }

  /** A read's client asked for the rest as stock packets. */
  public void countReadFallback() {
    readsFellBack.incrementAndGet();
  }

  public long readsFellBack() {
    return readsFellBack.get();
  }

  public long readsOverUcx() {
    return readsOverUcx.get();
  }

  public long readBytesOverUcx() {
    return readBytesOverUcx.get();
  }

  public long blocksFellBack() {
    return blocksFellBack.get();
  }

  /** The per-packet counter {@code counter}, over every receiver. */
  public long get(int counter) {
    return perPacket.sum(counter);
  }

  public long dataBytesFetched() {
    return get(FETCHED_BYTES);
  }

  public long blocksOverUcx() {
    return blocksOverUcx.get();
  }

  public long blocksOverTcp() {
    return blocksOverTcp.get();
  }

  /** This DataNode's phase timers, or null when they are off. */
  public PacketPhaseTimes times() {
    return times;
  }

  @Override
  public synchronized void getMetrics(MetricsCollector collector,
      boolean all) {
    Sources.advance(dataBytesFetched, get(FETCHED_BYTES));
    Sources.advance(dataBytesFetchedFromDataNodes,
        get(FETCHED_FROM_DATANODES));
    Sources.advance(dataBytesForwarded, get(FORWARDED_BYTES));
    Sources.advance(dataBytesReadDirectly, get(READ_DIRECTLY));
    Sources.advance(packetsFetched, get(PACKETS_FETCHED));
    Sources.advance(blocksOverUcxMetric, blocksOverUcx.get());
    Sources.advance(blocksOverTcpMetric, blocksOverTcp.get());
    Sources.advance(blocksFellBackMetric, blocksFellBack.get());
    Sources.advance(socketDescriptorBlocksMetric,
        socketDescriptorBlocks.get());
    Sources.advance(readsOverUcxMetric, readsOverUcx.get());
    Sources.advance(readBytesOverUcxMetric, readBytesOverUcx.get());
    Sources.advance(readsFellBackMetric, readsFellBack.get());
    ingestBytesPerSecond.set(ingest.getAsLong());
    readBuffersHeldGauge.set(readBuffersHeld.getAsLong());
    if (rates != null) {
      rates.update();
    }
    registry.snapshot(collector.addRecord(registry.info()), all);
  }

  /** Publishes this source (the DataNode started). */
  public void register() {
    Sources.register(sourceName, this);
  }

  /** Withdraws this source (the DataNode stopped); its counts stay. */
  public void unregister() {
    Sources.unregister(sourceName, this);
  }
}
