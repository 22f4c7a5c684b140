package org.hdfsrdma.hadoop.conf;

import static org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys.*;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.ToLongFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.commons.io.IOUtils;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.test.GenericTestUtils.LogCapturer;
import org.hdfsrdma.hadoop.util.LogOnce;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;
import org.slf4j.LoggerFactory;

/**
 * hdfs-rdma's settings as read: every value checked against its range
 * (out of range or unparseable: one warning naming key, value and range,
 * and the default), the rules between values, unknown keys of the family
 * warned about once with the likely key; and the one rule of which Hadoop
 * data-transfer settings keep writes on TCP, as the client, the DataNode
 * and {@code check} all apply it.
 *
 * <p>Warned about, the default used, never an exception: every numeric setting
 * out of its range or unparseable, a boolean neither true nor false, an unknown
 * distribution. The rules between values: the slab within the cap, gets in
 * flight within the landing pool, the client's slabs against the regions a
 * block may announce. An unknown {@code dfs.*rdma.*} key is warned about once,
 * with the likely key; a valid configuration logs nothing; every range is the
 * one hdfs-rdma-default.xml documents. Protection: encryption, or a SASL QOP of
 * integrity or privacy, keeps writes on TCP; authentication alone does not.
 */
public class TestRdmaConf {

  /** The getter of each ranged key; a new range needs its entry here. */
  private static final Map<String, ToLongFunction<RdmaConf>> GETTERS =
      new LinkedHashMap<String, ToLongFunction<RdmaConf>>();

  static {
    GETTERS.put(DFS_CLIENT_RDMA_POOL_MAX_BYTES_KEY,
        RdmaConf::clientPoolMaxBytes);
    GETTERS.put(DFS_CLIENT_RDMA_POOL_SLAB_BYTES_KEY,
        RdmaConf::clientPoolSlabBytes);
    GETTERS.put(DFS_CLIENT_RDMA_BUFFER_WAIT_MS_KEY, RdmaConf::bufferWaitMs);
    GETTERS.put(DFS_CLIENT_RDMA_CONNECT_TIMEOUT_MS_KEY,
        RdmaConf::connectTimeoutMs);
    GETTERS.put(DFS_CLIENT_RDMA_UNREACHABLE_RETRY_MS_KEY,
        RdmaConf::unreachableRetryMs);
    GETTERS.put(DFS_CLIENT_RDMA_HYBRID_FEEDERS_KEY, RdmaConf::hybridFeeders);
    GETTERS.put(DFS_CLIENT_RDMA_WORKERS_KEY, RdmaConf::clientWorkers);
    GETTERS.put(DFS_DATANODE_RDMA_POOL_MAX_BYTES_KEY,
        RdmaConf::dataNodePoolMaxBytes);
    GETTERS.put(DFS_DATANODE_RDMA_PACKET_BUFFER_BYTES_KEY,
        RdmaConf::maxPacketBytes);
    GETTERS.put(DFS_DATANODE_RDMA_GET_TIMEOUT_MS_KEY, RdmaConf::getTimeoutMs);
    GETTERS.put(DFS_DATANODE_RDMA_MAX_QUEUED_PACKETS_KEY,
        RdmaConf::maxQueuedPackets);
    GETTERS.put(DFS_DATANODE_RDMA_GETS_IN_FLIGHT_KEY, RdmaConf::getsInFlight);
    GETTERS.put(DFS_DATANODE_RDMA_MAX_REGIONS_PER_BLOCK_KEY,
        RdmaConf::maxRegionsPerBlock);
    GETTERS.put(DFS_DATANODE_RDMA_READ_BUFFER_BYTES_KEY,
        RdmaConf::dataNodeReadBufferBytes);
    GETTERS.put(DFS_DATANODE_RDMA_READ_USER_BUFFERS_KEY,
        RdmaConf::dataNodeReadUserBuffers);
    GETTERS.put(DFS_DATANODE_RDMA_READ_MAX_BUFFERS_KEY,
        RdmaConf::dataNodeReadMaxBuffers);
    GETTERS.put(DFS_CLIENT_RDMA_READ_MIN_BYTES_KEY,
        RdmaConf::clientReadMinBytes);
    GETTERS.put(DFS_DATANODE_RDMA_UNBOUND_CONNECTION_TIMEOUT_MS_KEY,
        RdmaConf::dataNodeUnboundConnectionTimeoutMs);
  }

