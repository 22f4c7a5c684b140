package org.hdfsrdma.hadoop.agent;

import java.io.IOException;
import java.io.InputStream;
import java.lang.instrument.ClassFileTransformer;
import java.net.URL;
import java.security.CodeSource;
import java.security.ProtectionDomain;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;

/**
 * Hands the JVM hdfs-rdma's patched class files in place of Hadoop's,
 * group by group, all or nothing, for the Hadoop release the JVM runs
 * (its {@code common-version-info.properties}): when the first class of a
 * group loads, it checks that this class and every other original of the
 * group (read through the loader's {@code getResource}) are byte for byte
 * that Apache Hadoop release's (SHA-256), and that the patched copy of
 * each is in the jar. Only then are the group's classes replaced as they
 * load; otherwise none is, and one line says which class did not match,
 * which Hadoop was found, and that writes stay on TCP. On a release the jar
 * carries classes for, it also hands the JVM that release's build of the
 * per-release layer (hdfs-rdma's classes in Hadoop's packages and its
 * protobuf compat) in place of the copies at their normal paths.
 *
 * <p>Only classes defined by the loader that holds hdfs-rdma's own classes
 * are replaced (the system class loader, where the JVM appends the agent
 * jar): the patched classes call package-private members of classes that
 * hdfs-rdma defines in the same packages, which works only within one
 * loader.
 *
 * <p>Never throws: a class the transformer fails on loads unchanged.
 */
final class PatchTransformer implements ClassFileTransformer {

  /** Whose loading starts the {@link WarmUp}. */
  private static final String DFS_CLIENT = "org/apache/hadoop/hdfs/DFSClient";

  private final PatchedGroups groups;
  private final ClassLoader ours;
  private final URL ownLocation;
  /** The Hadoop release found on the class path. */
  private final String version;
  /** What the jar has for it, or null. */
  private final PatchedGroups.Release running;
  /** Decisions for hdfs-rdma's loader; guarded by this. */
  private final Map<PatchState.Group, Map<String, byte[]>> replacements =
      new HashMap<PatchState.Group, Map<String, byte[]>>();
  /** Other loaders already told about, per group; guarded by this. */
  private final Map<ClassLoader, Set<PatchState.Group>> otherLoaders =
      new WeakHashMap<ClassLoader, Set<PatchState.Group>>();

  PatchTransformer(PatchedGroups groups, ClassLoader ours, URL ownLocation) {
    this.groups = groups;
    this.ours = ours;
    this.ownLocation = ownLocation;
    this.version = PatchedGroups.hadoopVersion(ours);
    this.running = groups.release(version);
  }

  @Override
  public byte[] transform(ClassLoader loader, String className,
      Class<?> classBeingRedefined, ProtectionDomain domain,
      byte[] classFile) {
    if (className == null || classBeingRedefined != null) {
      return null;
    }
    if (running != null && loader == ours && DFS_CLIENT.equals(className)) {
      WarmUp.startOnce(); // an HDFS client starts: pay UCX's costs early
    }
    if (running != null && loader == ours
        && running.layer.contains(className)) {
      return layerClass(className);
    }
    PatchedGroups.Group group = running != null
        ? running.groupOf(className) : groups.anyGroupOf(className);
    if (group == null) {
      return null;
    }
    String info = null;
    String warning = null;
    byte[] replacement = null;
    try {
      synchronized (this) {
        if (loader != ours) {
          if (firstTimeFor(loader, group.id)) {
            warning = "hdfs-rdma: the " + group.id.description() + " stay"
                + " Hadoop's own in " + loader + ", writes from it stay on"
                + " TCP: " + PatchState.binaryName(className) + " was loaded"
                + " there, not by the system class loader that holds"
                + " hdfs-rdma's classes (put Hadoop's jars on the JVM's class"
                + " path, not in a separate class loader)";
          }
          return null;
        }
        Map<String, byte[]> patched = replacements.get(group.id);
        if (patched == null) {
          Decision d = decide(group, loader, className, domain, classFile);
          if (d == null) {
            patched = Collections.<String, byte[]>emptyMap();
          } else {
            patched = d.patched;
            PatchState.decided(group.id, !patched.isEmpty(),
                patched.isEmpty() ? "the " + group.id.description()
                + " stay Hadoop's own: " + d.detail : d.detail);
            if (patched.isEmpty()) {
              warning = d.message;
            } else {
              info = d.message;
            }
          }
          replacements.put(group.id, patched);
        }
        replacement = patched.get(className);
      }
    } catch (Throwable t) {
      String detail = "the " + group.id.description() + " stay Hadoop's"
          + " own: the agent failed while " + PatchState.binaryName(className)
          + " loaded: " + t;
      warning = "hdfs-rdma: writes stay on TCP: " + detail;
      synchronized (this) {
        if (!replacements.containsKey(group.id)) {
          replacements.put(group.id, Collections.<String, byte[]>emptyMap());
          PatchState.decided(group.id, false, detail);
        }
      }
      replacement = null;
    } finally {
      // Outside the lock: logging may load classes of its own.
      if (warning != null) {
        AgentLog.warn(warning);
      }
      if (info != null) {
        AgentLog.info(info);
      }
    }
    return replacement;
  }

