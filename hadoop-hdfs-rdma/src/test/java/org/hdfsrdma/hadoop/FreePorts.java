package org.hdfsrdma.hadoop;

import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Ports for daemons a test starts in JVMs of their own, which must be
 * named before the daemon binds them.
 * <p>
 * A port from the kernel's ephemeral range is not safe there: a DataNode
 * that starts beside its NameNode connects to the NameNode's port before
 * anything listens on it, and the kernel may give that very connection the
 * same port as its source, a TCP self-connection that holds the port, so
 * the NameNode then fails with "Address already in use" (seen in CI:
 * TestHadoop3Client, port 32791). Ports below the ephemeral range are never
 * a connection's source.
 * <p>
 * A port that is merely free now is not safe either: daemons take seconds
 * to bind what they were given, and a port picked at random for the next
 * daemon may be one an earlier daemon has not bound yet (seen in CI: the
 * kill matrix's third DataNode failed with "Address already in use"). So
 * each JVM owns blocks of {@value #BLOCK} ports, claimed with a file lock
 * that other JVMs (surefire's forks, the test script's parallel lanes)
 * respect and that ends with the JVM, and hands out each port of its
 * blocks once.
 */
public final class FreePorts {

  /** The lowest port handed out. */
  private static final int LOWEST = 10_000;

  /** Ports per claimed block. */
  static final int BLOCK = 100;

  /** Where the lock files of claimed blocks live. */
  private static final File LOCKS = new File(
      System.getProperty("java.io.tmpdir"), "hdfs-rdma-test-ports");

  /**
   * The locks of this JVM's blocks, held until it exits. Never closed:
   * closing any channel of a locked file drops the JVM's lock on it.
   */
  private static final List<FileLock> HELD = new ArrayList<FileLock>();

  /** The first port of each block this JVM owns. */
  private static final Set<Integer> OWNED = new HashSet<Integer>();

  /** The next port to hand out, and the end of its block (exclusive). */
  private static int next;
  private static int end;

  private FreePorts() {
  }

  /**
   * A port on 127.0.0.1 that is free now, outside the ephemeral range, and
   * handed out by no other call in any JVM that uses this class.
   */
  public static synchronized int next() throws IOException {
    int ephemeralLow = ephemeralLow();
    if (ephemeralLow > LOWEST + 10 * BLOCK) {
      int limit = LOWEST + (ephemeralLow - LOWEST) / BLOCK * BLOCK;
      while (next < end || claimBlock(limit)) {
        int port = next++;
        if (bindable(port)) {
          return port;
        }
      }
    }
    // No block left: the kernel's choice, which may be ephemeral.
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /** Claims a block no JVM holds, below {@code limit}; false if none. */
  private static boolean claimBlock(int limit) throws IOException {
    if (!LOCKS.isDirectory() && !LOCKS.mkdirs() && !LOCKS.isDirectory()) {
      throw new IOException("cannot create " + LOCKS);
    }
    int blocks = (limit - LOWEST) / BLOCK;
    int first = ThreadLocalRandom.current().nextInt(blocks);
    for (int i = 0; i < blocks; i++) {
      int start = LOWEST + (first + i) % blocks * BLOCK;
      if (OWNED.contains(start)) {
        continue;
      }
      FileChannel channel = FileChannel.open(
          new File(LOCKS, start + ".lock").toPath(),
          StandardOpenOption.CREATE, StandardOpenOption.WRITE);
      FileLock lock = channel.tryLock();
      if (lock == null) {
        channel.close();
        continue;
      }
      HELD.add(lock);
      OWNED.add(start);
      next = start;
      end = start + BLOCK;
      return true;
    }
    return false;
  }

  private static boolean bindable(int port) {
    try (ServerSocket s = new ServerSocket()) {
      s.setReuseAddress(false);
      s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
      return true;
    } catch (IOException taken) {
      return false;
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

  /**
   * Prints {@code args[0]} ports, one a line, then holds its blocks until
   * standard input ends: the other JVM of a test.
   */
  public static void main(String[] args) throws IOException {
    int count = Integer.parseInt(args[0]);
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < count; i++) {
      b.append(next()).append('\n');
    }
    System.out.print(b);
    System.out.flush();
    while (System.in.read() >= 0) {
      // hold the blocks
    }
  }
}