  private LogCapturer log;

  @Before
  public void setUp() {
    log = LogCapturer.captureLogs(LoggerFactory.getLogger(LogOnce.class));
  }

  @After
  public void tearDown() {
    log.stopCapturing();
  }

  /** {@code conf} with {@code key=value} set, its warning forgotten. */
  private static Configuration with(Configuration conf, String key,
      String value) {
    conf.set(key, value);
    LogOnce.forget(RdmaSettings.logKey(key + "=" + value));
    return conf;
  }

  /** How often {@code text} occurs in what was logged. */
  private int count(String text) {
    String out = log.getOutput();
    int n = 0;
    for (int i = out.indexOf(text); i >= 0; i = out.indexOf(text, i + 1)) {
      n++;
    }
    return n;
  }

  @Test(timeout = 30_000)
  public void testEveryValueOutOfRangeIsNamedAndTheDefaultUsed() {
    Map<String, String> defaults = RdmaSettings.defaults();
    TreeSet<String> ranged = new TreeSet<String>();
    for (RdmaSettings.Range range : RdmaSettings.ranges()) {
      String key = range.key();
      ranged.add(key);
      long dflt = Long.parseLong(defaults.get(key));
      assertTrue(key + "'s default " + dflt + " is in " + range,
          range.contains(dflt));
      for (String value : new String[] {String.valueOf(range.min() - 1),
          String.valueOf(range.max() + 1), "12x" + System.nanoTime(),
          "99999999999999999999"}) {
        Configuration conf = with(new Configuration(false), key, value);
        RdmaConf rdma = new RdmaConf(conf);
        String message = "hdfs-rdma: " + key + "=" + value + " is outside "
            + range.min() + ".." + range.max() + " (" + range.meaning()
            + "); using " + dflt;
        assertEquals(log.getOutput(), 1, count(message));
        assertEquals(key + "=" + value, dflt,
            GETTERS.get(key).applyAsLong(rdma));
        assertEquals(rdma.problems().toString(), 1, rdma.problems().size());
        assertEquals(message, rdma.problems().get(0));
      }
      // The bounds themselves are in range.
      for (long bound : new long[] {range.min(), range.max()}) {
        Configuration conf = new Configuration(false);
        conf.setLong(key, bound);
        // Bounds may break a rule between values, but not the range.
        for (String p : new RdmaConf(conf).problems()) {
          assertFalse(p, p.contains(key + "=" + bound + " is outside"));
        }
      }
    }
    assertEquals(new TreeSet<String>(GETTERS.keySet()), ranged);
  }

  @Test(timeout = 30_000)
  public void testEveryNumericKeyHasItsRangeDocumented() throws Exception {
    String xml;
    try (InputStream in = getClass().getClassLoader()
        .getResourceAsStream(DEFAULT_RESOURCE)) {
      xml = new String(IOUtils.toByteArray(in), StandardCharsets.UTF_8);
    }
    Map<String, String> documented = new HashMap<String, String>();
    Matcher m = Pattern.compile("<name>([^<]+)</name>.*?<description>"
        + "(.*?)</description>", Pattern.DOTALL).matcher(xml);
    while (m.find()) {
      Matcher r = Pattern.compile("Range: (-?\\d+\\.\\.-?\\d+)")
          .matcher(m.group(2));
      if (r.find()) {
        documented.put(m.group(1), r.group(1));
      }
    }
    Map<String, String> table = new HashMap<String, String>();
    for (RdmaSettings.Range range : RdmaSettings.ranges()) {
      table.put(range.key(), range.toString());
    }
    assertEquals(table, documented);
    // Every key with a numeric default has a range.
    for (Map.Entry<String, String> d : RdmaSettings.defaults().entrySet()) {
      if (d.getValue().matches("\\d+")) {
        assertTrue(d.getKey() + " has no range",
            table.containsKey(d.getKey()));
      }
    }
  }

