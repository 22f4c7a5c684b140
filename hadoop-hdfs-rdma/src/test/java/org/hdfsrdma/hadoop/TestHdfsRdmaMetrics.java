package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
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
import java.util.ArrayList;
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
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.io.IOUtils;
import org.apache.hadoop.metrics2.MetricsSystem;
import org.apache.hadoop.metrics2.impl.MetricsSystemImpl;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.test.GenericTestUtils;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.datanode.UcxDataNode;
import org.hdfsrdma.hadoop.metrics.ClientOutcomes;
import org.hdfsrdma.hadoop.metrics.PacketPhaseTimes.Phase;
import org.hdfsrdma.hadoop.metrics.PacketPhaseTimes;
import org.hdfsrdma.hadoop.metrics.PipelineOutcome;
import org.hdfsrdma.hadoop.metrics.UcxDataNodeMetrics;
import org.hdfsrdma.hadoop.metrics.UcxJvmMetrics;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * hdfs-rdma's metrics reach Hadoop's metrics2 sinks and JMX: a
 * {@code FileSink} configured the way an operator configures a DataNode's
 * ({@code datanode.sink.file.*} in {@code hadoop-metrics2.properties})
 * receives the JVM's record {@code dfs.HdfsRdma} and one record
 * {@code dfs.HdfsRdmaDataNode} per DataNode, with exactly the values the
 * data path counted for a file written through UCX, phase rates only when
 * packet timers are on; JMX serves the sources as
 * {@code Hadoop:service=DataNode,name=HdfsRdma} and
 * {@code Hadoop:service=DataNode,name=HdfsRdmaDataNode-<host>-<port>};
 * a DataNode's stop withdraws its source, the runtime's close the JVM's.
 *
 * <p>Each test runs on a metrics system of its own, initialised with the
 * prefix {@code DataNode} before the cluster starts, as a DataNode's JVM
 * initialises it (MiniDFSCluster's NameNode would otherwise start this
 * JVM's metrics system first, with the {@code namenode} prefix); the
 * properties file is found on the class path as a DataNode finds it in
 * its configuration directory, here through the context class loader, so
 * no file is left where other tests of this JVM would load it.
 *
 * <p>The file: 2 MiB + 4321 B at replication 3 (three 1 MiB blocks). The JVM's
 * record: bytes sent = the size, three fan-out pipelines, nothing refused,
 * pools idle, the client's phase rates with timers on. Each DataNode's record:
 * data bytes fetched = the size, 3 replicas over UCX, none over TCP, a positive
 * {@code ...NanosAvgTime} for the timed same-host phases, no get waits. JMX
 * serves the JVM's source once and one source per DataNode, also on the
 * DataNode's {@code /jmx} servlet with its {@code DataNode} tag.
 */
public class TestHdfsRdmaMetrics {

  private static final String JVM_BEAN =
      "Hadoop:service=DataNode,name=" + UcxJvmMetrics.SOURCE_NAME;
  private static final String JVM_RECORD = " dfs."
      + UcxJvmMetrics.SOURCE_NAME + ": ";
  private static final String DATANODE_RECORD = " dfs."
      + UcxDataNodeMetrics.RECORD_NAME + ": ";
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
      w.println("datanode.sink.file.source.filter.include=HdfsRdma*");
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

  /** The UCX side of each DataNode of the cluster. */
  private UcxDataNode[] dataNodes() {
    List<DataNode> dns = cluster.getDataNodes();
    UcxDataNode[] ucx = new UcxDataNode[dns.size()];
    for (int i = 0; i < ucx.length; i++) {
      ucx[i] = UcxDataNode.of(dns.get(i));
      assertNotNull(dns.get(i) + " serves UCX", ucx[i]);
    }
    return ucx;
  }

  /**
   * Waits until the sink's latest record of {@code prefix} (and, for a
   * DataNode's, of that DataNode) carries every value {@code expected}
   * gives (asked again at each look, so values the DataNodes' threads
   * still move settle first), and returns that record (name to value).
   */
  /**
   * The first record of the sink file with {@code prefix} (and tag
   * DataNode={@code dataNode} unless null) that shows every value
   * {@code expected} gives, waiting for it. The first, not the last: a
   * rate's average time is that of the period the record closes, so only
   * the record of the period that took the last samples shows it; the
   * records of later, idle periods show the same counts.
   */
  private Map<String, String> awaitRecord(String prefix, String dataNode,
      Supplier<Map<String, String>> expected) throws Exception {
    AtomicReference<List<Map<String, String>>> seen =
        new AtomicReference<List<Map<String, String>>>();
    AtomicReference<Map<String, String>> wanted =
        new AtomicReference<Map<String, String>>();
    AtomicReference<Map<String, String>> found =
        new AtomicReference<Map<String, String>>();
    try {
      GenericTestUtils.waitFor(() -> {
        wanted.set(expected.get());
        seen.set(records(prefix, dataNode));
        for (Map<String, String> record : seen.get()) {
          if (shows(record, wanted.get())) {
            found.set(record);
            return true;
          }
        }
        return false;
      }, 200, 60_000);
    } catch (TimeoutException e) {
      List<Map<String, String>> all = seen.get();
      fail("no " + prefix + "record of the file sink for "
          + (dataNode == null ? "the JVM" : dataNode) + " shows "
          + wanted.get() + "; the last: "
          + (all.isEmpty() ? "none" : all.get(all.size() - 1)));
    }
    return found.get();
  }

  /**
   * Fails unless some record shows a positive {@code avg}: a rate's
   * average is over the period since the sink's last record, so the record
   * whose counts match the totals may come after the period that timed the
   * last packet, and show 0.
   */
  private static void assertTimed(String avg,
      List<Map<String, String>> records) {
    for (Map<String, String> r : records) {
      String v = r.get(avg);
      if (v != null && Double.parseDouble(v) > 0) {
        return;
      }
    }
    fail("no record with " + avg + " > 0: " + records);
  }

  private static boolean shows(Map<String, String> record,
      Map<String, String> values) {
    for (Map.Entry<String, String> e : values.entrySet()) {
      if (!e.getValue().equals(record.get(e.getKey()))) {
        return false;
      }
    }
    return true;
  }

  /**
   * The complete lines of the sink file with record {@code prefix} (and
   * tag DataNode={@code dataNode} unless null), parsed, in file order.
   */
  private List<Map<String, String>> records(String prefix, String dataNode) {
    List<Map<String, String>> records =
        new ArrayList<Map<String, String>>();
    List<String> lines;
    try {
      lines = Files.readAllLines(sinkFile.toPath(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return records;
    }
    for (String line : lines) {
      int at = line.indexOf(prefix);
      if (at < 0) {
        continue;
      }
      Map<String, String> record = new LinkedHashMap<String, String>();
      for (String field : line.substring(at + prefix.length()).split(", ")) {
        int eq = field.indexOf('=');
        if (eq > 0) {
          record.put(field.substring(0, eq), field.substring(eq + 1));
        }
      }
      if (dataNode == null || dataNode.equals(record.get("DataNode"))) {
        records.add(record);
      }
    }
    return records;
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

  /** The rate metric's name of a phase: its label in CamelCase + Nanos. */
  private static String rateName(Phase phase) {
    StringBuilder name = new StringBuilder();
    for (String word : phase.label().split("-")) {
      name.append(Character.toUpperCase(word.charAt(0)))
          .append(word.substring(1));
    }
    return name.append("Nanos").toString();
  }

  private static boolean isClientPhase(Phase p) {
    return p.label().startsWith("client-");
  }

  @Test(timeout = 300_000)
  public void testCountersAndPhaseRatesReachTheFileSink() throws Exception {
    int size = 2 * BLOCK_SIZE + 4321; // three blocks
    writeFile(timedConf(), size);
    UcxRuntime runtime = UcxRuntime.current();
    UcxDataNode[] dataNodes = dataNodes();
    // UCX carried every byte to every replica: each DataNode's own counters
    // (a DataNode counts its replica once its receiver is done with it).
    for (UcxDataNode d : dataNodes) {
      GenericTestUtils.waitFor(() -> d.metrics().blocksOverUcx() == 3, 100,
          30_000);
      assertEquals(0, d.metrics().blocksOverTcp());
      assertEquals(size, d.metrics().dataBytesFetched());
      assertTrue(d.metrics().times().count(Phase.COPY) >= 32);
    }
    assertEquals(size, runtime.metrics().dataBytesSent());
    PacketPhaseTimes client = runtime.metrics().clientTimes();
    assertTrue(client.count(Phase.CLIENT_SEND) >= 32);

    // The sink shows exactly those values: the JVM's record...
    Map<String, String> jvm = awaitRecord(JVM_RECORD, null, () -> {
      Map<String, String> expected = new LinkedHashMap<String, String>();
      expected.put("Context", "dfs");
      expected.put("DataBytesSent", Long.toString(size));
      expected.put("RejectedMessages", "0");
      expected.put("StrayMessages", "0");
      expected.put("CallbackFailures", "0");
      expected.put("OpenSessions", "0");
      expected.put("ClientPoolInUseBytes", "0");
      expected.put("LandingPoolInUseBytes", "0");
      for (Phase p : Phase.values()) {
        if (isClientPhase(p)) {
          expected.put(rateName(p) + "NumOps", Long.toString(client.count(p)));
        }
      }
      return expected;
    });
    assertTrue(jvm.toString(), jvm.containsKey("Hostname"));
    assertFalse("pipeline outcomes are the client source's",
        jvm.containsKey("PipelinesFanOut"));
    assertTrue(ClientOutcomes.pipelines(PipelineOutcome.FAN_OUT) >= 3);
    assertTrue(jvm.toString(), jvm.containsKey("ClientHellos"));
    assertTrue(jvm.toString(), jvm.get("Transports").contains(
        "shared memory"));
    assertTrue(jvm.toString(),
        Long.parseLong(jvm.get("ClientPoolRegisteredBytes")) > 0);
    assertTrue(jvm.toString(), Long.parseLong(jvm.get("ClientConnects")) > 0);
    for (Phase p : new Phase[] {Phase.CLIENT_SEND,
        Phase.CLIENT_SENT_TO_ACK}) {
      assertTimed(rateName(p) + "AvgTime", records(JVM_RECORD, null));
    }
    assertFalse("DataNode phases are the DataNodes'",
        jvm.containsKey("DnCopyNanosNumOps"));

    // ... and one record per DataNode.
    for (UcxDataNode d : dataNodes) {
      PacketPhaseTimes times = d.metrics().times();
      Map<String, String> record = awaitRecord(DATANODE_RECORD, d.name(),
          () -> {
            Map<String, String> expected =
                new LinkedHashMap<String, String>();
            expected.put("Context", "dfs");
            expected.put("DataBytesFetched", Long.toString(size));
            expected.put("PacketsFetched", Long.toString(d.metrics().get(
                UcxDataNodeMetrics.PACKETS_FETCHED)));
            expected.put("BlocksOverUcx", "3");
            expected.put("BlocksOverTcp", "0");
            for (Phase p : Phase.values()) {
              if (!isClientPhase(p)) {
                expected.put(rateName(p) + "NumOps",
                    Long.toString(times.count(p)));
              }
            }
            return expected;
          });
      // Same host: copied, verified and written per packet, no get waited
      // for.
      for (Phase p : new Phase[] {Phase.DESCRIPTOR_WAIT, Phase.COPY,
          Phase.VERIFY, Phase.DISK}) {
        assertTimed(rateName(p) + "AvgTime",
            records(DATANODE_RECORD, d.name()));
      }
      assertEquals("0", record.get("DnGetWaitNanosNumOps"));
      assertFalse(record.toString(), record.containsKey("DataBytesSent"));
    }

    // JMX: each source under its stable name, once.
    MBeanServer server = ManagementFactory.getPlatformMBeanServer();
    assertEquals(1, server.queryNames(new ObjectName("Hadoop:service=*,name="
        + UcxJvmMetrics.SOURCE_NAME), null).size());
    assertEquals(3, server.queryNames(new ObjectName("Hadoop:service=*,name="
        + UcxDataNodeMetrics.SOURCE_PREFIX + "*"), null).size());
    ObjectName jvmBean = new ObjectName(JVM_BEAN);
    GenericTestUtils.waitFor(() -> {
      try {
        return Long.valueOf(size).equals(
            server.getAttribute(jvmBean, "DataBytesSent"));
      } catch (Exception e) {
        return false;
      }
    }, 200, 30_000);
    // What JMX exporters scrape: the DataNode's /jmx servlet.
    DataNode first = cluster.getDataNodes().get(0);
    String own = "Hadoop:service=DataNode,name="
        + UcxDataNode.of(first).metrics().sourceName();
    String json = jmxServlet(first.getInfoPort(), own);
    assertTrue(json, json.contains("\"name\" : \"" + own + "\""));
    assertTrue(json, json.contains("\"DataBytesFetched\" : " + size));
    assertTrue(json, json.contains("\"tag.DataNode\" : \""
        + UcxDataNode.of(first).name() + "\""));

    // A DataNode's stop withdraws its source; the runtime's close the
    // JVM's, from metrics2 and from JMX.
    cluster.shutdown();
    cluster = null;
    for (UcxDataNode d : dataNodes) {
      assertNull(DefaultMetricsSystem.instance().getSource(
          d.metrics().sourceName()));
    }
    UcxRuntime.shutdown();
    assertNull(DefaultMetricsSystem.instance().getSource(
        UcxJvmMetrics.SOURCE_NAME));
    assertFalse(server.isRegistered(jvmBean));
  }

  @Test(timeout = 300_000)
  public void testNoPhaseRatesWithoutTimers() throws Exception {
    writeFile(TestUcxWritePath.ucxConf(), BLOCK_SIZE);
    UcxRuntime runtime = UcxRuntime.current();
    assertNull(runtime.metrics().clientTimes());
    UcxDataNode[] dataNodes = dataNodes();
    for (UcxDataNode d : dataNodes) {
      assertNull(d.metrics().times());
      GenericTestUtils.waitFor(() -> d.metrics().blocksOverUcx() == 1, 100,
          30_000);
    }
    Map<String, String> expected = new LinkedHashMap<String, String>();
    expected.put("DataBytesSent", Long.toString(BLOCK_SIZE));
    Map<String, String> jvm = awaitRecord(JVM_RECORD, null, () -> expected);
    Map<String, String> expectedDataNode = new LinkedHashMap<String, String>();
    expectedDataNode.put("DataBytesFetched", Long.toString(BLOCK_SIZE));
    expectedDataNode.put("BlocksOverUcx", "1");
    expectedDataNode.put("BlocksOverTcp", "0");
    Map<String, String> dataNode = awaitRecord(DATANODE_RECORD,
        dataNodes[0].name(), () -> expectedDataNode);
    for (Map<String, String> record : new Map[] {jvm, dataNode}) {
      for (String name : record.keySet()) {
        assertFalse(name + " in " + record, name.contains("Nanos"));
      }
    }
    Set<String> attributes = new HashSet<String>();
    for (MBeanAttributeInfo a : ManagementFactory.getPlatformMBeanServer()
        .getMBeanInfo(new ObjectName(JVM_BEAN)).getAttributes()) {
      attributes.add(a.getName());
    }
    assertTrue(attributes.toString(), attributes.contains("DataBytesSent"));
    for (String name : attributes) {
      assertFalse(name, name.contains("Nanos"));
    }
  }

  /**
   * A runtime outlives its DataNodes' metrics system when one JVM runs
   * cluster after cluster (MiniDFSCluster, Hadoop's own tests): the
   * metrics system's last shutdown drops every source, and the next
   * DataNode's start registers the JVM's source again, under the same name
   * and counting on.
   */
  @Test(timeout = 300_000)
  public void testNextDataNodeRegistersTheSourceAgain() throws Exception {
    writeFile(TestUcxWritePath.ucxConf(), BLOCK_SIZE);
    UcxRuntime runtime = UcxRuntime.current();
    cluster.shutdown();
    cluster = null;
    DefaultMetricsSystem.shutdown(); // this test's reference, the last one
    assertNull(DefaultMetricsSystem.instance().getSource(
        UcxJvmMetrics.SOURCE_NAME));

    writeFile(TestUcxWritePath.ucxConf(), BLOCK_SIZE);
    assertTrue("the runtime lived on", runtime == UcxRuntime.current());
    assertEquals(2L * BLOCK_SIZE, runtime.metrics().dataBytesSent());
    MBeanServer server = ManagementFactory.getPlatformMBeanServer();
    ObjectName jvmBean = new ObjectName(JVM_BEAN);
    GenericTestUtils.waitFor(() -> {
      try {
        return Long.valueOf(2L * BLOCK_SIZE).equals(
            server.getAttribute(jvmBean, "DataBytesSent"));
      } catch (Exception e) {
        return false;
      }
    }, 200, 30_000);
  }
}