  /**
   * An attached agent found {@code className} of {@code group} loaded
   * already: the group can no longer be replaced as a whole.
   */
  void alreadyLoaded(PatchedGroups.Group group, String className) {
    String detail = "the " + group.id.description() + " stay Hadoop's own: "
        + PatchState.binaryName(className) + " was loaded before the agent"
        + " attached; start the JVM with -javaagent: instead";
    boolean first;
    synchronized (this) {
      first = !replacements.containsKey(group.id);
      if (first) {
        replacements.put(group.id, Collections.<String, byte[]>emptyMap());
        PatchState.decided(group.id, false, detail);
      }
    }
    if (first) {
      AgentLog.warn("hdfs-rdma: writes stay on TCP: " + detail);
    }
  }

  private boolean firstTimeFor(ClassLoader loader, PatchState.Group group) {
    Set<PatchState.Group> told = otherLoaders.get(loader);
    if (told == null) {
      told = java.util.EnumSet.noneOf(PatchState.Group.class);
      otherLoaders.put(loader, told);
    }
    return told.add(group);
  }

  /** The outcome for a group: the patched bytes by class, or none. */
  private static final class Decision {
    /** Empty: keep Hadoop's classes. */
    final Map<String, byte[]> patched;
    /** For the check command. */
    final String detail;
    /** The one log line. */
    final String message;

    Decision(Map<String, byte[]> patched, String detail, String message) {
      this.patched = patched;
      this.detail = detail;
      this.message = message;
    }
  }

  /** Null when the class path already holds the patched classes. */
  private Decision decide(PatchedGroups.Group group, ClassLoader loader,
      String className, ProtectionDomain domain, byte[] classFile)
      throws IOException {
    URL where = location(domain);
    if (PatchState.within(where, ownLocation)) {
      // The build's patched classes come first on the class path (this
      // module's tests): they already are what the agent would give.
      return null;
    }
    String mismatch = null;
    String from = where == null ? "an unknown location" : path(where);
    if (running == null) {
      String detail = "this is Hadoop " + version + " (from " + from
          + "), the jar has classes for Apache Hadoop "
          + groups.releaseList();
      return new Decision(Collections.<String, byte[]>emptyMap(), detail,
          "hdfs-rdma: the " + group.id.description() + " stay Hadoop's own"
          + " and writes stay on TCP: " + detail);
    }
    if (!group.accepts(className, classFile)) {
      mismatch = PatchState.binaryName(className) + " from " + from;
    } else {
      for (String other : group.classes) {
        if (other.equals(className)) {
          continue;
        }
        URL u = loader.getResource(other + ".class");
        if (u == null) {
          mismatch = PatchState.binaryName(other) + " (not on the class"
              + " path)";
          break;
        }
        if (!group.accepts(other, PatchedGroups.readAll(u.openStream()))) {
          mismatch = PatchState.binaryName(other) + " from " + path(u);
          break;
        }
      }
    }
    if (mismatch != null) {
      String detail = mismatch + " is not Apache Hadoop " + version
          + "'s (a vendor build or a mix of releases?)";
      return new Decision(Collections.<String, byte[]>emptyMap(), detail,
          "hdfs-rdma: the " + group.id.description() + " stay Hadoop's own"
          + " and writes stay on TCP: " + detail + "; hdfs-rdma works with"
          + " Apache Hadoop " + groups.releaseList() + " as released");
    }
    Map<String, byte[]> patched = new HashMap<String, byte[]>();
    for (String c : group.classes) {
      InputStream in = ours.getResourceAsStream(running.resource(c));
      if (in == null) {
        String detail = "the jar has no patched " + PatchState.binaryName(c);
        return new Decision(Collections.<String, byte[]>emptyMap(), detail,
            "hdfs-rdma: the " + group.id.description() + " stay Hadoop's"
            + " own and writes stay on TCP: " + detail);
      }
      patched.put(c, PatchedGroups.readAll(in));
    }
    String detail = "Hadoop " + version + "'s " + topLevelNames(group)
        + " (identical to Apache Hadoop " + version + "'s) from " + from;
    return new Decision(patched, detail, "hdfs-rdma: the UCX write path's "
        + group.id.description() + " replace " + detail);
  }

  /**
   * The running release's build of a layer class, or null (the copy at
   * the normal path loads) when the jar lacks it, which the build rules
   * out.
   */
  private byte[] layerClass(String className) {
    try {
      InputStream in = ours.getResourceAsStream(running.resource(className));
      if (in != null) {
        return PatchedGroups.readAll(in);
      }
      AgentLog.warn("hdfs-rdma: the jar has no " + running.name + " build of "
          + PatchState.binaryName(className));
    } catch (Throwable t) {
      AgentLog.warn("hdfs-rdma: could not read the " + running.name
          + " build of " + PatchState.binaryName(className) + ": " + t);
    }
    return null;
  }

  /** DataStreamer, DFSPacket, ... : the group's classes less nested ones. */
  private static String topLevelNames(PatchedGroups.Group group) {
    List<String> names = new ArrayList<String>();
    for (String c : group.classes) {
      if (c.indexOf('$') < 0) {
        names.add(c.substring(c.lastIndexOf('/') + 1));
      }
    }
    return String.join(", ", names);
  }

  private static URL location(ProtectionDomain domain) {
    CodeSource cs = domain == null ? null : domain.getCodeSource();
    return cs == null ? null : cs.getLocation();
  }

  /** A file path for a jar or directory URL, or a resource inside one. */
  static String path(URL url) {
    String s = url.toString();
    if (s.startsWith("jar:")) {
      int bang = s.indexOf("!/");
      s = s.substring(4, bang < 0 ? s.length() : bang);
    }
    return s.startsWith("file:") ? s.substring(5) : s;
  }
}
