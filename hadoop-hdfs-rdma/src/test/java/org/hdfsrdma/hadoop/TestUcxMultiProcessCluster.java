package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FileUtil;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;
import org.apache.hadoop.hdfs.tools.DFSck;
import org.apache.hadoop.test.GenericTestUtils;
import org.apache.hadoop.util.ToolRunner;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.metrics.ClientOutcomes;
import org.hdfsrdma.hadoop.metrics.PipelineOutcome;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TestWatcher;
import org.junit.runner.Description;

/**
 * A NameNode and DataNodes, each its own JVM, and a writer in this JVM:
 * a DataNode of the pipeline is killed with kill -9 in the middle of a
 * block, and the write completes with the file intact and fsck healthy
 * (Hadoop's pipeline recovery replaces the node); a DataNode and a client
 * on hosts where the UCX libraries cannot load write over TCP.
 *
 * <p>Run after package (failsafe) with the deployed drop-in jar: this JVM
 * and every patched JVM it starts run Hadoop 2.9.2's jars with the jar as
 * {@code -javaagent:} and the UCX settings as -D options.
 *
 * <p>The victim is the middle DataNode of the pipeline, killed after 2 MiB of
 * the block went over UCX. Without UCX: a DataNode JVM and an
 * {@code hdfs dfs -put} JVM with an empty {@code libucp.so.0} first on
 * {@code LD_LIBRARY_PATH} and {@code java.library.path}, each saying why in one
 * line. Stock jars on either side: a DataNode JVM on the stock 2.9.2 jars
 * (nothing of hdfs-rdma on its class path) in every pipeline of a patched
 * client, and an {@code hdfs dfs -put} on the stock jars to the patched
 * cluster, both over TCP, files intact.
 */
public class TestUcxMultiProcessCluster {

  private final List<Process> daemons = new ArrayList<Process>();
  private final Map<Integer, Process> dataNodesByPort =
      new HashMap<Integer, Process>();
  private File work;

  @After
  public void tearDown() throws Exception {
    for (Process p : daemons) {
      p.destroyForcibly();
      p.waitFor(30, TimeUnit.SECONDS);
    }
    UcxRuntime.shutdown();
  }

  /**
   * After the daemons stopped: removes a passed test's directory; from a
   * failed one's, prints the daemons' warnings and errors, since the
   * cause is often in a DataNode's log, not in this JVM's.
   */
  @Rule
  public final TestWatcher keepLogsOfFailures = new TestWatcher() {
    @Override
    protected void succeeded(Description description) {
      if (work != null) {
        FileUtil.fullyDelete(work);
      }
    }

    @Override
    protected void failed(Throwable e, Description description) {
      File[] logs = work == null ? null : work.listFiles(
          (dir, name) -> name.endsWith(".log"));
      if (logs == null) {
        return;
      }
      for (File log : logs) {
        System.out.println("==== " + log + ": WARN and ERROR lines");
        try {
          for (String line : read(log).split("\n")) {
            if (line.contains(" WARN ") || line.contains(" ERROR ")
                || line.contains("Exception")) {
              System.out.println(line);
            }
          }
        } catch (IOException io) {
          System.out.println("unreadable: " + io);
        }
      }
    }
  };

  private static int freePort() throws IOException {
    return FreePorts.next();
  }

  private Process start(String name, String mainClass, String... args)
      throws IOException {
    return start(name, Jvm.PATCHED, mainClass, args);
  }

  /** What a started JVM runs. */
  private enum Jvm {
    /** Hadoop's jars with the drop-in agent, UCX on. */
    PATCHED,
    /** The same, on a host whose UCX libraries cannot load. */
    UCX_BROKEN,
    /** Stock Hadoop 2.9.2 jars only: none of hdfs-rdma, no UCX settings. */
    STOCK
  }

  /** The drop-in jar this build made (failsafe passes its path). */
  private static String dropinJar() {
    String jar = System.getProperty("hdfsrdma.dropin.jar");
    assertTrue("no drop-in jar " + jar + ": run in Maven's"
        + " integration-test phase", jar != null && new File(jar).isFile());
    return jar;
  }

