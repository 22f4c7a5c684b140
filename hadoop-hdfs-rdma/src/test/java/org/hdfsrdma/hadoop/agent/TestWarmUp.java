package org.hdfsrdma.hadoop.agent;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.test.GenericTestUtils;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.junit.Test;

public class TestWarmUp {

  private static int warmUpThreads() {
    int n = 0;
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().equals(WarmUp.THREAD_NAME)) {
        n++;
      }
    }
    return n;
  }

  /**
   * One thread however often it is asked for; it ends when it has done
   * what this JVM's configuration files ask for.
   */
  @Test(timeout = 60000)
  public void testStartsOnceAndEnds() throws Exception {
    WarmUp.startOnce();
    WarmUp.startOnce();
    assertTrue("threads: " + warmUpThreads(), warmUpThreads() <= 1);
    GenericTestUtils.waitFor(() -> WarmUp.outcome() != null, 10, 30000);
    GenericTestUtils.waitFor(() -> warmUpThreads() == 0, 10, 30000);
    WarmUp.startOnce();
    assertEquals(0, warmUpThreads());
  }

  /**
   * A client asking for UCX, to read, or to write starting UCX before its
   * first block, gets UCX loaded.
   */
  @Test(timeout = 60000)
  public void testLoadsUcxForAClientAskingForIt() {
    Configuration writer = new Configuration(false);
    writer.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY, true);
    writer.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_DEFER_START_KEY,
        false);
    Configuration reader = new Configuration(false);
    reader.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_READ_ENABLED_KEY,
        true);
    for (Configuration files : new Configuration[] {writer, reader}) {
      assertEquals("UCX libraries loaded, HMAC and SecureRandom ready",
          WarmUp.warmUp(files));
    }
  }

  /**
   * A client that only writes, and writes its first block over TCP, loads
   * nothing: a JVM that writes one block never needs UCX.
   */
  @Test(timeout = 60000)
  public void testLeavesUcxToAWriterThatDefersItsStart() {
    Configuration files = new Configuration(false);
    files.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY, true);
    assertEquals("not needed: the client only writes, and starts UCX past"
        + " its first block", WarmUp.warmUp(files));
  }

  /**
   * The agent installed with the client's UCX path off costs a JVM no UCX
   * library and no JCE start.
   */
  @Test(timeout = 60000)
  public void testDoesNothingWhereTheClientLeavesUcxOff() {
    assertEquals("not needed: the site files leave the client's UCX"
        + " path off", WarmUp.warmUp(new Configuration(false)));
  }
}
