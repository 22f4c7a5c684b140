package org.hdfsrdma.hadoop.runtime;

/**
 * The last ingest rate each DataNode committed to this JVM's clients, by
 * transfer address: what auto's shape choice divides the client's link by.
 * Owned by the {@link UcxRuntime}. A rate lapses {@link #HOLD_MS} after
 * its commit: disks and links change, and a DataNode not written to in
 * that time is measured again by its next pipeline's commit (the first
 * pipeline after it fans out, as with a DataNode never measured).
 */
public final class IngestRates {

  /** How long a committed rate stands for its DataNode. */
  public static final long HOLD_MS = 60 * 60 * 1000L;

  private final LapsingTable<Long> rates = new LapsingTable<Long>();

  IngestRates() {
  }

  /** Notes the ingest rate a DataNode committed (0: not measured yet). */
  public void note(String xferAddr, long bytesPerSecond) {
    if (bytesPerSecond > 0) {
      long now = System.currentTimeMillis();
      rates.put(xferAddr, bytesPerSecond, now + HOLD_MS, now);
    }
  }

  /** The rate {@code xferAddr} last committed, or 0. */
  public long of(String xferAddr) {
    Long rate = rates.get(xferAddr, System.currentTimeMillis());
    return rate == null ? 0 : rate;
  }
}
