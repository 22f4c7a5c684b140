package org.hdfsrdma.hadoop.agent;

import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import org.apache.hadoop.util.VersionInfo;

/**
 * Whether the Hadoop this JVM runs is one the jar's patched classes were
 * proven against, and whether those classes are the ones loaded (the
 * agent replaces them only on Apache Hadoop 2.9.1 and 2.9.2, see
 * {@link PatchState}). Elsewhere the UCX path stays off and HDFS keeps
 * working over TCP.
 */
public final class HadoopVersionCheck {

  /** Releases whose sources of the patched files are identical. */
  public static final List<String> SUPPORTED =
      Collections.unmodifiableList(Arrays.asList("2.9.1", "2.9.2"));

  private HadoopVersionCheck() {
  }

  /**
   * Null when the running Hadoop is supported and its patched classes are
   * loaded, otherwise why not.
   */
  public static String problem() {
    String version = problem(VersionInfo.getVersion());
    return version != null ? version : PatchState.runtimeProblem();
  }

  static String problem(String version) {
    if (SUPPORTED.contains(version)) {
      return null;
    }
    return "hdfs-rdma was built for Hadoop " + SUPPORTED + " but runs on "
        + version;
  }
}
