package org.hdfsrdma.hadoop.client;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.ReadableByteChannel;
import java.util.Arrays;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.hadoop.conf.DistributionMode;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.metrics.ClientReads;
import org.hdfsrdma.hadoop.protocol.ReadAnswer;
import org.hdfsrdma.hadoop.protocol.ReadOffer;
import org.hdfsrdma.hadoop.runtime.NodeBackoff;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.hadoop.util.LogOnce;
import org.hdfsrdma.ucx.UcxEndpoint;
import org.hdfsrdma.ucx.UcxUnavailableException;

/**
 * A client's side of a block read over UCX (DESIGN.md section 9), the same
 * on every release: whether a read offers UCX ({@link #offer}) and, when
 * the DataNode answered, the channel the block reader reads the packets
 * from ({@link #channel}). Release-neutral: the per-release layer hands it
 * plain values.
 */
public final class BlockReads {

  /** The data bytes per buffer a reader offers to take: the most allowed. */
  static final int OFFER_PACKET_BYTES = ReadOffer.MAX_PACKET_BYTES;
  /** Buffers a reader asks the DataNode to fill ahead of its credits. */
  static final int OFFER_WINDOW = 4;

  /**
   * Hadoop's {@code dfs.client.socket-timeout} and its default (the key
   * lives in hadoop-hdfs-client of some releases only: by name here).
   */
  static final String SOCKET_TIMEOUT_KEY = "dfs.client.socket-timeout";
  static final int SOCKET_TIMEOUT_DEFAULT = 60_000;

  private final UcxRuntime runtime;
  private final ReadOffer offer;
  /** How long one get may take; see {@link #getTimeoutMs}. */
  private final long getTimeoutMs;

  private BlockReads(UcxRuntime runtime, ReadOffer offer, long getTimeoutMs) {
    this.runtime = runtime;
    this.offer = offer;
    this.getTimeoutMs = getTimeoutMs;
  }

  /**
   * How long a reader waits for one get: as long as a stock reader waits
   * for a silent DataNode (the client's socket timeout), so that a
   * DataNode stopped in the middle of a get holds the read no longer than
   * a stock one; without a socket timeout, the DataNodes' get timeout.
   */
  static long getTimeoutMs(Configuration conf, RdmaConf rdma) {
    int socketTimeout = conf.getInt(SOCKET_TIMEOUT_KEY,
        SOCKET_TIMEOUT_DEFAULT);
    return socketTimeout > 0 ? socketTimeout : rdma.getTimeoutMs();
  }

  /**
   * The UCX offer of one block read of {@code length} bytes from
   * {@code dataNode} (its transfer address, or null when unknown), or null
   * when it stays stock: {@code dfs.client.rdma.read.enabled} is false, the
   * read is shorter than {@code dfs.client.rdma.read.min-bytes}, the
   * transfer is protected, the connection is a domain socket, UCX is
   * unusable here, or the DataNode is backed off: its UCX reads fell back
   * twice within {@code dfs.client.rdma.unreachable-retry-ms} (the
   * runtime's {@link NodeBackoff}, which writes share), so a lasting
   * failure costs two fallbacks, not one per block.
   */
  public static BlockReads offer(Configuration conf, boolean domainSocket,
      long length, String dataNode) {
    if (conf == null || domainSocket || !conf.getBoolean(
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_READ_ENABLED_KEY,
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_READ_ENABLED_DEFAULT)
        || length < conf.getLong(
            HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_READ_MIN_BYTES_KEY,
            HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_READ_MIN_BYTES_DEFAULT)) {
      return null;
    }
    if (RdmaConf.transferProtected(conf)) {
      LogOnce.warn("client-read-protection", "hdfs-rdma: reads stay on"
          + " TCP: " + RdmaConf.TRANSFER_PROTECTED_REASON);
      return null;
    }
    UcxRuntime runtime = UcxRuntime.current();
    if (runtime == null) {
      try {
        runtime = UcxRuntime.get(conf);
      } catch (UcxUnavailableException e) {
        LogOnce.warn("client-read-unavailable", "hdfs-rdma: UCX"
            + " unavailable, reads stay on TCP: " + e.getMessage());
        return null;
      }
    }
    if (dataNode != null && runtime.nodeBackoff().tcpOutcome(dataNode,
        DistributionMode.AUTO) != null) {
      runtime.metrics().reads().withheld();
      return null;
    }
    // The offer's client key: the first bytes of the worker's digest.
    return new BlockReads(runtime, new ReadOffer(Arrays.copyOf(
        runtime.workerDigest(), ReadOffer.CLIENT_KEY_LENGTH),
        OFFER_PACKET_BYTES, OFFER_WINDOW),
        getTimeoutMs(conf, runtime.conf()));
  }

  /**
   * A DataNode's transfer address (ip:port, as {@code DatanodeID} gives it)
   * from the string a socket gives its remote end ({@code host/ip:port}),
   * or null for null.
   */
  public static String transferAddress(String remoteAddress) {
    return remoteAddress == null ? null
        : remoteAddress.substring(remoteAddress.lastIndexOf('/') + 1);
  }

  /** What the {@code readBlock} op carries. */
  public ReadOffer readOffer() {
    return offer;
  }

  /**
   * The channel to read the block's packets from: {@code socket} itself
   * when the DataNode left the offer unanswered, else one that takes the
   * described buffers over UCX.
   *
   * @param answer the DataNode's answer, or null
   * @param xferAddr the DataNode the reader connected to
   * @param credits the socket's output
   * @param checksumType the read's checksum, as Hadoop's type id
   * @param checksumSize bytes per checksum of that type
   * @throws IOException only when interrupted, or when the fallback a
   *     read UCX cannot take asks for fails on the socket (as a stock read
   *     would)
   */
  public ReadableByteChannel channel(ReadAnswer answer,
      ReadableByteChannel socket, OutputStream credits, String xferAddr,
      int checksumType, int bytesPerChecksum, int checksumSize,
      long blockId, String block) throws IOException {
    ClientReads counters = runtime.metrics().reads();
    if (answer == null) {
      counters.stock();
      return socket;
    }
    counters.answered();
    String description = "the read of " + block + " from " + xferAddr;
    RdmaConf conf = runtime.conf();
    Runnable fellBack = () -> runtime.nodeBackoff().fellBack(xferAddr,
        conf.unreachableRetryMs());
    UcxEndpoint endpoint;
    try {
      answer.checkFor(offer, xferAddr, bytesPerChecksum);
      endpoint = runtime.connect(answer.getDataNode().getWorkerAddress(),
          xferAddr).get(conf.connectTimeoutMs(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("hdfs-rdma: interrupted connecting to "
          + xferAddr + " for " + block, e);
    } catch (IOException | ExecutionException | TimeoutException
        | RuntimeException e) {
      return ReadChannel.fallenBack(socket, credits, answer, blockId,
          counters, fellBack, description, "no UCX connection: "
          + e.getMessage());
    }
    try {
      return new ReadChannel(socket, credits, endpoint, runtime.regions(),
          answer, blockId, runtime.pools().readLanding(OFFER_PACKET_BYTES),
          getTimeoutMs, counters, fellBack, PacketVerifier.of(checksumType,
              bytesPerChecksum, checksumSize), description);
    } catch (RuntimeException | LinkageError e) {
      // UCX failing here (its worker closing, memory it cannot register)
      // costs the read nothing: the DataNode sends it stock.
      return ReadChannel.fallenBack(socket, credits, answer, blockId,
          counters, fellBack, description, "no UCX read: " + e);
    }
  }
}
