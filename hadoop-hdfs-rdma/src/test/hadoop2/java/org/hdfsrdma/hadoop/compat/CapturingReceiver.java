package org.hdfsrdma.hadoop.compat;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;

import java.io.DataInputStream;
import java.io.IOException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FsTracer;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.BlockConstructionStage;
import org.apache.hadoop.hdfs.protocol.datatransfer.Op;
import org.apache.hadoop.hdfs.protocol.datatransfer.Receiver;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.server.datanode.CachingStrategy;
import org.apache.hadoop.hdfs.shortcircuit.ShortCircuitShm.SlotId;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.util.DataChecksum;

/**
 * Hadoop's own Receiver, recording the writeBlock op it decodes
 * ({@link WriteBlockCall}) and refusing every other op: a stock
 * DataNode's decoding, in Hadoop 2's DataTransferProtocol (one class per
 * flavour, same name, in src/test/hadoop2/java and src/test/hadoop3/java).
 */
final class CapturingReceiver extends Receiver {
  private final WriteBlockCall call = new WriteBlockCall();

  CapturingReceiver(DataInputStream in) {
    super(FsTracer.get(new Configuration()));
    initialize(in);
  }

  DataInputStream in() {
    return in;
  }

  /** The last writeBlock decoded. */
  WriteBlockCall call() {
    return call;
  }

  /** Decodes one op, which must be a writeBlock. */
  void receiveOne() throws IOException {
    Op op = readOp();
    assertEquals(Op.WRITE_BLOCK, op);
    processOp(op);
  }

  @Override
  public void writeBlock(ExtendedBlock blk, StorageType st,
      Token<BlockTokenIdentifier> blockToken, String client,
      DatanodeInfo[] tgts, StorageType[] targetStorageTypes,
      DatanodeInfo source, BlockConstructionStage stg, int pipelineSize,
      long minBytesRcvd, long maxBytesRcvd, long latestGs,
      DataChecksum requestedChecksum, CachingStrategy cachingStrategy,
      boolean allowLazyPersist, boolean pinning, boolean[] targetPinnings) {
    assertNotNull(requestedChecksum);
    call.block = blk;
    call.storageType = st;
    call.token = blockToken;
    call.clientName = client;
    call.targets = tgts;
    call.stage = stg;
    call.latestGenerationStamp = latestGs;
  }

  @Override
  public void readBlock(ExtendedBlock blk,
      Token<BlockTokenIdentifier> blockToken, String client,
      long blockOffset, long length, boolean sendChecksum,
      CachingStrategy cachingStrategy) {
    throw new UnsupportedOperationException();
  }

  @Override
  public void transferBlock(ExtendedBlock blk,
      Token<BlockTokenIdentifier> blockToken, String client,
      DatanodeInfo[] tgts, StorageType[] targetStorageTypes) {
    throw new UnsupportedOperationException();
  }

  @Override
  public void requestShortCircuitFds(ExtendedBlock blk,
      Token<BlockTokenIdentifier> blockToken, SlotId slotId,
      int maxVersion, boolean supportsReceiptVerification) {
    throw new UnsupportedOperationException();
  }

  @Override
  public void releaseShortCircuitFds(SlotId slotId) {
    throw new UnsupportedOperationException();
  }

  @Override
  public void requestShortCircuitShm(String client) {
    throw new UnsupportedOperationException();
  }

  @Override
  public void replaceBlock(ExtendedBlock blk, StorageType st,
      Token<BlockTokenIdentifier> blockToken, String delHint,
      DatanodeInfo source) {
    throw new UnsupportedOperationException();
  }

  @Override
  public void copyBlock(ExtendedBlock blk,
      Token<BlockTokenIdentifier> blockToken) {
    throw new UnsupportedOperationException();
  }

  @Override
  public void blockChecksum(ExtendedBlock blk,
      Token<BlockTokenIdentifier> blockToken) {
    throw new UnsupportedOperationException();
  }
}
