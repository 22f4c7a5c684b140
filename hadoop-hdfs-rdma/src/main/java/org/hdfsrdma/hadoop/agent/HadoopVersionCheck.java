package org.hdfsrdma.hadoop.agent;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.apache.hadoop.util.VersionInfo;

/**
 * Whether the Hadoop this JVM runs is a release the jar carries patched
 * classes for, and whether those classes are the ones loaded (the agent
 * replaces them only where Hadoop's are exactly that Apache release's, see
 * {@link PatchState}). Elsewhere the UCX path stays off and HDFS keeps
 * working over TCP.
 */
public final class HadoopVersionCheck {

  private HadoopVersionCheck() {
  }

  /**
   * The Apache Hadoop releases the jar was built for (patches/releases.txt),
   * in order; empty when the jar lacks its list.
   */
  public static List<String> supported() {
    try {
      return Collections.unmodifiableList(
          new ArrayList<String>(PatchState.releases()));
    } catch (IOException e) {
      return Collections.emptyList();
    }
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
    List<String> supported = supported();
    if (supported.contains(version)) {
      return null;
    }
    return "hdfs-rdma was built for Hadoop " + supported + " but runs on "
        + version;
  }
}
