package org.hdfsrdma.hadoop.agent;

import static org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_DEFER_START_DEFAULT;
import static org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_DEFER_START_KEY;
import static org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_READ_ENABLED_DEFAULT;
import static org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_READ_ENABLED_KEY;

import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.protocol.SessionIds;
import org.hdfsrdma.hadoop.protocol.WriteRequest;
import org.hdfsrdma.ucx.DaemonThreads;
import org.hdfsrdma.ucx.UcxLibrary;

/**
 * Pays a JVM's one-time costs of its first UCX stream early, on a daemon
 * thread, while the application is still setting up its HDFS client:
 * loading UCX's native libraries, the JCE's first HMAC and
 * {@code SecureRandom}, which the first pipeline's request and session ids
 * need, and the jar's list of releases, which the UCX runtime checks.
 * Profiled on a 1 MiB {@code hdfs dfs -put}, these took about 50 ms of the
 * first block's set-up, which waits for them; here they overlap the
 * NameNode's first calls. It hides wall time, not CPU.
 *
 * <p>The agent starts it when Hadoop's {@code DFSClient} class loads
 * ({@link PatchTransformer}), so a JVM that never opens HDFS pays nothing;
 * it ends at once unless the site files ask for the client's UCX
 * path (the agent installed cluster-wide with UCX off costs a JVM only
 * reading its two site files once more, on this thread) and the client
 * reads over UCX or starts UCX before its first block. Nothing of UCX is
 * created here (no context, worker or thread of UCX's
 * own: those depend on the client's configuration, and a JVM that only
 * reads needs none). Never throws.
 */
public final class WarmUp {

  /** The warm-up thread's name. */
  public static final String THREAD_NAME = "hdfs-rdma-warm-up";

  private static Thread thread;
  private static volatile String outcome;

  private WarmUp() {
  }

  /** Starts the warm-up thread unless it was started before. */
  static synchronized void startOnce() {
    if (thread != null) {
      return;
    }
    try {
      Thread t = DaemonThreads.newThread(WarmUp::run, THREAD_NAME);
      t.start();
      thread = t;
    } catch (Throwable e) {
      outcome = "not started: " + e;
    }
  }

  /**
   * What the warm-up did, or null while it has not finished (or was never
   * started).
   */
  public static String outcome() {
    return outcome;
  }

  private static void run() {
    outcome = warmUp(siteConfiguration());
  }

  /** Warms up for a client configured by {@code files}: what it did. */
  static String warmUp(Configuration files) {
    StringBuilder did = new StringBuilder();
    try {
      if (!RdmaConf.clientAsksForUcx(files)) {
        return "not needed: the site files leave the client's UCX"
            + " path off";
      }
      if (!files.getBoolean(DFS_CLIENT_RDMA_READ_ENABLED_KEY,
          DFS_CLIENT_RDMA_READ_ENABLED_DEFAULT)
          && files.getBoolean(DFS_CLIENT_RDMA_DEFER_START_KEY,
              DFS_CLIENT_RDMA_DEFER_START_DEFAULT)) {
        // Its first block goes over TCP: a JVM that writes no more never
        // needs UCX, and one that does starts it in the background.
        return "not needed: the client only writes, and starts UCX past"
            + " its first block";
      }
      String ucx = UcxLibrary.unavailableReason();
      did.append(ucx == null ? "UCX libraries loaded"
          : "UCX libraries unusable (" + ucx + ")");
      WriteRequest request = WriteRequest.create(65536, 0);
      SessionIds.of(null, request.getNonce(), "warm-up", "warm-up:0", 0, 0);
      did.append(", HMAC and SecureRandom ready");
      HadoopVersionCheck.supported();
    } catch (Throwable e) {
      // Whatever failed fails again, with its own message, where it is
      // needed; the warm-up only says so.
      did.append(did.length() == 0 ? "" : ", ").append("failed: ").append(e);
    }
    return did.toString();
  }

  /**
   * What a client JVM's site files say (core-site.xml and hdfs-site.xml, as
   * Hadoop finds them on the class path). Hadoop's defaults files are left
   * out: they set none of hdfs-rdma's keys, and parsing them took most of
   * the cost of this check. A client that turns UCX on in code (or with
   * -D) is not seen here; it pays these costs on its first UCX stream
   * instead, as it would without the warm-up.
   */
  private static Configuration siteConfiguration() {
    Configuration files = new Configuration(false);
    files.addResource("core-site.xml");
    files.addResource("hdfs-site.xml");
    return files;
  }
}
