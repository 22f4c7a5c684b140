package org.hdfsrdma.hadoop.dropin;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.nio.file.Files;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

import org.apache.commons.io.IOUtils;
import org.apache.hadoop.test.GenericTestUtils;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * The deployed drop-in jar: an agent whose patched classes shadow nothing
 * on the class path, and which replaces each group of Hadoop classes all
 * or nothing, judged by what the JVM actually loaded ({@link PatchProbe}).
 *
 * <p>Checked: the manifest (Premain-, Agent- and Main-Class); no patched class
 * at its normal path and no class of the jar in Hadoop's jars; Apache 2.9.2's
 * digests accepted. PatchProbe, in JVMs of its own: both groups replaced with
 * the agent; neither with the jar on the class path only; with one foreign
 * DFSPacket first on the class path, one line names DFSPacket; attached to a
 * running JVM (Agent-Class), both groups, or, when DataStreamer had loaded
 * already, the DataNode group only, with one line saying why.
 */
public class TestDropinJar {

  private static final String PREFIX = "hdfs-rdma-patched/";
  private static File work;

  @BeforeClass
  public static void setUp() {
    work = GenericTestUtils.getTestDir("dropin-jar-" + System.nanoTime());
    assertTrue(work.mkdirs());
  }

  private static Properties groups(JarFile jar) throws IOException {
    JarEntry e = jar.getJarEntry(PREFIX + "groups.properties");
    assertNotNull("groups.properties in the jar", e);
    Properties p = new Properties();
    try (InputStream in = jar.getInputStream(e)) {
      p.load(in);
    }
    return p;
  }

  /** The patched classes of {@code release}'s two groups. */
  private static List<String> classes(Properties groups, String release) {
    List<String> all = new ArrayList<String>();
    for (String g : new String[] {"client", "datanode"}) {
      all.addAll(Arrays.asList(groups.getProperty(release + "." + g
          + ".classes").trim().split("\\s+")));
    }
    return all;
  }

  private static String sha256(byte[] bytes) throws Exception {
    StringBuilder sb = new StringBuilder();
    for (byte b : MessageDigest.getInstance("SHA-256").digest(bytes)) {
      sb.append(String.format("%02x", b));
    }
    return sb.toString();
  }

  @Test(timeout = 60_000)
  public void testAgentJarShadowsNothing() throws Exception {
    File dropin = AgentCluster.dropinJar();
    try (JarFile jar = new JarFile(dropin)) {
      Attributes main = jar.getManifest().getMainAttributes();
      assertEquals("org.hdfsrdma.hadoop.agent.HdfsRdmaAgent",
          main.getValue("Premain-Class"));
      assertEquals("org.hdfsrdma.hadoop.agent.HdfsRdmaAgent",
          main.getValue("Agent-Class"));
      assertEquals("org.hdfsrdma.hadoop.tools.Check",
          main.getValue("Main-Class"));
      Properties groups = groups(jar);
      List<String> releases = Arrays.asList(
          groups.getProperty("releases").trim().split("\\s+"));
      assertTrue(releases.toString(), releases.containsAll(
          Arrays.asList("2.9.1", "2.9.2", "2.10.2")));
      for (String release : releases) {
        for (String c : classes(groups, release)) {
          assertNull(c + " at its normal path",
              jar.getJarEntry(c + ".class"));
          assertNotNull(c + " under " + PREFIX + release + "/",
              jar.getJarEntry(PREFIX + release + "/" + c + ".class"));
        }
      }
      List<String> patched = classes(groups, "2.9.2");
      // 17 client classes (DataStreamer and its nested classes, DFSPacket,
      // DFSOutputStream, BlockReaderRemote, BlockReaderRemote2,
      // BlockReaderFactory and its nested classes) and 9 DataNode classes
      // (BlockReceiver, DataXceiver, DataXceiverServer and their nested
      // classes).
      assertEquals(26, patched.size());
      for (String c : patched) {
        // This JVM's class path holds Apache's 2.9.2 jars.
        URL original = ClassLoader.getSystemResource(c + ".class");
        assertTrue(String.valueOf(original), original.toString().matches(
            "jar:file:.*/hadoop-hdfs(-client)?-2\\.9\\.2\\.jar!/.*"));
        String digest;
        try (InputStream in = original.openStream()) {
          digest = sha256(IOUtils.toByteArray(in));
        }
        assertTrue(c + ": Apache 2.9.2's digest", Arrays.asList(groups
            .getProperty("2.9.2.sha256." + c).split(" ")).contains(digest));
      }
      // No class of the jar exists in Hadoop's jars: on the class path
      // it shadows nothing.
      int checked = 0;
      for (Enumeration<JarEntry> en = jar.entries(); en.hasMoreElements();) {
        String name = en.nextElement().getName();
        if (!name.endsWith(".class") || name.startsWith(PREFIX)) {
          continue;
        }
        checked++;
        for (URL u : Collections.list(
            ClassLoader.getSystemClassLoader().getResources(name))) {
          assertTrue(name + " also in " + u, u.toString().contains(
              dropin.getName()));
        }
      }
      assertTrue("classes checked: " + checked, checked > 50);
    }
  }

