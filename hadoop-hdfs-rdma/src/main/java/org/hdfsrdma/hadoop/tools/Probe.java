package org.hdfsrdma.hadoop.tools;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;
import org.apache.hadoop.io.IOUtils;
import org.hdfsrdma.hadoop.agent.HadoopVersionCheck;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.hadoop.tools.Findings.Level;

/**
 * {@code check --probe}: writes a small file of random bytes to
 * fs.defaultFS, reads it back, deletes it, and confirms that it went by
 * UCX twice: from this JVM's counter of bytes sent as UCX descriptors, and
 * from the metrics of each DataNode holding a replica
 * ({@link DataNodeJmxMetrics}, over each DataNode's http port; listing the
 * DataNodes needs the HDFS superuser), compared with a reading taken
 * before the write. Public HDFS API only, so that it runs the same on
 * every Hadoop the check may run on.
 *
 * <p>The DataNodes' counters are metrics2 sources, and JMX serves a
 * source's values as of its last snapshot, which metrics2 refreshes on a
 * read only when the metrics period ({@code *.period} in the DataNode's
 * hadoop-metrics2.properties, 10 s by default) has passed since the
 * previous refresh: a reading after the write may be up to one period
 * old (the reading before it too, which can only add other writers' bytes
 * to what the probe asks for, at least its own). So the probe polls each
 * DataNode until its counters show the probe's replicas, or show that
 * they came over TCP, for up to {@link #COUNTERS_WAIT_MS} in all, three
 * default periods; a DataNode still short then is a PROBLEM whose line
 * names the period as the likely cause.
 */
final class Probe {

  /**
   * How long the probe polls the DataNodes' counters for its replicas, in
   * all: three of metrics2's default 10 s periods, as /jmx lags by one.
   */
  private static final long COUNTERS_WAIT_MS = 30_000;
  private static final long COUNTERS_POLL_MS = 100;
  /** How long the probe waits for the NameNode to list every replica. */
  private static final long REPLICAS_WAIT_MS = 10_000;
  private static final long REPLICAS_POLL_MS = 100;

  private final Findings findings;
  private final Configuration conf;