  @Test(timeout = 30_000)
  public void testBooleanNeitherTrueNorFalseIsNamed() {
    for (Map.Entry<String, String> d : RdmaSettings.defaults().entrySet()) {
      if (!d.getValue().equals("true") && !d.getValue().equals("false")) {
        continue;
      }
      String value = "ture" + System.nanoTime();
      RdmaConf rdma = new RdmaConf(with(new Configuration(false), d.getKey(),
          value));
      assertEquals(rdma.problems().toString(), 1, rdma.problems().size());
      String p = rdma.problems().get(0);
      assertTrue(p, p.startsWith("hdfs-rdma: " + d.getKey() + "=" + value
          + " is none of true, false (whether "));
      assertTrue(p, p.endsWith("); using " + d.getValue()));
      assertEquals(log.getOutput(), 1, count(p));
    }
    Configuration conf = new Configuration(false);
    conf.set(DFS_CLIENT_RDMA_ENABLED_KEY, " TRUE ");
    RdmaConf rdma = new RdmaConf(conf);
    assertTrue(rdma.isClientEnabled());
    assertTrue(rdma.problems().isEmpty());
  }

  @Test(timeout = 30_000)
  public void testUnknownDistributionIsNamed() {
    String value = "fanout" + System.nanoTime();
    RdmaConf rdma = new RdmaConf(with(new Configuration(false),
        DFS_CLIENT_RDMA_DISTRIBUTION_KEY, value));
    assertEquals(DistributionMode.AUTO, rdma.distribution());
    String message = "hdfs-rdma: " + DFS_CLIENT_RDMA_DISTRIBUTION_KEY + "="
        + value + " is none of auto, fan-out, chain, hybrid, tcp (how the"
        + " client distributes pipelines); using auto";
    assertEquals(log.getOutput(), 1, count(message));
  }

  @Test(timeout = 30_000)
  public void testSlabLargerThanTheCapIsTheCap() {
    Configuration conf = new Configuration(false);
    conf.setLong(DFS_CLIENT_RDMA_POOL_MAX_BYTES_KEY, 16L << 20);
    conf.setLong(DFS_CLIENT_RDMA_POOL_SLAB_BYTES_KEY, 64L << 20);
    LogOnce.forget(RdmaSettings.logKey(DFS_CLIENT_RDMA_POOL_SLAB_BYTES_KEY
        + "=" + (64L << 20) + " > " + (16L << 20)));
    RdmaConf rdma = new RdmaConf(conf);
    assertEquals(16L << 20, rdma.clientPoolSlabBytes());
    assertEquals(16L << 20, rdma.clientPoolMaxBytes());
    String message = "hdfs-rdma: " + DFS_CLIENT_RDMA_POOL_SLAB_BYTES_KEY
        + "=67108864 is more than " + DFS_CLIENT_RDMA_POOL_MAX_BYTES_KEY
        + "=16777216 (a slab is registered whole, so the pool would pass its"
        + " cap); using 16777216";
    assertEquals(log.getOutput(), 1, count(message));
    assertEquals(1, rdma.problems().size());
  }

