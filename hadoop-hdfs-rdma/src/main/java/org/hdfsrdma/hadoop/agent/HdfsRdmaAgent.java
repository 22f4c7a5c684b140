package org.hdfsrdma.hadoop.agent;

import java.lang.instrument.Instrumentation;
import java.net.URL;

/**
 * The drop-in jar's Java agent: {@code -javaagent:/path/hdfs-rdma-dropin.jar}
 * on a JVM that writes to HDFS or runs a DataNode. The JVM appends the jar
 * to the system class path, where hdfs-rdma's classes then load from, and
 * {@link #premain} installs the {@link PatchTransformer} that swaps in the
 * patched Hadoop classes only where the originals are exactly those of an
 * Apache Hadoop release the jar was built for (patches/releases.txt).
 * Elsewhere (another release, a vendor fork) Hadoop's classes load
 * unchanged and HDFS keeps writing over TCP.
 *
 * <p>Nothing here may stop the JVM from starting: any failure is one line
 * on standard error and the agent does nothing.
 */
public final class HdfsRdmaAgent {

  private static boolean installed;

  private HdfsRdmaAgent() {
  }

  /** {@code -javaagent:} entry point, before the application's main. */
  public static void premain(String args, Instrumentation inst) {
    install(inst, false);
  }

  /**
   * Attach entry point (Agent-Class). Groups whose classes already loaded
   * cannot be replaced any more; they stay Hadoop's own.
   */
  public static void agentmain(String args, Instrumentation inst) {
    install(inst, true);
  }

  private static synchronized void install(Instrumentation inst,
      boolean late) {
    if (installed) {
      return; // the jar named twice
    }
    installed = true;
    try {
      ClassLoader ours = HdfsRdmaAgent.class.getClassLoader();
      URL location = PatchState.ownLocation();
      PatchedGroups groups = PatchedGroups.load(ours);
      PatchTransformer transformer =
          new PatchTransformer(groups, ours, location);
      if (late) {
        for (Class<?> c : inst.getAllLoadedClasses()) {
          String name = c.getName().replace('.', '/');
          PatchedGroups.Group g = groups.anyGroupOf(name);
          if (g != null && c.getClassLoader() == ours) {
            transformer.alreadyLoaded(g, name);
          }
        }
      }
      inst.addTransformer(transformer);
      PatchState.agentInstalled(location == null ? "?"
          : PatchTransformer.path(location));
    } catch (Throwable t) {
      String why = t.toString();
      PatchState.agentFailed(why);
      System.err.println("hdfs-rdma: the agent is not active, writes stay"
          + " on TCP: " + why);
    }
  }
}
