package org.hdfsrdma.hadoop;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Ports for daemons a test starts in JVMs of their own, which must be
 * named before the daemon binds them. A port from the kernel's ephemeral
 * range is not safe there: a DataNode that starts beside its NameNode
 * connects to the NameNode's port before anything listens on it, and the
 * kernel may give that very connection the same port as its source, a TCP
 * self-connection that holds the port, so the NameNode then fails with
 * "Address already in use" (seen in CI: TestHadoop3Client, port 32791).
 * Ports below the ephemeral range are never a connection's source.
 */
public final class FreePorts {

  /** The lowest port handed out. */
  private static final int LOWEST = 10_000;

  private FreePorts() {
  }

  /** A port on 127.0.0.1 that is free now and outside the ephemeral range. */
  public static int next() throws IOException {
    int ephemeralLow = ephemeralLow();
    if (ephemeralLow > LOWEST + 1000) {
      for (int attempt = 0; attempt < 200; attempt++) {
        int port = ThreadLocalRandom.current().nextInt(LOWEST, ephemeralLow);
        try (ServerSocket s = new ServerSocket()) {
          s.setReuseAddress(false);
          s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(),
              port));
          return port;
        } catch (IOException taken) {
          // try another
        }
      }
    }
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /**
   * The low end of the kernel's ephemeral port range (Linux), or 0. Read in
   * one call: the kernel answers a read of this file at an offset past 0
   * with end of file, so {@code Files.readAllBytes}, which reads one byte
   * first, saw "3" and every port came from the ephemeral range.
   */
  static int ephemeralLow() {
    try {
      String range = Files.readAllLines(
          Paths.get("/proc/sys/net/ipv4/ip_local_port_range"),
          StandardCharsets.US_ASCII).get(0).trim();
      return Integer.parseInt(range.split("\\s+")[0]);
    } catch (IOException | RuntimeException e) {
      return 0;
    }
  }
}
