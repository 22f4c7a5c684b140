package org.hdfsrdma.testapps.spark;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * A Spark job for hadoop-hdfs-rdma's tests: reads back what
 * {@link SparkWrite} wrote to {@code in} (textFile, the Hadoop input
 * format path: each task opens a part file, seeks to its split and reads
 * on; three splits a file, so that tasks start and stop reading inside a
 * block), checks every line against {@link SparkWrite#line} and that each of
 * the {@code partitions} x {@code lines} lines is there exactly once, and
 * fails (exit code not 0) otherwise. The input is read twice, once per
 * count. The master and everything else come from spark.* system
 * properties, as spark-submit passes them.
 *
 * <pre>SparkRead IN PARTITIONS LINES</pre>
 */
public final class SparkRead {

  private SparkRead() {
  }

  /**
   * The line's position, p x lines + j, when it is SparkWrite's line j of
   * partition p of those written; otherwise fails naming the line.
   */
  static long verify(String line, int partitions, int lines) {
    String[] f = line.split(" ", 3);
    if (f.length == 3) {
      try {
        int p = Integer.parseInt(f[0]);
        int j = Integer.parseInt(f[1]);
        if (p >= 0 && p < partitions && j >= 0 && j < lines
            && SparkWrite.line(p, j).equals(line)) {
          return (long) p * lines + j;
        }
      } catch (NumberFormatException e) {
        // reported below
      }
    }
    throw new IllegalStateException("not a line SparkWrite wrote: " + line);
  }

  public static void main(String[] args) {
    String in = args[0];
    final int partitions = Integer.parseInt(args[1]);
    final int lines = Integer.parseInt(args[2]);
    long expected = (long) partitions * lines;
    SparkConf conf = new SparkConf().setAppName("hdfs-rdma-spark-read");
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      JavaRDD<Long> positions = sc.textFile(in, 3 * partitions)
          .map(line -> verify(line, partitions, lines));
      long read = positions.count();
      long distinct = positions.distinct().count();
      if (read != expected || distinct != expected) {
        throw new IllegalStateException(in + ": " + read + " lines, "
            + distinct + " distinct of " + expected + " expected");
      }
      System.out.println("SparkRead: " + in + ": " + read
          + " lines, each verified, none missing or repeated");
    }
  }
}
