package org.hdfsrdma.ucx.tools;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

import org.hdfsrdma.ucx.TransportReport;
import org.hdfsrdma.ucx.UcxContext;

/**
 * What one run of {@link GetBandwidth} measures, as its command line says,
 * and the line that reports the result: the tool's interface to whoever
 * runs it (dev-support/measure-get-bandwidth.sh reads the CSV), kept apart
 * from the measuring so that either can change without the other.
 */
final class Measurement {

  /** Packet size in bytes ({@code -s}). */
  final int size;
  /** Packets read and timed ({@code -n}; about 1 GiB by default). */
  final long reads;
  /** Gets in flight when the region is not read directly ({@code -w}). */
  final int window;
  /** UCX_TLS for both processes ({@code --tls}), or null for UCX's choice. */
  final String tls;
  /** Peer error handling on ({@code --no-err-handling} turns it off). */
  final boolean errorHandling;
  /** Further UCX settings ({@code --ucx KEY=VALUE}): key, value, ... */
  final List<String> ucxConfig;
  /** One CSV line instead of a sentence ({@code --csv}). */
  final boolean csv;
  /** Print UCX's description of the lanes too ({@code -v}). */
  final boolean verbose;

  private Measurement(int size, long reads, int window, String tls,
      boolean errorHandling, List<String> ucxConfig, boolean csv,
      boolean verbose) {
    this.size = size;
    this.reads = reads;
    this.window = window;
    this.tls = tls;
    this.errorHandling = errorHandling;
    this.ucxConfig = ucxConfig;
    this.csv = csv;
    this.verbose = verbose;
  }

  /**
   * Reads {@code [-s SIZE] [-n READS] [-w WINDOW] [--tls TLS]
   * [--no-err-handling] [--ucx KEY=VALUE]... [--csv] [-v]}.
   *
   * @throws IllegalArgumentException naming an argument it does not know,
   *     or one that is not a number where a number belongs
   */
  static Measurement parse(String[] args) {
    int size = 64 * 1024;
    long reads = -1;
    int window = 16;
    String tls = null;
    boolean errorHandling = true;
    boolean csv = false;
    boolean verbose = false;
    List<String> config = new ArrayList<String>();
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "-s": size = Integer.parseInt(args[++i]); break;
        case "-n": reads = Long.parseLong(args[++i]); break;
        case "-w": window = Integer.parseInt(args[++i]); break;
        case "--tls": tls = args[++i]; break;
        case "--no-err-handling": errorHandling = false; break;
        case "--csv": csv = true; break;
        case "-v": verbose = true; break;
        case "--ucx":
          String[] kv = args[++i].split("=", 2);
          config.add(kv[0]);
          config.add(kv[1]);
          break;
        default:
          throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    if (reads < 0) {
      reads = Math.max(256, (1L << 30) / size); // about 1 GiB
    }
    return new Measurement(size, reads, window, tls, errorHandling, config,
        csv, verbose);
  }

  /** The UCX context options both processes run with. */
  UcxContext.Options ucxOptions() {
    return ucxOptions(tls, errorHandling, ucxConfig);
  }

  /** The UCX context options of {@code tls}, peer error handling, config. */
  static UcxContext.Options ucxOptions(String tls, boolean errorHandling,
      List<String> config) {
    UcxContext.Options o = UcxContext.Options.defaults()
        .withPeerErrorHandling(errorHandling);
    for (int i = 0; i + 1 < config.size(); i += 2) {
      o = o.withUcxConfig(config.get(i), config.get(i + 1));
    }
    return tls == null || tls.isEmpty() ? o : o.withUcxConfig("TLS", tls);
  }

  /**
   * Prints the result: {@link #reads} packets in {@code elapsedNanos},
   * {@code latencies} (sorted here) of one read each, moved {@code how}
   * over {@code lanes}; as a sentence, or as the CSV line
   * {@link GetBandwidth} describes.
   */
  void report(long elapsedNanos, long[] latencies, String how,
      TransportReport lanes) {
    Arrays.sort(latencies);
    double seconds = elapsedNanos / 1e9;
    long bytes = (long) size * reads;
    double gbps = bytes / seconds / 1e9;
    double mean = 0;
    for (long l : latencies) {
      mean += l;
    }
    mean = mean / latencies.length / 1000.0;
    double p50 = latencies[latencies.length / 2] / 1000.0;
    double p99 = latencies[(int) (latencies.length * 0.99)] / 1000.0;
    String tlsName = tls == null ? "default" : tls;
    if (csv) {
      System.out.println(String.format(Locale.ROOT,
          "%d,1,%s,%d,%d,%.3f,%.3f,%.3f,%.1f,%.1f,%.1f,%d,%s", size, tlsName,
          errorHandling ? 1 : 0, bytes, seconds, gbps, gbps, mean, p50, p99,
          window, how));
    } else {
      System.out.println(String.format(Locale.ROOT,
          "bridge read: %d x %d B (%s, window %d, UCX_TLS=%s, peer error"
          + " handling %s): %.3f GB/s, latency mean %.1f us, p50 %.1f us,"
          + " p99 %.1f us; %s", reads, size, how, window, tlsName,
          errorHandling ? "on" : "off", gbps, mean, p50, p99, lanes));
    }
  }
}
