package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
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
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Test;

/**
 * A NameNode and four DataNodes, each its own JVM with UCX, and a writer in
 * this JVM: a DataNode of the pipeline is killed with kill -9 in the middle
 * of a block, and the write completes with the file intact and fsck
 * healthy (Hadoop's pipeline recovery replaces the node).
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
    if (work != null) {
      FileUtil.fullyDelete(work);
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private Process start(String name, String mainClass, String... args)
      throws IOException {
    List<String> command = new ArrayList<String>();
    command.add(System.getProperty("java.home") + "/bin/java");
    command.add("-Xmx512m");
    command.add("-cp");
    command.add(System.getProperty("surefire.test.class.path",
        System.getProperty("java.class.path")));
    command.add(mainClass);
    for (String a : args) {
      command.add(a);
    }
    Process p = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(new File(work, name + ".log")).start();
    daemons.add(p);
    return p;
  }

  @Test(timeout = 300_000)
  public void testDataNodeKilledMidBlock() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    work = GenericTestUtils.getTestDir("multiprocess-" + System.nanoTime());
    work.mkdirs();
    int nnPort = freePort();
    String httpAddress = "127.0.0.1:" + freePort();
    String fsUri = "hdfs://127.0.0.1:" + nnPort;
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
    for (int i = 0; i < 4; i++) {
      int port = freePort();
      List<String> args = new ArrayList<String>();
      java.util.Collections.addAll(args, common);
      java.util.Collections.addAll(args,
          "-D", "dfs.datanode.data.dir=" + new File(work, "data" + i),
          "-D", "dfs.datanode.address=127.0.0.1:" + port,
          "-D", "dfs.datanode.http.address=127.0.0.1:0",
          "-D", "dfs.datanode.ipc.address=127.0.0.1:0");
      dataNodesByPort.put(port, start("datanode" + i,
          "org.apache.hadoop.hdfs.server.datanode.DataNode",
          args.toArray(new String[0])));
    }

    Configuration conf = new Configuration();
    conf.set("fs.defaultFS", fsUri);
    conf.set("dfs.namenode.http-address", httpAddress); // for fsck
    conf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY, true);
    final DistributedFileSystem fs =
        (DistributedFileSystem) FileSystem.newInstance(
            java.net.URI.create(fsUri), conf);
    try {
      GenericTestUtils.waitFor(() -> {
        try {
          return fs.getDataNodeStats(DatanodeReportType.LIVE).length == 4;
        } catch (IOException e) {
          return false;
        }
      }, 500, 120_000);

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
          UcxRuntime.current().dataBytesSent() >= 2 * 1024 * 1024);
      ByteArrayOutputStream report = new ByteArrayOutputStream();
      Configuration fsckConf = new Configuration(conf);
      ToolRunner.run(new DFSck(fsckConf, new PrintStream(report, true)),
          new String[] {"/killed"});
      assertTrue(report.toString(), report.toString().contains("HEALTHY"));
    } finally {
      fs.close();
    }
  }
}
