package org.hdfsrdma.hadoop.client;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.hdfsrdma.hadoop.runtime.IngestRates;
import org.hdfsrdma.hadoop.util.LogOnce;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shape of an {@code auto} pipeline whose gets cross RDMA links: how
 * many of its DataNodes the client feeds itself (a fan-out, a hybrid, or a
 * chain), from what was measured, per pipeline.
 *
 * <p>The model ({@code benchmarks/README.md}, "A model"): a fan-out loads
 * the client's link once per replica, a shape with m feeders m times, and
 * every DataNode takes each byte in once however it is fed. A pipeline
 * cannot go faster than its slowest DataNode takes bytes in, so the client
 * feeds as many DataNodes as its link can serve at that pace: m = client
 * link / slowest ingest, rounded down, at least 1; a fan-out when m reaches
 * the replication (one hop: the lowest latency, no DataNode forwards).
 *
 * <p>What it is fed, and where it comes from:
 * <ul>
 * <li>the client's link: the rate of this host's fastest active RDMA port,
 * as the hardware reports it ({@code /sys/class/infiniband}), read once;
 * <li>each DataNode's ingest rate: what its receivers took in per second
 * of their busy time (get, checksums, disk write) over its recent blocks,
 * which it carries in every commit (a moving average, so that the choice
 * follows disks and links that change); the last one each DataNode
 * committed is kept by the runtime ({@link IngestRates}).
 * </ul>
 * A pipeline with a DataNode that has not measured yet fans out (and its
 * commit brings the first measurement). Same-host pipelines (no RDMA
 * device) always fan out: there is no link to divide.
 */
public final class ShapeChooser {

  private static final Logger LOG = LoggerFactory.getLogger(
      ShapeChooser.class);

  private static final File RDMA_DEVICES = new File("/sys/class/infiniband");
  private static final Pattern RATE = Pattern.compile(
      "^\\s*(\\d+(?:\\.\\d+)?)\\s*Gb/sec");

  private static volatile long clientLink = -1;

  private ShapeChooser() {
  }

  /**
   * How many of the pipeline's DataNodes (by transfer address) the client
   * feeds, by the rates they last committed: 0 for a fan-out, as the
   * offer carries it.
   */
  public static int feeders(IngestRates rates, String[] pipeline) {
    long[] ingest = new long[pipeline.length];
    for (int i = 0; i < pipeline.length; i++) {
      ingest[i] = rates.of(pipeline[i]);
    }
    int m = feeders(clientLinkBytesPerSecond(), ingest);
    if (m > 0) {
      LogOnce.info("shape " + pipeline.length + " " + m + " "
          + pipeline[0], "hdfs-rdma: pipelines of " + pipeline.length
          + " DataNodes through " + pipeline[0] + " are fed " + m + " by the"
          + " client (" + (m == 1 ? "chain" : "hybrid") + "): its link ("
          + clientLinkBytesPerSecond() + " B/s) divided by the replication"
          + " is below their slowest ingest (" + min(ingest) + " B/s)");
    }
    return m;
  }

  /**
   * The model's choice: 0 (fan-out) when the client's link serves every
   * DataNode at the slowest one's ingest rate, or when a rate is unknown
   * (0); otherwise the DataNodes the link can feed at that pace, at least
   * one.
   */
  static int feeders(long clientLink, long[] ingest) {
    int r = ingest.length;
    long slowest = min(ingest);
    if (r < 2 || clientLink <= 0 || slowest <= 0) {
      return 0;
    }
    long m = clientLink / slowest;
    if (m >= r) {
      return 0;
    }
    return (int) Math.max(1, m);
  }

  private static long min(long[] values) {
    long min = Long.MAX_VALUE;
    for (long v : values) {
      min = Math.min(min, v);
    }
    return values.length == 0 ? 0 : min;
  }

  /**
   * The rate of this host's fastest active RDMA port in bytes/s, or 0 when
   * there is none; read once.
   */
  public static long clientLinkBytesPerSecond() {
    long link = clientLink;
    if (link < 0) {
      link = fastestActivePort(RDMA_DEVICES);
      clientLink = link;
      if (link > 0) {
        LOG.info("hdfs-rdma: this host's fastest active RDMA port carries {}"
            + " B/s", link);
      }
    }
    return link;
  }

  /**
   * The fastest active port under {@code devices} (the layout of
   * {@code /sys/class/infiniband}: device/ports/N/{state,rate}), in
   * bytes/s; 0 when none is active.
   */
  static long fastestActivePort(File devices) {
    long best = 0;
    File[] devs = devices.listFiles();
    if (devs == null) {
      return 0;
    }
    for (File dev : devs) {
      File[] ports = new File(dev, "ports").listFiles();
      if (ports == null) {
        continue;
      }
      for (File port : ports) {
        String state = read(new File(port, "state"));
        if (state == null || !state.contains("ACTIVE")) {
          continue;
        }
        best = Math.max(best, parseRate(read(new File(port, "rate"))));
      }
    }
    return best;
  }

  /** "100 Gb/sec (4X EDR)" as bytes/s; 0 when it says no rate. */
  static long parseRate(String rate) {
    if (rate == null) {
      return 0;
    }
    Matcher m = RATE.matcher(rate);
    return m.find() ? (long) (Double.parseDouble(m.group(1)) * 1e9 / 8) : 0;
  }

  private static String read(File f) {
    try {
      return new String(Files.readAllBytes(f.toPath()),
          StandardCharsets.US_ASCII);
    } catch (IOException e) {
      return null;
    }
  }
}
