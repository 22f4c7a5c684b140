package org.hdfsrdma.hadoop.client;

import static org.junit.Assert.assertEquals;

import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.junit.Test;

/**
 * How long a reader waits for one get: what a stock reader waits for a
 * silent DataNode, Hadoop's client socket timeout, not the DataNodes' get
 * timeout (60 s), which held a reader that long when its DataNode stopped
 * in the middle of a get.
 */
public class TestBlockReads {

  @Test(timeout = 10_000)
  public void testGetsWaitAsLongAsTheSocketTimeout() {
    Configuration conf = new Configuration(false);
    conf.setLong(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_GET_TIMEOUT_MS_KEY,
        45_000);
    RdmaConf rdma = new RdmaConf(conf);
    assertEquals("Hadoop's default socket timeout", 60_000,
        BlockReads.getTimeoutMs(conf, rdma));
    conf.setInt(BlockReads.SOCKET_TIMEOUT_KEY, 3000);
    assertEquals(3000, BlockReads.getTimeoutMs(conf, rdma));
    conf.setInt(BlockReads.SOCKET_TIMEOUT_KEY, 0);
    assertEquals("no socket timeout: the DataNodes' get timeout", 45_000,
        BlockReads.getTimeoutMs(conf, rdma));
  }
}
