package org.hdfsrdma.hadoop.client;

import java.util.concurrent.ConcurrentHashMap;

import org.hdfsrdma.hadoop.conf.DistributionMode;
import org.hdfsrdma.hadoop.metrics.PipelineOutcome;

/**
 * DataNodes this JVM's clients keep off the UCX path for a while
 * ({@code dfs.client.rdma.unreachable-retry-ms}), by transfer address:
 * ones UCX could not reach, or whose gets the client's CPU would serve
 * (pipelines through them stay on TCP), and ones that could not feed the
 * next DataNode of a chain or hybrid auto chose (pipelines through them
 * fan out instead). Shared by the JVM's streams; read once per pipeline.
 */
final class NodeBackoff {

  /** Why pipelines through a DataNode use TCP, and until when. */
  private static final class TcpUntil {
    final long untilMs;
    final PipelineOutcome outcome;

    TcpUntil(long untilMs, PipelineOutcome outcome) {
      this.untilMs = untilMs;
      this.outcome = outcome;
    }
  }

  private static final ConcurrentHashMap<String, TcpUntil> TCP_UNTIL =
      new ConcurrentHashMap<String, TcpUntil>();

  private static final ConcurrentHashMap<String, Long> FAN_OUT_UNTIL =
      new ConcurrentHashMap<String, Long>();

  /** When UCX last failed a pipeline through a DataNode. */
  private static final ConcurrentHashMap<String, Long> LAST_FALLBACK =
      new ConcurrentHashMap<String, Long>();

  private NodeBackoff() {
  }

  /**
   * Why a pipeline through {@code node} stays on TCP now under
   * {@code mode}, or null. Emulated gets are the policy's reason, not
   * UCX's: forced shapes ignore them.
   */
  static PipelineOutcome tcpOutcome(String node, DistributionMode mode) {
    TcpUntil tcp = TCP_UNTIL.get(node);
    if (tcp != null && tcp.untilMs > System.currentTimeMillis()
        && (tcp.outcome != PipelineOutcome.TCP_EMULATED_GETS
            || mode == DistributionMode.AUTO)) {
      return tcp.outcome;
    }
    return null;
  }

  /** Pipelines through {@code node} use TCP for {@code ms}. */
  static void tcpFor(String node, PipelineOutcome outcome, long ms) {
    TCP_UNTIL.put(node, new TcpUntil(System.currentTimeMillis() + ms,
        outcome));
  }

  /**
   * UCX failed a pipeline because of {@code node} (it went on over TCP).
   * The first time, the next pipeline through it tries UCX again: a
   * failure may be a passing one (a connection lost, a peer restarted). A
   * second within {@code ms} keeps pipelines through it on TCP for
   * {@code ms}, so that a lasting failure costs one restart, not one per
   * block.
   *
   * @return whether pipelines through the node now stay on TCP
   */
  static boolean fellBack(String node, long ms) {
    long now = System.currentTimeMillis();
    Long last = LAST_FALLBACK.put(node, now);
    if (last != null && now - last < ms) {
      tcpFor(node, PipelineOutcome.TCP_UNREACHABLE, ms);
      return true;
    }
    return false;
  }

  /** Whether auto should fan out pipelines through any of {@code nodes}. */
  static boolean fanOutOnly(String[] nodes) {
    long now = System.currentTimeMillis();
    for (String node : nodes) {
      Long until = FAN_OUT_UNTIL.get(node);
      if (until != null && until > now) {
        return true;
      }
    }
    return false;
  }

  /** Auto fans out pipelines through {@code nodes} for {@code ms}. */
  static void fanOutFor(String[] nodes, long ms) {
    long until = System.currentTimeMillis() + ms;
    for (String node : nodes) {
      FAN_OUT_UNTIL.put(node, until);
    }
  }
}
