package org.hdfsrdma.hadoop.tools;

import java.io.PrintStream;

/**
 * The check's output: one line per finding, {@code LEVEL   topic: text},
 * and the closing line with the count of PROBLEM lines, which decides the
 * exit code. A finding stays one line whatever its text holds (an
 * exception message may have several), so that operators and tests can
 * read the output line by line.
 */
final class Findings {

  /** What a finding means for the operator. */
  enum Level { OK, INFO, WARN, PROBLEM }

  private final PrintStream out;
  private int problems;

  Findings(PrintStream out) {
    this.out = out;
  }

  /** Prints one finding; a PROBLEM counts towards the exit code. */
  void add(Level level, String topic, String text) {
    if (level == Level.PROBLEM) {
      problems++;
    }
    // One line per finding, whatever an exception message holds.
    int nl = text.indexOf('\n');
    out.println(String.format("%-8s%s: %s", level, topic,
        nl < 0 ? text : text.substring(0, nl).trim() + " ..."));
  }

  /**
   * Prints the closing line and returns the exit code: 0 when nothing is a
   * problem, 1 otherwise.
   */
  int close() {
    out.println(problems == 0 ? "hdfs-rdma check: no problems"
        : "hdfs-rdma check: " + problems + " problem(s)");
    return problems == 0 ? 0 : 1;
  }
}
