package org.hdfsrdma.ucx;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A {@link PeerMain} JVM started by a test, with its output lines.
 *
 * <p>It dies with the test: it exits when its standard input closes (this
 * JVM closing it, or dying), and every peer still alive when a test
 * calls {@link #killAll()} (its {@code @After}) or when this JVM exits is
 * killed.
 */
final class PeerProcess implements AutoCloseable {

  private static final Set<Process> LIVE =
      ConcurrentHashMap.<Process>newKeySet();

  static {
    Runtime.getRuntime().addShutdownHook(new Thread(PeerProcess::killAll,
        "kill-peer-jvms"));
  }

  private final Process process;
  private final String ready;
  private final BlockingQueue<String> lines;

  private PeerProcess(Process process, String ready,
      BlockingQueue<String> lines) {
    this.process = process;
    this.ready = ready;
    this.lines = lines;
  }

  /** A getter JVM ({@code get TLS}); its worker address: {@link #address()}. */
  static PeerProcess getter(String tls) throws IOException,
      InterruptedException {
    return start("get", tls);
  }

  /**
   * An exposer JVM that connects to {@code getterAddress} and sends one
   * packet per size; returns once it printed {@code SENT}.
   */
  static PeerProcess exposer(String tls, byte[] getterAddress, int... sizes)
      throws IOException, InterruptedException {
    List<String> args = new ArrayList<String>(Arrays.asList("expose", tls,
        UcxTestUtils.hex(getterAddress)));
    for (int size : sizes) {
      args.add(String.valueOf(size));
    }
    return start(args.toArray(new String[0]));
  }

  /** Starts {@link PeerMain} with {@code args}; waits for its first line. */
  static PeerProcess start(String... args) throws IOException,
      InterruptedException {
    String classpath = System.getProperty("surefire.test.class.path",
        System.getProperty("java.class.path"));
    List<String> command = new ArrayList<String>();
    command.add(System.getProperty("java.home") + File.separator + "bin"
        + File.separator + "java");
    command.add("-Xmx256m");
    command.add("-XX:TieredStopAtLevel=1");
    command.add("-cp");
    command.add(classpath);
    command.add(PeerMain.class.getName());
    command.addAll(Arrays.asList(args));
    Process p = new ProcessBuilder(command)
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    LIVE.add(p);
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
    String first = lines.poll(60, TimeUnit.SECONDS);
    if (first == null || !(first.startsWith("READY ")
        || first.startsWith("SENT "))) {
      p.destroyForcibly();
      LIVE.remove(p);
      throw new IOException("peer JVM (" + args[0] + ") did not get ready: "
          + first);
    }
    return new PeerProcess(p, first, lines);
  }

  /** The getter's worker address, from its READY line. */
  byte[] address() {
    return UcxTestUtils.unhex(ready.substring("READY ".length()).trim());
  }

  /** The first line the peer printed. */
  String firstLine() {
    return ready;
  }

  /** The next line the peer printed, or null after {@code timeoutMs}. */
  String nextLine(long timeoutMs) throws InterruptedException {
    return lines.poll(timeoutMs, TimeUnit.MILLISECONDS);
  }

  /** The next line, failing the test when none comes in time. */
  String expectLine(long timeoutMs) throws InterruptedException {
    String line = nextLine(timeoutMs);
    if (line == null) {
      throw new AssertionError("the peer JVM said nothing in " + timeoutMs
          + " ms");
    }
    return line;
  }

  long pid() {
    try {
      // Process.pid() is Java 9; this module compiles for Java 8.
      return (Long) Process.class.getMethod("pid").invoke(process);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("the tests need Java 9 or later", e);
    }
  }

  boolean isAlive() {
    return process.isAlive();
  }

  /** kill -9, and wait until the process is gone. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(30, TimeUnit.SECONDS);
    LIVE.remove(process);
  }

  /** Sends a signal such as STOP or CONT. */
  void signal(String name) throws IOException, InterruptedException {
    Process kill = new ProcessBuilder("kill", "-" + name,
        String.valueOf(pid())).inheritIO().start();
    if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
      throw new IOException("kill -" + name + " " + pid() + " failed");
    }
  }

  /** Closes its standard input and waits for it to end; kills it if not. */
  @Override
  public void close() throws InterruptedException {
    if (process.isAlive()) {
      try {
        signal("CONT");
      } catch (IOException ignored) {
        // Gone already.
      }
      try {
        process.getOutputStream().close();
      } catch (IOException ignored) {
        // Killed below if it does not go.
      }
      if (!process.waitFor(30, TimeUnit.SECONDS)) {
        kill();
      }
    }
    LIVE.remove(process);
  }

  /** Kills every peer JVM still alive: a test's tear-down. */
  static void killAll() {
    for (Process p : LIVE) {
      p.destroyForcibly();
      try {
        p.waitFor(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      LIVE.remove(p);
    }
  }
}