  @Test(timeout = 30_000)
  public void testGetsInFlightFitTheLandingPool() {
    // 16 MiB buffers: a landing slab each; a 40 MiB cap holds two slabs.
    Configuration conf = new Configuration(false);
    conf.setInt(DFS_DATANODE_RDMA_PACKET_BUFFER_BYTES_KEY, 16 << 20);
    conf.setLong(DFS_DATANODE_RDMA_POOL_MAX_BYTES_KEY, 40L << 20);
    conf.setInt(DFS_DATANODE_RDMA_GETS_IN_FLIGHT_KEY, 5);
    LogOnce.forget(RdmaSettings.logKey(DFS_DATANODE_RDMA_GETS_IN_FLIGHT_KEY
        + "=5 > 2"));
    RdmaConf rdma = new RdmaConf(conf);
    assertEquals(2, rdma.getsInFlight());
    String message = "hdfs-rdma: " + DFS_DATANODE_RDMA_GETS_IN_FLIGHT_KEY
        + "=5 is more than the 2 landing buffers of "
        + DFS_DATANODE_RDMA_PACKET_BUFFER_BYTES_KEY + "=16777216 that "
        + DFS_DATANODE_RDMA_POOL_MAX_BYTES_KEY + "=41943040 holds (a block"
        + " would wait for its own buffers and fail); using 2";
    assertEquals(log.getOutput(), 1, count(message));
    // Counted as BufferPools builds the pool: whole slabs, whole buffers.
    assertEquals(2, RdmaConf.landingBuffers(16 << 20, 40L << 20));
    assertEquals(1, RdmaConf.landingBuffers(16 << 20, 4L << 20));
    assertEquals(1024, RdmaConf.landingBuffers(64 << 10, 64L << 20));
    // 3 MiB buffers: slabs of one; 50 MiB is 16 of them.
    assertEquals(16, RdmaConf.landingBuffers(3 << 20, 50L << 20));
  }

  @Test(timeout = 30_000)
  public void testMoreSlabsThanRegionsIsSaidValuesKept() {
    Configuration conf = new Configuration(false);
    conf.setBoolean(DFS_CLIENT_RDMA_ENABLED_KEY, true);
    conf.setLong(DFS_CLIENT_RDMA_POOL_MAX_BYTES_KEY, 1L << 30);
    conf.setLong(DFS_CLIENT_RDMA_POOL_SLAB_BYTES_KEY, 1L << 20);
    LogOnce.forget(RdmaSettings.logKey(DFS_CLIENT_RDMA_POOL_MAX_BYTES_KEY
        + " slabs 1024 > 64"));
    RdmaConf rdma = new RdmaConf(conf);
    assertEquals(1L << 30, rdma.clientPoolMaxBytes());
    assertEquals(1L << 20, rdma.clientPoolSlabBytes());
    assertEquals(1, count("hdfs-rdma: " + DFS_CLIENT_RDMA_POOL_MAX_BYTES_KEY
        + "=1073741824 is up to 1024 slabs of "
        + DFS_CLIENT_RDMA_POOL_SLAB_BYTES_KEY + "=1048576, more than "
        + DFS_DATANODE_RDMA_MAX_REGIONS_PER_BLOCK_KEY + "=64"));
  }

  @Test(timeout = 30_000)
  public void testUnknownKeyWarnedOnceWithTheLikelyKey() {
    String typo = "dfs.datanode.rdma.gets-inflight";
    LogOnce.forget(UnknownKeys.unknownLogKey(typo));
    Configuration conf = new Configuration(false);
    conf.set(typo, "8");
    String message = "hdfs-rdma: unknown setting " + typo + " (not one of"
        + " hdfs-rdma's keys; see hdfs-rdma-default.xml); did you mean "
        + DFS_DATANODE_RDMA_GETS_IN_FLIGHT_KEY + "?";
    RdmaConf rdma = new RdmaConf(conf);
    new RdmaConf(conf);
    Configuration other = new Configuration(false);
    other.set(typo, "8");
    new RdmaConf(other);
    assertEquals(log.getOutput(), 1, count(message));
    assertEquals(DFS_DATANODE_RDMA_GETS_IN_FLIGHT_DEFAULT,
        rdma.getsInFlight());
    assertTrue(rdma.problems().isEmpty());

    // A key added later is seen when the next RdmaConf is built.
    String other2 = "dfs.rdma.nothing-like-ours";
    LogOnce.forget(UnknownKeys.unknownLogKey(other2));
    conf.set(other2, "1");
    new RdmaConf(conf);
    String unlike = "hdfs-rdma: unknown setting " + other2 + " (not one of"
        + " hdfs-rdma's keys; see hdfs-rdma-default.xml)";
    assertEquals(log.getOutput(), 1, count(unlike));
    assertEquals("no likely key", 0, count(unlike + "; did"));
    assertEquals(log.getOutput(), 1, count(message));
  }

