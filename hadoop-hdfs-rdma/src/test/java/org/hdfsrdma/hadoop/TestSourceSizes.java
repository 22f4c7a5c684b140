package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.Test;

/**
 * No source grows until only trimming keeps it readable: a product Java
 * file (the bridge's and the per-release classes' included) holds at most
 * {@link #MAX_JAVA_LINES} lines, a Python module of the benchmarks and
 * dev-support at most {@link #MAX_PYTHON_LINES}. A file that needs more
 * holds more than one concern; split it by concern.
 */
public class TestSourceSizes {

  static final int MAX_JAVA_LINES = 400;
  static final int MAX_PYTHON_LINES = 600;
  private static final String[] PYTHON_ROOTS = {"../benchmarks",
      "../dev-support"};

  @Test(timeout = 60_000)
  public void testProductJavaFiles() throws IOException {
    assertEquals("product Java files above " + MAX_JAVA_LINES + " lines",
        new TreeMap<String, Integer>(),
        above(TestLayers.sources(), MAX_JAVA_LINES));
  }

  @Test(timeout = 60_000)
  public void testPythonModules() throws IOException {
    Map<String, String> modules = new TreeMap<>();
    for (String root : PYTHON_ROOTS) {
      Path dir = new File(TestLayers.MODULE, root).toPath();
      try (Stream<Path> files = Files.walk(dir)) {
        for (Path p : files.filter(f -> f.toString().endsWith(".py"))
            .collect(Collectors.toList())) {
          modules.put(dir.getParent().relativize(p).toString(), new String(
              Files.readAllBytes(p), StandardCharsets.UTF_8));
        }
      }
    }
    assertTrue("Python modules found: " + modules.size(),
        modules.size() > 20);
    assertEquals("Python modules above " + MAX_PYTHON_LINES + " lines",
        new TreeMap<String, Integer>(), above(modules, MAX_PYTHON_LINES));
  }

  /** The check finds a file one line over, and passes one at the cap. */
  @Test(timeout = 60_000)
  public void testTheCapIsHeld() {
    Map<String, String> files = new TreeMap<>();
    files.put("AtCap.java", lines(MAX_JAVA_LINES));
    files.put("Over.java", lines(MAX_JAVA_LINES + 1));
    Map<String, Integer> expected = new TreeMap<>();
    expected.put("Over.java", MAX_JAVA_LINES + 1);
    assertEquals(expected, above(files, MAX_JAVA_LINES));
  }

  /** Files of more than {@code max} lines, with their line counts. */
  static Map<String, Integer> above(Map<String, String> files, int max) {
    Map<String, Integer> over = new TreeMap<>();
    for (Map.Entry<String, String> f : files.entrySet()) {
      int n = f.getValue().split("\n", -1).length
          - (f.getValue().endsWith("\n") ? 1 : 0);
      if (n > max) {
        over.put(f.getKey(), n);
      }
    }
    return over;
  }

  private static String lines(int n) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < n; i++) {
      b.append("x\n");
    }
    return b.toString();
  }
}
