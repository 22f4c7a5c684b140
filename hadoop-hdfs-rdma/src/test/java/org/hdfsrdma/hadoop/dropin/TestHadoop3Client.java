package org.hdfsrdma.hadoop.dropin;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Random;

import org.apache.hadoop.fs.Path;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * A Hadoop 3.3 client (the shaded hadoop-client-api and -runtime jars
 * Spark 3.3 ships) started with the drop-in jar as agent writes to a
 * patched cluster over TCP: no exception, the file intact, and one log
 * line saying why. With the jar first on the class path this client died
 * with NoSuchMethodError, before the jar became an agent.
 */
public class TestHadoop3Client {

  private AgentCluster cluster;

  @Before
  public void setUp() throws Exception {
    cluster = new AgentCluster("hadoop3-client", 3);
  }

  @After
  public void tearDown() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test(timeout = 300_000)
  public void testHdfsDfsPutWritesOverTcpAndSaysWhy() throws Exception {
    String hadoop3 = AgentCluster.appClassPath(
        "hdfsrdma.test.hadoop3.classpath");
    File local = new File(cluster.work(), "local-file");
    byte[] data = new byte[5 * 1024 * 1024 + 3];
    new Random(3).nextBytes(data);
    Files.write(local.toPath(), data);
    long fetchedBefore = cluster.fetched();
    long tcpBefore = cluster.blocksOverTcp();

    int exit = cluster.run("put-hadoop3", AgentCluster.agentOptions(),
        new HashMap<String, String>(), cluster.conf().getPath()
        + File.pathSeparator + hadoop3, "org.apache.hadoop.fs.FsShell",
        "-put", local.getPath(), "/from-hadoop3");
    String log = AgentCluster.read(cluster.log("put-hadoop3"));
    assertEquals(log, 0, exit);
    List<String> ours = new ArrayList<String>();
    for (String line : log.split("\n")) {
      if (line.contains("hdfs-rdma: ")) {
        ours.add(line);
      }
    }
    assertEquals(log, 1, ours.size());
    assertTrue(log, ours.get(0).matches(".* WARN .*hdfs-rdma: the client"
        + " classes stay Hadoop's own and writes stay on TCP:"
        + " .*/hadoop-client-api-3\\.3\\.\\d+\\.jar.*"));
    assertFalse(log, log.contains("Exception"));
    assertFalse(log, log.contains("Error"));

    assertArrayEquals(data, cluster.readFile(new Path("/from-hadoop3")));
    assertEquals("nothing went by UCX get", fetchedBefore, cluster.fetched());
    assertEquals("one block, three replicas over TCP", tcpBefore + 3,
        cluster.blocksOverTcp());
  }
}
