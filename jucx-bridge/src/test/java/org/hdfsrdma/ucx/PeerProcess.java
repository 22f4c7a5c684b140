package org.hdfsrdma.ucx;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** A {@link PeerMain} JVM started by a test, with its output lines. */
final class PeerProcess implements AutoCloseable {

  private final Process process;
  private final int port;
  private final BlockingQueue<String> lines;

  private PeerProcess(Process process, int port, BlockingQueue<String> lines) {
    this.process = process;
    this.port = port;
    this.lines = lines;
  }

  /** A free loopback port (closed again at once, for a peer to take). */
  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /** Starts an exposer that connects to {@code port}. */
  static PeerProcess expose(int port, String tls, boolean peerErrorHandling,
      int... sizes) throws IOException, InterruptedException {
    List<String> args = new ArrayList<String>();
    for (int size : sizes) {
      args.add(String.valueOf(size));
    }
    return start("expose", port, tls, peerErrorHandling, args);
  }

  /**
   * Starts a getter listening on {@code port} (0: any). A restarted peer may
   * find the port still held by the dead one's sockets for a moment, as a
   * restarted DataNode would: retry for up to 30 s.
   */
  static PeerProcess serve(int port, String tls, boolean peerErrorHandling)
      throws IOException, InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (true) {
      try {
        return start("serve", port, tls, peerErrorHandling,
            new ArrayList<String>());
      } catch (IOException e) {
        if (port == 0 || System.nanoTime() > deadline
            || !String.valueOf(e.getMessage()).contains("already in use")) {
          throw e;
        }
        Thread.sleep(500);
      }
    }
  }

  private static PeerProcess start(String mode, int port, String tls,
      boolean peerErrorHandling, List<String> extra)
      throws IOException, InterruptedException {
    String classpath = System.getProperty("surefire.test.class.path",
        System.getProperty("java.class.path"));
    List<String> command = new ArrayList<String>();
    command.add(System.getProperty("java.home") + File.separator + "bin"
        + File.separator + "java");
    command.add("-Xmx256m");
    command.add("-cp");
    command.add(classpath);
    command.add(PeerMain.class.getName());
    command.add(mode);
    command.add(String.valueOf(port));
    command.add(tls);
    command.add(String.valueOf(peerErrorHandling));
    command.addAll(extra);
    Process p = new ProcessBuilder(command)
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    BlockingQueue<String> lines = new LinkedBlockingQueue<String>();
    Thread reader = new Thread(() -> {
      try (BufferedReader out = new BufferedReader(new InputStreamReader(
          p.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = out.readLine()) != null) {
          lines.add(line);
        }
      } catch (IOException e) {
        lines.add("EOF " + e);
      }
      lines.add("EOF");
    }, "peer-output");
    reader.setDaemon(true);
    reader.start();
    PeerProcess peer = new PeerProcess(p, -1, lines);
    String ready = peer.nextLine(60_000);
    if (ready == null || !ready.startsWith("READY ")) {
      p.destroyForcibly();
      throw new IOException("peer JVM (" + mode + ") did not get ready: "
          + ready);
    }
    return new PeerProcess(p, Integer.parseInt(ready.substring(6).trim()),
        lines);
  }

  /** The next line the peer printed, or null after {@code timeoutMs}. */
  String nextLine(long timeoutMs) throws InterruptedException {
    return lines.poll(timeoutMs, TimeUnit.MILLISECONDS);
  }

  int port() {
    return port;
  }

  long pid() {
    try {
      return (Long) Process.class.getMethod("pid").invoke(process);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("needs Java 9 or later to test", e);
    }
  }

  /** kill -9, and wait until the process is gone. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(30, TimeUnit.SECONDS);
  }

  /** Sends a signal such as STOP or CONT. */
  void signal(String name) throws IOException, InterruptedException {
    new ProcessBuilder("kill", "-" + name, String.valueOf(pid()))
        .inheritIO().start().waitFor(10, TimeUnit.SECONDS);
  }

  @Override
  public void close() throws InterruptedException {
    if (process.isAlive()) {
      try {
        process.getOutputStream().close();
      } catch (IOException ignored) {
        // Killed below if it does not go.
      }
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        kill();
      }
    }
  }
}
