package org.hdfsrdma.ucx;

/**
 * The daemon threads hdfs-rdma starts (progress loops, timers,
 * maintenance), all in one thread group of their own under the JVM's root
 * group.
 *
 * <p>Why not the creating thread's group, Java's default: a DataNode of
 * Hadoop 2.x counts the active threads of its transfer thread group as its
 * xceiver count, and its transfer server and transfer threads are where
 * this project starts its UCX side and its first connections. A thread
 * started from there, living as long as the JVM, would count as a transfer
 * in that DataNode's heartbeats for good, so the NameNode would see the
 * DataNode busier than it is and place blocks elsewhere (its load rule), and
 * operators would read a wrong {@code XceiverCount}.
 */
public final class DaemonThreads {

  /** The name of the group every thread of this class belongs to. */
  public static final String GROUP_NAME = "hdfs-rdma";

  private static final ThreadGroup GROUP =
      new ThreadGroup(root(), GROUP_NAME);

  private DaemonThreads() {
  }

  private static ThreadGroup root() {
    ThreadGroup g = Thread.currentThread().getThreadGroup();
    while (g.getParent() != null) {
      g = g.getParent();
    }
    return g;
  }

  /** A daemon thread of the hdfs-rdma group, not started. */
  public static Thread newThread(Runnable task, String name) {
    Thread t = new Thread(GROUP, task, name);
    t.setDaemon(true);
    return t;
  }

  /** Whether {@code t} is one of the threads this class made. */
  public static boolean isOurs(Thread t) {
    return t.getThreadGroup() == GROUP;
  }
}
