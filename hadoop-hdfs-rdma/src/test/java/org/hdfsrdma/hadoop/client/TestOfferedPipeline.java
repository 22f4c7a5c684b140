package org.hdfsrdma.hadoop.client;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertTrue;

import java.util.Arrays;
import java.util.List;

import org.hdfsrdma.hadoop.protocol.CommitEntry;
import org.hdfsrdma.hadoop.protocol.SessionIds;
import org.junit.Test;

/**
 * A pipeline as offered: each DataNode's session is keyed by that
 * DataNode, the block and the offer's nonce; a commit list counts only
 * when every DataNode committed, in pipeline order; and the offer keeps
 * its own copy of the names the caller may reuse.
 */
public class TestOfferedPipeline {

  private static final String[] NODES = {"10.0.0.1:9866", "10.0.0.2:9866",
      "10.0.0.3:9866"};
  private static final String[] NAMES = {"dn1", "dn2", "dn3"};
  private static final byte[] TOKEN = {1, 2, 3, 4};

  private static OfferedPipeline offer(int feeders) {
    return new OfferedPipeline("blk_7_1001", NODES.clone(), NAMES.clone(),
        "BP-1", 7, 1001, TOKEN, 65536, feeders, null);
  }

  private static CommitEntry commit(String node) {
    return new CommitEntry(node, new byte[] {5}, 0,
        new byte[CommitEntry.HOST_ID_LENGTH]);
  }

  @Test
  public void testSessionPerDataNode() {
    OfferedPipeline p = offer(0);
    assertEquals(3, p.fed);
    for (int i = 0; i < NODES.length; i++) {
      assertEquals(SessionIds.of(TOKEN, p.request.getNonce(), "BP-1",
          NODES[i], 7, 1001), p.sessionIds[i]);
    }
    assertNotEquals(p.sessionIds[0], p.sessionIds[1]);
    assertEquals("a chain fed by one", 1, offer(1).fed);
    assertEquals(1, offer(1).request.feeders());
  }

  @Test
  public void testCommitsCountOnlyWholeAndInOrder() {
    OfferedPipeline p = offer(0);
    assertTrue(p.committedInOrder(Arrays.asList(commit(NODES[0]),
        commit(NODES[1]), commit(NODES[2]))));
    List<CommitEntry> swapped = Arrays.asList(commit(NODES[1]),
        commit(NODES[0]), commit(NODES[2]));
    assertFalse(p.committedInOrder(swapped));
    assertFalse("one DataNode did not commit", p.committedInOrder(
        Arrays.asList(commit(NODES[0]), commit(NODES[1]))));
    assertFalse(p.committedInOrder(Arrays.asList(commit(NODES[0]),
        commit(NODES[1]), commit(NODES[2]), commit("10.0.0.4:9866"))));
  }

  @Test
  public void testKeepsItsOwnNames() {
    String[] nodes = NODES.clone();
    String[] names = NAMES.clone();
    OfferedPipeline p = new OfferedPipeline("blk_7_1001", nodes, names,
        "BP-1", 7, 1001, TOKEN, 65536, 0, null);
    nodes[0] = "elsewhere:1";
    names[0] = "other";
    assertEquals(NODES[0], p.nodes[0]);
    assertEquals("dn1", p.nameOf(0));
    assertEquals("DataNode 3", p.nameOf(3));
    assertEquals("DataNode -1", p.nameOf(-1));
    assertFalse(p.has(3));
  }
}
