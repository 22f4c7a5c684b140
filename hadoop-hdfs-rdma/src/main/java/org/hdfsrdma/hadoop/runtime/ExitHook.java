package org.hdfsrdma.hadoop.runtime;

import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.util.ShutdownHookManager;

/**
 * Runs the runtime's report and close once at JVM exit, after Hadoop's own
 * shutdown hooks: {@code FileSystem}'s closes open streams first, and
 * their last packets still need UCX. UCX left open makes the JVM's exit
 * about 0.4 s slower (measured), which an {@code hdfs dfs -put} pays on
 * every file, so closing is worth a hook.
 */
final class ExitHook {

  /** Below FileSystem's (10): runs after open files were closed. */
  static final int PRIORITY = 1;

  /**
   * Hadoop's timeout of a shutdown hook (a key of Hadoop 2.10 and later,
   * named here for 2.9), and its default in seconds.
   */
  static final String SERVICE_SHUTDOWN_TIMEOUT_KEY =
      "hadoop.service.shutdown.timeout";
  static final long SERVICE_SHUTDOWN_TIMEOUT_DEFAULT = 30;

  private ExitHook() {
  }

  /**
   * Runs {@code atExit} at JVM exit as a Hadoop shutdown hook of
   * {@link #PRIORITY}; when Hadoop's hooks were cleared before
   * (MiniDFSCluster.shutdown() clears them), a plain JVM hook runs it
   * instead. Never both.
   *
   * @param conf the configuration at hand, for Hadoop's hook timeout
   *     (asked without one, later releases parse a new Configuration: 9 ms
   *     of a 1 MiB put's first block, profiled)
   */
  static void install(Configuration conf, Runnable atExit) {
    ShutdownHookManager.get().addShutdownHook(atExit, PRIORITY,
        conf.getTimeDuration(SERVICE_SHUTDOWN_TIMEOUT_KEY,
            SERVICE_SHUTDOWN_TIMEOUT_DEFAULT, TimeUnit.SECONDS),
        TimeUnit.SECONDS);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      if (!ShutdownHookManager.get().hasShutdownHook(atExit)) {
        atExit.run();
      }
    }, "hdfs-rdma-at-exit"));
  }
}
