package org.apache.hadoop.hdfs;

/**
 * Hadoop 2's flavour: restarts a DataStreamer's pipeline through its
 * {@code ErrorState} when UCX failed it. Recovery starts only for an error
 * with a marked node ({@code hasDatanodeError}), so {@link #restart} marks
 * the first node unless one is marked, as the ResponseProcessor does for
 * an error it cannot place; {@link #forgive} clears the mark when the
 * streamer has closed the pipeline, before recovery drops the marked
 * node, so the new pipeline keeps every node. Hadoop 2 has one error flag
 * ({@code setError(true)}); Hadoop 3 split it into internal and external
 * errors, hence one class per flavour with the same signatures
 * (src/hadoop3/java).
 */
final class UcxErrorStates {

  private UcxErrorStates() {
  }

  /** Starts Hadoop's recovery of the pipeline. */
  static void restart(DataStreamer.ErrorState errorState) {
    synchronized (errorState) {
      errorState.markFirstNodeIfNotMarked();
      errorState.setError(true);
    }
  }

  /** Keeps every node through the recovery about to start. */
  static void forgive(DataStreamer.ErrorState errorState) {
    synchronized (errorState) {
      if (!errorState.isRestartingNode()) {
        errorState.setBadNodeIndex(-1);
      }
    }
  }
}
