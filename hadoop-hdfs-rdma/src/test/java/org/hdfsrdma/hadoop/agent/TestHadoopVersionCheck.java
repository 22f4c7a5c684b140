package org.hdfsrdma.hadoop.agent;

import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.util.List;

import org.junit.Test;

/**
 * The Hadoop releases the agent accepts: every release the jar lists
 * ({@code patches/releases.txt}; the test names 2.9.1, 2.9.2 and 2.10.2)
 * is accepted, and others (2.9.0, 3.2.4) are refused with a reason.
 */
public class TestHadoopVersionCheck {

  @Test
  public void testSupportedReleases() {
    List<String> supported = HadoopVersionCheck.supported();
    assertTrue(supported.toString(), supported.contains("2.9.1"));
    assertTrue(supported.toString(), supported.contains("2.9.2"));
    assertTrue(supported.toString(), supported.contains("2.10.2"));
    for (String release : supported) {
      assertNull(release, HadoopVersionCheck.problem(release));
    }
    // The tests run on the Hadoop the module is built against.
    assertNull(HadoopVersionCheck.problem());
  }

  @Test
  public void testOtherReleasesAreRefusedWithAReason() {
    String problem = HadoopVersionCheck.problem("3.2.4");
    assertNotNull(problem);
    assertTrue(problem, problem.contains("3.2.4"));
    assertNotNull(HadoopVersionCheck.problem("2.9.0"));
  }
}
