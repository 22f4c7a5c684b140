package org.hdfsrdma.hadoop.compat;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.hdfsrdma.hadoop.compat.proto.HdfsRdmaProtos.CommitEntryProto;
import org.hdfsrdma.hadoop.protocol.CommitEntry;
import org.hdfsrdma.hadoop.protocol.WireLimits;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.UnknownFieldSet;

/**
 * The DataNodes' commits in Hadoop's reply to the {@code writeBlock} op:
 * one {@code CommitEntryProto} ({@code hdfs_rdma.proto}) per
 * {@link CommitEntry}, each length-delimited, in the repeated field
 * {@link #NUMBER} of {@code BlockOpResponseProto}; the replying
 * DataNode's entry first, then those of the DataNodes behind it in
 * pipeline order.
 *
 * <p>A stock Hadoop peer ignores the field as it ignores the request
 * ({@link WriteRequestField}), and drops it. Nothing read from the network
 * is trusted: a list of more than {@link WireLimits#MAX_COMMIT_ENTRIES},
 * or with an entry that does not parse, lacks a value or holds one out of
 * range, is an {@link IOException}; a field of {@code CommitEntryProto}
 * this release does not know (a newer peer's) is ignored.
 */
public final class CommitListField {

  /**
   * Field number of the commit list in {@code BlockOpResponseProto}; high
   * for the reason {@link WriteRequestField#NUMBER} is. New with the
   * protobuf payload: earlier releases put hand-encoded entries in field
   * 5152, which this one neither writes nor reads, and they ignore this
   * field, so a pipeline mixing releases stays on TCP.
   */
  public static final int NUMBER = 5154;

  private CommitListField() {
  }

  /**
   * Puts {@code entries}, in order, into field {@link #NUMBER} of
   * {@code b}, replacing any it had. An empty list removes the field (no
   * commit).
   *
   * @return {@code b}
   * @throws IllegalArgumentException for more than
   *     {@link WireLimits#MAX_COMMIT_ENTRIES} entries
   */
  public static BlockOpResponseProto.Builder withCommits(
      BlockOpResponseProto.Builder b, List<CommitEntry> entries) {
    if (entries.size() > WireLimits.MAX_COMMIT_ENTRIES) {
      throw new IllegalArgumentException(entries.size()
          + " commit entries, more than " + WireLimits.MAX_COMMIT_ENTRIES);
    }
    UnknownFieldSet.Builder fields =
        UnknownFields.without(b.getUnknownFields(), NUMBER);
    if (!entries.isEmpty()) {
      UnknownFieldSet.Field.Builder f = UnknownFieldSet.Field.newBuilder();
      for (CommitEntry e : entries) {
        f.addLengthDelimited(encode(e));
      }
      fields.addField(NUMBER, f.build());
    }
    return b.setUnknownFields(fields.build());
  }

  private static ByteString encode(CommitEntry e) {
    return toProto(e).toByteString();
  }

  /** {@code e} as the message a commit or a read answer carries. */
  static CommitEntryProto toProto(CommitEntry e) {
    CommitEntryProto.Builder p = CommitEntryProto.newBuilder()
        .setXferAddr(e.getXferAddr())
        .setWorkerAddress(ByteString.copyFrom(e.getWorkerAddress()))
        .setUid(e.getUid())
        .setHostId(ByteString.copyFrom(e.getHostId()));
    if (e.getIngestBytesPerSecond() > 0) {
      p.setIngestBytesPerSecond(e.getIngestBytesPerSecond());
    }
    if (e.getSharedMemoryProfile() != null) {
      p.setSharedMemoryProfile(e.getSharedMemoryProfile());
    }
    if (e.takesSocketDescriptors()) {
      p.setSocketDescriptors(true);
    }
    return p.build();
  }

  /**
   * @return the commit entries of {@code resp} in order, or an empty list
   *     when it has none
   * @throws IOException when the field is not length-delimited, has too
   *     many entries or a malformed one (see the class comment)
   */
  public static List<CommitEntry> commitsOf(BlockOpResponseProto resp)
      throws IOException {
    List<ByteString> values = UnknownFields.lengthDelimited(
        resp.getUnknownFields(), NUMBER, "hdfs-rdma commit list");
    if (values.size() > WireLimits.MAX_COMMIT_ENTRIES) {
      throw new IOException(values.size() + " hdfs-rdma commit entries,"
          + " more than " + WireLimits.MAX_COMMIT_ENTRIES);
    }
    List<CommitEntry> entries = new ArrayList<>(values.size());
    for (ByteString v : values) {
      entries.add(decode(v));
    }
    return Collections.unmodifiableList(entries);
  }

  private static CommitEntry decode(ByteString payload) throws IOException {
    CommitEntryProto p;
    try {
      p = CommitEntryProto.parseFrom(payload);
    } catch (InvalidProtocolBufferException e) {
      throw new IOException("hdfs-rdma commit entry does not parse: "
          + e.getMessage(), e);
    }
    return fromProto(p);
  }

  /**
   * The entry a peer sent in a commit or a read answer.
   *
   * @throws IOException when it lacks a value or holds one out of range
   */
  static CommitEntry fromProto(CommitEntryProto p) throws IOException {
    String missing = !p.hasXferAddr() ? "xfer_addr"
        : !p.hasWorkerAddress() ? "worker_address"
        : !p.hasUid() ? "uid"
        : !p.hasHostId() ? "host_id" : null;
    if (missing != null) {
      throw new IOException("hdfs-rdma commit entry without " + missing);
    }
    // the address's bytes: CommitEntry decodes them strictly
    CommitEntry e = CommitEntry.received(p.getXferAddrBytes().toByteArray(),
        p.getWorkerAddress().toByteArray(), p.getUid(),
        p.getHostId().toByteArray(), p.getIngestBytesPerSecond(),
        p.hasSharedMemoryProfile()
            ? p.getSharedMemoryProfileBytes().toByteArray() : null);
    return p.getSocketDescriptors() ? e.takingSocketDescriptors() : e;
  }
}
