package org.hdfsrdma.hadoop;

import java.io.File;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The command line of a JVM a test starts beside its own (a daemon, a
 * client that must die, a process without UCX): it runs as the test's JVM
 * does, on the class path surefire built and with the agents the test's
 * JVM runs with.
 * <p>
 * The agents matter where the tests run against another Hadoop line
 * (dev-support/hadoop-tests.sh RELEASE project): there the patched Hadoop
 * classes come from the drop-in jar's agent, and a child without it would
 * run stock Hadoop. On the module's own line the class path carries them
 * and there is no agent to pass on.
 */
public final class ChildJvm {
  private ChildJvm() {
  }

  /**
   * java, {@code options}, then this JVM's {@code -javaagent:} arguments;
   * the caller adds the class path and the main class.
   */
  public static List<String> command(String... options) {
    List<String> command = stockCommand(options);
    command.addAll(agents());
    return command;
  }

  /** java and {@code options}, no agent: a stock Hadoop JVM. */
  public static List<String> stockCommand(String... options) {
    List<String> command = new ArrayList<String>();
    command.add(System.getProperty("java.home") + "/bin/java");
    Collections.addAll(command, options);
    return command;
  }

  /** This JVM's {@code -javaagent:} arguments, in their order. */
  public static List<String> agents() {
    List<String> agents = new ArrayList<String>();
    for (String arg
        : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (arg.startsWith("-javaagent:")) {
        agents.add(arg);
      }
    }
    return agents;
  }

  /** The class path surefire built for the tests (not its booter jar). */
  public static String classPath() {
    return System.getProperty("surefire.test.class.path",
        System.getProperty("java.class.path"));
  }

  /**
   * {@link #classPath()} less hdfs-rdma's classes and jars (the module's,
   * the bridge's, the patched Hadoop classes, the drop-in jar): Hadoop's
   * jars and their dependencies.
   */
  public static String stockClassPath() {
    StringBuilder stock = new StringBuilder();
    for (String entry : classPath().split(File.pathSeparator)) {
      if (entry.isEmpty() || entry.endsWith("/target/classes")
          || entry.endsWith("/target/test-classes")
          || entry.contains("/hdfs-rdma-patched/")
          || entry.matches(
              ".*/(jucx|jucx-bridge|hadoop-hdfs-rdma)-[^/]*\\.jar")) {
        continue;
      }
      stock.append(stock.length() == 0 ? "" : File.pathSeparator)
          .append(entry);
    }
    return stock.toString();
  }
}
