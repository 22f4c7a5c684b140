package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import javax.management.MBeanServer;
import javax.management.ObjectName;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FileUtil;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.io.IOUtils;
import org.apache.hadoop.metrics2.MetricsSystem;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.test.GenericTestUtils;
import org.apache.hadoop.util.ServicePlugin;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.datanode.UcxDataNode;
import org.hdfsrdma.hadoop.metrics.UcxDataNodeMetrics;
import org.hdfsrdma.hadoop.metrics.UcxJvmMetrics;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Test;

/**
 * The DataNode plugin in a MiniDFSCluster: on, it starts the JVM's UCX
 * runtime and the JMX bean, which the DataNode's /jmx servlet serves with
 * what UCX carried; off, or where UCX is unusable or its libraries are
 * missing, it says why, starts nothing, and the DataNode writes over TCP.
 *
 * <p>This is the older plugin entry ({@code dfs.datanode.plugins}); the one
 * switch is {@code TestDataNodeStart}'s. On, each DataNode's UCX side is found
 * by its DataNode, its metrics source registered under its name and counting
 * what UCX carried; off or unable, nothing starts (no runtime, no source). A
 * DataNode's shutdown stops its plugin and withdraws its source; the runtime's
 * shutdown withdraws the JVM's.
 */
public class TestUcxDataNodePlugin {

  private static final int SIZE = 3 * 1024 * 1024 + 4321;

  private MiniDFSCluster cluster;
  private File work;

  @After
  public void tearDown() {
    if (cluster != null) {
      cluster.shutdown();
    }
    UcxRuntime.shutdown();
    if (work != null) {
      FileUtil.fullyDelete(work);
    }
  }

