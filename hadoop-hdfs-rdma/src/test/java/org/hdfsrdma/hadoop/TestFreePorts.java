package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;

import org.junit.Test;

/**
 * Ports for daemons started in JVMs of their own come from below the
 * kernel's ephemeral range, where no connection takes its source port.
 */
public class TestFreePorts {

  private static final File RANGE =
      new File("/proc/sys/net/ipv4/ip_local_port_range");

  @Test(timeout = 60_000)
  public void testPortsComeFromBelowTheEphemeralRange() throws Exception {
    assumeTrue("Linux only", RANGE.canRead());
    String range = Files.readAllLines(RANGE.toPath(),
        StandardCharsets.US_ASCII).get(0).trim();
    int low = Integer.parseInt(range.split("\\s+")[0]);
    assertEquals(range, low, FreePorts.ephemeralLow());
    assumeTrue("an ephemeral range starting at " + low + " leaves no room",
        low > 11_000);
    for (int i = 0; i < 100; i++) {
      int port = FreePorts.next();
      assertTrue(port + " is in the ephemeral range from " + low,
          port >= 10_000 && port < low);
    }
  }
}
