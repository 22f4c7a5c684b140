package org.hdfsrdma.hadoop.agent;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

/**
 * The Hadoop releases the jar carries patched classes for and, per
 * release, the classes it patches in the groups the agent replaces all or
 * nothing, with the SHA-256 digests of Apache's class files that a group's
 * originals must match, and the per-release layer classes (hdfs-rdma's
 * classes compiled against that release) that come with them. Read from
 * {@code hdfs-rdma-patched/groups.properties}, which the build writes
 * (dev-support/hadoop-releases.sh) next to the class files, under
 * {@code hdfs-rdma-patched/RELEASE/}.
 *
 * <p>JDK only: the agent uses this before any Hadoop class is loaded, on
 * whatever Hadoop the JVM runs.
 */
final class PatchedGroups {

  /** Where the drop-in jar keeps the per-release class files. */
  static final String PREFIX = "hdfs-rdma-patched/";
  static final String RESOURCE = PREFIX + "groups.properties";

  /** One group of one release: the classes one Hadoop artifact holds. */
  static final class Group {
    final PatchState.Group id;
    final String release;
    /** Internal names (a/b/C, a/b/C$D), the patched file's class first. */
    final List<String> classes;
    /**
     * The digests of Apache's class files, by class: the plain jar's and,
     * where it differs, the shaded client's.
     */
    final Map<String, Set<String>> digests;

    Group(PatchState.Group id, String release, List<String> classes,
        Map<String, Set<String>> digests) {
      this.id = id;
      this.release = release;
      this.classes = Collections.unmodifiableList(classes);
      this.digests = Collections.unmodifiableMap(digests);
    }

    /** The class whose loading makes the agent decide for the group. */
    String mainClass() {
      return classes.get(0);
    }

    boolean accepts(String className, byte[] classFile) {
      Set<String> accepted = digests.get(className);
      return accepted != null && accepted.contains(sha256(classFile));
    }
  }

  /** What the jar carries for one Hadoop release. */
  static final class Release {
    final String name;
    final Map<PatchState.Group, Group> groups;
    /** The layer's classes compiled for this release (internal names). */
    final Set<String> layer;

    Release(String name, Map<PatchState.Group, Group> groups,
        Set<String> layer) {
      this.name = name;
      this.groups = Collections.unmodifiableMap(groups);
      this.layer = Collections.unmodifiableSet(layer);
    }

    /** The group {@code className} (internal name) belongs to, or null. */
    Group groupOf(String className) {
      for (Group g : groups.values()) {
        if (g.digests.containsKey(className)) {
          return g;
        }
      }
      return null;
    }

    /** The resource holding this release's bytes of {@code className}. */
    String resource(String className) {
      return PREFIX + name + "/" + className + ".class";
    }
  }

  /** In the order the build lists them. */
  final Map<String, Release> releases;

  private PatchedGroups(Map<String, Release> releases) {
    this.releases = Collections.unmodifiableMap(releases);
  }

  /** The releases, as "2.9.1, 2.9.2, ... or 3.5.0". */
  String releaseList() {
    StringBuilder sb = new StringBuilder();
    int i = 0;
    for (String r : releases.keySet()) {
      sb.append(i == 0 ? "" : i == releases.size() - 1 ? " or " : ", ")
          .append(r);
      i++;
    }
    return sb.toString();
  }

  /** The release named {@code version}, or null when the jar has none. */
  Release release(String version) {
    return releases.get(version);
  }

  /**
   * The group {@code className} belongs to in any release (the first that
   * has it), or null: to tell a Hadoop the jar was not built for why its
   * classes stay.
   */
  Group anyGroupOf(String className) {
    for (Release r : releases.values()) {
      Group g = r.groupOf(className);
      if (g != null) {
        return g;
      }
    }
    return null;
  }

  /**
   * The release this JVM's Hadoop is, if the jar has it, else the first:
   * the class names the same in every release.
   */
  private Release runningOrFirst() {
    Release r = release(hadoopVersion(PatchedGroups.class.getClassLoader()));
    return r != null ? r : releases.values().iterator().next();
  }

