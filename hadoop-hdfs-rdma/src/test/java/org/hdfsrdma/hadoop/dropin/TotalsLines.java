package org.hdfsrdma.hadoop.dropin;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The totals lines JVMs leave in {@code hdfsrdma.stats.file}
 * ({@link org.hdfsrdma.hadoop.metrics.Totals}), summed over JVMs, and the
 * check the drop-in tests make of a job's reads.
 */
final class TotalsLines {

  private final Map<String, Long> sums = new HashMap<String, Long>();

  /** The numeric values of {@code lines}, key by key, summed. */
  TotalsLines(List<String> lines) {
    assertTrue("no JVM left totals", !lines.isEmpty());
    for (String line : lines) {
      for (String pair : line.trim().split(" ")) {
        String[] kv = pair.split("=", 2);
        if (kv.length == 2 && kv[1].matches("\\d+")) {
          sums.merge(kv[0], Long.parseLong(kv[1]), Long::sum);
        }
      }
    }
  }

  /** The lines in {@code f}; none while it does not exist. */
  static List<String> in(File f) {
    List<String> lines = new ArrayList<String>();
    try {
      for (String line : AgentCluster.read(f).split("\n")) {
        if (!line.trim().isEmpty()) {
          lines.add(line);
        }
      }
    } catch (IOException e) {
      // not written yet
    }
    return lines;
  }

  /** The sum of {@code key}; fails when no line has it. */
  long get(String key) {
    Long v = sums.get(key);
    assertTrue("no " + key + " in the totals " + sums, v != null);
    return v;
  }

  /**
   * Checks that every block read of these JVMs went over UCX: some were
   * answered, none served stock, withheld or fallen back, and at least
   * {@code bytes} taken over UCX.
   */
  void assertEveryReadOverUcx(long bytes) {
    assertTrue("block reads over UCX: " + sums, get("reads-over-ucx") > 0);
    assertEquals("offers served stock", 0, get("read-offers-served-stock"));
    assertEquals("offers withheld", 0, get("read-offers-withheld"));
    assertEquals("reads fallen back", 0, get("reads-fell-back"));
    assertTrue("every byte over UCX: " + get("ucx-read-bytes") + " < "
        + bytes, get("ucx-read-bytes") >= bytes);
  }

  /** What a job's read summary line prints of these totals. */
  String reads() {
    return String.format("block reads over UCX %d (fell back %d), offers"
        + " served stock %d, withheld %d; bytes over UCX %d",
        get("reads-over-ucx"), get("reads-fell-back"),
        get("read-offers-served-stock"), get("read-offers-withheld"),
        get("ucx-read-bytes"));
  }
}
