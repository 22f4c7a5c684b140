package org.hdfsrdma.hadoop.agent;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
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
 * The Hadoop classes hdfs-rdma patches, in the groups the agent replaces
 * all or nothing, with the SHA-256 digests of Apache's class files that a
 * group's originals must match. Read from
 * {@code hdfs-rdma-patched/groups.properties}, which the build writes
 * (dev-support/agent-classes.sh) next to the patched class files.
 *
 * <p>JDK only: the agent uses this before any Hadoop class is loaded, on
 * whatever Hadoop the JVM runs.
 */
final class PatchedGroups {

  /** Where the drop-in jar keeps the patched class files. */
  static final String PREFIX = "hdfs-rdma-patched/";
  static final String RESOURCE = PREFIX + "groups.properties";

  /** One group: the classes one Hadoop artifact contributes. */
  static final class Group {
    final PatchState.Group id;
    /** Internal names (a/b/C, a/b/C$D), the patched file's class first. */
    final List<String> classes;
    final Map<String, Set<String>> digests;

    Group(PatchState.Group id, List<String> classes,
        Map<String, Set<String>> digests) {
      this.id = id;
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

  final String releases;
  final Map<PatchState.Group, Group> groups;

  private PatchedGroups(String releases, Map<PatchState.Group, Group> groups) {
    this.releases = releases;
    this.groups = Collections.unmodifiableMap(groups);
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

  /**
   * Reads the groups from {@code loader}'s copy of the resource.
   *
   * @throws IOException when the resource is missing or incomplete (a jar
   *     built without dev-support/agent-classes.sh)
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
    Map<PatchState.Group, Group> groups =
        new LinkedHashMap<PatchState.Group, Group>();
    for (PatchState.Group id : PatchState.Group.values()) {
      String members = p.getProperty(id.key() + ".classes", "").trim();
      if (members.isEmpty()) {
        throw new IOException(RESOURCE + " lists no " + id.key()
            + " classes");
      }
      List<String> classes = new ArrayList<String>(
          Arrays.asList(members.split("\\s+")));
      Map<String, Set<String>> digests =
          new LinkedHashMap<String, Set<String>>();
      for (String c : classes) {
        String d = p.getProperty("sha256." + c, "").trim();
        if (d.isEmpty()) {
          throw new IOException(RESOURCE + " has no digest of " + c);
        }
        digests.put(c, new HashSet<String>(Arrays.asList(d.split("\\s+"))));
      }
      groups.put(id, new Group(id, classes, digests));
    }
    return new PatchedGroups(p.getProperty("releases", "").trim(), groups);
  }

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
