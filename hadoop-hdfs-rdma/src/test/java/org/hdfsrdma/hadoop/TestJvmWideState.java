package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.Test;

/**
 * JVM-wide state has one owner: every static collection field of the
 * product (the bridge's included) is made unmodifiable wherever it is
 * assigned, or is one of the few DESIGN.md section 0 names under "JVM-wide
 * state", each with why its life is not the runtime's. Everything else the
 * JVM learns while UCX runs belongs to the runtime instance. Read at source
 * level, as {@link TestLayers} reads the package order; the check is
 * checked on planted fields.
 */
public class TestJvmWideState {

  private static final Pattern COMMENT =
      Pattern.compile("/\\*.*?\\*/|//[^\n]*", Pattern.DOTALL);
  /** A static field: its type's name, its own name, and = or ;. */
  private static final Pattern STATIC_FIELD = Pattern.compile(
      "(?m)^[ \\t]*(?:(?:public|protected|private|final|volatile|transient)"
      + "\\s+)*static\\s+(?:(?:final|volatile|transient)\\s+)*"
      + "([A-Za-z_][\\w.]*)\\s*(?:<[^;=()]*>)?\\s+([A-Za-z_]\\w*)\\s*[=;]");
  private static final Pattern COLLECTION =
      Pattern.compile(".*(Map|Set|List|Queue|Deque|Collection)");
  /** What makes an assignment a constant. */
  private static final Pattern UNMODIFIABLE = Pattern.compile(
      "Collections\\.(unmodifiable|empty)|\\b(List|Set|Map)\\.of\\("
      + "|\\bImmutable[A-Z]");
  private static final Pattern LISTED = Pattern.compile(
      "`([A-Z]\\w*\\.[A-Z][A-Z0-9_]*)`");

  @Test(timeout = 60_000)
  public void testOnlyTheListedFieldsHoldStaticState() throws IOException {
    TreeSet<String> listed = listed();
    TreeSet<String> found = mutableStaticCollections(TestLayers.sources());
    assertEquals("static collections against DESIGN.md's \"JVM-wide"
        + " state\" list", listed, found);
  }

  /** The check finds a planted field, and passes a constant one. */
  @Test(timeout = 60_000)
  public void testPlantedFieldsAreFound() throws IOException {
    Map<String, String> sources = TestLayers.sources();
    String file = "org/hdfsrdma/hadoop/client/ClientStream.java";
    assertTrue(sources.containsKey(file));
    int before = mutableStaticCollections(sources).size();
    Map<String, String> planted = new LinkedHashMap<>(sources);
    planted.put(file, sources.get(file).replaceFirst("\\{\n",
        "{\n  private static final java.util.Map<String, Long> SEEN_NODES ="
        + "\n      new java.util.HashMap<String, Long>();\n"
        + "  static final List<String> NAMES;\n"
        + "  static { NAMES = Collections.unmodifiableList(x()); }\n"
        + "  /** static Map<String, String> IN_A_COMMENT = null; */\n"));
    TreeSet<String> found = mutableStaticCollections(planted);
    assertEquals(before + 1, found.size());
    assertTrue(found.contains("ClientStream.SEEN_NODES"));
    // Assigned once unmodifiable and once not: mutable.
    planted.put(file, sources.get(file).replaceFirst("\\{\n",
        "{\n  static Set<String> NODES = Collections.emptySet();\n"
        + "  static void add() { NODES = new HashSet<String>(); }\n"));
    assertTrue(mutableStaticCollections(planted).contains(
        "ClientStream.NODES"));
  }

  /** Class.FIELD of each field DESIGN.md section 0's list names. */
  private static TreeSet<String> listed() throws IOException {
    String design = new String(Files.readAllBytes(
        new File(TestLayers.MODULE, "DESIGN.md").toPath()),
        StandardCharsets.UTF_8);
    int start = design.indexOf("**JVM-wide state.**");
    assertTrue("DESIGN.md has its JVM-wide state paragraph", start >= 0);
    int end = design.indexOf("\n\n", start);
    TreeSet<String> listed = new TreeSet<>();
    // Each item names its fields before its colon.
    for (String line : design.substring(start,
        end < 0 ? design.length() : end).split("\n")) {
      if (line.startsWith("- ") && line.indexOf(':') > 0) {
        Matcher m = LISTED.matcher(line.substring(0, line.indexOf(':')));
        while (m.find()) {
          listed.add(m.group(1));
        }
      }
    }
    assertTrue("DESIGN.md lists JVM-wide state", listed.size() > 3);
    return listed;
  }

  /**
   * Class.FIELD of each static collection field that some assignment does
   * not make unmodifiable.
   */
  static TreeSet<String> mutableStaticCollections(
      Map<String, String> sources) {
    TreeSet<String> found = new TreeSet<>();
    for (Map.Entry<String, String> e : sources.entrySet()) {
      String file = e.getKey();
      String cls = file.substring(file.lastIndexOf('/') + 1,
          file.length() - ".java".length());
      String text = COMMENT.matcher(TestLayers.STRING.matcher(e.getValue())
          .replaceAll("\"\"")).replaceAll("");
      Matcher m = STATIC_FIELD.matcher(text);
      while (m.find()) {
        String type = m.group(1);
        String name = m.group(2);
        if (!COLLECTION.matcher(type.substring(type.lastIndexOf('.') + 1))
            .matches()) {
          continue;
        }
        Matcher assigned = Pattern.compile("\\b" + name + "\\s*=(?!=)([^;]*);")
            .matcher(text);
        boolean constant = true;
        boolean any = false;
        while (assigned.find()) {
          any = true;
          constant &= UNMODIFIABLE.matcher(assigned.group(1)).find();
        }
        if (!any || !constant) {
          found.add(cls + "." + name);
        }
      }
    }
    return found;
  }
}
