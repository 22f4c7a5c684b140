package org.hdfsrdma.ucx;

import java.nio.ByteBuffer;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.openucx.jucx.ucp.UcpMemMapParams;
import org.openucx.jucx.ucp.UcpMemory;

/**
 * Which UCX releases this library runs on, and whether the one loaded is
 * one of them. Decided when a context is created, so that a release the
 * write path cannot use is refused at start-up (UCX off, TCP) rather than
 * at the first write.
 *
 * <p>Tested: UCX {@value #OLDEST} to {@value #NEWEST_TESTED} (Debian 12's
 * 1.13.1 and the builds PyPI publishes as {@code libucx-cu12}), with the
 * JUCX glue this jar bundles. An older release is refused. A newer one runs
 * when the remote keys it packs have a layout this library knows
 * ({@link PackedRemoteKey}), which is checked on a key of its own; the
 * layout is the part of UCX's private formats the path reads, and the one
 * that changed between releases (1.20).
 */
public final class UcxRelease {

  /** The oldest release the write path runs on. */
  public static final String OLDEST = "1.13";
  /** The newest release tested. */
  public static final String NEWEST_TESTED = "1.22";

  private static final Pattern VERSION = Pattern.compile(
      "^(\\d+)\\.(\\d+)(?:\\.(\\d+))?");

  private UcxRelease() {
  }

  /** The release of the UCX library loaded in this process, or a reason. */
  public static String loaded() {
    return NativeIntrospection.loadedUcxVersion();
  }

  /**
   * Why the write path cannot run on UCX {@code version}, or null when it
   * can (as far as its number tells).
   */
  public static String refusal(String version) {
    int[] v = parse(version);
    if (v == null) {
      return "the loaded UCX's release is unknown (" + version + ")";
    }
    if (compare(v, parse(OLDEST)) < 0) {
      return "UCX " + version + " is older than " + OLDEST + ", the oldest"
          + " release hdfs-rdma runs on";
    }
    return null;
  }

  /** True when {@code version} is newer than every release tested. */
  public static boolean newerThanTested(String version) {
    int[] v = parse(version);
    return v != null && compare(new int[] {v[0], v[1]},
        parse(NEWEST_TESTED)) > 0;
  }

  /**
   * Whether two processes' UCX releases are the same release (major,
   * minor and patch): UCX's shared-memory transports expect both ends of
   * a FIFO to agree on its layout, which is not promised across releases.
   */
  public static boolean sameRelease(String a, String b) {
    int[] x = parse(a);
    int[] y = parse(b);
    return x != null && y != null && compare(x, y) == 0;
  }

  /**
   * What two processes of one host must agree on to exchange messages
   * through UCX's shared-memory transports: the UCX release and the UCX
   * settings of those transports the process runs with (FIFO and segment
   * sizes among them), the operator's environment and this library's
   * defaults alike. A sender writes into its peer's FIFO with its own idea
   * of the FIFO's layout, so peers that disagree lose messages, hang or
   * crash. For example "1.13.1 UCX_MM_FIFO_SIZE=256".
   */
  public static String sharedMemoryProfile() {
    Map<String, String> settings = new TreeMap<String, String>(
        NativeIntrospection.appliedDefaults());
    settings.putAll(System.getenv());
    StringBuilder sb = new StringBuilder(loaded());
    for (Map.Entry<String, String> s : settings.entrySet()) {
      // UCX_MM_ERROR_HANDLING decides which lanes an endpoint may use, not
      // a FIFO's layout; releases before the FIFO defaults left it out.
      if (SHARED_MEMORY_SETTING.matcher(s.getKey()).matches()
          && !s.getKey().equals("UCX_MM_ERROR_HANDLING")) {
        sb.append(' ').append(s.getKey()).append('=').append(s.getValue());
      }
    }
    return sb.toString();
  }

  /** UCX's settings of its shared-memory transports. */
  private static final Pattern SHARED_MEMORY_SETTING = Pattern.compile(
      "UCX_(MM|SM|SYSV|POSIX|XPMEM|KNEM|CMA)_\\w+");

  /**
   * Packs a key of memory {@code context} allocates and checks its layout
   * is one {@link PackedRemoteKey} knows.
   *
   * @return null when it is, otherwise what is wrong
   */
  static String keyLayoutProblem(UcxContext context) {
    UcpMemory memory;
    try {
      memory = context.ucp().memoryMap(new UcpMemMapParams().allocate()
          .setLength(4096));
    } catch (RuntimeException e) {
      return "UCX could not allocate memory to check its remote keys: "
          + e.getMessage();
    }
    try {
      ByteBuffer packed = memory.getRemoteKeyBuffer();
      byte[] key = new byte[packed.remaining()];
      packed.duplicate().get(key);
      return PackedRemoteKey.inspect(key);
    } catch (RuntimeException e) {
      return "UCX could not pack a remote key: " + e.getMessage();
    } finally {
      memory.deregister();
    }
  }

  /** major, minor, patch (0 when absent); null when not a version. */
  static int[] parse(String version) {
    if (version == null) {
      return null;
    }
    Matcher m = VERSION.matcher(version.trim());
    if (!m.find()) {
      return null;
    }
    return new int[] {Integer.parseInt(m.group(1)),
        Integer.parseInt(m.group(2)),
        m.group(3) == null ? 0 : Integer.parseInt(m.group(3))};
  }

  private static int compare(int[] a, int[] b) {
    for (int i = 0; i < Math.min(a.length, b.length); i++) {
      if (a[i] != b[i]) {
        return Integer.compare(a[i], b[i]);
      }
    }
    return 0;
  }
}
