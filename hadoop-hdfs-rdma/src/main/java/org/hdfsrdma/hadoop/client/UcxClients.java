package org.hdfsrdma.hadoop.client;

import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.hadoop.classification.InterfaceAudience;
import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.hadoop.conf.DistributionMode;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.metrics.PipelineOutcome;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.hadoop.util.LogOnce;
import org.hdfsrdma.ucx.UcxUnavailableException;

/**
 * Whether a client writes with the UCX data path, decided once per stream
 * (never per packet): it must be switched on, UCX must be usable in this
 * JVM, and no data-transfer encryption or SASL integrity/privacy may be
 * configured (UCX gives no such protection). A JVM that has not started
 * UCX yet starts it only where some get could be one-sided
 * ({@link DistributionPolicy#reasonNotToStart}); the first stream of such
 * a JVM puts the start off past its first block ({@link DeferredStart})
 * unless {@code dfs.client.rdma.defer-start} is false. Each reason to stay
 * on TCP is logged once.
 */
@InterfaceAudience.Private
public final class UcxClients {

  private UcxClients() {
  }

  /** Whether a stream of this JVM has taken the deferred start. */
  private static final AtomicBoolean FIRST_STREAM_DEFERRED =
      new AtomicBoolean();

  /** A new stream's start: the JVM's UCX runtime, or why it is on TCP. */
  public static final class Start {
    /** Asked for nothing: dfs.client.rdma.enabled is false. */
    static final Start NOT_ASKED = new Start(null, null, null);

    /** The client's settings, null unless a runtime was found. */
    public final RdmaConf conf;
    /** The runtime the stream writes through, or null (TCP). */
    public final UcxRuntime runtime;
    /**
     * Why the stream is on TCP although asked for UCX, or null;
     * {@link PipelineOutcome#TCP_DEFERRED} (with {@link #conf}) for the
     * JVM's first stream, which starts UCX itself past its first block.
     */
    public final PipelineOutcome tcp;

    Start(RdmaConf conf, UcxRuntime runtime, PipelineOutcome tcp) {
      this.conf = conf;
      this.runtime = runtime;
      this.tcp = tcp;
    }

    static Start tcp(PipelineOutcome why) {
      return new Start(null, null, why);
    }
  }

  /**
   * Whether {@code conf} asks for UCX ({@code dfs.client.rdma.enabled});
   * false for a stand-in client without a configuration (Hadoop's tests
   * mock DFSClient).
   */
  public static boolean asked(Configuration conf) {
    return conf != null && conf.getBoolean(
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY,
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_DEFAULT);
  }

  /**
   * Whether a client with {@code conf} writes over UCX, and through which
   * runtime: it must ask ({@code dfs.client.rdma.enabled}), configure no
   * protection UCX lacks, and UCX must be usable here. Each reason to stay
   * on TCP is one WARN per JVM (rate-limited, {@link LogOnce}) and the
   * outcome its pipelines are counted under.
   *
   * @param conf the client's configuration, or null ({@link #asked})
   */
  public static Start start(Configuration conf) {
    if (!asked(conf)) {
      return Start.NOT_ASKED;
    }
    if (RdmaConf.transferProtected(conf)) {
      LogOnce.warn("client-protection", "hdfs-rdma: writes stay on TCP: "
          + RdmaConf.TRANSFER_PROTECTED_REASON);
      return Start.tcp(PipelineOutcome.TCP_PROTECTED);
    }
    RdmaConf rdma = new RdmaConf(conf);
    if (rdma.distribution() == DistributionMode.TCP) {
      LogOnce.warn("client-distribution-tcp", "hdfs-rdma: writes use"
          + " Hadoop's TCP pipeline: "
          + HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_DISTRIBUTION_KEY + " is tcp");
      return Start.tcp(PipelineOutcome.TCP_POLICY);
    }
    UcxRuntime running = UcxRuntime.current();
    if (running != null) {
      return new Start(rdma, running, null); // a DataNode or earlier stream
    }
    String notNow = DistributionPolicy.reasonNotToStart(rdma);
    if (notNow != null) {
      LogOnce.warn("client-not-started", "hdfs-rdma: UCX not started,"
          + " writes use Hadoop's TCP pipeline: " + notNow);
      return Start.tcp(PipelineOutcome.TCP_POLICY);
    }
    if (rdma.clientDeferStart() && FIRST_STREAM_DEFERRED.compareAndSet(
        false, true)) {
      return new Start(rdma, null, PipelineOutcome.TCP_DEFERRED);
    }
    return startNow(rdma, conf);
  }

  /**
   * Starts this JVM's UCX runtime for a client with {@code conf}, read as
   * {@code rdma}; never throws (a start that fails is a stream on TCP).
   */
  public static Start startNow(RdmaConf rdma, Configuration conf) {
    try {
      return new Start(rdma, UcxRuntime.get(conf), null);
    } catch (UcxUnavailableException e) {
      LogOnce.warn("client-unavailable", "hdfs-rdma: UCX unavailable,"
          + " writes stay on TCP: " + e.getMessage());
    } catch (RuntimeException | LinkageError e) {
      // UCX must never cost a write: whatever went wrong, Hadoop's own.
      LogOnce.warn("client-start-failed", "hdfs-rdma: starting UCX failed,"
          + " writes stay on TCP: " + e);
    }
    return Start.tcp(PipelineOutcome.TCP_UCX_UNAVAILABLE);
  }
}
