package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.Test;

/**
 * The package order of DESIGN.md section 0 holds in the sources: no class
 * refers to a class of this project in a package above its own, or in
 * another package of its own row. Read at source level, so that a
 * Javadoc-only or unused import, or a fully qualified name, counts as the
 * dependency a reader sees; string literals do not. The order is read from
 * DESIGN.md's table, the one place it is written.
 *
 * <p>The check is checked too: a planted upward import, Javadoc reference,
 * sideways import (within a row) and wildcard import are each found; a class
 * name in a string literal is not.
 */
public class TestLayers {

  /** The module: where its sources and DESIGN.md are. */
  static final File MODULE = new File(System.getProperty(
      "hdfsrdma.module.dir", System.getProperty("basedir",
          new File("").getAbsolutePath())));
  /** The product's source roots, the bridge's included. */
  private static final String[] ROOTS = {"src/main/java", "src/hadoop2/java",
      "src/hadoop3/java", "../jucx-bridge/src/main/java"};
  private static final Pattern QUALIFIED =
      Pattern.compile("\\b((?:[a-z][a-z0-9_]*\\.)+[A-Z]\\w*)");
  private static final Pattern WILDCARD =
      Pattern.compile("\\b((?:[a-z][a-z0-9_]*\\.)*[a-z][a-z0-9_]*)\\.\\*");
  static final Pattern STRING = Pattern.compile("\"(?:\\\\.|[^\"\\\\])*\"");
  private static final Pattern PACKAGE = Pattern.compile("`([a-zA-Z.]+)`");

  @Test(timeout = 60_000)
  public void testNoReferenceUpwardsOrSideways() throws IOException {
    Map<String, Integer> rows = rows();
    Map<String, String> sources = sources();
    List<String> found = violations(rows, sources);
    assertEquals("references against DESIGN.md section 0's order:\n"
        + String.join("\n", found), 0, found.size());
    // Every package of the product has its row.
    TreeSet<String> unplaced = new TreeSet<>();
    for (String file : sources.keySet()) {
      String pkg = packageOf(className(file));
      if (!rows.containsKey(pkg)) {
        unplaced.add(pkg);
      }
    }
    assertEquals("packages DESIGN.md section 0 does not place",
        new TreeSet<String>(), unplaced);
    // Each of the project's own packages says what it owns (Hadoop's
    // packages, where the per-release layer lives, have their own).
    TreeSet<String> undocumented = new TreeSet<>();
    for (String file : sources.keySet()) {
      String pkg = packageOf(className(file));
      if (pkg.startsWith("org.hdfsrdma.") && !sources.containsKey(
          pkg.replace('.', '/') + "/package-info.java")) {
        undocumented.add(pkg);
      }
    }
    assertEquals("packages without a package-info.java",
        new TreeSet<String>(), undocumented);
  }

  /** The check fails where it should: a planted upward import is found. */
  @Test(timeout = 60_000)
  public void testPlantedReferencesAreFound() throws IOException {
    Map<String, Integer> rows = rows();
    Map<String, String> sources = sources();
    String marker = "org/hdfsrdma/hadoop/runtime/UcxRuntime.java";
    assertTrue(sources.containsKey(marker));
    // An unused import of a package above (runtime -> client).
    Map<String, String> planted = new LinkedHashMap<>(sources);
    planted.put(marker, sources.get(marker).replaceFirst("\nimport ",
        "\nimport org.hdfsrdma.hadoop.client.ClientStream;\nimport "));
    assertEquals(1, violations(rows, planted).size());
    // A Javadoc-only reference, fully qualified (conf -> datanode).
    String conf = "org/hdfsrdma/hadoop/conf/RdmaConf.java";
    planted = new LinkedHashMap<>(sources);
    planted.put(conf, sources.get(conf).replaceFirst("/\\*\\*",
        "/** {@link org.hdfsrdma.hadoop.datanode.BlockWrite} "));
    assertEquals(1, violations(rows, planted).size());
    // Sideways within a row: the two per-release packages.
    String client = "org/apache/hadoop/hdfs/UcxPackets.java";
    planted = new LinkedHashMap<>(sources);
    planted.put(client, sources.get(client).replaceFirst("\nimport ",
        "\nimport org.apache.hadoop.hdfs.server.datanode.UcxPacketReceiver;"
        + "\nimport "));
    assertEquals(1, violations(rows, planted).size());
    // A wildcard import of a package above (metrics -> runtime).
    String metrics = "org/hdfsrdma/hadoop/metrics/UcxJvmMetrics.java";
    planted = new LinkedHashMap<>(sources);
    planted.put(metrics, sources.get(metrics).replaceFirst("\nimport ",
        "\nimport org.hdfsrdma.hadoop.runtime.*;\nimport "));
    assertEquals(1, violations(rows, planted).size());
    // A class name in a string is no dependency.
    planted = new LinkedHashMap<>(sources);
    planted.put(conf, sources.get(conf).replaceFirst("\nimport ",
        "\nString s = \"org.hdfsrdma.hadoop.datanode.BlockWrite\";\nimport "));
    assertEquals(0, violations(rows, planted).size());
  }

