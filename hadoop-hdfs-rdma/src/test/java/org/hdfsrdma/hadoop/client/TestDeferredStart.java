package org.hdfsrdma.hadoop.client;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.hdfsrdma.hadoop.metrics.PipelineOutcome;
import org.junit.Test;

/**
 * How the writer and the streamer of a JVM's first stream number its
 * blocks, and when and where UCX starts: the first block on TCP, every
 * later one on UCX, whatever hflush, append and recovery do to offsets
 * and pipelines. UCX itself is started by {@code TestFirstBlockOverTcp};
 * here the start is one the test can see being made.
 */
public class TestDeferredStart {

  private static final long QUARTER = 256 * 1024;

  /** A start the test can recognise, and the threads that made it. */
  private final UcxClients.Start start =
      UcxClients.Start.tcp(PipelineOutcome.TCP_POLICY);
  private final List<String> startedOn =
      Collections.synchronizedList(new ArrayList<String>());

  private DeferredStart deferred(long backgroundFrom) {
    return new DeferredStart(backgroundFrom, () -> {
      startedOn.add(Thread.currentThread().getName());
      return start;
    });
  }

  /** Packets at {@code offsets}, none of which may take the start. */
  private static void packets(DeferredStart d, long... offsets) {
    for (long o : offsets) {
      assertNull("offset " + o, d.beforePacket(o));
    }
  }

  @Test(timeout = 30_000)
  public void testLongFirstBlockStartsUcxInTheBackground() throws Exception {
    DeferredStart d = deferred(QUARTER);
    packets(d, 0, 65536, QUARTER - 1);
    assertTrue("nothing started below a quarter", startedOn.isEmpty());
    packets(d, QUARTER, QUARTER + 65536);
    assertSame("the second block's first packet takes the start", start,
        d.beforePacket(0));
    assertEquals("started once, in the background",
        Collections.singletonList(DeferredStart.THREAD_NAME), startedOn);
    assertTrue(d.settled());
    packets(d, 65536, 0, 65536);
    assertEquals(1, startedOn.size());
  }

  @Test(timeout = 30_000)
  public void testShortFirstBlockStartsUcxOnTheWriter() {
    DeferredStart d = deferred(QUARTER);
    packets(d, 0, 65536);
    assertSame(start, d.beforePacket(0));
    assertEquals(Collections.singletonList(Thread.currentThread().getName()),
        startedOn);
  }

  /**
   * A packet sent again after an hflush of a partial chunk starts at the
   * chunk it started at, offset 0 too: it begins no block.
   */
  @Test(timeout = 30_000)
  public void testPacketsSentAgainAfterHflushBeginNoBlock() {
    DeferredStart d = deferred(Long.MAX_VALUE);
    packets(d, 0, 0, 0, 512, 512, 1024);
    assertSame(start, d.beforePacket(0));
  }

  /** An append's first packet is in the middle of the last block. */
  @Test(timeout = 30_000)
  public void testAppendsFirstBlockBeginsMidBlock() {
    DeferredStart d = deferred(Long.MAX_VALUE);
    packets(d, 4096, 8192);
    assertSame(start, d.beforePacket(0));
  }

  /**
   * The streamer keeps the first block, recoveries included, on TCP and
   * offers UCX from the writer's first block on UCX.
   */
  @Test(timeout = 30_000)
  public void testStreamerKeepsTheFirstBlockOnTcp() {
    DeferredStart d = deferred(Long.MAX_VALUE);
    packets(d, 0, 65536);
    assertTrue("block 1", d.stayOnTcp(1001));
    assertSame(start, d.beforePacket(0));
    assertTrue("block 1 recovered after the writer started UCX",
        d.stayOnTcp(1001));
    assertFalse("block 2", d.stayOnTcp(1002));
    assertFalse("block 2 recovered", d.stayOnTcp(1002));
    assertFalse("block 3", d.stayOnTcp(1003));
  }

  /**
   * The writer may run blocks ahead of the streamer (small blocks, a full
   * data queue): the streamer still numbers the first block 1.
   */
  @Test(timeout = 30_000)
  public void testWriterAheadOfTheStreamer() {
    DeferredStart d = deferred(Long.MAX_VALUE);
    packets(d, 0, 65536);
    assertSame(start, d.beforePacket(0));
    packets(d, 65536, 0, 65536);
    assertTrue("block 1", d.stayOnTcp(7));
    assertFalse("block 2", d.stayOnTcp(8));
    assertFalse("block 3", d.stayOnTcp(9));
  }

  /**
   * Until the writer has started UCX, every pipeline stays on TCP, a block
   * the streamer replaced (its pipeline could not be set up) too.
   */
  @Test(timeout = 30_000)
  public void testEveryPipelineOnTcpUntilTheWriterStarts() {
    DeferredStart d = deferred(Long.MAX_VALUE);
    packets(d, 0);
    assertTrue(d.stayOnTcp(1));
    assertTrue("a replacement block", d.stayOnTcp(2));
    assertTrue(d.stayOnTcp(2));
  }
}
