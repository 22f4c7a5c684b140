package org.hdfsrdma.hadoop.dropin;

import org.junit.AfterClass;
import org.junit.BeforeClass;

/**
 * PyPI's pyspark 4.x, Spark 4 (Scala 2.13), as published: its
 * bin/spark-submit, its own shaded Hadoop client, the drop-in jar as agent
 * and nothing else (see {@link StockPySpark}), on DataNodes of the
 * Spark's own Hadoop. The version is the build's {@code pyspark4.version}
 * (system property hdfsrdma.test.pyspark4.version).
 */
public class TestPySpark4OverUcx extends StockPySpark {

  private static PySpark spark;
  private static AgentCluster hdfs;

  @BeforeClass
  public static void startCluster() throws Exception {
    spark = new PySpark(System.getProperty("hdfsrdma.test.pyspark4.version"));
    hdfs = new AgentCluster("pyspark-" + spark.version, spark.hadoop, 3);
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
}