  private static Configuration conf(boolean enabled) {
    Configuration conf = new Configuration();
    conf.set(DFSConfigKeys.DFS_DATANODE_PLUGINS_KEY,
        UcxDataNodePlugin.class.getName());
    conf.setBoolean(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY, enabled);
    conf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY, enabled);
    conf.setLong(DFSConfigKeys.DFS_BLOCK_SIZE_KEY, 1024 * 1024);
    return conf;
  }

  /** The plugin instance a DataNode started. */
  @SuppressWarnings("unchecked")
  static UcxDataNodePlugin plugin(DataNode dn) throws Exception {
    java.lang.reflect.Field f = DataNode.class.getDeclaredField("plugins");
    f.setAccessible(true);
    List<ServicePlugin> plugins = (List<ServicePlugin>) f.get(dn);
    for (ServicePlugin p : plugins) {
      if (p instanceof UcxDataNodePlugin) {
        return (UcxDataNodePlugin) p;
      }
    }
    throw new AssertionError("no UcxDataNodePlugin in " + plugins);
  }

  private static byte[] writeAndRead(FileSystem fs, String name, int size,
      short replication) throws Exception {
    byte[] data = new byte[size];
    new Random(size).nextBytes(data);
    Path path = new Path(name);
    try (FSDataOutputStream out = fs.create(path, replication)) {
      out.write(data);
    }
    assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
    return data;
  }

  private static boolean jvmSourceRegistered() {
    return DefaultMetricsSystem.instance().getSource(
        UcxJvmMetrics.SOURCE_NAME) != null;
  }

  @Test(timeout = 180_000)
  public void testEnabledDataNodesServeUcxAndPublishMetrics()
      throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    cluster = new MiniDFSCluster.Builder(conf(true)).numDataNodes(2).build();
    cluster.waitActive();
    UcxRuntime runtime = UcxRuntime.current();
    assertNotNull("the plugin started the JVM's UCX runtime", runtime);
    MetricsSystem ms = DefaultMetricsSystem.instance();
    assertNotNull("the JVM's metrics source is registered",
        ms.getSource(UcxJvmMetrics.SOURCE_NAME));
    List<UcxDataNodePlugin> plugins = new ArrayList<UcxDataNodePlugin>();
    for (DataNode dn : cluster.getDataNodes()) {
      UcxDataNodePlugin plugin = plugin(dn);
      plugins.add(plugin);
      assertTrue(plugin.isServing());
      assertNull(plugin.disabledReason());
      UcxDataNode d = plugin.dataNode();
      assertSame("found by its DataNode", d, UcxDataNode.of(dn));
      assertEquals(dn.getDisplayName(), d.name());
      assertEquals(UcxDataNodeMetrics.SOURCE_PREFIX
          + dn.getDisplayName().replace(':', '-'), d.metrics().sourceName());
      assertNotNull("its metrics source is registered",
          ms.getSource(d.metrics().sourceName()));
      assertEquals(0, d.metrics().dataBytesFetched());
    }

    // A UCX client: both replicas of every block arrive by UCX.
    writeAndRead(cluster.getFileSystem(), "/plugin", SIZE, (short) 2);
    final long blocks = (SIZE + 1024 * 1024 - 1) / (1024 * 1024);
    for (UcxDataNodePlugin plugin : plugins) {
      UcxDataNodeMetrics m = plugin.dataNode().metrics();
      GenericTestUtils.waitFor(() -> m.blocksOverUcx() == blocks, 100,
          30_000);
      assertEquals(SIZE, m.dataBytesFetched());
      assertEquals(0, m.blocksOverTcp());
      assertTrue(m.get(UcxDataNodeMetrics.PACKETS_FETCHED)
          >= SIZE / (64 * 1024));
    }
    assertEquals(SIZE, runtime.metrics().dataBytesSent());
    assertEquals(0, runtime.metrics().rejectedMessages());

    // Stopping the DataNodes stops their plugins and withdraws their
    // sources; the runtime's shutdown withdraws the JVM's.
    cluster.shutdown();
    cluster = null;
    for (UcxDataNodePlugin p : plugins) {
      assertFalse(p.isServing());
      assertEquals("stopped", p.disabledReason());
      assertNull(p.dataNode());
    }
    UcxRuntime.shutdown();
    assertNull(DefaultMetricsSystem.instance().getSource(
        UcxJvmMetrics.SOURCE_NAME));
  }

  @Test(timeout = 180_000)
  public void testDisabledDataNodesStartNoUcx() throws Exception {
    cluster = new MiniDFSCluster.Builder(conf(false)).numDataNodes(1).build();
    cluster.waitActive();
    UcxDataNodePlugin plugin = plugin(cluster.getDataNodes().get(0));
    assertFalse(plugin.isServing());
    assertEquals(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY
        + " is false", plugin.disabledReason());
    writeAndRead(cluster.getFileSystem(), "/off", SIZE, (short) 1);
    assertNull("nothing of UCX started", UcxRuntime.current());
    assertFalse(jvmSourceRegistered());
  }

  /**
   * UCX present but unusable (here: it accepts none of the transports
   * configured): the plugin says why and the DataNode writes over TCP.
   */
  @Test(timeout = 180_000)
  public void testUnusableUcxLeavesTheDataNodeOnTcp() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    Configuration conf = conf(true);
    conf.set(HdfsRdmaConfigKeys.DFS_RDMA_UCX_TLS_KEY, "no_such_transport");
    cluster = new MiniDFSCluster.Builder(conf).numDataNodes(1).build();
    cluster.waitActive();
    UcxDataNodePlugin plugin = plugin(cluster.getDataNodes().get(0));
    assertFalse(plugin.isServing());
    assertNotNull(plugin.disabledReason());
    assertTrue(plugin.disabledReason(),
        plugin.disabledReason().contains("UCX refused"));
    writeAndRead(cluster.getFileSystem(), "/unusable", SIZE, (short) 1);
    assertNull(UcxRuntime.current());
    assertFalse(jvmSourceRegistered());
  }

  /**
   * UCX's tcp transport among the configured ones, without the operator's
   * word that the network is trusted: nothing of UCX starts (so no port
   * opens), the plugin says why and how to fix it, and files go over TCP.
   */
  @Test(timeout = 180_000)
  public void testTcpTransportNeedsTheOperatorsWord() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    Configuration conf = conf(true);
    conf.set(HdfsRdmaConfigKeys.DFS_RDMA_UCX_TLS_KEY, "tcp,sysv");
    cluster = new MiniDFSCluster.Builder(conf).numDataNodes(1).build();
    cluster.waitActive();
    UcxDataNodePlugin plugin = plugin(cluster.getDataNodes().get(0));
    assertFalse(plugin.isServing());
    String why = plugin.disabledReason();
    assertNotNull(why);
    assertTrue(why, why.contains("UCX's tcp transport (tcp/")
        && why.contains("dfs.rdma.ucx.allow-tcp=true"));
    writeAndRead(cluster.getFileSystem(), "/no-tcp", SIZE, (short) 1);
    assertNull("nothing of UCX started", UcxRuntime.current());
    assertFalse(jvmSourceRegistered());
  }

  /**
   * A DataNode JVM whose UCX libraries cannot load (an empty libucp.so.0
   * first on the library paths, as on a host without UCX): its plugin
   * names the reason, nothing of UCX starts, and a client of that JVM
   * writes over TCP. Run in a JVM of its own: a JVM loads UCX once.
   */
  @Test(timeout = 180_000)
  public void testMissingUcxLibrariesLeaveTheDataNodeOnTcp()
      throws Exception {
    work = GenericTestUtils.getTestDir("plugin-no-ucx-" + System.nanoTime());
    File broken = new File(work, "broken-ucx");
    assertTrue(broken.mkdirs());
    Files.write(new File(broken, "libucp.so.0").toPath(), new byte[0]);
    List<String> command = ChildJvm.command("-Xmx512m",
        "-Djava.library.path=" + broken.getAbsolutePath(),
        "-Dtest.build.data=" + new File(work, "data"));
    command.add("-cp");
    command.add(ChildJvm.classPath());
    command.add(WithoutUcxLibraries.class.getName());
    File log = new File(work, "child.log");
    ProcessBuilder builder = new ProcessBuilder(command)
        .redirectErrorStream(true).redirectOutput(log);
    String path = builder.environment().get("LD_LIBRARY_PATH");
    builder.environment().put("LD_LIBRARY_PATH", broken.getAbsolutePath()
        + (path == null || path.isEmpty() ? "" : ":" + path));
    Process child = builder.start();
    try {
      assertTrue("the child JVM finished",
          child.waitFor(150, TimeUnit.SECONDS));
    } finally {
      child.destroyForcibly();
    }
    String out = new String(Files.readAllBytes(log.toPath()),
        StandardCharsets.UTF_8);
    assertEquals(out, 0, child.exitValue());
    assertTrue(out, out.contains("ucx-available=false"));
    assertTrue(out, out.contains("serving=false reason=UCX native libraries"
        + " are not usable"));
    assertTrue(out, out.contains("runtime=null source=false"));
    assertTrue(out, out.contains("file intact"));
  }

  /** The child JVM of {@link #testMissingUcxLibrariesLeaveTheDataNodeOnTcp}. */
  public static final class WithoutUcxLibraries {
    public static void main(String[] args) throws Exception {
      System.out.println("ucx-available=" + UcxLibrary.isAvailable());
      MiniDFSCluster c = new MiniDFSCluster.Builder(conf(true))
          .numDataNodes(1).build();
      try {
        c.waitActive();
        UcxDataNodePlugin p = plugin(c.getDataNodes().get(0));
        System.out.println("serving=" + p.isServing() + " reason="
            + p.disabledReason());
        writeAndRead(c.getFileSystem(), "/no-ucx", SIZE, (short) 1);
        System.out.println("file intact");
        System.out.println("runtime=" + UcxRuntime.current() + " source="
            + jvmSourceRegistered());
      } finally {
        c.shutdown();
      }
      System.exit(0);
    }
  }
}
