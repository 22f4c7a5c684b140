package org.hdfsrdma.ucx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

import org.junit.After;
import org.junit.Before;
import org.junit.Test;
import org.openucx.jucx.UcxUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Several threads driving one worker, each waiting for its own messages,
 * as BlockReceivers of one DataNode do: one sleeps in the worker's event
 * wait, the others park and are woken by whoever delivers their message
 * ({@link UcxWorker.Driver#wake()}) or promoted when the waiter leaves.
 * Every message must reach its owner, in order, and every wait must end
 * soon after its message arrived: far below the wait's timeout, which a
 * lost wake-up would run into (or into UCX's keepalive, 20 s).
 */
public class TestDrivers {

  private static final Logger LOG = LoggerFactory.getLogger(TestDrivers.class);
  /** The timeout of every wait; none may come near it. */
  private static final long DRIVE_TIMEOUT_MS = 20_000;
  /** The latest a message may reach its owner (loaded 2-core host). */
  private static final long LATENCY_LIMIT_MS = 2_000;
  private static final long WAIT_MS = 30_000;

  private UcxContext context;
  private UcxWorker receiver;
  private UcxWorker sender;
  private UcxEndpoint endpoint;
  private ExecutorService threads;
  /** Per owner: its messages, its driver. */
  private ConcurrentLinkedQueue<long[]>[] inboxes;
  private volatile UcxWorker.Driver[] owners;
  private final AtomicLong delivered = new AtomicLong();
  /** Send times are stamped relative to this (offsets must be positive). */
  private final long epoch = System.nanoTime();
  private final AtomicLong poisoned = new AtomicLong();

  @Before
  public void setUp() throws Exception {
    UcxTestUtils.assumeUcx();
    context = new UcxContext(UcxTestUtils.options(UcxTestUtils.TLS_SHM));
    receiver = new UcxWorker(context, "receiver");
    receiver.setMessageHandler(this::route);
    receiver.start();
    sender = new UcxWorker(context, "sender").start();
    endpoint = UcxEndpoint.connect(sender, receiver.address(), "receiver",
        WAIT_MS).get(WAIT_MS, TimeUnit.MILLISECONDS);
    threads = Executors.newCachedThreadPool();
  }

  @After
  public void tearDown() {
    if (threads != null) {
      threads.shutdownNow();
    }
    if (endpoint != null) {
      endpoint.close();
    }
    if (sender != null) {
      sender.close();
    }
    if (receiver != null) {
      receiver.close();
    }
    if (context != null) {
      context.close();
    }
  }

  /**
   * The handler: a descriptor's session names its owner, its seqno counts
   * per owner, its offset carries the send time. Seqno -1 is poison: the
   * handler throws.
   */
  private void route(ByteBuffer message, int length, long replyEndpoint) {
    PacketDescriptor d = new PacketDescriptor().wrap(message, 0);
    try {
      d.validate(length);
    } catch (MalformedMessageException e) {
      throw new AssertionError(e);
    }
    if (d.seqno() == -1) {
      poisoned.incrementAndGet();
      throw new IllegalStateException("poison message (a test's handler"
          + " bug): delivery must go on");
    }
    int owner = (int) d.session();
    inboxes[owner].add(new long[] {d.seqno(), d.offsetInBlock()});
    delivered.incrementAndGet();
    owners[owner].wake();
  }

  @SuppressWarnings("unchecked")
  private void owners(int n) {
    inboxes = new ConcurrentLinkedQueue[n];
    for (int i = 0; i < n; i++) {
      inboxes[i] = new ConcurrentLinkedQueue<long[]>();
    }
    owners = new UcxWorker.Driver[n];
  }

  @Test(timeout = 300_000)
  public void testTwoDriversAlternating() throws Exception {
    run(2, 5_000, Pattern.ALTERNATING);
  }

  @Test(timeout = 300_000)
  public void testThreeDriversInBursts() throws Exception {
    run(3, 6_000, Pattern.BURSTS);
  }

  @Test(timeout = 300_000)
  public void testFourDriversAlternatingAndInBursts() throws Exception {
    run(4, 4_000, Pattern.ALTERNATING);
    run(4, 5_000, Pattern.BURSTS);
  }

  private enum Pattern { ALTERNATING, BURSTS }

  /**
   * {@code n} drivers, {@code total} messages sent from one thread of the
   * sending worker: round robin, or bursts of up to 64 to one owner, each
   * burst once the previous one was taken (so that every owner sleeps,
   * parks and is promoted in turn).
   */
  private void run(int n, int total, Pattern pattern) throws Exception {
    owners(n);
    delivered.set(0);
    long promotionsBefore = receiver.promotions();
    AtomicLongArray maxLatency = new AtomicLongArray(n);
    AtomicInteger timeouts = new AtomicInteger();
    int[] expected = new int[n];
    int[] sequence = new int[total];
    Random random = new Random(n * 31 + total);
    for (int i = 0; i < total; ) {
      if (pattern == Pattern.ALTERNATING) {
        sequence[i] = i % n;
        i++;
      } else {
        int owner = random.nextInt(n);
        int burst = 1 + random.nextInt(64);
        for (int b = 0; b < burst && i < total; b++) {
          sequence[i++] = owner;
        }
      }
    }
    for (int owner : sequence) {
      expected[owner]++;
    }
    CountDownLatch registered = new CountDownLatch(n);
    List<Future<Long>> results = new ArrayList<Future<Long>>();
    for (int t = 0; t < n; t++) {
      final int me = t;
      results.add(threads.submit(() -> {
        UcxWorker.Driver d = receiver.registerDriver();
        owners[me] = d;
        registered.countDown();
        long next = 0;
        ConcurrentLinkedQueue<long[]> inbox = inboxes[me];
        try {
          while (next < expected[me]) {
            if (!receiver.drive(d, () -> !inbox.isEmpty(),
                TimeUnit.MILLISECONDS.toNanos(DRIVE_TIMEOUT_MS))) {
              timeouts.incrementAndGet();
              throw new AssertionError("owner " + me + " waited "
                  + DRIVE_TIMEOUT_MS + " ms for message " + next);
            }
            long[] m;
            while ((m = inbox.poll()) != null) {
              long latency = System.nanoTime() - epoch - m[1];
              maxLatency.accumulateAndGet(me, latency, Math::max);
              if (m[0] != next) {
                throw new AssertionError("owner " + me + " got message "
                    + m[0] + " where " + next + " was due");
              }
              next++;
            }
          }
        } finally {
          receiver.unregisterDriver(d);
        }
        return next;
      }));
    }
    assertTrue(registered.await(WAIT_MS, TimeUnit.MILLISECONDS));
    ByteBuffer messages = ByteBuffer.allocateDirect(
        64 * PacketDescriptor.LENGTH);
    long base = UcxUtils.getAddress(messages);
    StatusSlots slots = new StatusSlots(64);
    long[] seqno = new long[n];
    long start = System.nanoTime();
    int previous = -1;
    for (int i = 0; i < total; i++) {
      int owner = sequence[i];
      if (pattern == Pattern.BURSTS && owner != previous) {
        // A new burst once everything sent was taken: the owners idle.
        final long sent = i;
        UcxTestUtils.waitFor(() -> delivered.get() == sent
            && allTaken(), WAIT_MS, "burst taken");
      }
      previous = owner;
      int slot = i % 64;
      new PacketDescriptor().wrap(messages, slot * PacketDescriptor.LENGTH)
          .encode(owner, 1, 1, seqno[owner]++, System.nanoTime() - epoch, 0,
              0, 0, 0, 0);
      UcxTestUtils.sendAsWritePath(endpoint, base
          + slot * PacketDescriptor.LENGTH, PacketDescriptor.LENGTH, slots,
          slot, WAIT_MS);
    }
    for (int t = 0; t < n; t++) {
      assertEquals(Long.valueOf(expected[t]), results.get(t).get(WAIT_MS,
          TimeUnit.MILLISECONDS));
    }
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    long worst = 0;
    for (int t = 0; t < n; t++) {
      worst = Math.max(worst, maxLatency.get(t));
    }
    long promotions = receiver.promotions() - promotionsBefore;
    LOG.info("{} drivers, {} messages ({}): {} ms, worst delivery {} us,"
        + " {} promotions, {} sleeps so far", n, total, pattern, ms,
        worst / 1000, promotions, receiver.sleeps());
    assertEquals(0, timeouts.get());
    assertEquals(total, delivered.get());
    assertTrue("a message took " + worst / 1_000_000 + " ms to reach its"
        + " owner", worst < TimeUnit.MILLISECONDS.toNanos(LATENCY_LIMIT_MS));
  }

  private boolean allTaken() {
    for (ConcurrentLinkedQueue<long[]> q : inboxes) {
      if (!q.isEmpty()) {
        return false;
      }
    }
    return true;
  }

  /**
   * The waiter leaves with its message while another driver is parked:
   * the parked one is promoted to waiter (it is no longer parked, though
   * its own message has not come), and its message then reaches it at
   * once.
   */
  @Test(timeout = 120_000)
  public void testAParkedDriverIsPromotedWhenTheWaiterLeaves()
      throws Exception {
    owners(2);
    ByteBuffer m = ByteBuffer.allocateDirect(PacketDescriptor.LENGTH);
    StatusSlots slots = new StatusSlots(1);
    long promotionsBefore = receiver.promotions();
    for (int round = 0; round < 20; round++) {
      UcxWorker.Driver[] d = new UcxWorker.Driver[2];
      long[] woke = new long[2];
      CountDownLatch started = new CountDownLatch(2);
      List<Future<Long>> f = new ArrayList<Future<Long>>();
      for (int t = 0; t < 2; t++) {
        final int me = t;
        f.add(threads.submit(() -> {
          d[me] = receiver.registerDriver();
          owners[me] = d[me];
          started.countDown();
          try {
            assertTrue(receiver.drive(d[me], () -> !inboxes[me].isEmpty(),
                TimeUnit.MILLISECONDS.toNanos(DRIVE_TIMEOUT_MS)));
            woke[me] = System.nanoTime();
            return inboxes[me].poll()[0];
          } finally {
            receiver.unregisterDriver(d[me]);
          }
        }));
      }
      assertTrue(started.await(WAIT_MS, TimeUnit.MILLISECONDS));
      // One sleeps in the event wait, the other is parked.
      UcxTestUtils.waitFor(() -> d[0].parked != d[1].parked, WAIT_MS,
          "one waiter and one parked driver");
      int waiter = d[0].parked ? 1 : 0;
      int other = 1 - waiter;
      send(m, slots, waiter, round);
      assertEquals(Long.valueOf(round), f.get(waiter).get(WAIT_MS,
          TimeUnit.MILLISECONDS));
      // Someone must watch the worker now: the other driver, promoted.
      UcxTestUtils.waitFor(() -> !d[other].parked, LATENCY_LIMIT_MS,
          "the parked driver to be promoted");
      long sent = System.nanoTime();
      send(m, slots, other, round);
      assertEquals(Long.valueOf(round), f.get(other).get(WAIT_MS,
          TimeUnit.MILLISECONDS));
      assertTrue("the promoted driver took " + (woke[other] - sent) / 1000
          + " us", woke[other] - sent < TimeUnit.MILLISECONDS.toNanos(
              LATENCY_LIMIT_MS));
    }
    assertTrue("promotions", receiver.promotions() > promotionsBefore);
  }

  private void send(ByteBuffer m, StatusSlots slots, int owner, long seqno)
      throws Exception {
    new PacketDescriptor().wrap(m, 0).encode(owner, 1, 1, seqno, 0, 0, 0, 0,
        0, 0);
    UcxTestUtils.sendAsWritePath(endpoint, UcxUtils.getAddress(m),
        PacketDescriptor.LENGTH, slots, 0, WAIT_MS);
  }

  /** Messages go on reaching their owners after the handler threw. */
  @Test(timeout = 120_000)
  public void testAThrowingHandlerDoesNotStopDelivery() throws Exception {
    owners(1);
    ByteBuffer messages = ByteBuffer.allocateDirect(
        64 * PacketDescriptor.LENGTH);
    long base = UcxUtils.getAddress(messages);
    StatusSlots slots = new StatusSlots(64);
    Future<Long> owner = threads.submit(() -> {
      UcxWorker.Driver d = receiver.registerDriver();
      owners[0] = d;
      long taken = 0;
      try {
        while (taken < 1000) {
          assertTrue(receiver.drive(d, () -> !inboxes[0].isEmpty(),
              TimeUnit.MILLISECONDS.toNanos(DRIVE_TIMEOUT_MS)));
          while (inboxes[0].poll() != null) {
            taken++;
          }
        }
      } finally {
        receiver.unregisterDriver(d);
      }
      return taken;
    });
    UcxTestUtils.waitFor(() -> owners[0] != null, WAIT_MS, "the owner");
    long seqno = 0;
    for (int i = 0; i < 1010; i++) {
      int slot = i % 64;
      boolean poison = i % 101 == 50;
      new PacketDescriptor().wrap(messages, slot * PacketDescriptor.LENGTH)
          .encode(0, 1, 1, poison ? -1 : seqno++, 0, 0, 0, 0, 0, 0);
      UcxTestUtils.sendAsWritePath(endpoint, base
          + slot * PacketDescriptor.LENGTH, PacketDescriptor.LENGTH, slots,
          slot, WAIT_MS);
    }
    assertEquals(Long.valueOf(1000), owner.get(WAIT_MS,
        TimeUnit.MILLISECONDS));
    assertEquals(10, poisoned.get());
    assertEquals(10, receiver.callbackFailures());
    assertEquals(1010, receiver.messagesDelivered());
    assertTrue(receiver.isRunning());
    assertTrue(receiver.progressThread().isAlive());
  }

  /**
   * A DataNode's driver waits for its endpoint back to a client, which
   * the progress thread makes from the client's hello (as
   * UcxPacketReceiver.endpointBack does), fifty times: each must be there
   * within a bounded time, never after a keepalive interval.
   */
  @Test(timeout = 300_000)
  public void testTheEndpointBackIsSeenPromptly() throws Exception {
    try (TestGetter getter = new TestGetter(UcxTestUtils.TLS_SHM)) {
      ByteBuffer hello = ByteBuffer.allocateDirect(1024);
      int length = new HelloMessage().wrap(hello, 0, 1024).encode(
          sender.address()).length();
      StatusSlots slots = new StatusSlots(1);
      UcxWorker.Driver driver = getter.worker.registerDriver();
      long worst = 0;
      try {
        for (int i = 0; i < 50; i++) {
          UcxEndpoint e = UcxEndpoint.connect(sender, getter.worker.address(),
              "getter", WAIT_MS).get(WAIT_MS, TimeUnit.MILLISECONDS);
          long start = System.nanoTime();
          UcxTestUtils.sendAsWritePath(e, UcxUtils.getAddress(hello), length,
              slots, 0, WAIT_MS);
          assertTrue(getter.worker.drive(driver, () -> getter.back != null,
              TimeUnit.MILLISECONDS.toNanos(DRIVE_TIMEOUT_MS)));
          long took = System.nanoTime() - start;
          worst = Math.max(worst, took);
          assertTrue("cycle " + i + ": the endpoint back took "
              + took / 1_000_000 + " ms", took < TimeUnit.MILLISECONDS
                  .toNanos(LATENCY_LIMIT_MS));
          e.close();
          getter.closeBacks();
        }
      } finally {
        getter.worker.unregisterDriver(driver);
      }
      LOG.info("50 endpoints back, the slowest in {} us", worst / 1000);
    }
  }
}