  Probe(Findings findings, Configuration conf) {
    this.findings = findings;
    // The probe checks UCX carried every byte: its first block too.
    this.conf = new Configuration(conf);
    this.conf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_DEFER_START_KEY,
        false);
  }

  /** The hdfs-rdma metrics of live DataNodes by transfer address. */
  private static Map<String, DataNodeJmxMetrics> beans(
      Map<String, String> httpByXfer) {
    Map<String, DataNodeJmxMetrics> beans =
        new HashMap<String, DataNodeJmxMetrics>();
    for (Map.Entry<String, String> e : httpByXfer.entrySet()) {
      try {
        DataNodeJmxMetrics b = DataNodeJmxMetrics.read(e.getValue());
        if (b != null) {
          beans.put(e.getKey(), b);
        }
      } catch (IOException ex) {
        // reported after the write, when the DataNode matters
      }
    }
    return beans;
  }

  /**
   * Writes {@code bytes} bytes to {@code pathName} (a name of its own in
   * the home directory when null) and reports what carried them.
   */
  void run(String pathName, long bytes) {
    FileSystem fs;
    try {
      // Its own client: a cached one could carry another configuration.
      fs = FileSystem.newInstance(conf);
    } catch (IOException e) {
      findings.add(Level.PROBLEM, "probe", "cannot reach fs.defaultFS: "
          + e);
      return;
    }
    if (!(fs instanceof DistributedFileSystem)) {
      findings.add(Level.PROBLEM, "probe", "fs.defaultFS is " + fs.getUri()
          + ", not HDFS");
      IOUtils.closeStream(fs);
      return;
    }
    DistributedFileSystem dfs = (DistributedFileSystem) fs;
    Path path = dfs.makeQualified(new Path(pathName != null ? pathName
        : ".hdfs-rdma-check-" + hostName() + "-" + pid() + "-"
        + System.currentTimeMillis()));
    byte[] data = new byte[(int) bytes];
    new Random().nextBytes(data);
    try {
      Map<String, String> httpByXfer = new LinkedHashMap<String, String>();
      boolean seeDataNodes = true;
      try {
        for (DatanodeInfo d
            : dfs.getDataNodeStats(DatanodeReportType.LIVE)) {
          httpByXfer.put(d.getXferAddr(), d.getInfoAddr());
        }
      } catch (IOException e) {
        // The NameNode lists DataNodes to its superuser only.
        seeDataNodes = false;
        findings.add(Level.WARN, "probe", "cannot list the DataNodes (" + e
            + "): run --probe as the HDFS superuser to have their counters"
            + " checked too");
      }
      Map<String, DataNodeJmxMetrics> before = beans(httpByXfer);
      long sentBefore = sent();
      try (FSDataOutputStream o = dfs.create(path, false)) {
        o.write(data);
      }
      long sent = sent() - sentBefore;
      Map<String, Long> expected = new TreeMap<String, Long>();
      Map<String, Integer> blocks = new HashMap<String, Integer>();
      int replicas = 0;
      // Public API only: it is the same on every Hadoop the check may run.
      for (BlockLocation b
          : settledLocations(dfs, path, bytes, httpByXfer.size())) {
        for (String node : b.getNames()) {
          Long e = expected.get(node);
          expected.put(node, (e == null ? 0 : e) + b.getLength());
          Integer n = blocks.get(node);
          blocks.put(node, (n == null ? 0 : n) + 1);
          replicas++;
        }
      }
      byte[] back = new byte[data.length];
      try (FSDataInputStream in = dfs.open(path)) {
        in.readFully(0, back);
      }
      String written = "wrote " + bytes + " bytes to " + path + " ("
          + replicas + " block replicas)";
      if (Arrays.equals(data, back)) {
        findings.add(Level.OK, "probe", written
            + " and read them back intact");
      } else {
        findings.add(Level.PROBLEM, "probe", written + " but read back"
            + " other bytes");
      }
      if (sent == bytes) {
        findings.add(Level.OK, "probe", "this JVM sent all " + bytes
            + " bytes as UCX descriptors");
      } else {
        findings.add(Level.PROBLEM, "probe", "this JVM sent " + sent + " of "
            + bytes + " bytes as UCX descriptors, the rest over TCP"
            + (runtime() == null ? " (no UCX runtime in this JVM)" : ""));
      }
      if (seeDataNodes) {
        dataNodes(expected, blocks, httpByXfer, before);
      }
    } catch (IOException | RuntimeException | LinkageError e) {
      findings.add(Level.PROBLEM, "probe", "failed: " + e);
    } finally {
      try {
        dfs.delete(path, false);
      } catch (IOException e) {
        findings.add(Level.WARN, "probe", "cannot delete " + path + ": "
            + e);
      }
      IOUtils.closeStream(dfs);
    }
  }

  /**
   * The probe file's block locations once the NameNode knows as many
   * replicas of each block as the file asks for (or as there are live
   * DataNodes, when known), or after {@link #REPLICAS_WAIT_MS} with a
   * warning. A file closes once each block has its minimum replication;
   * the other DataNodes report their replicas a heartbeat later, so
   * locations read right after the close can list fewer, and the probe
   * would leave their counters unchecked.
   */
  private BlockLocation[] settledLocations(DistributedFileSystem dfs,
      Path path, long bytes, int liveDataNodes) throws IOException {
    FileStatus status = dfs.getFileStatus(path);
    int want = status.getReplication();
    if (liveDataNodes > 0) {
      want = Math.min(want, liveDataNodes);
    }
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(REPLICAS_WAIT_MS);
    while (true) {
      BlockLocation[] locations = dfs.getFileBlockLocations(status, 0, bytes);
      int fewest = want;
      for (BlockLocation b : locations) {
        fewest = Math.min(fewest, b.getNames().length);
      }
      if (fewest >= want) {
        return locations;
      }
      if (System.nanoTime() - deadline >= 0) {
        findings.add(Level.WARN, "probe", "after " + REPLICAS_WAIT_MS
            + " ms the NameNode lists " + fewest + " of " + want
            + " replicas of a block of " + path + "; only the DataNodes it"
            + " lists are checked");
        return locations;
      }
      try {
        Thread.sleep(REPLICAS_POLL_MS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("interrupted while waiting for the"
            + " replicas of " + path);
      }
    }
  }

  /** Data bytes this JVM's writers sent as UCX descriptors so far. */
  private static long sent() {
    UcxRuntime r = runtime();
    return r == null ? 0 : r.metrics().dataBytesSent();
  }

  /**
   * This JVM's UCX runtime, or null. On another Hadoop the runtime's class
   * is not even loaded: it links against the Guava that Hadoop 2.9 ships
   * and Hadoop 3's shaded client hides.
   */
  private static UcxRuntime runtime() {
    return HadoopVersionCheck.problem() != null ? null : UcxRuntime.current();
  }

  /**
   * Each DataNode of the probe's pipelines must have fetched at least its
   * replicas' bytes by UCX get since before the write (other writers may
   * add to its counter, never take away). One deadline for all DataNodes:
   * their snapshots age while the probe waits for any of them.
   */
  private void dataNodes(Map<String, Long> expected,
      Map<String, Integer> blocks, Map<String, String> httpByXfer,
      Map<String, DataNodeJmxMetrics> before) {
    long total = 0;
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(COUNTERS_WAIT_MS);
    for (Map.Entry<String, Long> e : expected.entrySet()) {
      String node = e.getKey();
      String http = httpByXfer.get(node);
      long want = e.getValue();
      DataNodeJmxMetrics b0 = before.get(node);
      long f0 = b0 == null ? 0 : b0.dataBytesFetched();
      long u0 = b0 == null ? 0 : b0.blocksOverUcx();
      long t0 = b0 == null ? 0 : b0.blocksOverTcp();
      DataNodeJmxMetrics b1;
      boolean settled;
      try {
        while (true) {
          // Done when the bytes are there, or when the node counted its
          // replicas and some came over TCP (then they never will be).
          b1 = DataNodeJmxMetrics.read(http);
          settled = b1 == null || b1.dataBytesFetched() - f0 >= want
              || (b1.blocksOverTcp() > t0 && b1.blocksOverUcx() - u0
                  + b1.blocksOverTcp() - t0 >= blocks.get(node));
          if (settled || System.nanoTime() - deadline >= 0) {
            break;
          }
          Thread.sleep(COUNTERS_POLL_MS);
        }
      } catch (IOException ex) {
        findings.add(Level.PROBLEM, "probe", "DataNode " + node + ": cannot"
            + " read http://" + http + "/jmx: " + ex);
        continue;
      } catch (InterruptedException ex) {
        Thread.currentThread().interrupt();
        return;
      }
      if (b1 == null) {
        findings.add(Level.PROBLEM, "probe", "DataNode " + node
            + " (http://" + http + ") has no " + DataNodeJmxMetrics.NAME
            + " bean: hdfs-rdma is not running there (no -javaagent,"
            + " dfs.datanode.rdma.enabled not true, or UCX unavailable:"
            + " see its log)");
        continue;
      }
      long fetched = b1.dataBytesFetched() - f0;
      total += fetched;
      String counts = "fetched " + fetched + " bytes over UCX (the"
          + " probe's replicas there: " + want + "), blocks over UCX +"
          + (b1.blocksOverUcx() - u0) + ", over TCP +"
          + (b1.blocksOverTcp() - t0);
      String transports = b1.getString("tag.Transports");
      if (transports != null && !transports.isEmpty()) {
        counts += "; transports " + transports;
      }
      if (!settled) {
        // Short of the probe's bytes after the whole wait.
        long waited = COUNTERS_WAIT_MS / 1000;
        counts += "; still short after polling its counters for " + waited
            + " s: /jmx serves them as of metrics2's last snapshot,"
            + " refreshed at most once a metrics period (*.period in the"
            + " DataNode's hadoop-metrics2.properties, 10 s by default), so"
            + " a period of " + waited + " s or more is a likely cause";
      }
      findings.add(fetched >= want ? Level.OK : Level.PROBLEM, "probe",
          "DataNode " + node + " " + counts);
    }
    findings.add(Level.INFO, "probe", "DataNodes of the probe fetched "
        + total + " bytes over UCX in all (gets, or same-host reads of the"
        + " client's shared memory)");
  }

  /** This host's name, for the probe file's name. */
  private static String hostName() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      return "localhost";
    }
  }

  /** This JVM's process id, for the probe file's name. */
  private static String pid() {
    String name = ManagementFactory.getRuntimeMXBean().getName();
    int at = name.indexOf('@');
    return at > 0 ? name.substring(0, at) : name;
  }
}
