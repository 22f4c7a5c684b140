package org.hdfsrdma.hadoop.runtime;

import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Values by DataNode (transfer address) that hold until a time and then
 * lapse, in a table of at most {@link #MAX_NODES} entries: a client that
 * meets thousands of DataNodes over days keeps only what still applies.
 * When full, lapsed entries go first; if none has lapsed, the table starts
 * over (what it forgets is a hint: a backoff retried, a rate measured
 * again). Written per pipeline event, never per packet; no lock shared
 * beyond the table's own.
 *
 * @param <V> what is held per DataNode
 */
final class LapsingTable<V> {

  /** The DataNodes a table holds, at most: more than a cluster has. */
  static final int MAX_NODES = 16384;

  private static final class Held<V> {
    final V value;
    final long untilMs;

    Held(V value, long untilMs) {
      this.value = value;
      this.untilMs = untilMs;
    }
  }

  private final ConcurrentHashMap<String, Held<V>> table =
      new ConcurrentHashMap<String, Held<V>>();
  private final int maxNodes;

  LapsingTable() {
    this(MAX_NODES);
  }

  LapsingTable(int maxNodes) {
    this.maxNodes = maxNodes;
  }

  /** {@code node}'s value while it holds at {@code nowMs}, else null. */
  V get(String node, long nowMs) {
    Held<V> h = table.get(node);
    if (h == null) {
      return null;
    }
    if (h.untilMs <= nowMs) {
      table.remove(node, h);
      return null;
    }
    return h.value;
  }

  /** Holds {@code value} for {@code node} until {@code untilMs}. */
  void put(String node, V value, long untilMs, long nowMs) {
    if (table.size() >= maxNodes && !table.containsKey(node)) {
      makeRoom(nowMs);
    }
    table.put(node, new Held<V>(value, untilMs));
  }

  /** The entries held now, lapsed ones included until next touched. */
  int size() {
    return table.size();
  }

  private void makeRoom(long nowMs) {
    for (Iterator<Map.Entry<String, Held<V>>> i =
        table.entrySet().iterator(); i.hasNext();) {
      if (i.next().getValue().untilMs <= nowMs) {
        i.remove();
      }
    }
    if (table.size() >= maxNodes) {
      table.clear();
    }
  }
}