  @Test(timeout = 30_000)
  public void testLikelyKeys() {
    assertEquals(DFS_CLIENT_RDMA_ENABLED_KEY,
        UnknownKeys.closest("dfs.client.rdma.enable"));
    assertEquals(DFS_CLIENT_RDMA_POOL_MAX_BYTES_KEY,
        UnknownKeys.closest("dfs.client.rdma.bufferpool.max.bytes"));
    assertEquals("the same name in another family",
        DFS_DATANODE_RDMA_GETS_IN_FLIGHT_KEY,
        UnknownKeys.closest("dfs.client.rdma.gets-in-flight"));
    assertNull(UnknownKeys.closest("dfs.rdma.nothing-like-ours"));
    assertTrue(UnknownKeys.inFamily("dfs.rdma.x"));
    assertTrue(UnknownKeys.inFamily("dfs.client.rdma.x"));
    assertTrue(UnknownKeys.inFamily("dfs.datanode.rdma.x"));
    assertFalse(UnknownKeys.inFamily("dfs.client.write.rdma"));
  }

  @Test(timeout = 30_000)
  public void testValidConfigurationLogsNothing() {
    Configuration conf = new Configuration();
    for (Map.Entry<String, String> d : RdmaSettings.defaults().entrySet()) {
      conf.set(d.getKey(), d.getValue());
    }
    conf.setBoolean(DFS_CLIENT_RDMA_ENABLED_KEY, true);
    conf.setBoolean(DFS_DATANODE_RDMA_ENABLED_KEY, true);
    conf.set(DFS_CLIENT_RDMA_DISTRIBUTION_KEY, "Hybrid");
    conf.setInt(DFS_CLIENT_RDMA_HYBRID_FEEDERS_KEY, 15);
    conf.setInt(DFS_DATANODE_RDMA_GETS_IN_FLIGHT_KEY, 64);
    RdmaConf rdma = new RdmaConf(conf);
    assertTrue(rdma.problems().toString(), rdma.problems().isEmpty());
    assertEquals(DistributionMode.HYBRID, rdma.distribution());
    assertEquals(64, rdma.getsInFlight());
    assertEquals(15, rdma.hybridFeeders());
    new RdmaConf(new Configuration(false));
    assertEquals("", log.getOutput());
  }

  private static Configuration conf(String encrypt, String protection) {
    Configuration conf = new Configuration(false);
    if (encrypt != null) {
      conf.set("dfs.encrypt.data.transfer", encrypt);
    }
    if (protection != null) {
      conf.set("dfs.data.transfer.protection", protection);
    }
    return conf;
  }

  @Test(timeout = 10_000)
  public void testProtectionThatUcxLacksKeepsWritesOnTcp() {
    assertTrue(RdmaConf.transferProtected(conf("true", null)));
    assertTrue(RdmaConf.transferProtected(conf(null, "integrity")));
    assertTrue(RdmaConf.transferProtected(conf(null, "privacy")));
    assertTrue(RdmaConf.transferProtected(
        conf("false", " authentication,privacy ")));
    assertTrue(new RdmaConf(conf(null, "integrity")).transferProtected());
  }

  @Test(timeout = 10_000)
  public void testAuthenticationAloneIsNoProtectionOfTheBytes() {
    assertFalse(RdmaConf.transferProtected(conf(null, null)));
    assertFalse(RdmaConf.transferProtected(conf("false", "")));
    assertFalse(RdmaConf.transferProtected(conf(null, "authentication")));
    assertFalse(new RdmaConf(conf(null, "authentication"))
        .transferProtected());
  }
}
