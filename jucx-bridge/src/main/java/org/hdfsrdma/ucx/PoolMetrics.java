package org.hdfsrdma.ucx;

/** Counters of a {@link RegisteredBufferPool} at one instant. */
public final class PoolMetrics {
  private final long inUseBytes;
  private final long peakInUseBytes;
  private final long registeredBytes;
  private final long capBytes;
  private final long registrations;
  private final long acquisitions;
  private final long waits;
  private final long timeouts;
  private final long leases;

  PoolMetrics(long inUseBytes, long peakInUseBytes, long registeredBytes,
      long capBytes, long registrations, long acquisitions, long waits,
      long timeouts, long leases) {
    this.inUseBytes = inUseBytes;
    this.peakInUseBytes = peakInUseBytes;
    this.registeredBytes = registeredBytes;
    this.capBytes = capBytes;
    this.registrations = registrations;
    this.acquisitions = acquisitions;
    this.waits = waits;
    this.timeouts = timeouts;
    this.leases = leases;
  }

  /** Bytes of buffers currently leased. */
  public long inUseBytes() {
    return inUseBytes;
  }

  /** Most bytes ever leased at once. */
  public long peakInUseBytes() {
    return peakInUseBytes;
  }

  /** Bytes currently registered with UCX (whole slabs). */
  public long registeredBytes() {
    return registeredBytes;
  }

  public long capBytes() {
    return capBytes;
  }

  /** Slabs registered over the pool's life. */
  public long registrations() {
    return registrations;
  }

  public long acquisitions() {
    return acquisitions;
  }

  /** Acquisitions that had to wait for a release. */
  public long waits() {
    return waits;
  }

  /** Acquisitions that gave up. */
  public long timeouts() {
    return timeouts;
  }

  /** Leases not yet released. */
  public long outstandingLeases() {
    return leases;
  }

  @Override
  public String toString() {
    return "in use " + inUseBytes + " B (peak " + peakInUseBytes
        + " B), registered " + registeredBytes + " of " + capBytes + " B in "
        + registrations + " registration(s), " + acquisitions
        + " acquisitions, " + waits + " waits, " + timeouts + " timeouts, "
        + leases + " outstanding";
  }
}
