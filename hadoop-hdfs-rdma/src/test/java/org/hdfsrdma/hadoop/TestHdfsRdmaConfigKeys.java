package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.File;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.HashMap;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.test.GenericTestUtils;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Test;

/**
 * The configuration keys: every KEY has its _DEFAULT, every key is
 * documented in hdfs-rdma-default.xml with the same default, and a value
 * an operator puts in a site file wins over the default.
 */
public class TestHdfsRdmaConfigKeys {

  @After
  public void tearDown() {
    UcxRuntime.shutdown();
  }

  /** KEY constant name to its key, and key to its _DEFAULT value. */
  private static Map<String, String> defaultsByKey() throws Exception {
    Map<String, String> defaults = new HashMap<String, String>();
    for (Field f : HdfsRdmaConfigKeys.class.getFields()) {
      if (!Modifier.isStatic(f.getModifiers())
          || !f.getName().endsWith("_KEY")) {
        continue;
      }
      String key = (String) f.get(null);
      String defaultName = f.getName().substring(0,
          f.getName().length() - "_KEY".length()) + "_DEFAULT";
      Field d = HdfsRdmaConfigKeys.class.getField(defaultName);
      assertNotNull(defaultName, d);
      defaults.put(key, String.valueOf(d.get(null)));
    }
    return defaults;
  }

  @Test
  public void testEveryKeyIsDocumentedWithItsDefault() throws Exception {
    Map<String, String> constants = defaultsByKey();
    assertFalse(constants.isEmpty());
    Configuration xml = new Configuration(false);
    xml.addResource(HdfsRdmaConfigKeys.DEFAULT_RESOURCE);
    String text;
    try (java.io.InputStream in = getClass().getClassLoader()
        .getResourceAsStream(HdfsRdmaConfigKeys.DEFAULT_RESOURCE)) {
      text = new String(org.apache.commons.io.IOUtils.toByteArray(in),
          StandardCharsets.UTF_8);
    }
    java.util.Set<String> documented = new java.util.TreeSet<String>();
    java.util.regex.Matcher m = java.util.regex.Pattern
        .compile("<name>([^<]+)</name>").matcher(text);
    while (m.find()) {
      documented.add(m.group(1).trim());
    }
    assertEquals(new java.util.TreeSet<String>(constants.keySet()),
        documented);
    assertEquals(documented.size(),
        text.split("<description>", -1).length - 1);
    for (Map.Entry<String, String> e : constants.entrySet()) {
      assertEquals("default of " + e.getKey(), e.getValue(),
          xml.get(e.getKey(), ""));
    }
  }

  @Test(timeout = 60_000)
  public void testSiteFileSettingsReachTheRuntime() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    File dir = GenericTestUtils.getTestDir("config-keys-" + System.nanoTime());
    dir.mkdirs();
    File site = new File(dir, "site.xml");
    Files.write(site.toPath(), ("<?xml version=\"1.0\"?><configuration>"
        + "<property><name>dfs.client.rdma.packet-timers.enabled</name>"
        + "<value>true</value></property></configuration>")
        .getBytes(StandardCharsets.UTF_8));
    Configuration conf = new Configuration();
    conf.addResource(site.toURI().toURL());
    UcxRuntime.shutdown();
    UcxRuntime runtime = UcxRuntime.get(conf);
    assertNotNull("a site file's setting is not overridden by the default",
        runtime.metrics().clientTimes());
  }
  /**
   * Every UCX setting the runtime gives UCX is one UCX applies: UCX names
   * a setting it does not know in an "invalid configurations" warning on
   * the process's stderr (native, so the runtime runs in a JVM of its own
   * here), and otherwise silently ignores it.
   */
  @Test(timeout = 120_000)
  public void testUcxUsesEverySettingTheRuntimeGivesIt() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    java.util.List<String> command = ChildJvm.command("-Xmx256m");
    command.add("-cp");
    command.add(ChildJvm.classPath());
    command.add(StartRuntime.class.getName());
    ProcessBuilder builder = new ProcessBuilder(command)
        .redirectErrorStream(true);
    // UCX's own environment must not hide or change what it says.
    builder.environment().keySet().removeIf(k -> k.startsWith("UCX_"));
    Process child = builder.start();
    String out = new String(org.apache.commons.io.IOUtils.toByteArray(
        child.getInputStream()), StandardCharsets.UTF_8);
    assertTrue(child.waitFor(60, java.util.concurrent.TimeUnit.SECONDS));
    assertEquals(out, 0, child.exitValue());
    assertTrue(out, out.contains("runtime started"));
    assertFalse(out, out.contains("invalid configuration"));
  }

  /** The child JVM of the test above: starts the runtime and stops it. */
  public static final class StartRuntime {
    public static void main(String[] args) throws Exception {
      UcxRuntime runtime = UcxRuntime.get(new Configuration());
      System.out.println("runtime started with " + runtime.worker()
          .context().options());
      UcxRuntime.shutdown();
      System.exit(0);
    }
  }
}
