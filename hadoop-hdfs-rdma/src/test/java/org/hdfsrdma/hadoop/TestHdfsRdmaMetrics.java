package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;
import static org.junit.Assume.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.io.IOUtils;
import org.apache.hadoop.metrics2.MetricsSystem;
import org.apache.hadoop.metrics2.impl.MetricsSystemImpl;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.test.GenericTestUtils;
import org.hdfsrdma.hadoop.PacketPhaseTimes.Phase;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * hdfs-rdma's counters and phase times reach Hadoop's metrics2 sinks: a
 * {@code FileSink} configured the way an operator configures a DataNode's
 * ({@code datanode.sink.file.*} in {@code hadoop-metrics2.properties})
 * receives the record {@code dfs.HdfsRdma} with exactly the values the
 * runtime counted for a file written through UCX, the phase rates only
 * when packet timers are on; JMX serves the source as
 * {@code Hadoop:service=DataNode,name=HdfsRdmaMetrics} next to the
 * unchanged {@code Hadoop:service=DataNode,name=HdfsRdma}; closing the
 * runtime removes the source.
 *
 * <p>Each test runs on a metrics system of its own, initialised with the
 * prefix {@code DataNode} before the cluster starts, as a DataNode's JVM
 * initialises it (MiniDFSCluster's NameNode would otherwise start this
 * JVM's metrics system first, with the {@code namenode} prefix); the
 * properties file is found on the class path as a DataNode finds it in
 * its configuration directory, here through the context class loader, so
 * no file is left where other tests of this JVM would load it.
 */
public class TestHdfsRdmaMetrics {

  private static final String SOURCE_BEAN =
      "Hadoop:service=DataNode,name=" + HdfsRdmaMetrics.SOURCE_NAME;
  private static final String HAND_MADE_BEAN =
      "Hadoop:service=DataNode,name=HdfsRdma";
  private static final String RECORD = " dfs." + HdfsRdmaMetrics.RECORD_NAME
      + ": ";
  private static final int BLOCK_SIZE = 1024 * 1024;

  private MiniDFSCluster cluster;
  private File sinkFile;
  private MetricsSystem previousSystem;

  @Before
  public void startMetricsSystem() throws IOException {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    UcxRuntime.shutdown(); // this test's settings start the runtime
    File dir = GenericTestUtils.getTestDir("hdfs-rdma-metrics-"
        + System.nanoTime());
    File confDir = new File(dir, "conf");
    assertTrue(confDir.mkdirs());
    sinkFile = new File(dir, "datanode-metrics.out");
    try (PrintWriter w = new PrintWriter(new File(confDir,
        "hadoop-metrics2.properties"), "UTF-8")) {
      w.println("*.period=1");
      w.println("*.sink.file.class=org.apache.hadoop.metrics2.sink.FileSink");
      w.println("datanode.sink.file.filename=" + sinkFile.getAbsolutePath());
      w.println("datanode.sink.file.source.filter.include="
          + HdfsRdmaMetrics.SOURCE_NAME);
    }
    previousSystem = DefaultMetricsSystem.setInstance(new MetricsSystemImpl());
    DefaultMetricsSystem.setMiniClusterMode(true);
    Thread thread = Thread.currentThread();
    ClassLoader original = thread.getContextClassLoader();
    try (URLClassLoader confLoader = new URLClassLoader(
        new URL[] {confDir.toURI().toURL()}, original)) {
      thread.setContextClassLoader(confLoader);
      DefaultMetricsSystem.initialize("DataNode");
    } finally {
      thread.setContextClassLoader(original);
    }
  }

  @After
  public void tearDown() {
    try {
      if (cluster != null) {
        cluster.shutdown();
      }
      UcxRuntime.shutdown();
    } finally {
      if (previousSystem != null) {
        DefaultMetricsSystem.shutdown();
        DefaultMetricsSystem.setInstance(previousSystem);
      }
    }
  }

  /** Writes {@code bytes} at replication 3 and reads them back. */
  private void writeFile(Configuration conf, int bytes) throws Exception {
    cluster = new MiniDFSCluster.Builder(conf).numDataNodes(3).build();
    cluster.waitActive();
    FileSystem fs = cluster.getFileSystem();
    byte[] data = new byte[bytes];
    new Random(bytes).nextBytes(data);
    Path path = new Path("/metered");
    try (FSDataOutputStream out = fs.create(path, (short) 3)) {
      out.write(data);
    }
    assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
  }

  /**
   * Waits until the sink's latest {@code dfs.HdfsRdma} record carries every
   * value {@code expected} gives (asked again at each look, so values the
   * DataNodes' threads still move settle first), and returns that record
   * (name to value).
   */
  private Map<String, String> awaitRecord(
      Supplier<Map<String, String>> expected) throws Exception {
    AtomicReference<Map<String, String>> last =
        new AtomicReference<Map<String, String>>();
    AtomicReference<Map<String, String>> wanted =
        new AtomicReference<Map<String, String>>();
    try {
      GenericTestUtils.waitFor(() -> {
        wanted.set(expected.get());
        last.set(lastRecord());
        for (Map.Entry<String, String> e : wanted.get().entrySet()) {
          if (!e.getValue().equals(last.get().get(e.getKey()))) {
            return false;
          }
        }
        return true;
      }, 200, 60_000);
    } catch (TimeoutException e) {
      fail("the file sink's last " + RECORD.trim() + " record " + last.get()
          + " does not show " + wanted.get());
    }
    return last.get();
  }

  /** The last complete {@code dfs.HdfsRdma} line of the sink file, parsed. */
  private Map<String, String> lastRecord() {
    Map<String, String> record = new LinkedHashMap<String, String>();
    List<String> lines;
    try {
      lines = Files.readAllLines(sinkFile.toPath(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return record;
    }
    for (int i = lines.size() - 1; i >= 0; i--) {
      String line = lines.get(i);
      int at = line.indexOf(RECORD);
      if (at < 0) {
        continue;
      }
      for (String field : line.substring(at + RECORD.length()).split(", ")) {
        int eq = field.indexOf('=');
        if (eq > 0) {
          record.put(field.substring(0, eq), field.substring(eq + 1));
        }
      }
      break;
    }
    return record;
  }

  private static Configuration timedConf() {
    Configuration conf = TestUcxWritePath.ucxConf();
    conf.setBoolean(
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_PACKET_TIMERS_ENABLED_KEY, true);
    conf.setBoolean(
        HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_PACKET_TIMERS_ENABLED_KEY, true);
    return conf;
  }

  private static String jmxServlet(int infoPort, String query)
      throws IOException {
    URL url = new URL("http://127.0.0.1:" + infoPort + "/jmx?qry=" + query);
    try (InputStream in = url.openStream()) {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      IOUtils.copyBytes(in, bytes, 4096, false);
      return bytes.toString("UTF-8");
    }
  }

  @Test(timeout = 300_000)
  public void testCountersAndPhaseRatesReachTheFileSink() throws Exception {
    int size = 2 * BLOCK_SIZE + 4321; // three blocks
    writeFile(timedConf(), size);
    UcxRuntime runtime = UcxRuntime.current();
    // UCX carried every byte to every replica: the runtime's own counters
    // (a DataNode counts its replica once its receiver is done with it).
    GenericTestUtils.waitFor(() -> runtime.blocksOverUcx() == 9, 100,
        30_000);
    assertEquals(0, runtime.blocksOverTcp());
    assertEquals(3L * size, runtime.totalFetched());
    assertEquals(size, runtime.dataBytesSent());
    PacketPhaseTimes times = runtime.phaseTimes();
    assertTrue(times.count(Phase.COPY) >= 3 * 32);

    // The sink shows exactly the runtime's values.
    Map<String, String> record = awaitRecord(() -> {
      Map<String, String> expected = new LinkedHashMap<String, String>();
      expected.put("Context", "dfs");
      expected.put("DataBytesFetched", Long.toString(3L * size));
      expected.put("PacketsFetched", Long.toString(runtime.packetsFetched()));
      expected.put("BlocksOverUcx", "9");
      expected.put("BlocksOverTcp", "0");
      expected.put("DataBytesSent", Long.toString(size));
      expected.put("RejectedMessages", "0");
      expected.put("StrayMessages", "0");
      expected.put("ClientConnects",
          Long.toString(runtime.endpointConnects()));
      expected.put("OpenSessions", "0");
      expected.put("ClientPoolInUseBytes", "0");
      expected.put("LandingPoolInUseBytes", "0");
      for (Phase p : Phase.values()) {
        expected.put(HdfsRdmaMetrics.rateName(p) + "NumOps",
            Long.toString(times.count(p)));
      }
      return expected;
    });
    assertTrue(record.toString(), record.containsKey("Hostname"));
    assertTrue(record.toString(), record.containsKey("ClientHellos"));
    assertTrue(record.toString(),
        Long.parseLong(record.get("ClientPoolRegisteredBytes")) > 0);
    // Same host: copied, verified and written per packet, no get waited for.
    for (Phase p : new Phase[] {Phase.CLIENT_SEND, Phase.CLIENT_SENT_TO_ACK,
        Phase.DESCRIPTOR_WAIT, Phase.COPY, Phase.VERIFY, Phase.DISK}) {
      String avg = HdfsRdmaMetrics.rateName(p) + "AvgTime";
      assertTrue(avg + " in " + record,
          Double.parseDouble(record.get(avg)) > 0);
    }
    assertEquals("0", record.get("DnGetWaitNanosNumOps"));

    // JMX: the source under its stable name, once, and the hand-made bean
    // with its attributes as before.
    MBeanServer server = ManagementFactory.getPlatformMBeanServer();
    assertEquals(1, server.queryNames(new ObjectName("Hadoop:service=*,name="
        + HdfsRdmaMetrics.SOURCE_NAME + "*"), null).size());
    ObjectName source = new ObjectName(SOURCE_BEAN);
    GenericTestUtils.waitFor(() -> {
      try {
        return Long.valueOf(3L * size).equals(
            server.getAttribute(source, "DataBytesFetched"));
      } catch (Exception e) {
        return false;
      }
    }, 200, 30_000);
    assertEquals(times.count(Phase.DISK),
        server.getAttribute(source, "DnDiskNanosNumOps"));
    assertEquals(3L * size, server.getAttribute(new ObjectName(
        HAND_MADE_BEAN), "DataBytesFetched"));
    // What JMX exporters scrape: the DataNode's /jmx servlet.
    String json = jmxServlet(cluster.getDataNodes().get(0).getInfoPort(),
        SOURCE_BEAN);
    assertTrue(json, json.contains("\"name\" : \"" + SOURCE_BEAN + "\""));
    assertTrue(json, json.contains("\"DataBytesFetched\" : " + 3L * size));

    // Closing the runtime takes the source out of metrics2 and JMX.
    UcxRuntime.shutdown();
    assertNull(DefaultMetricsSystem.instance().getSource(
        HdfsRdmaMetrics.SOURCE_NAME));
    assertFalse(server.isRegistered(source));
  }

  @Test(timeout = 300_000)
  public void testNoPhaseRatesWithoutTimers() throws Exception {
    writeFile(TestUcxWritePath.ucxConf(), BLOCK_SIZE);
    UcxRuntime runtime = UcxRuntime.current();
    assertNull(runtime.clientTimes());
    assertNull(runtime.dataNodeTimes());
    GenericTestUtils.waitFor(() -> runtime.blocksOverUcx() == 3, 100,
        30_000);
    assertEquals(3L * BLOCK_SIZE, runtime.totalFetched());
    Map<String, String> expected = new LinkedHashMap<String, String>();
    expected.put("DataBytesFetched", Long.toString(3L * BLOCK_SIZE));
    expected.put("BlocksOverUcx", "3");
    expected.put("BlocksOverTcp", "0");
    expected.put("DataBytesSent", Long.toString(BLOCK_SIZE));
    Map<String, String> record = awaitRecord(() -> expected);
    for (String name : record.keySet()) {
      assertFalse(name + " in " + record, name.contains("Nanos"));
    }
    Set<String> attributes = new HashSet<String>();
    for (MBeanAttributeInfo a : ManagementFactory.getPlatformMBeanServer()
        .getMBeanInfo(new ObjectName(SOURCE_BEAN)).getAttributes()) {
      attributes.add(a.getName());
    }
    assertTrue(attributes.toString(), attributes.contains("DataBytesFetched"));
    for (String name : attributes) {
      assertFalse(name, name.contains("Nanos"));
    }
  }

  /**
   * A runtime outlives its DataNodes' metrics system when one JVM runs
   * cluster after cluster (MiniDFSCluster, Hadoop's own tests): the
   * metrics system's last shutdown drops every source, and the next
   * DataNode's start registers this one again, under the same name and
   * counting on.
   */
  @Test(timeout = 300_000)
  public void testNextDataNodeRegistersTheSourceAgain() throws Exception {
    writeFile(TestUcxWritePath.ucxConf(), BLOCK_SIZE);
    UcxRuntime runtime = UcxRuntime.current();
    cluster.shutdown();
    cluster = null;
    DefaultMetricsSystem.shutdown(); // this test's reference, the last one
    assertNull(DefaultMetricsSystem.instance().getSource(
        HdfsRdmaMetrics.SOURCE_NAME));

    writeFile(TestUcxWritePath.ucxConf(), BLOCK_SIZE);
    assertTrue("the runtime lived on", runtime == UcxRuntime.current());
    GenericTestUtils.waitFor(() -> runtime.blocksOverUcx() == 6, 100,
        30_000);
    assertEquals(6L * BLOCK_SIZE, runtime.totalFetched());
    MBeanServer server = ManagementFactory.getPlatformMBeanServer();
    ObjectName source = new ObjectName(SOURCE_BEAN);
    GenericTestUtils.waitFor(() -> {
      try {
        return Long.valueOf(6L * BLOCK_SIZE).equals(
            server.getAttribute(source, "DataBytesFetched"));
      } catch (Exception e) {
        return false;
      }
    }, 200, 30_000);
  }
}
