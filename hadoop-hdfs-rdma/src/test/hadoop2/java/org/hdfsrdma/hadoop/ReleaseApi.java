package org.hdfsrdma.hadoop;

import java.io.IOException;

import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.BlockConstructionStage;
import org.apache.hadoop.hdfs.protocol.datatransfer.Sender;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.server.datanode.CachingStrategy;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.util.DataChecksum;

/**
 * What hdfs-rdma's tests call that Hadoop 2 and Hadoop 3 spell
 * differently, in Hadoop 2's spelling: one class per flavour, same name and
 * signatures, in {@code src/test/hadoop2/java} and
 * {@code src/test/hadoop3/java}, as the product's per-release classes are
 * in {@code src/hadoop2/java} and {@code src/hadoop3/java}. The tests
 * themselves are written once.
 */
public final class ReleaseApi {

  /** The NameNode's key for weighing DataNodes' load in placement. */
  public static final String CONSIDER_LOAD_KEY =
      DFSConfigKeys.DFS_NAMENODE_REPLICATION_CONSIDERLOAD_KEY;

  private ReleaseApi() {
  }

  /** Blocks the NameNode counts as short of replicas. */
  public static long underReplicatedBlocks(DistributedFileSystem fs)
      throws IOException {
    return fs.getUnderReplicatedBlocksCount();
  }

  /**
   * Writes a writeBlock op that creates {@code block} through
   * {@code targets} (CRC32C per 512 bytes, the default caching, no lazy
   * persist, the client's block not pinned), as a client setting up a
   * pipeline does; {@code source} and {@code targetPinnings} may be null.
   */
  public static void writeBlock(Sender sender, ExtendedBlock block,
      StorageType storageType, Token<BlockTokenIdentifier> token,
      String client, DatanodeInfo[] targets, StorageType[] targetStorage,
      DatanodeInfo source, int pipelineSize, long generationStamp,
      boolean[] targetPinnings) throws IOException {
    sender.writeBlock(block, storageType, token, client, targets,
        targetStorage, source, BlockConstructionStage.PIPELINE_SETUP_CREATE,
        pipelineSize, 0, 0, generationStamp,
        DataChecksum.newDataChecksum(DataChecksum.Type.CRC32C, 512),
        CachingStrategy.newDefaultStrategy(), false, false,
        targetPinnings);
  }
}
