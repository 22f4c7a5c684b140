package org.hdfsrdma.hadoop.runtime;

import org.hdfsrdma.hadoop.conf.DistributionMode;
import org.hdfsrdma.hadoop.metrics.PipelineOutcome;

/**
 * DataNodes this JVM's clients keep off the UCX path for a while
 * ({@code dfs.client.rdma.unreachable-retry-ms}), by transfer address:
 * ones UCX could not reach, or whose gets the client's CPU would serve
 * (pipelines through them stay on TCP), and ones that could not feed the
 * next DataNode of a chain or hybrid auto chose (pipelines through them
 * fan out instead). Owned by the {@link UcxRuntime} (a new runtime starts
 * with none), shared by its streams, read once per pipeline; each entry
 * lapses with its window and the tables are bounded
 * ({@link LapsingTable}).
 */
public final class NodeBackoff {

  private final LapsingTable<PipelineOutcome> tcpUntil =
      new LapsingTable<PipelineOutcome>();
  private final LapsingTable<Boolean> fanOutUntil =
      new LapsingTable<Boolean>();
  /** DataNodes UCX failed a pipeline through, within their window. */
  private final LapsingTable<Boolean> fellBackWithin =
      new LapsingTable<Boolean>();

  NodeBackoff() {
  }

  /**
   * Why a pipeline through {@code node} stays on TCP now under
   * {@code mode}, or null. Emulated gets are the policy's reason, not
   * UCX's: forced shapes ignore them.
   */
  public PipelineOutcome tcpOutcome(String node, DistributionMode mode) {
    PipelineOutcome tcp = tcpUntil.get(node, System.currentTimeMillis());
    if (tcp != null && (tcp != PipelineOutcome.TCP_EMULATED_GETS
        || mode == DistributionMode.AUTO)) {
      return tcp;
    }
    return null;
  }

  /** Pipelines through {@code node} use TCP for {@code ms}. */
  public void tcpFor(String node, PipelineOutcome outcome, long ms) {
    long now = System.currentTimeMillis();
    tcpUntil.put(node, outcome, now + ms, now);
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
  public boolean fellBack(String node, long ms) {
    long now = System.currentTimeMillis();
    boolean again = fellBackWithin.get(node, now) != null;
    fellBackWithin.put(node, Boolean.TRUE, now + ms, now);
    if (again) {
      tcpFor(node, PipelineOutcome.TCP_UNREACHABLE, ms);
    }
    return again;
  }

  /** Whether auto should fan out pipelines through any of {@code nodes}. */
  public boolean fanOutOnly(String[] nodes) {
    long now = System.currentTimeMillis();
    for (String node : nodes) {
      if (fanOutUntil.get(node, now) != null) {
        return true;
      }
    }
    return false;
  }

  /** Auto fans out pipelines through {@code nodes} for {@code ms}. */
  public void fanOutFor(String[] nodes, long ms) {
    long now = System.currentTimeMillis();
    for (String node : nodes) {
      fanOutUntil.put(node, Boolean.TRUE, now + ms, now);
    }
  }
}