  /** The UCX settings of a patched JVM, as the README's hdfs-site.xml. */
  private static final String[] UCX_SETTINGS = {
      "-D", "dfs.datanode.plugins=" + UcxDataNodePlugin.class.getName(),
      "-D", HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY + "=true",
      "-D", HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY + "=true",
      // A client without UCX must try it at its first block and say why not.
      "-D", HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_DEFER_START_KEY + "=false"};

  /**
   * Starts a JVM on the Hadoop jars of this test's class path, with the
   * drop-in agent and UCX settings unless {@code kind} is STOCK;
   * UCX_BROKEN: one where the UCX libraries cannot load (an empty
   * libucp.so.0 comes first on LD_LIBRARY_PATH, as on a host with a
   * broken or missing UCX install).
   */
  private Process start(String name, Jvm kind, String mainClass,
      String... args) throws IOException {
    boolean withoutUcx = kind == Jvm.UCX_BROKEN;
    File broken = new File(work, "broken-ucx");
    List<String> command = new ArrayList<String>();
    command.add(System.getProperty("java.home") + "/bin/java");
    command.add("-Xmx512m");
    if (kind != Jvm.STOCK) {
      command.add("-javaagent:" + dropinJar());
    }
    if (withoutUcx) {
      // JUCX finds libucp through System.loadLibrary, then the dynamic
      // linker: both must meet the broken library.
      command.add("-Djava.library.path=" + broken.getAbsolutePath());
    }
    command.add("-cp");
    // conf/ first: FsShell insists on a core-site.xml.
    command.add(new File(work, "conf").getAbsolutePath() + File.pathSeparator
        + ChildJvm.stockClassPath());
    command.add(mainClass);
    if (kind != Jvm.STOCK) {
      java.util.Collections.addAll(command, UCX_SETTINGS);
    }
    for (String a : args) {
      command.add(a);
    }
    ProcessBuilder builder = new ProcessBuilder(command)
        .redirectErrorStream(true)
        .redirectOutput(new File(work, name + ".log"));
    if (withoutUcx) {
      broken.mkdirs();
      new java.io.FileOutputStream(new File(broken, "libucp.so.0")).close();
      String path = builder.environment().get("LD_LIBRARY_PATH");
      builder.environment().put("LD_LIBRARY_PATH", broken.getAbsolutePath()
          + (path == null || path.isEmpty() ? "" : ":" + path));
    }
    Process p = builder.start();
    daemons.add(p);
    return p;
  }

  private String httpAddress;

  /**
   * Starts a NameNode and {@code dataNodes} DataNodes, the one numbered
   * {@code special} (if any) of the given kind; returns the fs URI.
   */
  private String startCluster(int dataNodes, int special, Jvm kind)
      throws Exception {
    work = GenericTestUtils.getTestDir("multiprocess-" + System.nanoTime());
    work.mkdirs();
    int nnPort = freePort();
    httpAddress = "127.0.0.1:" + freePort();
    String fsUri = "hdfs://127.0.0.1:" + nnPort;
    File conf = new File(work, "conf");
    conf.mkdirs();
    java.nio.file.Files.write(new File(conf, "core-site.xml").toPath(),
        ("<?xml version=\"1.0\"?>\n<configuration><property><name>"
        + "fs.defaultFS</name><value>" + fsUri + "</value></property>"
        + "</configuration>\n").getBytes(
            java.nio.charset.StandardCharsets.UTF_8));
    String[] common = {
        "-D", "fs.defaultFS=" + fsUri,
        "-D", "dfs.namenode.name.dir=" + new File(work, "name"),
        "-D", "dfs.namenode.http-address=" + httpAddress,
        "-D", "dfs.namenode.datanode.registration.ip-hostname-check=false",
        "-D", "dfs.namenode.fs-limits.min-block-size=0",
        "-D", "hadoop.tmp.dir=" + new File(work, "tmp")};
    List<String> format = new ArrayList<String>();
    java.util.Collections.addAll(format, common);
    java.util.Collections.addAll(format, "-format", "-force",
        "-nonInteractive");
    Process f = start("format", "org.apache.hadoop.hdfs.server.namenode"
        + ".NameNode", format.toArray(new String[0]));
    assertTrue(f.waitFor(120, TimeUnit.SECONDS));
    daemons.remove(f);
    start("namenode", "org.apache.hadoop.hdfs.server.namenode.NameNode",
        common);
    for (int i = 0; i < dataNodes; i++) {
      int port = freePort();
      List<String> args = new ArrayList<String>();
      java.util.Collections.addAll(args, common);
      java.util.Collections.addAll(args,
          "-D", "dfs.datanode.data.dir=" + new File(work, "data" + i),
          "-D", "dfs.datanode.address=127.0.0.1:" + port,
          "-D", "dfs.datanode.http.address=127.0.0.1:0",
          "-D", "dfs.datanode.ipc.address=127.0.0.1:0");
      dataNodesByPort.put(port, start("datanode" + i,
          i == special ? kind : Jvm.PATCHED,
          "org.apache.hadoop.hdfs.server.datanode.DataNode",
          args.toArray(new String[0])));
    }
    return fsUri;
  }

