package org.apache.hadoop.hdfs;

/**
 * Hadoop 2's flavour: marks a pipeline node bad on a DataStreamer's
 * {@code ErrorState}, as the ResponseProcessor does for a bad ack. The
 * UCX path needs this when a node does not take its descriptor. Hadoop 2
 * has one error flag ({@code setError(true)}); Hadoop 3 split it into
 * internal and external errors, hence one class per flavour with the same
 * signature (src/hadoop3/java).
 */
final class UcxErrorStates {

  private UcxErrorStates() {
  }

  /** Node {@code index} failed, unless a node is marked already. */
  static void markBad(DataStreamer.ErrorState errorState, int index) {
    synchronized (errorState) {
      if (!errorState.isNodeMarked()) {
        errorState.setBadNodeIndex(index);
      }
      errorState.setError(true);
    }
  }
}
