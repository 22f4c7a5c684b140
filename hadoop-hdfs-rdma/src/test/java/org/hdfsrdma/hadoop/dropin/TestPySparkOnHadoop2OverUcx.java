package org.hdfsrdma.hadoop.dropin;

import java.io.File;

import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * Mixed versions: PyPI's pyspark 4.x as published (its own Hadoop 3
 * client, the drop-in jar as agent and nothing else, see {@link
 * StockPySpark}) writing to DataNodes of the newest Hadoop 2 release the
 * jar carries. The UCX negotiation is the jar's own protocol, not
 * Hadoop's, so a client of one line and DataNodes of another must agree
 * on it as releases of one line do.
 */
public class TestPySparkOnHadoop2OverUcx extends StockPySpark {

  private static PySpark spark;
  private static AgentCluster hdfs;

  @BeforeClass
  public static void startCluster() throws Exception {
    spark = new PySpark(System.getProperty("hdfsrdma.test.pyspark4.version"));
    hdfs = new AgentCluster("pyspark-" + spark.version + "-on-hadoop2",
        newestHadoop2(), 3);
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
}