  /** Runs PatchProbe: the three "X patched=" lines and the log. */
  private static String probe(String name, boolean agent, String classPath)
      throws Exception {
    List<String> command = new ArrayList<String>();
    command.add(System.getProperty("java.home") + "/bin/java");
    if (agent) {
      command.add(AgentCluster.agent());
    }
    command.add("-cp");
    command.add(classPath + File.pathSeparator + testClasses());
    command.add(PatchProbe.class.getName());
    File log = new File(work, name + ".log");
    Process p = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(log).start();
    assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    String out = AgentCluster.read(log);
    assertEquals(out, 0, p.exitValue());
    return out;
  }

  private static String testClasses() {
    return new File(PatchProbe.class.getProtectionDomain().getCodeSource()
        .getLocation().getPath()).getPath();
  }

  private static int count(String text, String part) {
    int n = 0;
    for (int i = text.indexOf(part); i >= 0; i = text.indexOf(part, i + 1)) {
      n++;
    }
    return n;
  }

  @Test(timeout = 60_000)
  public void testAgentReplacesBothGroupsOnApacheHadoop() throws Exception {
    String out = probe("both-groups", true, AgentCluster.hadoopClassPath());
    assertTrue(out, out.contains("DataStreamer patched=true"));
    assertTrue(out, out.contains("BlockReceiver patched=true"));
    assertTrue(out, out.contains("DataXceiver patched=true"));
    assertEquals(out, 2, count(out, "hdfs-rdma: the UCX write path's"));
  }

  @Test(timeout = 60_000)
  public void testJarOnTheClassPathReplacesNothing() throws Exception {
    String out = probe("class-path-only", false, AgentCluster.dropinJar()
        + File.pathSeparator + AgentCluster.hadoopClassPath());
    assertTrue(out, out.contains("DataStreamer patched=false"));
    assertTrue(out, out.contains("BlockReceiver patched=false"));
    assertTrue(out, out.contains("DataXceiver patched=false"));
  }

