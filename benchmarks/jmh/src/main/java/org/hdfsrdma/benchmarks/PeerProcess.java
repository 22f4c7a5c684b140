package org.hdfsrdma.benchmarks;

import java.io.BufferedReader;
import java.io.Closeable;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A {@link TransferPeer} JVM started by a benchmark trial with the
 * benchmark's own java and class path; it exits when its standard input
 * closes ({@link #close()}), and is killed if it does not.
 */
final class PeerProcess implements Closeable {

  private final Process process;
  private final InetSocketAddress socketAddress;
  private final byte[] workerAddress;
  private final byte[] announcement;

  private PeerProcess(Process process, InetSocketAddress socketAddress,
      byte[] workerAddress, byte[] announcement) {
    this.process = process;
    this.socketAddress = socketAddress;
    this.workerAddress = workerAddress;
    this.announcement = announcement;
  }

  /** Starts a peer for payloads of {@code size} bytes; waits until ready. */
  static PeerProcess start(int size) throws IOException, InterruptedException {
    List<String> command = new ArrayList<String>();
    command.add(System.getProperty("java.home") + File.separator + "bin"
        + File.separator + "java");
    command.add("-Xmx256m");
    command.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=" + System
        .getProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn"));
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(TransferPeer.class.getName());
    command.add(String.valueOf(size));
    Process p = new ProcessBuilder(command)
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    BlockingQueue<String> lines = new LinkedBlockingQueue<String>();
    Thread reader = new Thread(() -> {
      try (BufferedReader out = new BufferedReader(new InputStreamReader(
          p.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = out.readLine()) != null) {
          if (line.startsWith(Wire.READY + " ")) {
            lines.add(line);
          } else {
            System.out.println("peer: " + line);
          }
        }
      } catch (IOException e) {
        // The peer is gone; start() times out or close() reaps it.
      }
      lines.add("EOF");
    }, "peer-stdout");
    reader.setDaemon(true);
    reader.start();
    String ready = lines.poll(60, TimeUnit.SECONDS);
    if (ready == null || !ready.startsWith(Wire.READY + " ")) {
      p.destroyForcibly();
      p.waitFor(10, TimeUnit.SECONDS);
      throw new IOException("peer JVM did not get ready: " + ready);
    }
    String[] fields = ready.split(" ");
    return new PeerProcess(p, new InetSocketAddress(
        InetAddress.getLoopbackAddress(), Integer.parseInt(fields[1])),
        Wire.unhex(fields[2]), Wire.unhex(fields[3]));
  }

  InetSocketAddress socketAddress() {
    return socketAddress;
  }

  /** The peer's UCX worker address: what connecting to it takes. */
  byte[] workerAddress() {
    return workerAddress.clone();
  }

  /** The encoded announcement of the peer's exposed region. */
  byte[] announcement() {
    return announcement.clone();
  }

  /** Closes the peer's standard input and waits; kills it after 10 s. */
  @Override
  public void close() throws IOException {
    try {
      process.getOutputStream().close();
    } catch (IOException ignored) {
      // Gone already; reaped below.
    }
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        System.err.println("peer JVM did not exit; killing it");
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }
}
