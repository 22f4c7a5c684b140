package org.hdfsrdma.hadoop.runtime;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import org.hdfsrdma.hadoop.conf.DistributionMode;
import org.hdfsrdma.hadoop.metrics.PipelineOutcome;
import org.junit.Test;

/**
 * What the runtime remembers about DataNodes lapses and stays bounded:
 * a {@link LapsingTable} entry is gone at its time, a full table drops
 * lapsed entries first and starts over when none lapsed (never more than
 * its bound); {@link NodeBackoff} keeps a node on TCP only after a second
 * failure within its window and only for that window, and forced shapes
 * ignore emulated gets; {@link IngestRates} ignores unmeasured rates.
 */
public class TestNodeTables {

  @Test(timeout = 10_000)
  public void entriesLapseAtTheirTime() {
    LapsingTable<String> t = new LapsingTable<String>();
    t.put("dn1:9866", "held", 2_000, 1_000);
    assertEquals("held", t.get("dn1:9866", 1_999));
    assertNull("lapsed at its time", t.get("dn1:9866", 2_000));
    assertEquals("a lapsed entry is removed when read", 0, t.size());
  }

  @Test(timeout = 10_000)
  public void aFullTableDropsLapsedEntriesFirst() {
    LapsingTable<Integer> t = new LapsingTable<Integer>(4);
    t.put("a", 1, 100, 0);
    t.put("b", 2, 100, 0);
    t.put("c", 3, 5_000, 0);
    t.put("d", 4, 5_000, 0);
    t.put("e", 5, 5_000, 200);
    assertEquals(3, t.size());
    assertEquals(Integer.valueOf(3), t.get("c", 200));
    assertEquals(Integer.valueOf(5), t.get("e", 200));
    t.put("c", 33, 5_000, 200); // a node already held takes no room
    assertEquals(3, t.size());
  }

  @Test(timeout = 10_000)
  public void aFullTableOfLiveEntriesStartsOver() {
    LapsingTable<Integer> t = new LapsingTable<Integer>(3);
    for (int i = 0; i < 100; i++) {
      t.put("node" + i, i, Long.MAX_VALUE, 0);
      assertTrue("never above its bound", t.size() <= 3);
    }
    assertEquals(Integer.valueOf(99), t.get("node99", 1));
  }

  @Test(timeout = 10_000)
  public void aSecondFailureWithinTheWindowKeepsTheNodeOnTcp()
      throws InterruptedException {
    NodeBackoff b = new NodeBackoff();
    assertFalse("the first failure retries UCX", b.fellBack("dn", 60_000));
    assertNull(b.tcpOutcome("dn", DistributionMode.AUTO));
    assertTrue("the second stays on TCP", b.fellBack("dn", 60_000));
    assertEquals(PipelineOutcome.TCP_UNREACHABLE,
        b.tcpOutcome("dn", DistributionMode.FAN_OUT));
    assertNull("other nodes are untouched",
        b.tcpOutcome("dn2", DistributionMode.AUTO));

    NodeBackoff brief = new NodeBackoff();
    brief.fellBack("dn", 1);
    Thread.sleep(5);
    assertFalse("a failure outside the window is a first one",
        brief.fellBack("dn", 1));
  }

  @Test(timeout = 10_000)
  public void forcedShapesIgnoreEmulatedGets() {
    NodeBackoff b = new NodeBackoff();
    b.tcpFor("dn", PipelineOutcome.TCP_EMULATED_GETS, 60_000);
    assertEquals(PipelineOutcome.TCP_EMULATED_GETS,
        b.tcpOutcome("dn", DistributionMode.AUTO));
    assertNull(b.tcpOutcome("dn", DistributionMode.CHAIN));
  }

  @Test(timeout = 10_000)
  public void fanOutHoldsForItsWindow() throws InterruptedException {
    NodeBackoff b = new NodeBackoff();
    b.fanOutFor(new String[] {"dn1", "dn2"}, 60_000);
    assertTrue(b.fanOutOnly(new String[] {"dn3", "dn2"}));
    assertFalse(b.fanOutOnly(new String[] {"dn3"}));
    b.fanOutFor(new String[] {"dn4"}, 1);
    Thread.sleep(5);
    assertFalse("lapsed", b.fanOutOnly(new String[] {"dn4"}));
  }

  @Test(timeout = 10_000)
  public void unmeasuredRatesAreNotNoted() {
    IngestRates r = new IngestRates();
    r.note("dn", 0);
    assertEquals(0, r.of("dn"));
    r.note("dn", 1_000_000);
    r.note("dn", 0);
    assertEquals("a later unmeasured commit keeps the rate", 1_000_000,
        r.of("dn"));
  }
}
