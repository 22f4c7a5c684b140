package org.hdfsrdma.hadoop.bench;

import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.util.Tool;
import org.apache.hadoop.util.ToolRunner;

/**
 * What the benchmark and soak programs (each a Hadoop {@link Tool} run in a
 * JVM of its own by the Python harness) share: their {@code -name value}
 * options and their exit.
 */
public final class ToolArgs {

  private ToolArgs() {
  }

  /**
   * The {@code -name value} pairs of {@code args} from index {@code from},
   * in order.
   *
   * @throws IllegalArgumentException when the last name has no value
   */
  public static Map<String, String> pairs(String[] args, int from) {
    Map<String, String> pairs = new LinkedHashMap<>();
    for (int i = from; i < args.length; i += 2) {
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException("no value for " + args[i]);
      }
      pairs.put(args[i], args[i + 1]);
    }
    return pairs;
  }

  /**
   * Runs {@code tool} and exits the JVM with its status. The UCX runtime
   * and the metrics system keep threads, so returning would not end the
   * JVM. An exception becomes an {@code APP-ERROR} line on standard
   * output, where the harness looks for it, and status 1.
   */
  public static void runAndExit(Tool tool, String[] args) {
    int rc;
    try {
      rc = ToolRunner.run(new Configuration(), tool, args);
    } catch (Throwable e) {
      System.out.println("APP-ERROR " + e);
      e.printStackTrace(System.out);
      rc = 1;
    }
    System.out.flush();
    System.exit(rc);
  }
}
