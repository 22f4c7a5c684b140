package org.hdfsrdma.hadoop.agent;

import java.net.URL;
import java.security.CodeSource;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Whether this JVM runs hdfs-rdma's patched Hadoop classes: the UCX path
 * may start only where it does. The patched classes get in one of two
 * ways:
 *
 * <ul>
 * <li>the drop-in jar's Java agent ({@code -javaagent:}) replaced a group
 * because every original class of it was that of an Apache Hadoop release
 * the jar was built for ({@link PatchTransformer} records the outcome
 * here);</li>
 * <li>the patched classes come first on the class path from the same place
 * as hdfs-rdma's own classes: this module's build output, which its tests
 * and Hadoop's tests run against.</li>
 * </ul>
 *
 * <p>JDK only, like the rest of the agent: readable on any Hadoop.
 */
public final class PatchState {

  /** The groups of patched classes, each replaced all or nothing. */
  public enum Group {
    /**
     * DataStreamer, DFSPacket, DFSOutputStream, the block readers
     * (hadoop-hdfs-client; patches/hadoop-files.txt).
     */
    CLIENT("client", "client classes", "hadoop-hdfs-client"),
    /** BlockReceiver, DataXceiver, DataXceiverServer (hadoop-hdfs). */
    DATANODE("datanode", "DataNode classes", "hadoop-hdfs");

    private final String key;
    private final String description;
    private final String artifact;

    Group(String key, String description, String artifact) {
      this.key = key;
      this.description = description;
      this.artifact = artifact;
    }

    /** Its name in groups.properties. */
    String key() {
      return key;
    }

    /** "client classes", "DataNode classes". */
    public String description() {
      return description;
    }

    /** The Hadoop artifact the group's classes come from. */
    public String artifact() {
      return artifact;
    }
  }

  /** What the agent decided for a group, in hdfs-rdma's class loader. */
  static final class Outcome {
    final boolean replaced;
    /** What was replaced, or why not. */
    final String detail;

    Outcome(boolean replaced, String detail) {
      this.replaced = replaced;
      this.detail = detail;
    }
  }

  private static volatile String agentJar;
  private static volatile String agentError;
  private static final Map<Group, Outcome> OUTCOMES =
      new ConcurrentHashMap<Group, Outcome>();

  private PatchState() {
  }

  static void agentInstalled(String jar) {
    agentJar = jar;
  }

  static void agentFailed(String why) {
    agentError = why;
  }

  static void decided(Group group, boolean replaced, String detail) {
    OUTCOMES.put(group, new Outcome(replaced, detail));
  }

  /** True when the drop-in jar's agent runs in this JVM. */
  public static boolean agentInstalled() {
    return agentJar != null;
  }

  /** The agent's jar, or null without the agent. */
  public static String agentJar() {
    return agentJar;
  }

  /** Why {@code -javaagent:} was given but installed nothing, or null. */
  public static String agentError() {
    return agentError;
  }

  /** Where hdfs-rdma's own classes come from (a jar or a directory). */
  public static URL ownLocation() {
    CodeSource cs = PatchState.class.getProtectionDomain().getCodeSource();
    return cs == null ? null : cs.getLocation();
  }

  private static PatchedGroups groups;

  private static synchronized PatchedGroups groups(ClassLoader loader)
      throws java.io.IOException {
    if (groups == null) {
      groups = PatchedGroups.load(loader);
    }
    return groups;
  }

  /**
   * The Hadoop releases the jar carries classes for, in order; read from
   * the jar once per JVM.
   */
  static java.util.Set<String> releases() throws java.io.IOException {
    return groups(loader()).releases.keySet();
  }

  private static ClassLoader loader() {
    ClassLoader l = PatchState.class.getClassLoader();
    return l != null ? l : ClassLoader.getSystemClassLoader();
  }

  /** Binary name (a.b.C$D) of an internal name (a/b/C$D). */
  static String binaryName(String internalName) {
    return internalName.replace('/', '.');
  }

  /** True when {@code resource} lies in {@code location} (dir or jar). */
  static boolean within(URL resource, URL location) {
    if (resource == null || location == null) {
      return false;
    }
    String r = resource.toString();
    String l = location.toString();
    return r.startsWith(l) || r.startsWith("jar:" + l + "!/");
  }

  /**
   * Null when {@code group}'s patched classes are the ones this JVM runs;
   * otherwise one sentence saying why not. Loads (without initialising)
   * the group's main class, so the agent decides for the group if it has
   * not yet.
   */
  public static String problem(Group group) {
    ClassLoader loader = loader();
    PatchedGroups groups;
    try {
      groups = groups(loader);
    } catch (Exception e) {
      return "hdfs-rdma's jar is incomplete: " + e.getMessage();
    }
    String main = groups.mainClass(group);
    URL resource = loader.getResource(main + ".class");
    if (resource == null) {
      return "no " + group.description() + ": " + group.artifact()
          + " is not on the class path (no " + binaryName(main) + ")";
    }
    try {
      Class.forName(binaryName(main), false, loader);
    } catch (Throwable t) {
      return "the " + group.description() + " cannot load: "
          + binaryName(main) + ": " + t;
    }
    Outcome outcome = OUTCOMES.get(group);
    if (outcome != null) {
      return outcome.replaced ? null : outcome.detail;
    }
    if (within(resource, ownLocation())) {
      return null; // the build's patched classes, first on the class path
    }
    if (agentInstalled()) {
      return "the " + group.description() + " are Hadoop's own: the agent"
          + " did not see " + binaryName(main) + " load";
    }
    if (agentError != null) {
      return "the hdfs-rdma agent did not start: " + agentError;
    }
    return "the " + group.description() + " are Hadoop's own: start this"
        + " JVM with -javaagent:" + jarHint() + " (on the class path only,"
        + " the jar cannot replace them)";
  }

  /** How the operator should name the jar in -javaagent:. */
  private static String jarHint() {
    URL own = ownLocation();
    if (own != null && "file".equals(own.getProtocol())
        && own.getPath().endsWith(".jar")) {
      return own.getPath();
    }
    return "/path/to/hdfs-rdma-dropin.jar";
  }

  /**
   * How {@code group}'s classes got into this JVM, for the check command:
   * replaced by the agent (and from which Hadoop), first on the class path,
   * or the problem.
   */
  public static String describe(Group group) {
    String problem = problem(group);
    if (problem != null) {
      return problem;
    }
    Outcome outcome = OUTCOMES.get(group);
    if (outcome != null) {
      return "the " + group.description() + " are replaced by the agent: "
          + outcome.detail;
    }
    return "the " + group.description() + " are patched copies first on the"
        + " class path, from " + ownLocation();
  }

  /**
   * The binary names of {@code group}'s patched classes, nested ones left
   * out (org.apache.hadoop.hdfs.DataStreamer, ...); empty when the jar is
   * incomplete.
   */
  public static java.util.List<String> topLevelClasses(Group group) {
    java.util.List<String> names = new java.util.ArrayList<String>();
    try {
      for (String c : groups(loader()).classes(group)) {
        if (c.indexOf('$') < 0) {
          names.add(binaryName(c));
        }
      }
    } catch (Exception e) {
      // reported by problem()
    }
    return names;
  }

  /**
   * Null when at least one group's patched classes run here, else why the
   * UCX runtime must not start in this JVM.
   */
  public static String runtimeProblem() {
    String client = problem(Group.CLIENT);
    if (client == null) {
      return null;
    }
    String dataNode = problem(Group.DATANODE);
    if (dataNode == null) {
      return null;
    }
    return "the patched Hadoop classes are not loaded: " + client;
  }
}
