package org.hdfsrdma.hadoop.agent;

import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import org.junit.Test;

public class TestHadoopVersionCheck {

  @Test
  public void testSupportedReleases() {
    assertNull(HadoopVersionCheck.problem("2.9.1"));
    assertNull(HadoopVersionCheck.problem("2.9.2"));
    // The tests run on the Hadoop the jar is built for.
    assertNull(HadoopVersionCheck.problem());
  }

  @Test
  public void testOtherReleasesAreRefusedWithAReason() {
    String problem = HadoopVersionCheck.problem("3.3.6");
    assertNotNull(problem);
    assertTrue(problem, problem.contains("3.3.6"));
    assertNotNull(HadoopVersionCheck.problem("2.9.0"));
  }
}
