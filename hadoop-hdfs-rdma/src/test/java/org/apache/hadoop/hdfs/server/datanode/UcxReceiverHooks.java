package org.apache.hadoop.hdfs.server.datanode;

import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.SelectableChannel;

import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketReceiver;
import org.apache.hadoop.util.DataChecksum;

/**
 * The package-private hooks of the DataNode's per-release layer, as
 * DataXceiver and BlockReceiver call them, for the receive path's tests in
 * {@code org.hdfsrdma.hadoop.datanode}.
 */
public final class UcxReceiverHooks {

  private UcxReceiverHooks() {
  }

  /** See {@link UcxDataNodeWrite#watchable}. */
  public static SelectableChannel watchable(ReadableByteChannel channel) {
    return UcxDataNodeWrite.watchable(channel);
  }

  /** See {@link UcxPacketReceiver#verifyChunkedSums}. */
  public static void verifyChunkedSums(PacketReceiver receiver,
      DataChecksum checksum, ByteBuffer data, ByteBuffer sums,
      String fileName) throws ChecksumException {
    UcxPacketReceiver.verifyChunkedSums(receiver, checksum, data, sums,
        fileName);
  }

  /** See {@link UcxPacketReceiver#written}. */
  public static void written(PacketReceiver receiver) {
    UcxPacketReceiver.written(receiver);
  }

  /** See {@link UcxPacketReceiver#downstreamAcked}. */
  public static void downstreamAcked(PacketReceiver receiver, long seqno) {
    UcxPacketReceiver.downstreamAcked(receiver, seqno);
  }
}
