package org.hdfsrdma.hadoop.runtime;

import java.io.Closeable;
import java.io.File;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

import org.hdfsrdma.ucx.HostIdentity;

/**
 * A file that says "a DataNode serving UCX runs on this host as this user"
 * for exactly as long as its process lives: the DataNode holds an
 * exclusive lock on it, which the kernel drops when the process dies, so a
 * killed DataNode leaves a file anyone can tell is stale. A client reads
 * the markers before it starts UCX (the client's distribution policy,
 * which sits above this package): without RDMA devices,
 * only a DataNode on its own host could fetch by one-sided get.
 *
 * <p>The files live in {@code /dev/shm/hdfs-rdma-<euid>/} (memory, gone at
 * reboot; the temporary directory where there is no /dev/shm), named
 * {@code datanode-<host id>-<pid>-<n>.lock}, host id as in
 * {@link HostIdentity#hostId()} so that containers sharing /dev/shm but
 * not their IPC namespace do not count each other. The system property
 * {@value #DIRECTORY_PROPERTY} names another directory: processes that set
 * the same one see each other's markers, and only those (tests run
 * DataNodes of their own beside other DataNodes of the host).
 */
public final class LocalDataNodeMarker implements Closeable {

  /** The system property naming the markers' directory instead. */
  public static final String DIRECTORY_PROPERTY = "hdfsrdma.marker.dir";

  private static final String PREFIX = "datanode-";
  private static final String SUFFIX = ".lock";
  private static final AtomicInteger SEQUENCE = new AtomicInteger();

  /**
   * The runtime's set of this JVM's own markers, never probed: closing any
   * descriptor of a file drops every POSIX lock this process holds on it.
   */
  private final Set<String> own;
  private final File file;
  private final FileChannel channel;
  private final FileLock lock;
  private boolean closed;

  private LocalDataNodeMarker(Set<String> own, File file,
      FileChannel channel, FileLock lock) {
    this.own = own;
    this.file = file;
    this.channel = channel;
    this.lock = lock;
  }

  /**
   * Marks this process as running a DataNode that serves UCX through
   * {@code runtime} until {@link #close()} or the process's end.
   *
   * @throws IOException when the marker cannot be written (clients on this
   *     host then do not start UCX without RDMA devices)
   */
  public static LocalDataNodeMarker announce(UcxRuntime runtime)
      throws IOException {
    Set<String> own = runtime.ownMarkers();
    File dir = directory();
    if (!dir.isDirectory()) {
      Files.createDirectories(dir.toPath(),
          PosixFilePermissions.asFileAttribute(
              PosixFilePermissions.fromString("rwx------")));
    }
    String name = PREFIX + ownPrefix() + pid() + "-"
        + SEQUENCE.incrementAndGet() + SUFFIX;
    File fresh = new File(dir, name + ".new");
    File marker = new File(dir, name);
    FileChannel channel = FileChannel.open(fresh.toPath(),
        StandardOpenOption.CREATE, StandardOpenOption.WRITE,
        StandardOpenOption.TRUNCATE_EXISTING);
    try {
      FileLock lock = channel.lock();
      // Locked before it has the name readers look for: a reader never
      // takes a live marker for a stale one.
      try {
        Files.move(fresh.toPath(), marker.toPath(),
            StandardCopyOption.ATOMIC_MOVE);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(fresh.toPath(), marker.toPath());
      }
      own.add(marker.getName());
      return new LocalDataNodeMarker(own, marker, channel, lock);
    } catch (IOException | RuntimeException e) {
      channel.close();
      Files.deleteIfExists(fresh.toPath());
      throw e;
    }
  }

  /** Whether a live DataNode serving UCX marked this host and user. */
  public static boolean anyAlive() {
    return countAlive() > 0;
  }

  /**
   * The live markers of this host and user; removes stale ones on the way.
   * One probe at a time in a JVM: two threads' locks on one file overlap
   * (Java refuses the second), and writers probe as their streams open.
   * This JVM's markers are those of its runtime (one that is not running
   * serves no DataNode).
   */
  public static synchronized int countAlive() {
    File[] files = directory().listFiles();
    if (files == null) {
      return 0;
    }
    UcxRuntime runtime = UcxRuntime.current();
    Set<String> ours = runtime == null ? null : runtime.ownMarkers();
    String own = PREFIX + ownPrefix();
    int alive = 0;
    for (File f : files) {
      String name = f.getName();
      if (name.startsWith(own) && name.endsWith(SUFFIX)
          && ((ours != null && ours.contains(name)) || isAlive(f))) {
        alive++;
      }
    }
    return alive;
  }

  private static boolean isAlive(File f) {
    try (FileChannel c = FileChannel.open(f.toPath(),
        StandardOpenOption.WRITE)) {
      FileLock probe = c.tryLock();
      if (probe == null) {
        return true; // another process holds it
      }
      probe.release();
      Files.deleteIfExists(f.toPath());
      return false;
    } catch (OverlappingFileLockException e) {
      return true; // this JVM holds it
    } catch (IOException e) {
      return false; // gone meanwhile, or not ours to open
    }
  }

  /** Where the markers of this user live. */
  public static File directory() {
    String set = System.getProperty(DIRECTORY_PROPERTY);
    if (set != null && !set.isEmpty()) {
      return new File(set);
    }
    File shm = new File("/dev/shm");
    File base = shm.isDirectory() ? shm
        : new File(System.getProperty("java.io.tmpdir"));
    return new File(base, "hdfs-rdma-" + effectiveUid());
  }

  /** The marker file (tests). */
  public File file() {
    return file;
  }

  /** Drops the lock and removes the file; idempotent. */
  @Override
  public synchronized void close() throws IOException {
    if (closed) {
      return;
    }
    closed = true;
    own.remove(file.getName());
    try {
      Files.deleteIfExists(file.toPath());
    } finally {
      try {
        lock.release();
      } finally {
        channel.close();
      }
    }
  }

  private static String ownPrefix() {
    StringBuilder hex = new StringBuilder();
    for (byte b : HostIdentity.hostId()) {
      hex.append(String.format("%02x", b & 0xff));
    }
    return hex.append('-').toString();
  }

  private static String pid() {
    String name = ManagementFactory.getRuntimeMXBean().getName();
    int at = name.indexOf('@');
    return at > 0 ? name.substring(0, at) : "0";
  }

  /**
   * This process's effective user id from /proc/self/status, without
   * loading a native library (a client asks before it starts UCX).
   */
  static String effectiveUid() {
    try {
      List<String> lines = Files.readAllLines(
          new File("/proc/self/status").toPath());
      for (String line : lines) {
        if (line.startsWith("Uid:")) {
          String[] ids = line.substring(4).trim().split("\\s+");
          if (ids.length > 1) {
            return ids[1];
          }
        }
      }
    } catch (IOException e) {
      // fall through
    }
    return System.getProperty("user.name", "unknown");
  }
}
