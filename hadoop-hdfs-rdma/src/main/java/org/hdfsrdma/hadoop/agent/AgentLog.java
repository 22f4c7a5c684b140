package org.hdfsrdma.hadoop.agent;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agent's log lines: through SLF4J, which every Hadoop release and
 * Spark put on the class path (the drop-in jar does not carry it), else on
 * standard error. Called only once a Hadoop class loads, so the
 * application's logging is configured by then.
 */
final class AgentLog {

  private AgentLog() {
  }

  static void info(String message) {
    try {
      logger().info(message);
    } catch (LinkageError e) {
      System.err.println("INFO " + message);
    }
  }

  static void warn(String message) {
    try {
      logger().warn(message);
    } catch (LinkageError e) {
      System.err.println("WARN " + message);
    }
  }

  private static Logger logger() {
    return LoggerFactory.getLogger(HdfsRdmaAgent.class);
  }
}