  @Test(timeout = 300_000)
  public void testDataNodeKilledMidBlock() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    String fsUri = startCluster(4, -1, Jvm.PATCHED);
    final DistributedFileSystem fs = openClient(fsUri, 4);
    try {
      Path path = new Path("/killed");
      byte[] data = new byte[6 * 1024 * 1024];
      new Random(11).nextBytes(data);
      try (FSDataOutputStream out = fs.create(path, (short) 3)) {
        out.write(data, 0, 2 * 1024 * 1024);
        out.hflush();
        DatanodeInfo[] pipeline =
            DFSTestUtil.getAllBlocks(fs, path).get(0).getLocations();
        Process victim = dataNodesByPort.get(pipeline[1].getXferPort());
        victim.destroyForcibly(); // kill -9
        assertTrue(victim.waitFor(30, TimeUnit.SECONDS));
        out.write(data, 2 * 1024 * 1024, data.length - 2 * 1024 * 1024);
      }
      assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
      assertTrue("the writer sent packets over UCX to the DataNode JVMs",
          UcxRuntime.current().metrics().dataBytesSent() >= 2 * 1024 * 1024);
      ByteArrayOutputStream report = new ByteArrayOutputStream();
      Configuration fsckConf = new Configuration(clientConf);
      ToolRunner.run(new DFSck(fsckConf, new PrintStream(report, true)),
          new String[] {"/killed"});
      assertTrue(report.toString(), report.toString().contains("HEALTHY"));
    } finally {
      fs.close();
    }
  }

  private Configuration clientConf;

  /**
   * This JVM's client of the cluster, UCX on, once {@code dataNodes}
   * DataNodes are live.
   */
  private DistributedFileSystem openClient(String fsUri, int dataNodes)
      throws Exception {
    clientConf = new Configuration();
    clientConf.set("fs.defaultFS", fsUri);
    clientConf.set("dfs.namenode.http-address", httpAddress); // for fsck
    clientConf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY,
        true);
    final DistributedFileSystem fs = (DistributedFileSystem)
        FileSystem.newInstance(java.net.URI.create(fsUri), clientConf);
    try {
      GenericTestUtils.waitFor(() -> {
        try {
          return fs.getDataNodeStats(DatanodeReportType.LIVE).length
              == dataNodes;
        } catch (IOException e) {
          return false;
        }
      }, 500, 120_000);
    } catch (Exception e) {
      fs.close();
      throw e;
    }
    return fs;
  }

  private static String read(File log) throws IOException {
    return new String(java.nio.file.Files.readAllBytes(log.toPath()),
        java.nio.charset.StandardCharsets.UTF_8);
  }

  @Test(timeout = 300_000)
  public void testHostsWithoutUcxLibrariesWriteOverTcp() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    String fsUri = startCluster(3, 2, Jvm.UCX_BROKEN);
    final DistributedFileSystem fs = openClient(fsUri, 3);
    try {
      // DataNode plugins start after the DataNode registered.
      final File dataNodeLog = new File(work, "datanode2.log");
      GenericTestUtils.waitFor(() -> {
        try {
          String log = read(dataNodeLog);
          return log.contains("UCX data path off")
              && log.contains("UCX native libraries are not usable");
        } catch (IOException e) {
          return false;
        }
      }, 200, 60_000);

      // A DataNode that cannot load UCX: every pipeline includes it, so
      // every block goes over TCP, from a client that has UCX.
      Path path = new Path("/no-ucx-datanode");
      byte[] data = new byte[3 * 1024 * 1024 + 17];
      new Random(21).nextBytes(data);
      long sentBefore = UcxRuntime.get(clientConf).metrics().dataBytesSent();
      long offBefore = ClientOutcomes.pipelines(
          PipelineOutcome.TCP_DATANODE_OFF);
      try (FSDataOutputStream out = fs.create(path, (short) 3)) {
        out.write(data);
      }
      assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
      assertEquals("no packet went as a descriptor", sentBefore,
          UcxRuntime.current().metrics().dataBytesSent());
      assertTrue("the client counts why: that DataNode's UCX is off",
          ClientOutcomes.pipelines(PipelineOutcome.TCP_DATANODE_OFF)
              > offBefore);

      // A client that cannot load UCX: hdfs dfs -put in its own JVM.
      File local = new File(work, "local-file");
      byte[] more = new byte[2 * 1024 * 1024 + 5];
      new Random(22).nextBytes(more);
      java.nio.file.Files.write(local.toPath(), more);
      Process put = start("put-without-ucx", Jvm.UCX_BROKEN,
          "org.apache.hadoop.fs.FsShell", "-D", "fs.defaultFS=" + fsUri,
          "-D", HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY + "=true",
          "-put", local.getAbsolutePath(), "/no-ucx-client");
      assertTrue(put.waitFor(120, TimeUnit.SECONDS));
      String putLog = read(new File(work, "put-without-ucx.log"));
      assertEquals(putLog, 0, put.exitValue());
      assertTrue(putLog,
          putLog.contains("UCX unavailable, writes stay on TCP"));
      assertArrayEquals(more, DFSTestUtil.readFileBuffer(fs,
          new Path("/no-ucx-client")));
    } finally {
      fs.close();
    }
  }

  @Test(timeout = 300_000)
  public void testStockJarsOnEitherSideWriteOverTcp() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    String fsUri = startCluster(3, 2, Jvm.STOCK);
    final DistributedFileSystem fs = openClient(fsUri, 3);
    try {
      String stockLog = read(new File(work, "datanode2.log"));
      assertTrue("the stock DataNode runs without hdfs-rdma",
          !stockLog.contains("org.hdfsrdma")
          && !stockLog.contains("UCX data path"));

      // A patched client with UCX on; every pipeline holds the stock one.
      Path path = new Path("/stock-datanode");
      byte[] data = new byte[2 * 1024 * 1024 + 99];
      new Random(31).nextBytes(data);
      long sentBefore = UcxRuntime.get(clientConf).metrics().dataBytesSent();
      long stockBefore = ClientOutcomes.pipelines(
          PipelineOutcome.TCP_STOCK_DATANODE);
      try (FSDataOutputStream out = fs.create(path, (short) 3)) {
        out.write(data);
      }
      assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
      assertEquals("no packet went as a descriptor", sentBefore,
          UcxRuntime.current().metrics().dataBytesSent());
      assertTrue("the client counts why: a DataNode without hdfs-rdma",
          ClientOutcomes.pipelines(PipelineOutcome.TCP_STOCK_DATANODE)
              > stockBefore);

      // A stock client (hdfs dfs -put on the stock jars) to this cluster,
      // replication 2 so some pipelines hold only patched DataNodes.
      File local = new File(work, "stock-client-file");
      byte[] more = new byte[1024 * 1024 + 3];
      new Random(32).nextBytes(more);
      java.nio.file.Files.write(local.toPath(), more);
      Process put = start("put-stock-client", Jvm.STOCK,
          "org.apache.hadoop.fs.FsShell", "-D", "dfs.replication=2",
          "-put", local.getAbsolutePath(), "/stock-client");
      assertTrue(put.waitFor(120, TimeUnit.SECONDS));
      assertEquals(read(new File(work, "put-stock-client.log")), 0,
          put.exitValue());
      assertArrayEquals(more, DFSTestUtil.readFileBuffer(fs,
          new Path("/stock-client")));
    } finally {
      fs.close();
    }
  }
}
