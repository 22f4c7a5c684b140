package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.junit.Test;

/**
 * Ports for daemons started in JVMs of their own come from below the
 * kernel's ephemeral range, where no connection takes its source port, and
 * no port is handed out twice, in one JVM or across two.
 */
public class TestFreePorts {

  private static final File RANGE =
      new File("/proc/sys/net/ipv4/ip_local_port_range");

  /** The low end of the ephemeral range, if it leaves room below it. */
  private static int ephemeralLow() throws Exception {
    assumeTrue("Linux only", RANGE.canRead());
    String range = Files.readAllLines(RANGE.toPath(),
        StandardCharsets.US_ASCII).get(0).trim();
    int low = Integer.parseInt(range.split("\\s+")[0]);
    assertEquals(range, low, FreePorts.ephemeralLow());
    assumeTrue("an ephemeral range starting at " + low + " leaves no room",
        low > 11_000);
    return low;
  }

  @Test(timeout = 60_000)
  public void testPortsComeFromBelowTheEphemeralRange() throws Exception {
    int low = ephemeralLow();
    for (int i = 0; i < 100; i++) {
      int port = FreePorts.next();
      assertTrue(port + " is in the ephemeral range from " + low,
          port >= 10_000 && port < low);
    }
  }

  /**
   * Picked at random among the free ports, 17 ports of one cluster met
   * twice in a few hundred starts; 500 ports, almost always.
   */
  @Test(timeout = 60_000)
  public void testNoPortIsHandedOutTwiceInOneJvm() throws Exception {
    ephemeralLow();
    Set<Integer> seen = new HashSet<Integer>();
    for (int i = 0; i < 500; i++) {
      int port = FreePorts.next();
      assertTrue(port + " handed out twice", seen.add(port));
    }
  }

  @Test(timeout = 120_000)
  public void testTwoJvmsNeverShareAPort() throws Exception {
    ephemeralLow();
    int count = 3 * FreePorts.BLOCK;
    Process other = new ProcessBuilder(
        new File(System.getProperty("java.home"), "bin/java").getPath(),
        "-cp", System.getProperty("java.class.path"),
        FreePorts.class.getName(), String.valueOf(count))
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    try {
      Set<Integer> theirs = new HashSet<Integer>();
      BufferedReader r = new BufferedReader(new InputStreamReader(
          other.getInputStream(), StandardCharsets.US_ASCII));
      while (theirs.size() < count) {
        String line = r.readLine();
        assertTrue("the other JVM ended after " + theirs.size() + " ports",
            line != null);
        theirs.add(Integer.parseInt(line.trim()));
      }
      for (int i = 0; i < count; i++) {
        int port = FreePorts.next();
        assertTrue(port + " handed out to both JVMs",
            !theirs.contains(port));
      }
    } finally {
      other.getOutputStream().close();
      if (!other.waitFor(30, TimeUnit.SECONDS)) {
        other.destroyForcibly();
      }
    }
  }
}
