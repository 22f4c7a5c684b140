package org.hdfsrdma.hadoop.runtime;

import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.WeakHashMap;

import org.hdfsrdma.ucx.UcxEndpoint;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which UCX transports carry this JVM's connections: logged once per
 * connection, and the distinct kinds kept for the metrics' transports
 * gauge and the totals line. A connection is remembered only while it
 * lives (weakly, so a client that connects to many DataNodes over days
 * holds none it closed), and at most {@link #MAX_KINDS} kinds are kept.
 * Touched once per pipeline connect, never per packet.
 */
final class TransportNotes {

  private static final Logger LOG = LoggerFactory.getLogger(UcxRuntime.class);

  /** Distinct transport descriptions kept, at most. */
  static final int MAX_KINDS = 32;

  private final Map<UcxEndpoint, Boolean> logged =
      new WeakHashMap<UcxEndpoint, Boolean>();
  private final Set<String> kinds = new TreeSet<String>();
  private boolean moreKinds;

  /** Logs the transports of {@code e} the first time it is seen. */
  void connected(UcxEndpoint e) {
    synchronized (this) {
      if (logged.put(e, Boolean.TRUE) != null) {
        return;
      }
    }
    // Outside the lock: asks UCX, and logs.
    String report = e.transports().toString();
    add(report);
    LOG.info("hdfs-rdma: UCX to {}: {}", e.peer(), report);
  }

  /** Notes one kind of transport (a connection's, a way of reading). */
  synchronized void add(String kind) {
    if (kinds.size() < MAX_KINDS || kinds.contains(kind)) {
      kinds.add(kind);
    } else {
      moreKinds = true;
    }
  }

  /** The kinds seen, sorted, "; "-separated. */
  synchronized String summary() {
    return String.join("; ", kinds) + (moreKinds ? "; and others" : "");
  }

  /** Connections remembered now (tests). */
  synchronized int connections() {
    return logged.size();
  }
}
