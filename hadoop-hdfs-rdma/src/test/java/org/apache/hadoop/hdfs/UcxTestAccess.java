package org.apache.hadoop.hdfs;

/** Package-private hooks of org.apache.hadoop.hdfs for other tests. */
public final class UcxTestAccess {

  private UcxTestAccess() {
  }

  /** See {@link UcxPackets#reclaimAbandoned()}. */
  public static int reclaimAbandoned() {
    return UcxPackets.reclaimAbandoned();
  }
}
