package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.test.GenericTestUtils;
import org.hdfsrdma.hadoop.ProcessCluster.DataNodeProcess;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.Test;

/**
 * A client JVM that writes over UCX and exits normally leaves nothing at
 * WARN or above, and no line of UCX's own, in the DataNodes' logs after
 * its put: task JVMs come and go by the thousand, and a WARN per DataNode
 * and exit buries the lines that matter.
 * The client is {@code hdfs dfs -put} (FsShell) in its own JVM; the
 * DataNodes are their own JVMs too.
 *
 * <p>Two DataNode JVMs, over shared memory, and over tcp allowed with endpoints
 * back to the client: every replica came by UCX, and the DataNodes drop their
 * connections to the client.
 */
public class TestOrderlyClientExit {

  /**
   * Shared memory (the default): the DataNodes read the client's segments
   * and hold no endpoint back to it.
   */
  @Test(timeout = 300_000)
  public void testSharedMemoryClientExit() throws Exception {
    putAndExit("exit-shm", new String[0]);
  }

  /**
   * tcp, allowed: each DataNode makes an endpoint back to the client for
   * its gets, as on RDMA hardware, and hears the client's exit on it.
   */
  @Test(timeout = 300_000)
  public void testClientWithEndpointsBackExit() throws Exception {
    putAndExit("exit-gets", new String[] {"dfs.rdma.ucx.tls=tcp",
        "dfs.rdma.ucx.allow-tcp=true",
        "dfs.client.rdma.distribution=fan-out",
        "dfs.datanode.rdma.allow-emulated-gets=true"});
  }

  private static void putAndExit(String name, String[] ucxConf)
      throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    final ProcessCluster cluster = new ProcessCluster(name).start(2, -1,
        ProcessCluster.Jvm.PATCHED, ucxConf);
    DistributedFileSystem fs = null;
    try {
      // Waits for both DataNodes to be live.
      fs = cluster.client(new Configuration(), 2);
      File local = new File(cluster.work(), "local-file");
      byte[] data = new byte[3 * 1024 * 1024 + 11];
      new Random(5).nextBytes(data);
      Files.write(local.toPath(), data);
      List<Integer> logStart = new ArrayList<Integer>();
      for (DataNodeProcess dn : cluster.dataNodes()) {
        logStart.add(cluster.log(dn.name).length());
      }

      List<String> args = new ArrayList<String>();
      args.add("org.apache.hadoop.fs.FsShell");
      args.add("-D");
      args.add("fs.defaultFS=" + cluster.fsUri());
      args.add("-D");
      args.add("dfs.replication=2");
      args.add("-D");
      args.add(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY + "=true");
      for (String kv : ucxConf) {
        args.add("-D");
        args.add(kv);
      }
      args.add("-put");
      args.add(local.getAbsolutePath());
      args.add("/put");
      Process put = cluster.start("put", ProcessCluster.Jvm.PATCHED,
          args.remove(0), args.toArray(new String[0]));
      assertTrue("the put finished", put.waitFor(120, TimeUnit.SECONDS));
      String putLog = cluster.log("put");
      assertEquals(putLog, 0, put.exitValue());

      // UCX carried every replica's bytes.
      long fetched = 0;
      for (DataNodeProcess dn : cluster.dataNodes()) {
        fetched += ProcessCluster.rdmaBean(dn, "DataBytesFetched");
        assertEquals(0, ProcessCluster.rdmaBean(dn, "BlocksOverTcp"));
      }
      assertEquals(2L * data.length, fetched);

      // The DataNodes have let go of the client: no connection left.
      for (final DataNodeProcess dn : cluster.dataNodes()) {
        GenericTestUtils.waitFor(() -> {
          try {
            return ProcessCluster.rdmaBeanAsServed(dn, "ClientConnections")
                == 0;
          } catch (IOException e) {
            return false;
          }
        }, 100, 60_000);
      }

      assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs,
          new Path("/put")));

      for (int i = 0; i < cluster.dataNodes().size(); i++) {
        DataNodeProcess dn = cluster.dataNodes().get(i);
        StringBuilder loud = new StringBuilder();
        for (String line : cluster.log(dn.name).substring(logStart.get(i))
            .split("\n")) {
          if (line.matches(".* (WARN|ERROR|FATAL) .*")
              || line.startsWith("[") && line.contains("UCX")) {
            loud.append(line).append('\n');
          }
        }
        assertEquals("DataNode " + dn.name + " logged above DEBUG after an"
            + " orderly client exit", "", loud.toString());
      }
    } finally {
      if (fs != null) {
        fs.close();
      }
      cluster.close();
    }
  }
}