  /**
   * Each package's row in DESIGN.md section 0, top row 0: the backquoted
   * names of a row's first cell before any parenthesis, relative to
   * {@code org.hdfsrdma.} unless they begin with {@code org.}.
   */
  static Map<String, Integer> rows() throws IOException {
    List<String> design = Files.readAllLines(
        new File(MODULE, "DESIGN.md").toPath(), StandardCharsets.UTF_8);
    int start = design.indexOf("## 0. Map");
    assertTrue("DESIGN.md has a section 0", start >= 0);
    Map<String, Integer> rows = new LinkedHashMap<>();
    int row = 0;
    boolean inTable = false;
    for (String line : design.subList(start, design.size())) {
      if (line.startsWith("| package |")) {
        inTable = true;
        continue;
      }
      if (!inTable || line.startsWith("|---")) {
        continue;
      }
      if (!line.startsWith("|")) {
        break;
      }
      String cell = line.split("\\|")[1];
      int paren = cell.indexOf('(');
      Matcher m = PACKAGE.matcher(paren < 0 ? cell : cell.substring(0, paren));
      while (m.find()) {
        String name = m.group(1);
        rows.put(name.startsWith("org.") ? name : "org.hdfsrdma." + name, row);
      }
      row++;
    }
    assertTrue("DESIGN.md section 0 lists packages", rows.size() > 10);
    return rows;
  }

  /** Every product source, by path below its root, with its text. */
  static Map<String, String> sources() throws IOException {
    Map<String, String> sources = new TreeMap<>();
    for (String root : ROOTS) {
      Path dir = new File(MODULE, root).toPath();
      if (!Files.isDirectory(dir)) {
        continue;
      }
      try (Stream<Path> files = Files.walk(dir)) {
        for (Path p : files.filter(f -> f.toString().endsWith(".java"))
            .collect(Collectors.toList())) {
          String rel = dir.relativize(p).toString().replace(File.separatorChar,
              '/');
          // src/hadoop2 and src/hadoop3 hold the same classes: both count.
          String key = sources.containsKey(rel) ? root + ":" + rel : rel;
          sources.put(key, new String(Files.readAllBytes(p),
              StandardCharsets.UTF_8));
        }
      }
    }
    assertTrue("product sources found under " + MODULE, sources.size() > 50);
    return sources;
  }

  /** "file -> class" for each reference against the order. */
  static List<String> violations(Map<String, Integer> rows,
      Map<String, String> sources) {
    Map<String, String> ours = new TreeMap<>();
    for (String file : sources.keySet()) {
      String cls = className(file);
      ours.put(cls, packageOf(cls));
    }
    List<String> found = new ArrayList<>();
    for (Map.Entry<String, String> e : sources.entrySet()) {
      String pkg = packageOf(className(e.getKey()));
      Integer row = rows.get(pkg);
      if (row == null) {
        continue; // reported by the test as a package without a row
      }
      String text = STRING.matcher(e.getValue()).replaceAll("\"\"");
      TreeSet<String> targets = new TreeSet<>();
      Matcher m = QUALIFIED.matcher(text);
      while (m.find()) {
        String target = m.group(1);
        String targetPkg = ours.get(target);
        if (targetPkg == null || targetPkg.equals(pkg)) {
          continue;
        }
        Integer targetRow = rows.get(targetPkg);
        if (targetRow != null && targetRow <= row) {
          targets.add(target);
        }
      }
      Matcher w = WILDCARD.matcher(text);
      while (w.find()) {
        Integer targetRow = rows.get(w.group(1));
        if (targetRow != null && !w.group(1).equals(pkg) && targetRow <= row) {
          targets.add(w.group(1) + ".*");
        }
      }
      for (String target : targets) {
        found.add(e.getKey() + " (" + pkg + ", row " + row + ") -> " + target
            + " (row " + rows.get(target.endsWith(".*")
                ? target.substring(0, target.length() - 2) : ours.get(target))
            + ")");
      }
    }
    return found;
  }

  private static String className(String file) {
    String rel = file.substring(file.indexOf(':') + 1);
    return rel.substring(0, rel.length() - ".java".length()).replace('/', '.');
  }

  private static String packageOf(String cls) {
    return cls.substring(0, cls.lastIndexOf('.'));
  }
}
