package org.hdfsrdma.hadoop.dropin;

import org.junit.AfterClass;
import org.junit.BeforeClass;

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
    hdfs = new AgentCluster("pyspark-" + spark.version + "-on-hadoop2", newestHadoop2(), 3);
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
}
