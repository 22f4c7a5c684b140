package org.hdfsrdma.hadoop.dropin;

import java.io.File;
import java.util.ArrayList;
import java.util.List;

import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * PyPI's pyspark 3.5.x, Spark 3.5 (Scala 2.12), as published: its
 * bin/spark-submit, its own shaded Hadoop client, the drop-in jar as agent
 * and nothing else
 * (see {@link StockPySpark}). The version is the build's {@code
 * pyspark35.version} (system property hdfsrdma.test.pyspark35.version).
 */
public class TestPySpark35OverUcx extends StockPySpark {

  private static PySpark spark;
  private static AgentCluster hdfs;

  @BeforeClass
  public static void startCluster() throws Exception {
    spark = new PySpark(System.getProperty("hdfsrdma.test.pyspark35.version"));
    hdfs = new AgentCluster("pyspark-" + spark.version,
        spark.hadoop, 3);
  }

  @AfterClass
  public static void stopCluster() {
    if (hdfs != null) {
      hdfs.close();
    }
  }

  /** local[2]: the tasks write from the driver's JVM. */
  @Test(timeout = 300_000)
  public void testLocal() throws Exception {
    writeAndCheck(hdfs, spark, "local", "local[2]");
  }

  /**
   * local-cluster[2,1,1024]: a Master and two Workers in the driver's JVM,
   * and two executors, each its own JVM that a Worker starts from the
   * pyspark's jars with spark.executor.extraJavaOptions: the tasks write
   * from there.
   */
  @Test(timeout = 300_000)
  public void testExecutorJvms() throws Exception {
    writeAndCheck(hdfs, spark, "executors", "local-cluster[2,1,1024]");
    assertAgentIn(spark, executorLogs(new File(hdfs.work(),
        "executors-spark-home/work")));
  }

  /**
   * Spark standalone: a Master and two Workers started from the pyspark's
   * jars, each its own JVM, and the job submitted to the Master; the tasks
   * write from the executors the Workers start.
   */
  @Test(timeout = 300_000)
  public void testStandalone() throws Exception {
    List<Process> started = new ArrayList<Process>();
    try {
      String master = standalone(hdfs, spark, started);
      writeAndCheck(hdfs, spark, "standalone-job", master);
      List<File> logs = new ArrayList<File>();
      for (int i = 0; i < 2; i++) {
        logs.addAll(executorLogs(new File(hdfs.work(),
            "standalone-work" + i)));
      }
      assertAgentIn(spark, logs);
    } finally {
      stop(started);
    }
  }
}
