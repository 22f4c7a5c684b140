package org.hdfsrdma.hadoop.dropin;

import org.junit.AfterClass;
import org.junit.BeforeClass;

/**
 * PyPI's pyspark 4.x as published (see {@link StockPySpark}) on DataNodes
 * of the home line, the newest Hadoop 3.4 release the jar carries (the
 * Spark's own client is the 3.4 series' newest, 3.5.0): the job writes
 * and then reads its files back over UCX in {@code local[2]}. The other
 * modes run on the Spark's own Hadoop ({@link TestPySpark4OverUcx}).
 */
public class TestPySpark4OnHomeLineOverUcx extends StockPySpark {

  private static PySpark spark;
  private static AgentCluster hdfs;

  @BeforeClass
  public static void startCluster() throws Exception {
    spark = new PySpark(System.getProperty("hdfsrdma.test.pyspark4.version"));
    hdfs = new AgentCluster("pyspark-" + spark.version + "-on-home-line",
        newest("3.4."), 3);
  }

  @AfterClass
  public static void stopCluster() {
    if (hdfs != null) {
      hdfs.close();
    }
  }

  @Override
  PySpark spark() {
    return spark;
  }

  @Override
  AgentCluster hdfs() {
    return hdfs;
  }

  @Override
  boolean standaloneToo() {
    return false;
  }

  @Override
  boolean executorsToo() {
    return false;
  }
}
