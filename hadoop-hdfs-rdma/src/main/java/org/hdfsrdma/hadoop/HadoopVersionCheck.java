package org.hdfsrdma.hadoop;

import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import org.apache.hadoop.util.VersionInfo;

/**
 * Whether the Hadoop this JVM runs is one the jar's patched classes were
 * proven against. The patched classes replace Hadoop's own; on another
 * release they could disagree with the rest of Hadoop, so the UCX path
 * stays off there and HDFS keeps working over TCP.
 */
public final class HadoopVersionCheck {

  /** Releases whose sources of the patched files are identical. */
  public static final List<String> SUPPORTED =
      Collections.unmodifiableList(Arrays.asList("2.9.1", "2.9.2"));

  private HadoopVersionCheck() {
  }

  /** Null when the running Hadoop is supported, otherwise why not. */
  public static String problem() {
    return problem(VersionInfo.getVersion());
  }

  static String problem(String version) {
    if (SUPPORTED.contains(version)) {
      return null;
    }
    return "hdfs-rdma was built for Hadoop " + SUPPORTED + " but runs on "
        + version;
  }
}
