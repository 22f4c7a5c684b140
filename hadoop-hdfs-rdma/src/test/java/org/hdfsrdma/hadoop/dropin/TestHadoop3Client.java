package org.hdfsrdma.hadoop.dropin;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;

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
 * A mixed-version pair: a Hadoop 3.3.6 client (the shaded hadoop-client-api
 * and -runtime jars, as Spark ships them) started with the drop-in jar as
 * agent writes to DataNodes of Hadoop 2.9.2. The agent recognises the
 * shaded client's classes as Apache 3.3.6's and swaps in that release's
 * patched classes; the negotiation is the same on both releases, so every
 * byte goes over UCX. (With the jar first on the class path this client
 * died with NoSuchMethodError, before the jar became an agent; before the
 * jar carried Hadoop 3 classes it wrote over TCP.)
 *
 * <p>The agent's one line names 3.3.6's classes in hadoop-client-api; the file
 * reads back intact, every replica's bytes fetched over UCX, none over TCP.
 * {@code TestCheckCommand} runs the check from the same client.
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
  public void testHdfsDfsPutFromHadoop3WritesOverUcx() throws Exception {
    String hadoop3 = AgentCluster.appClassPath(
        "hdfsrdma.test.hadoop3.classpath");
    File local = new File(cluster.work(), "local-file");
    byte[] data = new byte[5 * 1024 * 1024 + 3];
    new Random(3).nextBytes(data);
    Files.write(local.toPath(), data);
    long fetchedBefore = cluster.fetched();
    long ucxBefore = cluster.blocksOverUcx();
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
    assertEquals(log, 1, ours.stream().filter(l -> l.matches(".* INFO .*"
        + "hdfs-rdma: the UCX write path's client classes replace Hadoop"
        + " 3\\.3\\.6's DataStreamer, DFSPacket, DFSOutputStream,"
        + " BlockReaderRemote \\(identical"
        + " to Apache Hadoop 3\\.3\\.6's\\) from \\S+/hadoop-client-api"
        + "-3\\.3\\.6\\.jar")).count());
    assertFalse(log, log.contains(" WARN  agent"));
    assertFalse(log, log.contains("Exception"));
    assertFalse(log, log.contains("Error"));

    assertArrayEquals(data, cluster.readFile(new Path("/from-hadoop3")));
    assertEquals("every replica's bytes fetched over UCX",
        fetchedBefore + 3L * data.length, cluster.fetched());
    assertEquals("one block, three replicas over UCX", ucxBefore + 3,
        cluster.blocksOverUcx());
    assertEquals("none over TCP", tcpBefore, cluster.blocksOverTcp());
  }
}
