import java.io.IOException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi;
import org.apache.hadoop.hdfs.server.protocol.DatanodeRegistration;
import org.apache.hadoop.hdfs.server.protocol.DatanodeStorage;
import org.apache.hadoop.hdfs.server.protocol.ReceivedDeletedBlockInfo;
import org.apache.hadoop.hdfs.server.protocol.StorageReceivedDeletedBlocks;

/**
 * Stock Hadoop, no UCX: does an append's close survive a late report of the
 * replica's previous generation stamp?
 *
 * <p>When a client appends to a 1-replica file right after closing it, the
 * DataNode's report of the finalized replica can reach the NameNode after
 * the append has bumped the block's generation stamp. The NameNode marks
 * the replica corrupt (generation stamp mismatch). Whether the DataNode's
 * next, good report clears that mark decides whether the append's close
 * ever completes. Each round here writes a 1-replica file, appends and
 * hflushes, delivers the old report through the NameNode's RPC as the
 * DataNode would, and closes. The soak's writers met this once in an hour
 * on Hadoop 2.9.2; this shows it is the NameNode's, on demand.
 *
 * <p>Usage: {@code StaleReportAfterAppend ROUNDS}; prints one line per
 * round and a summary line {@code closes ok=N failed=M}.
 */
public final class StaleReportAfterAppend {
  private StaleReportAfterAppend() {
  }

  public static void main(String[] args) throws Exception {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 6;
    Configuration conf = new HdfsConfiguration();
    // Give up on a close after about 3 s, not 12 s.
    conf.setInt("dfs.client.block.write.locateFollowingBlock.retries", 3);
    MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf)
        .numDataNodes(1).storagesPerDatanode(1).build();
    int ok = 0;
    int failed = 0;
    try {
      cluster.waitActive();
      DistributedFileSystem fs = cluster.getFileSystem();
      DataNode dn = cluster.getDataNodes().get(0);
      String storage;
      try (FsDatasetSpi.FsVolumeReferences volumes =
          dn.getFSDataset().getFsVolumeReferences()) {
        storage = volumes.get(0).getStorageID();
      }
      for (int i = 0; i < rounds; i++) {
        Path path = new Path("/stale-report-" + i);
        try (FSDataOutputStream out = fs.create(path, (short) 1)) {
          out.write(new byte[1000]);
        }
        ExtendedBlock before = DFSTestUtil.getFirstBlock(fs, path);
        FSDataOutputStream out = fs.append(path);
        out.write(new byte[1000]);
        out.hflush();
        // The finalized replica's report from before the append, late.
        DatanodeRegistration reg =
            dn.getDNRegistrationForBP(before.getBlockPoolId());
        cluster.getNameNodeRpc().blockReceivedAndDeleted(reg,
            before.getBlockPoolId(), new StorageReceivedDeletedBlocks[] {
                new StorageReceivedDeletedBlocks(
                    new DatanodeStorage(storage),
                    new ReceivedDeletedBlockInfo[] {
                        new ReceivedDeletedBlockInfo(before.getLocalBlock(),
                            ReceivedDeletedBlockInfo.BlockStatus
                                .RECEIVED_BLOCK, null)})});
        // Incremental reports are processed asynchronously.
        Thread.sleep(500);
        try {
          out.close();
          ok++;
          System.out.println("round " + i + ": close completed");
        } catch (IOException e) {
          failed++;
          System.out.println("round " + i + ": close failed: "
              + e.getMessage());
        }
      }
    } finally {
      cluster.shutdown();
    }
    System.out.println("closes ok=" + ok + " failed=" + failed);
  }
}
