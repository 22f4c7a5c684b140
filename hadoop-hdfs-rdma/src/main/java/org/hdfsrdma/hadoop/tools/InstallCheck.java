package org.hdfsrdma.hadoop.tools;

import java.net.URL;
import java.security.CodeSource;

import org.apache.hadoop.util.VersionInfo;
import org.hdfsrdma.hadoop.agent.HadoopVersionCheck;
import org.hdfsrdma.hadoop.agent.PatchState;
import org.hdfsrdma.hadoop.tools.Findings.Level;

/**
 * What this JVM was started with, as far as hdfs-rdma depends on it: the
 * Hadoop on the class path (hdfs-rdma runs on Apache Hadoop 2.9.1 and
 * 2.9.2 only), whether the agent runs, and whether it replaced the client
 * and DataNode classes (with each class's code source, so that an
 * operator sees which jar a class came from).
 */
final class InstallCheck {

  private final Findings findings;

  InstallCheck(Findings findings) {
    this.findings = findings;
  }

  /** Where a class was loaded from, as a path when it is a file. */
  private static String codeSource(Class<?> c) {
    CodeSource cs = c.getProtectionDomain().getCodeSource();
    if (cs == null || cs.getLocation() == null) {
      return "an unknown location";
    }
    String s = cs.getLocation().toString();
    return s.startsWith("file:") ? s.substring(5) : s;
  }

  /** Reports the Hadoop on the class path; a PROBLEM unless supported. */
  void hadoop() {
    String version = VersionInfo.getVersion();
    String where = "hadoop-common from " + codeSource(VersionInfo.class);
    java.util.List<String> supported = HadoopVersionCheck.supported();
    if (supported.contains(version)) {
      findings.add(Level.OK, "hadoop", "Apache Hadoop " + version + " ("
          + where + "), one of the releases the jar was built for");
    } else {
      findings.add(Level.PROBLEM, "hadoop", version + " (" + where + "):"
          + " hdfs-rdma works with Apache Hadoop "
          + String.join(", ", supported) + " only; writes stay on TCP");
    }
  }

  /**
   * Reports the agent: active, given but failed, absent with the patched
   * classes first on the class path anyway, or absent (then where to add
   * it).
   */
  void agent() {
    if (PatchState.agentInstalled()) {
      findings.add(Level.OK, "agent", "active (-javaagent:"
          + PatchState.agentJar() + ")");
    } else if (PatchState.agentError() != null) {
      findings.add(Level.PROBLEM, "agent", "given but not active: "
          + PatchState.agentError());
    } else if (PatchState.problem(PatchState.Group.CLIENT) == null) {
      findings.add(Level.INFO, "agent", "not active; the patched classes"
          + " come first on the class path from "
          + PatchState.ownLocation());
    } else {
      findings.add(Level.PROBLEM, "agent", "not active: add -javaagent:"
          + jar() + " to this JVM's options (HADOOP_OPTS, the daemons' "
          + "_OPTS, mapreduce.map|reduce.java.opts, "
          + "yarn.app.mapreduce.am.command-opts, "
          + "spark.driver|executor.extraJavaOptions)");
    }
  }

  /** This jar's path for the advice, or a placeholder when unknown. */
  private static String jar() {
    URL own = PatchState.ownLocation();
    return own != null && own.getPath().endsWith(".jar") ? own.getPath()
        : "/path/to/hdfs-rdma-dropin.jar";
  }

  /** Reports a group; true when its patched classes are loaded. */
  boolean classes(PatchState.Group group) {
    String problem = PatchState.problem(group);
    if (problem == null) {
      findings.add(Level.OK, "patch", PatchState.describe(group));
    } else {
      findings.add(Level.PROBLEM, "patch", problem
          + "; writes stay on TCP");
    }
    for (String name : PatchState.topLevelClasses(group)) {
      try {
        Class<?> c = Class.forName(name, false, getClass().getClassLoader());
        findings.add(Level.INFO, "class " + name, (problem == null
            ? "patched" : "Hadoop's own") + ", loaded from "
            + codeSource(c));
      } catch (Throwable t) {
        findings.add(Level.INFO, "class " + name, "not loadable: " + t);
      }
    }
    return problem == null;
  }
}
