package org.hdfsrdma.hadoop.compat;

import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.BlockConstructionStage;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;

/**
 * The writeBlock op Hadoop's own Receiver decoded, as
 * {@link CapturingReceiver} (one per Hadoop flavour) records it.
 */
final class WriteBlockCall {
  ExtendedBlock block;
  StorageType storageType;
  Token<BlockTokenIdentifier> token;
  String clientName;
  DatanodeInfo[] targets;
  BlockConstructionStage stage;
  long latestGenerationStamp;
}
