package org.hdfsrdma.testapps.spark;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Random;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * A Spark job for hadoop-hdfs-rdma's tests: writes {@code partitions} text
 * files of {@code lines} lines each to {@code out} (saveAsTextFile, the
 * Hadoop output format path), partition p's line j being {@link #line}.
 * The master and everything else come from spark.* system properties, as
 * spark-submit passes them.
 *
 * <pre>SparkWrite OUT PARTITIONS LINES</pre>
 */
public final class SparkWrite {

  private SparkWrite() {
  }

  /** Line j of partition p: 120 characters, 121 bytes with its newline. */
  public static String line(int p, int j) {
    Random r = new Random(p * 1_000_003L + j);
    StringBuilder sb = new StringBuilder(120);
    sb.append(String.format("%04d %08d ", p, j));
    while (sb.length() < 120) {
      sb.append(Character.forDigit(r.nextInt(16), 16));
    }
    return sb.toString();
  }

  public static void main(String[] args) {
    String out = args[0];
    int partitions = Integer.parseInt(args[1]);
    final int lines = Integer.parseInt(args[2]);
    List<Integer> ids = new ArrayList<Integer>();
    for (int p = 0; p < partitions; p++) {
      ids.add(p);
    }
    SparkConf conf = new SparkConf().setAppName("hdfs-rdma-spark-write");
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      sc.parallelize(ids, partitions)
          .mapPartitionsWithIndex((p, unused) -> {
            List<String> part = new ArrayList<String>(lines);
            for (int j = 0; j < lines; j++) {
              part.add(line(p, j));
            }
            Iterator<String> it = part.iterator();
            return it;
          }, true)
          .saveAsTextFile(out);
    }
  }
}
