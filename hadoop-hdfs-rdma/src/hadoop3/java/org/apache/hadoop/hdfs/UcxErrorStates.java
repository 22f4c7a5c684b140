package org.apache.hadoop.hdfs;

/**
 * Hadoop 3's flavour: marks a pipeline node bad on a DataStreamer's
 * {@code ErrorState}, as the ResponseProcessor does for a bad ack (the
 * node's index, then an internal error, which is what a DataStreamer sets
 * for an exception it caught). The UCX path needs this when a node does
 * not take its descriptor. Hadoop 2's flavour (src/hadoop2/java) sets
 * its single error flag instead.
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
      errorState.setInternalError();
    }
  }
}