  /** The class whose loading makes the agent decide for {@code id}. */
  String mainClass(PatchState.Group id) {
    return runningOrFirst().groups.get(id).mainClass();
  }

  /** {@code id}'s classes in the running (or the first) release. */
  List<String> classes(PatchState.Group id) {
    return runningOrFirst().groups.get(id).classes;
  }

  /**
   * Reads the releases from {@code loader}'s copy of the resource.
   *
   * @throws IOException when the resource is missing or incomplete (a jar
   *     built without dev-support/hadoop-releases.sh)
   */
  static PatchedGroups load(ClassLoader loader) throws IOException {
    Properties p = new Properties();
    InputStream in = loader == null
        ? ClassLoader.getSystemResourceAsStream(RESOURCE)
        : loader.getResourceAsStream(RESOURCE);
    if (in == null) {
      throw new IOException(RESOURCE + " is not on the class path");
    }
    try {
      p.load(in);
    } finally {
      in.close();
    }
    Map<String, Release> releases = new LinkedHashMap<String, Release>();
    for (String r : words(p, "releases", "")) {
      Map<PatchState.Group, Group> groups =
          new LinkedHashMap<PatchState.Group, Group>();
      for (PatchState.Group id : PatchState.Group.values()) {
        List<String> classes = words(p, r + "." + id.key() + ".classes",
            " lists no " + r + " " + id.key() + " classes");
        Map<String, Set<String>> digests =
            new LinkedHashMap<String, Set<String>>();
        for (String c : classes) {
          digests.put(c, new HashSet<String>(words(p, r + ".sha256." + c,
              " has no " + r + " digest of " + c)));
        }
        groups.put(id, new Group(id, r, classes, digests));
      }
      Set<String> layer = new HashSet<String>(
          words(p, r + ".layer.classes", " lists no " + r + " layer"));
      releases.put(r, new Release(r, groups, layer));
    }
    if (releases.isEmpty()) {
      throw new IOException(RESOURCE + " lists no release");
    }
    return new PatchedGroups(releases);
  }

  /** The words of {@code key}; an IOException with {@code missing} if none. */
  private static List<String> words(Properties p, String key, String missing)
      throws IOException {
    String v = p.getProperty(key, "").trim();
    if (v.isEmpty()) {
      throw new IOException(RESOURCE + (missing.isEmpty()
          ? " has no " + key : missing));
    }
    return new ArrayList<String>(Arrays.asList(v.split("\\s+")));
  }

  /**
   * The Hadoop release {@code loader} sees, from the resource VersionInfo
   * reads (no Hadoop class may load while the JVM is defining one).
   */
  static String hadoopVersion(ClassLoader loader) {
    try {
      URL u = loader == null
          ? ClassLoader.getSystemResource(VERSION_RESOURCE)
          : loader.getResource(VERSION_RESOURCE);
      if (u == null) {
        return "unknown (no " + VERSION_RESOURCE + ")";
      }
      Properties p = new Properties();
      InputStream in = u.openStream();
      try {
        p.load(in);
      } finally {
        in.close();
      }
      return p.getProperty("version", "unknown");
    } catch (IOException | RuntimeException e) {
      return "unknown (" + e + ")";
    }
  }

  private static final String VERSION_RESOURCE =
      "common-version-info.properties";

  /** Hex SHA-256 of {@code bytes}. */
  static String sha256(byte[] bytes) {
    try {
      byte[] d = MessageDigest.getInstance("SHA-256").digest(bytes);
      StringBuilder sb = new StringBuilder(d.length * 2);
      for (byte b : d) {
        sb.append(Character.forDigit((b >> 4) & 0xf, 16))
            .append(Character.forDigit(b & 0xf, 16));
      }
      return sb.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no SHA-256", e);
    }
  }

  /** Every byte of {@code in}, which is closed. */
  static byte[] readAll(InputStream in) throws IOException {
    try {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      byte[] buf = new byte[16 * 1024];
      for (int n; (n = in.read(buf)) > 0;) {
        out.write(buf, 0, n);
      }
      return out.toByteArray();
    } finally {
      in.close();
    }
  }
}
