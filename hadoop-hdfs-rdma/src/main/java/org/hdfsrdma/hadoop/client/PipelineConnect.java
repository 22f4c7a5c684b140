package org.hdfsrdma.hadoop.client;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.hdfsrdma.hadoop.conf.DistributionMode;
import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.metrics.PipelineOutcome;
import org.hdfsrdma.hadoop.protocol.CommitEntry;
import org.hdfsrdma.hadoop.runtime.ClientLane;
import org.hdfsrdma.hadoop.runtime.Reach;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxEndpoint;

/**
 * Connects a stream to the DataNodes it feeds of a pipeline that
 * committed, all at once (set-up time counts for small files), when each
 * one's gets may go by UCX: first as far as host, user and shared-memory
 * profile tell, then by the lanes UCX chose. Otherwise says which node
 * keeps the pipeline on TCP, and why. Once per pipeline set-up.
 */
final class PipelineConnect {

  /** Why a pipeline stays on TCP: the node, the outcome counted, why. */
  static final class OnTcp {
    final int node;
    final PipelineOutcome outcome;
    final String why;
    final Exception cause;

    OnTcp(int node, PipelineOutcome outcome, String why, Exception cause) {
      this.node = node;
      this.outcome = outcome;
      this.why = why;
      this.cause = cause;
    }
  }

  /** The endpoints, one per node fed, or why the pipeline stays on TCP. */
  static final class Result {
    final UcxEndpoint[] endpoints;
    final OnTcp onTcp;

    private Result(UcxEndpoint[] endpoints, OnTcp onTcp) {
      this.endpoints = endpoints;
      this.onTcp = onTcp;
    }
  }

  private PipelineConnect() {
  }

  private static Result tcp(int node, PipelineOutcome outcome, String why,
      Exception cause) {
    return new Result(null, new OnTcp(node, outcome, why, cause));
  }

  /**
   * Connects to the first {@code fed} nodes of a pipeline whose DataNodes
   * committed {@code commits}, in pipeline order, on the stream's lane.
   *
   * @param lane the stream's lane: its connections, greeting with its
   *     worker's address
   * @param nodes the pipeline's DataNodes by transfer address
   */
  static Result connect(UcxRuntime runtime, ClientLane lane, RdmaConf conf,
      List<CommitEntry> commits, String[] nodes, int fed) {
    DistributionMode mode = conf.distribution();
    Reach[] reach = new Reach[fed];
    for (int i = 0; i < fed; i++) {
      CommitEntry c = commits.get(i);
      reach[i] = Reach.before(runtime.transports(), c.getHostId(),
          c.getUid());
      if (reach[i] == Reach.UNREACHABLE) {
        return tcp(i, PipelineOutcome.TCP_UNREACHABLE, "it is on another"
            + " host or runs as another user (UCX shares memory only"
            + " between processes of one user and host) and this JVM's UCX"
            + " has no RDMA device", null);
      }
      if (reach[i] == Reach.SHARED_MEMORY) {
        String other = Reach.sharedMemoryRefusal(
            runtime.sharedMemoryProfile(), c.getSharedMemoryProfile());
        if (other != null) {
          return tcp(i, PipelineOutcome.TCP_OTHER_UCX, "it is on this"
              + " host, but " + other, null);
        }
      }
      if (!DistributionPolicy.fetchesByGet(mode, reach[i])) {
        return tcp(i, PipelineOutcome.TCP_EMULATED_GETS, "it is on"
            + " another host and only UCX's tcp transport reaches it, where"
            + " the client's CPU would serve every get", null);
      }
    }
    List<CompletableFuture<UcxEndpoint>> pending =
        new ArrayList<CompletableFuture<UcxEndpoint>>(fed);
    for (int i = 0; i < fed; i++) {
      pending.add(lane.connect(commits.get(i).getWorkerAddress(),
          nodes[i]));
    }
    UcxEndpoint[] connected = new UcxEndpoint[fed];
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(conf.connectTimeoutMs());
    for (int i = 0; i < fed; i++) {
      try {
        connected[i] = pending.get(i).get(Math.max(0,
            deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (Exception e) {
        if (e instanceof InterruptedException) {
          Thread.currentThread().interrupt();
        }
        return tcp(i, PipelineOutcome.TCP_UNREACHABLE, "its UCX worker"
            + " could not be reached", e);
      }
    }
    for (UcxEndpoint e : connected) {
      runtime.noteConnected(e);
    }
    for (int i = 0; i < fed; i++) {
      // What UCX chose for the connection decides, not what the transports
      // promised: a peer without RDMA lanes is served by tcp.
      if (reach[i] == Reach.ONE_SIDED && !DistributionPolicy.fetchesByGet(
          mode, Reach.of(connected[i].transports()))) {
        return tcp(i, PipelineOutcome.TCP_EMULATED_GETS, "UCX reaches it"
            + " only with gets the client's CPU would serve ("
            + connected[i].transports() + ")", null);
      }
    }
    return new Result(connected, null);
  }
}
