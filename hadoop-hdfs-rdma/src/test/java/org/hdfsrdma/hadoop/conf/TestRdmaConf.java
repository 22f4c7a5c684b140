package org.hdfsrdma.hadoop.conf;

import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import org.apache.hadoop.conf.Configuration;
import org.junit.Test;

/**
 * The one rule of which Hadoop data-transfer settings keep writes on TCP,
 * as the client, the DataNode and {@code check} all apply it.
 */
public class TestRdmaConf {

  private static Configuration conf(String encrypt, String protection) {
    Configuration conf = new Configuration(false);
    if (encrypt != null) {
      conf.set("dfs.encrypt.data.transfer", encrypt);
    }
    if (protection != null) {
      conf.set("dfs.data.transfer.protection", protection);
    }
    return conf;
  }

  @Test(timeout = 10_000)
  public void testProtectionThatUcxLacksKeepsWritesOnTcp() {
    assertTrue(RdmaConf.transferProtected(conf("true", null)));
    assertTrue(RdmaConf.transferProtected(conf(null, "integrity")));
    assertTrue(RdmaConf.transferProtected(conf(null, "privacy")));
    assertTrue(RdmaConf.transferProtected(
        conf("false", " authentication,privacy ")));
    assertTrue(new RdmaConf(conf(null, "integrity")).transferProtected());
  }

  @Test(timeout = 10_000)
  public void testAuthenticationAloneIsNoProtectionOfTheBytes() {
    assertFalse(RdmaConf.transferProtected(conf(null, null)));
    assertFalse(RdmaConf.transferProtected(conf("false", "")));
    assertFalse(RdmaConf.transferProtected(conf(null, "authentication")));
    assertFalse(new RdmaConf(conf(null, "authentication"))
        .transferProtected());
  }
}
