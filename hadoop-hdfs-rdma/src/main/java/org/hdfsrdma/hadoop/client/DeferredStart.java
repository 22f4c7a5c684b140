package org.hdfsrdma.hadoop.client;

import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

import org.apache.hadoop.classification.InterfaceAudience;
import org.hdfsrdma.hadoop.metrics.PipelineOutcome;
import org.hdfsrdma.ucx.DaemonThreads;

/**
 * UCX's start for a JVM's first output stream, put off past the stream's
 * first block ({@code dfs.client.rdma.defer-start}): a JVM that writes one
 * block (a small put, a short task) never pays for starting UCX, and one
 * that writes more starts it while its first block still goes over TCP.
 *
 * <p>Two threads share it, and each numbers the stream's blocks its own
 * way so that both agree which block is the first on UCX:
 * <ul>
 * <li>the writer (the thread in {@code DFSOutputStream.write}), before each
 * packet with data: a block begins at the stream's first packet and at a
 * packet at offset 0 after one past it (a packet sent again after an
 * hflush starts where it started, so it begins nothing). Once the first
 * block passes {@code backgroundFrom} bytes, UCX starts on a thread of its
 * own; at the first packet of the second block the writer takes the
 * started runtime (waiting for it if need be), and that block's packets
 * and all later ones are built in registered memory;</li>
 * <li>the streamer, at each pipeline set-up: a pipeline for a block id it
 * has not seen begins a block; a block numbered before the writer's first
 * block on UCX stays on TCP, through its recoveries too, since its packets
 * are on the heap.</li>
 * </ul>
 * Should the two counts ever differ (the streamer abandons a block whose
 * pipeline could not be set up and asks for another), the streamer can
 * only be ahead: it offers UCX for a block of heap packets, and the first
 * such packet moves that block to TCP as an exhausted pool does.
 */
@InterfaceAudience.Private
public final class DeferredStart {

  /** The name of the thread that starts UCX in the background. */
  public static final String THREAD_NAME = "hdfs-rdma-deferred-start";

  /** No block yet: the streamer's and the writer's first block are 1. */
  private static final int NONE = Integer.MAX_VALUE;

  private final long backgroundFrom;
  private final Supplier<UcxClients.Start> starter;

  // The writer's.
  private int writerBlock;
  private long lastOffset = -1;
  private CompletableFuture<UcxClients.Start> starting;
  private boolean settled;

  /** The first block on UCX (the writer's number), or {@link #NONE}. */
  private volatile int firstUcxBlock = NONE;

  // The streamer's.
  private int pipelineBlock;
  private long lastBlockId;

  /**
   * @param backgroundFrom bytes into the first block from which UCX starts
   *     in the background
   * @param starter starts UCX (on whichever thread calls it); never throws
   */
  public DeferredStart(long backgroundFrom,
      Supplier<UcxClients.Start> starter) {
    this.backgroundFrom = backgroundFrom;
    this.starter = starter;
  }

  /**
   * The writer's hook before a packet with data at {@code offsetInBlock}:
   * the start to open the stream's UCX side with, once, at the second
   * block's first packet (its runtime null when UCX could not start);
   * null otherwise.
   */
  public UcxClients.Start beforePacket(long offsetInBlock) {
    if (settled) {
      return null;
    }
    boolean begins = lastOffset < 0 || (offsetInBlock == 0 && lastOffset > 0);
    lastOffset = offsetInBlock;
    if (begins) {
      writerBlock++;
    }
    if (writerBlock == 1) {
      if (starting == null && offsetInBlock >= backgroundFrom) {
        starting = startInBackground();
      }
      return null;
    }
    settled = true;
    UcxClients.Start start = starting != null ? starting.join()
        : starter.get();
    firstUcxBlock = writerBlock;
    return start;
  }

  /** Whether the writer has taken the stream's start (or its failure). */
  public boolean settled() {
    return settled;
  }

  /**
   * The streamer's hook at a pipeline set-up for {@code blockId}: whether
   * the block must stay on TCP (it began before the writer's first block
   * on UCX).
   */
  public boolean stayOnTcp(long blockId) {
    if (pipelineBlock == 0 || blockId != lastBlockId) {
      pipelineBlock++;
      lastBlockId = blockId;
    }
    return pipelineBlock < firstUcxBlock;
  }

  private CompletableFuture<UcxClients.Start> startInBackground() {
    CompletableFuture<UcxClients.Start> f =
        new CompletableFuture<UcxClients.Start>();
    try {
      DaemonThreads.newThread(() -> {
        try {
          f.complete(starter.get());
        } catch (Throwable e) {
          // The starter's contract says never; a write must not hang on it.
          f.complete(UcxClients.Start.tcp(
              PipelineOutcome.TCP_UCX_UNAVAILABLE));
        }
      }, THREAD_NAME).start();
    } catch (RuntimeException | Error e) {
      // No thread to be had: the writer starts UCX itself, when needed.
      return null;
    }
    return f;
  }

  @Override
  public String toString() {
    return "deferred start (writer at block " + writerBlock
        + (settled ? ", settled" : starting != null ? ", starting" : "")
        + ")";
  }
}
