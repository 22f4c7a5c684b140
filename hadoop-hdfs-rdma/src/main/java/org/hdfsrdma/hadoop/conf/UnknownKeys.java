package org.hdfsrdma.hadoop.conf;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.WeakHashMap;

import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.hadoop.util.LogOnce;

/**
 * Settings that look like hdfs-rdma's and are not one of its keys
 * ({@link RdmaSettings#defaults}): a misspelling, a key of another
 * release, a client key set on a DataNode's family. Each is warned once
 * with the known key it likely means; {@code check} lists them. A typo
 * costs the operator the setting they meant, never a write.
 */
public final class UnknownKeys {

  /** Key prefixes of the family: a key with one of them is hdfs-rdma's. */
  private static final String[] FAMILY = {"dfs.client.rdma.",
      "dfs.datanode.rdma.", "dfs.rdma."};

  /**
   * Size of each Configuration when its keys were last looked through for
   * unknown ones: a Configuration is scanned again only when it has
   * changed size (weak: the Configuration's life is its owner's).
   */
  private static final Map<Configuration, Integer> SCANNED =
      new WeakHashMap<Configuration, Integer>();

  private UnknownKeys() {
  }

  /** Whether {@code key} looks like hdfs-rdma's (starts like its keys). */
  public static boolean inFamily(String key) {
    for (String prefix : FAMILY) {
      if (key.startsWith(prefix)) {
        return true;
      }
    }
    return false;
  }

  /** Keys of {@code conf} that look like hdfs-rdma's and are not, sorted. */
  public static List<String> unknownKeys(Configuration conf) {
    TreeSet<String> unknown = new TreeSet<String>();
    for (Map.Entry<String, String> e : conf) {
      String key = e.getKey();
      if (inFamily(key) && !RdmaSettings.isKnown(key)) {
        unknown.add(key);
      }
    }
    return new ArrayList<String>(unknown);
  }

  /** The known key {@code key} is likely a misspelling of, or null. */
  public static String closest(String key) {
    String best = null;
    int bestDistance = Integer.MAX_VALUE;
    for (String known : RdmaSettings.defaults().keySet()) {
      int d = distance(key, known);
      if (d < bestDistance) {
        best = known;
        bestDistance = d;
      }
    }
    // A few edits, more for long keys; beyond that it is another word.
    return bestDistance <= Math.max(2, key.length() / 6) ? best
        : sameNameInOtherFamily(key);
  }

  /** A known key with {@code key}'s name in another family, or null. */
  private static String sameNameInOtherFamily(String key) {
    for (String prefix : FAMILY) {
      if (key.startsWith(prefix)) {
        String name = key.substring(prefix.length());
        for (String other : FAMILY) {
          if (RdmaSettings.isKnown(other + name)) {
            return other + name;
          }
        }
      }
    }
    return null;
  }

  /** Levenshtein distance: edits that turn {@code a} into {@code b}. */
  static int distance(String a, String b) {
    int[] prev = new int[b.length() + 1];
    int[] cur = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      prev[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      cur[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int swap = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
        cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1),
            prev[j - 1] + swap);
      }
      int[] t = prev;
      prev = cur;
      cur = t;
    }
    return prev[b.length()];
  }

  /** The warning for unknown key {@code key}. */
  public static String unknownMessage(String key) {
    String suggestion = closest(key);
    return "hdfs-rdma: unknown setting " + key + " (not one of hdfs-rdma's"
        + " keys; see " + HdfsRdmaConfigKeys.DEFAULT_RESOURCE + ")"
        + (suggestion == null ? "" : "; did you mean " + suggestion + "?");
  }

  /** The LogOnce key of unknown key {@code key}'s warning. */
  static String unknownLogKey(String key) {
    return "conf unknown " + key;
  }

  /**
   * Warns once per key of {@code conf} that looks like hdfs-rdma's and is
   * not. A Configuration is looked through when first seen and again only
   * once its size has changed: iterating copies every property, which a
   * client building an {@link RdmaConf} per output stream should not pay
   * each time.
   */
  static void warnUnknownKeys(Configuration conf) {
    int size = conf.size();
    synchronized (SCANNED) {
      Integer scanned = SCANNED.get(conf);
      if (scanned != null && scanned == size) {
        return;
      }
      SCANNED.put(conf, size);
    }
    for (String key : unknownKeys(conf)) {
      LogOnce.warn(unknownLogKey(key), unknownMessage(key));
    }
  }
}
