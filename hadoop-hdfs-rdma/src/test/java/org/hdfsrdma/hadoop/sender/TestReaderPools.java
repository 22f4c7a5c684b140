package org.hdfsrdma.hadoop.sender;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotSame;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;
import static org.junit.Assume.assumeTrue;

import java.util.HashSet;
import java.util.Set;

import org.hdfsrdma.hadoop.sender.ReaderPools.Decline;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.UcxContext;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * The memory a DataNode serves reads from, over real UCX registrations: a
 * reader (user and client worker) never gets memory another reader's data
 * passed through; a read's window is taken whole or declined, within the
 * user's and the DataNode's caps; a read that ends as agreed gives its
 * buffers back to its reader, one that does not retires the pool
 * (deregistered a grace after its last read ends, never handed out
 * again; as many retiring as readers at most); idle
 * pools are closed, and at most so many exist.
 */
public class TestReaderPools {

  private static final int BUFFER = 64 * 1024 + 512;
  private static final byte[] WORKER_A = {1, 2, 3};
  private static final byte[] WORKER_B = {4, 5, 6};

  private UcxContext context;
  private ReaderPools pools;

  @Before
  public void open() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    context = new UcxContext(UcxContext.Options.defaults()
        .withUcxConfig("TLS", "^tcp"));
  }

  @After
  public void close() {
    if (pools != null) {
      pools.close();
    }
    if (context != null) {
      context.close();
    }
  }

  private static void assertNoBufferShared(ReadReservation a, ReadReservation b) {
    Set<Long> addresses = new HashSet<>();
    for (ReadReservation r : new ReadReservation[] {a, b}) {
      for (int i = 0; i < r.window(); i++) {
        assertTrue(addresses.add(r.buffers().address(r.token(i))));
      }
    }
  }

  @Test(timeout = 60_000)
  public void testEachReaderHasItsOwnPool() {
    pools = new ReaderPools(context, BUFFER, 8, 32, 8);
    ReadReservation alice = pools.reserve("alice", WORKER_A, 4);
    ReadReservation aliceElsewhere = pools.reserve("alice", WORKER_B, 4);
    ReadReservation bob = pools.reserve("bob", WORKER_A, 4);
    assertNull(alice.declined());
    assertNotSame("another worker of the same user", alice.buffers(),
        aliceElsewhere.buffers());
    assertNotSame("another user on the same worker", alice.buffers(),
        bob.buffers());
    assertNoBufferShared(alice, bob);
    assertEquals(3, pools.readers());
    assertEquals(12, pools.held());

    // Ended as agreed: the same reader's next read reuses its pool and
    // the memory registered for it.
    RegisteredBufferPool mine = alice.buffers();
    long registrations = mine.metrics().registrations();
    alice.finish();
    alice.finish(); // once only
    assertEquals(8, pools.held());
    ReadReservation again = pools.reserve("alice", WORKER_A, 4);
    assertSame(mine, again.buffers());
    assertEquals(registrations, mine.metrics().registrations());
    again.finish();
    aliceElsewhere.finish();
    bob.finish();
    assertEquals(0, pools.held());
    assertEquals(3, pools.poolsMade());
  }

  @Test(timeout = 60_000)
  public void testWindowsWithinTheCapsOrDeclined() {
    pools = new ReaderPools(context, BUFFER, 8, 12, 8);
    ReadReservation a1 = pools.reserve("alice", WORKER_A, 6);
    assertSame("the user's cap counts all of the user's workers",
        Decline.USER_CAP, pools.reserve("alice", WORKER_B, 4).declined());
    ReadReservation a2 = pools.reserve("alice", WORKER_B, 2);
    assertNull(a2.declined());
    ReadReservation b1 = pools.reserve("bob", WORKER_A, 4);
    assertNull(b1.declined());
    assertSame(Decline.DATANODE_CAP,
        pools.reserve("carol", WORKER_A, 2).declined());
    assertEquals(1, pools.declines(Decline.USER_CAP));
    assertEquals(1, pools.declines(Decline.DATANODE_CAP));
    assertEquals(12, pools.held());
    a1.finish();
    ReadReservation c1 = pools.reserve("carol", WORKER_A, 2);
    assertNull(c1.declined());
    try {
      pools.reserve("alice", WORKER_A, 9);
      fail("a window beyond the user's cap is the caller's error");
    } catch (IllegalArgumentException expected) {
    }
    // A declined reservation holds nothing and ends as nothing.
    pools.reserve("dave", WORKER_A, 8).retire();
    assertEquals(4, pools.reservations());
    a2.finish();
    b1.finish();
    c1.finish();
    assertEquals(0, pools.held());
  }

  @Test(timeout = 60_000)
  public void testRetiredPoolIsNeverHandedOutAgain() {
    pools = new ReaderPools(context, BUFFER, 8, 32, 8);
    ReadReservation first = pools.reserve("alice", WORKER_A, 2);
    ReadReservation second = pools.reserve("alice", WORKER_A, 2);
    RegisteredBufferPool retired = first.buffers();
    assertSame(retired, second.buffers());
    first.retire();
    // The other read of the same reader goes on from the retired pool.
    retired.buffer(second.token(0)).putInt(0, 42);
    ReadReservation third = pools.reserve("alice", WORKER_A, 2);
    assertNotSame("a new pool for the reader's next read", retired,
        third.buffers());
    assertEquals(1, pools.poolsRetired());
    second.finish();
    // Registered for its grace, for gets the reader sent before; then
    // closed by the sweep.
    assertEquals(1, pools.retiring());
    long ended = System.nanoTime();
    assertEquals(0, pools.sweep(ended, Long.MAX_VALUE));
    assertEquals(1, pools.sweep(ended + ReaderPools.RETIRED_GRACE_NANOS,
        Long.MAX_VALUE));
    assertEquals(0, pools.retiring());
    try {
      retired.tryAcquire();
      fail("the retired pool is closed once its grace ended");
    } catch (IllegalStateException expected) {
    }
    // close() of a reservation that did not end retires it.
    RegisteredBufferPool thirdPool = third.buffers();
    third.close();
    assertEquals(2, pools.poolsRetired());
    assertEquals(1, pools.retiring());
    // Closing the pools closes the retiring ones too.
    pools.close();
    assertEquals(0, pools.retiring());
    try {
      thirdPool.tryAcquire();
      fail("closed with the pools");
    } catch (IllegalStateException expected) {
    }
    assertEquals(0, pools.held());
  }

  @Test(timeout = 60_000)
  public void testRetiringPoolsAreBounded() {
    pools = new ReaderPools(context, BUFFER, 4, 64, 2);
    pools.reserve("alice", WORKER_A, 2).retire();
    pools.reserve("bob", WORKER_A, 2).retire();
    assertEquals(2, pools.retiring());
    assertSame("as many retired pools as readers wait for their grace",
        Decline.READERS, pools.reserve("carol", WORKER_A, 2).declined());
    assertEquals(2, pools.sweep(System.nanoTime()
        + ReaderPools.RETIRED_GRACE_NANOS, Long.MAX_VALUE));
    ReadReservation c = pools.reserve("carol", WORKER_A, 2);
    assertNull(c.declined());
    c.finish();
    assertEquals(0, pools.held());
  }

  @Test(timeout = 60_000)
  public void testIdlePoolsCloseAndReadersAreBounded() {
    pools = new ReaderPools(context, BUFFER, 4, 64, 2);
    ReadReservation a = pools.reserve("alice", WORKER_A, 2);
    ReadReservation b = pools.reserve("bob", WORKER_A, 2);
    assertSame("two pools exist, both reading", Decline.READERS,
        pools.reserve("carol", WORKER_A, 2).declined());
    RegisteredBufferPool alicePool = a.buffers();
    a.finish();
    // Alice's idle pool makes room for carol's.
    ReadReservation c = pools.reserve("carol", WORKER_A, 2);
    assertNull(c.declined());
    assertEquals(2, pools.readers());
    try {
      alicePool.tryAcquire();
      fail("the evicted pool is closed");
    } catch (IllegalStateException expected) {
    }
    b.finish();
    c.finish();
    assertEquals(0, pools.sweep(System.nanoTime(), 60_000_000_000L));
    assertEquals(2, pools.sweep(System.nanoTime(), 0));
    assertEquals(0, pools.readers());

    pools.close();
    assertSame(Decline.CLOSED,
        pools.reserve("alice", WORKER_A, 2).declined());
  }

  @Test
  public void testKeyIsTheReaderNotTheAddressBytes() {
    assertEquals(ReaderPools.key("alice", WORKER_A),
        ReaderPools.key("alice", WORKER_A.clone()));
    assertTrue(!ReaderPools.key("alice", WORKER_A).equals(
        ReaderPools.key("alic", new byte[] {'e', 1, 2, 3})));
    assertEquals(22, ReaderPools.key("alice", new byte[300]).length());
  }
}
