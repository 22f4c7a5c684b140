package org.hdfsrdma.ucx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.Test;

/**
 * UCX loads into JVMs whose threads are running, so it must not rewrite
 * libc's code as it loads (its memory events, which this library turns
 * off): a thread inside a function being rewritten crashes the JVM.
 * {@code native/test/ucm_patch_race.c} shows the crash without the JVM.
 */
public class TestUcxMemoryHooks {

  /** This JVM, UCX loaded with the library's defaults: libc untouched. */
  @Test(timeout = 60_000)
  public void testLibcKeepsItsCodeWithTheDefaults() throws Exception {
    UcxTestUtils.assumeUcx();
    if (System.getenv("UCX_MEM_EVENTS") == null) {
      assertEquals("n", NativeIntrospection.appliedDefaults()
          .get("UCX_MEM_EVENTS"));
      try (TestGetter getter = new TestGetter(UcxTestUtils.TLS_SHM)) {
        assertEquals("", NativeIntrospection.rewrittenLibcFunctions());
      }
    }
  }

  /**
   * A fresh JVM, with the defaults and with an operator's
   * {@code UCX_MEM_EVENTS=y}: the second has UCX rewrite libc, which the
   * check sees and the log says once.
   */
  @Test(timeout = 120_000)
  public void testRewrittenLibcIsSeenAndLogged() throws Exception {
    UcxTestUtils.assumeUcx();
    String defaults = runHooksJvm(null);
    assertTrue(defaults, defaults.contains("HOOKS []"));
    assertFalse(defaults, defaults.contains("UCX rewrote libc"));

    String operators = runHooksJvm("y");
    assertTrue(operators, operators.matches("(?s).*HOOKS \\[[^]]*mmap.*"));
    assertEquals(operators, 1, count(operators, "UCX rewrote libc's"));
  }

  /** A {@code PeerMain hooks} JVM's output, stdout and stderr. */
  private static String runHooksJvm(String memoryEvents)
      throws IOException, InterruptedException {
    String classpath = System.getProperty("surefire.test.class.path",
        System.getProperty("java.class.path"));
    List<String> command = Arrays.asList(System.getProperty("java.home")
        + File.separator + "bin" + File.separator + "java", "-Xmx128m",
        "-XX:TieredStopAtLevel=1", "-cp", classpath,
        PeerMain.class.getName(), "hooks", UcxTestUtils.TLS_SHM);
    ProcessBuilder b = new ProcessBuilder(command).redirectErrorStream(true);
    b.environment().remove("UCX_MEM_EVENTS");
    if (memoryEvents != null) {
      b.environment().put("UCX_MEM_EVENTS", memoryEvents);
    }
    Process p = b.start();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (InputStream in = p.getInputStream()) {
      byte[] chunk = new byte[4096];
      for (int n; (n = in.read(chunk)) > 0;) {
        out.write(chunk, 0, n);
      }
    } finally {
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
      }
    }
    String text = out.toString(StandardCharsets.UTF_8.name());
    assertEquals(text, 0, p.exitValue());
    return text;
  }

  private static int count(String text, String what) {
    int n = 0;
    for (int i = text.indexOf(what); i >= 0; i = text.indexOf(what, i + 1)) {
      n++;
    }
    return n;
  }
}