  /**
   * One class of the client group (DFSPacket) differs from Apache's: the
   * whole client group stays Hadoop's, even DataStreamer whose own bytes
   * match; the DataNode group, intact, is replaced.
   */
  @Test(timeout = 60_000)
  public void testOneForeignClassKeepsItsWholeGroup() throws Exception {
    File shadow = new File(work, "shadow");
    File packet = new File(shadow, "org/apache/hadoop/hdfs/DFSPacket.class");
    assertTrue(packet.getParentFile().mkdirs());
    try (JarFile jar = new JarFile(AgentCluster.dropinJar());
        InputStream in = jar.getInputStream(jar.getJarEntry(
            PREFIX + "2.9.2/org/apache/hadoop/hdfs/DFSPacket.class"))) {
      // The same source compiled by another javac: other bytes.
      Files.write(packet.toPath(), IOUtils.toByteArray(in));
    }
    String out = probe("foreign-dfspacket", true, shadow
        + File.pathSeparator + AgentCluster.hadoopClassPath());
    assertTrue(out, out.contains("DataStreamer patched=false"));
    assertTrue(out, out.contains("BlockReceiver patched=true"));
    assertTrue(out, out.contains("DataXceiver patched=true"));
    assertEquals(out, 1, count(out, "hdfs-rdma: the client classes stay"
        + " Hadoop's own and writes stay on TCP: org.apache.hadoop.hdfs"
        + ".DFSPacket from " + shadow + "/org/apache/hadoop/hdfs"
        + "/DFSPacket.class is not Apache Hadoop 2.9.2's (a vendor build or"
        + " a mix of releases?)"));
    assertFalse(out, out.contains("client classes replace"));
  }

  /**
   * Starts AttachTarget, attaches the agent to it (the jar's Agent-Class)
   * once it is ready, lets it run PatchProbe; returns its output.
   */
  private static String attach(String name, String... args) throws Exception {
    List<String> command = new ArrayList<String>();
    command.add(System.getProperty("java.home") + "/bin/java");
    command.add("-cp");
    command.add(AgentCluster.hadoopClassPath() + File.pathSeparator
        + testClasses());
    command.add(AttachTarget.class.getName());
    Collections.addAll(command, args);
    File log = new File(work, name + ".log");
    Process p = new ProcessBuilder(command).redirectErrorStream(true)
        .start();
    java.io.BufferedReader out = new java.io.BufferedReader(
        new java.io.InputStreamReader(p.getInputStream(),
            java.nio.charset.StandardCharsets.UTF_8));
    StringBuilder text = new StringBuilder();
    try {
      for (String line; (line = out.readLine()) != null;) {
        text.append(line).append('\n');
        if (line.equals("ready")) {
          break;
        }
      }
      assertTrue(text.toString(), text.toString().contains("ready\n"));
      // com.sun.tools.attach, by reflection: this code is Java 8 API.
      Class<?> vmClass = Class.forName("com.sun.tools.attach.VirtualMachine");
      Object vm = vmClass.getMethod("attach", String.class).invoke(null,
          String.valueOf(pid(p)));
      try {
        vmClass.getMethod("loadAgent", String.class).invoke(vm,
            AgentCluster.dropinJar().getAbsolutePath());
      } finally {
        vmClass.getMethod("detach").invoke(vm);
      }
      p.getOutputStream().write('\n');
      p.getOutputStream().flush();
      for (String line; (line = out.readLine()) != null;) {
        text.append(line).append('\n');
      }
      assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    } finally {
      p.destroyForcibly();
      Files.write(log.toPath(), text.toString().getBytes(
          java.nio.charset.StandardCharsets.UTF_8));
    }
    assertEquals(text.toString(), 0, p.exitValue());
    return text.toString();
  }

  private static long pid(Process p) throws Exception {
    return (Long) Process.class.getMethod("pid").invoke(p); // Java 9+
  }

  @Test(timeout = 60_000)
  public void testAttachedAgentReplacesGroupsNotYetLoaded() throws Exception {
    String out = attach("attach");
    assertTrue(out, out.contains("DataStreamer patched=true"));
    assertTrue(out, out.contains("BlockReceiver patched=true"));
    assertTrue(out, out.contains("DataXceiver patched=true"));
  }

  @Test(timeout = 60_000)
  public void testAttachedAgentLeavesALoadedGroupAlone() throws Exception {
    String out = attach("attach-late", "preload");
    assertTrue(out, out.contains("DataStreamer patched=false"));
    assertTrue(out, out.contains("BlockReceiver patched=true"));
    assertEquals(out, 1, count(out, "hdfs-rdma: writes stay on TCP: the"
        + " client classes stay Hadoop's own: org.apache.hadoop.hdfs"
        + ".DataStreamer was loaded before the agent attached"));
  }
}
