package org.hdfsrdma.hadoop.agent;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import org.apache.hadoop.test.GenericTestUtils;
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
   * One thread however often it is asked for; it loads UCX and readies the
   * JCE, then ends.
   */
  @Test(timeout = 60000)
  public void testWarmsUpOnceAndEnds() throws Exception {
    WarmUp.startOnce();
    WarmUp.startOnce();
    assertTrue("threads: " + warmUpThreads(), warmUpThreads() <= 1);
    GenericTestUtils.waitFor(() -> WarmUp.outcome() != null, 10, 30000);
    assertEquals("UCX libraries loaded, HMAC and SecureRandom ready",
        WarmUp.outcome());
    GenericTestUtils.waitFor(() -> warmUpThreads() == 0, 10, 30000);
    WarmUp.startOnce();
    assertEquals(0, warmUpThreads());
  }
}
