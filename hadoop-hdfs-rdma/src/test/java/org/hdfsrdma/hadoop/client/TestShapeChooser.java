package org.hdfsrdma.hadoop.client;

import static org.junit.Assert.assertEquals;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;

import org.apache.hadoop.test.GenericTestUtils;
import org.junit.Test;

/**
 * The shape an auto pipeline on RDMA links gets from the measured rates,
 * and the client link rate as the RDMA ports under a sysfs-like tree
 * report it.
 *
 * <p>For instance: a chain for a 10 Gb/s client in front of 25 Gb/s DataNodes,
 * two feeders at 56 Gb/s, a fan-out where the client's link serves every
 * DataNode or a rate is unknown; the fastest active port of the tree.
 */
public class TestShapeChooser {

  private static final long GBIT = 1_000_000_000L / 8;

  @Test(timeout = 10_000)
  public void testClientFeedsWhatItsLinkServesAtTheSlowestIngest() {
    long[] three = {3 * GBIT * 8 / 10, 20 * GBIT, 20 * GBIT};
    assertEquals("100 Gb/s client, DataNodes taking at most 2.4 Gb/s (a"
        + " disk): fan-out", 0, ShapeChooser.feeders(100 * GBIT, three));
    long[] fast = {25 * GBIT, 25 * GBIT, 25 * GBIT};
    assertEquals("10 Gb/s client, 25 Gb/s DataNodes: chain", 1,
        ShapeChooser.feeders(10 * GBIT, fast));
    assertEquals("56 Gb/s client, 25 Gb/s DataNodes: two feeders", 2,
        ShapeChooser.feeders(56 * GBIT, fast));
    assertEquals("as fast as three of them: fan-out", 0,
        ShapeChooser.feeders(75 * GBIT, fast));
    long[] five = {25 * GBIT, 25 * GBIT, 10 * GBIT, 25 * GBIT, 25 * GBIT};
    assertEquals("the slowest DataNode sets the pace", 2,
        ShapeChooser.feeders(25 * GBIT, five));
    assertEquals("a DataNode not measured yet: fan-out", 0,
        ShapeChooser.feeders(10 * GBIT, new long[] {GBIT, 0, GBIT}));
    assertEquals("no RDMA port: fan-out", 0,
        ShapeChooser.feeders(0, fast));
    assertEquals("one DataNode: nothing to shape", 0,
        ShapeChooser.feeders(GBIT, new long[] {25 * GBIT}));
  }

  @Test(timeout = 10_000)
  public void testRatesOfActivePorts() throws Exception {
    assertEquals(100 * GBIT, ShapeChooser.parseRate("100 Gb/sec (4X EDR)"));
    assertEquals(25 * GBIT, ShapeChooser.parseRate("25 Gb/sec (1X EDR)\n"));
    assertEquals(5 * GBIT / 2, ShapeChooser.parseRate("2.5 Gb/sec (1X SDR)"));
    assertEquals(0, ShapeChooser.parseRate("invalid"));
    assertEquals(0, ShapeChooser.parseRate(null));

    File root = GenericTestUtils.getTestDir("shape-chooser-sysfs");
    port(root, "mlx5_0", 1, "4: ACTIVE", "100 Gb/sec (4X EDR)");
    port(root, "mlx5_1", 1, "1: DOWN", "200 Gb/sec (4X HDR)");
    port(root, "mlx5_2", 1, "4: ACTIVE", "25 Gb/sec (1X EDR)");
    assertEquals("the fastest active port", 100 * GBIT,
        ShapeChooser.fastestActivePort(root));
    assertEquals(0, ShapeChooser.fastestActivePort(
        new File(root, "no-such-directory")));
  }

  private static void port(File root, String device, int n, String state,
      String rate) throws Exception {
    File port = new File(root, device + "/ports/" + n);
    port.mkdirs();
    Files.write(new File(port, "state").toPath(),
        (state + "\n").getBytes(StandardCharsets.US_ASCII));
    Files.write(new File(port, "rate").toPath(),
        (rate + "\n").getBytes(StandardCharsets.US_ASCII));
  }
}
