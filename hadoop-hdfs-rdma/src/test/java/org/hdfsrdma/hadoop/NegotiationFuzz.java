package org.hdfsrdma.hadoop;

import java.io.BufferedInputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.Sender;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.server.datanode.CachingStrategy;
import org.apache.hadoop.security.token.Token;
import org.hdfsrdma.hadoop.compat.CommitListField;
import org.hdfsrdma.hadoop.compat.OpPeek;
import org.hdfsrdma.hadoop.compat.ReadAnswerField;
import org.hdfsrdma.hadoop.compat.ReadOfferField;
import org.hdfsrdma.hadoop.compat.WriteRequestField;
import org.hdfsrdma.hadoop.compat.proto.HdfsRdmaProtos.CommitEntryProto;
import org.hdfsrdma.hadoop.compat.proto.HdfsRdmaProtos.ReadOfferProto;
import org.hdfsrdma.hadoop.compat.proto.HdfsRdmaProtos.WriteRequestProto;
import org.hdfsrdma.hadoop.protocol.CommitEntry;
import org.hdfsrdma.hadoop.protocol.ReadOffer;
import org.hdfsrdma.hadoop.protocol.WireLimits;
import org.hdfsrdma.hadoop.protocol.WireSamples;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.UnknownFieldSet;
import com.google.protobuf.WireFormat;

/**
 * Hostile UCX offers and commit lists, generated: what a writer can put in
 * its writeBlock op, a reader in its readBlock op and a mirror in its
 * reply, in every shape but a valid one, and drivers that run them through
 * the real readers.
 */
final class NegotiationFuzz {

  private NegotiationFuzz() {
  }

  /**
   * Protobuf bytes for field {@link WriteRequestField#NUMBER} that are not
   * one valid offer: random payloads, flipped bits of a real one, other
   * wire types, the previous release's field, values missing or out of
   * range, the field twice (a bad one last), a length running past the op,
   * a packet size no DataNode takes.
   */
  static byte[] hostileOffer(Random r) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    CodedOutputStream c = CodedOutputStream.newInstance(bytes);
    int f = WriteRequestField.NUMBER;
    byte[] nonce = new byte[16];
    r.nextBytes(nonce);
    WriteRequestProto valid = WriteRequestProto.newBuilder()
        .setNonce(ByteString.copyFrom(nonce)).setPacketSize(65536)
        .setFeeders(0).build();
    int kind = r.nextInt(11);
    if (kind < BROKEN_FIELD_KINDS) {
      brokenField(r, c, f, valid.toByteString(), kind);
      c.flush();
      return bytes.toByteArray();
    }
    switch (kind) {
      case 6:
        c.writeBytes(5151, ByteString.copyFrom(
            WireSamples.previousReleaseRequest(2, nonce, 65536, 0)));
        break;
      case 7:
        c.writeBytes(f, valid.toBuilder().setPacketSize(
            r.nextBoolean() ? -r.nextInt(Integer.MAX_VALUE) : 0)
            .build().toByteString());
        break;
      case 8:
        c.writeFixed32(f, r.nextInt());
        break;
      case 9:
        WriteRequestProto.Builder bad = valid.toBuilder();
        switch (r.nextInt(4)) {
          case 0:
            bad.clear();
            break;
          case 1:
            bad.setFeeders(16 + r.nextInt(Integer.MAX_VALUE - 16));
            break;
          case 2:
            bad.setNonce(ByteString.copyFrom(new byte[r.nextInt(16)]));
            break;
          default:
            bad.setNonce(ByteString.copyFrom(new byte[17 + r.nextInt(100)]));
        }
        c.writeBytes(f, bad.build().toByteString());
        break;
      default:
        // more than a DataNode takes
        c.writeBytes(f, valid.toBuilder().setPacketSize(16 * 1024 * 1024)
            .build().toByteString());
    }
    c.flush();
    return bytes.toByteArray();
  }

  /** The kinds of {@link #brokenField}, numbered from 0. */
  private static final int BROKEN_FIELD_KINDS = 6;

  /**
   * Writes field {@code f} broken as any length-delimited field can be
   * ({@code kind} below {@link #BROKEN_FIELD_KINDS}): random bytes, a
   * flipped bit of {@code valid} (which may leave it valid), a varint, a
   * fixed64, {@code valid} then a second value, a length running past the
   * op.
   */
  private static void brokenField(Random r, CodedOutputStream c, int f,
      ByteString valid, int kind) throws IOException {
    switch (kind) {
      case 0:
        byte[] junk = new byte[r.nextInt(65)];
        r.nextBytes(junk);
        c.writeBytes(f, ByteString.copyFrom(junk));
        break;
      case 1:
        byte[] flipped = valid.toByteArray();
        int bit = r.nextInt(flipped.length * 8);
        flipped[bit / 8] ^= (byte) (1 << (bit % 8));
        c.writeBytes(f, ByteString.copyFrom(flipped));
        break;
      case 2:
        c.writeUInt64(f, r.nextLong());
        break;
      case 3:
        c.writeFixed64(f, r.nextLong());
        break;
      case 4:
        c.writeBytes(f, valid);
        c.writeBytes(f, ByteString.copyFrom(new byte[r.nextInt(30)]));
        break;
      default:
        c.writeTag(f, WireFormat.WIRETYPE_LENGTH_DELIMITED);
        c.writeRawVarint32(1000 + r.nextInt(100_000));
    }
  }

  /**
   * A whole writeBlock op (as Sender writes it) for a new block with
   * {@code extra} appended to its protobuf.
   */
  static byte[] writeBlockOp(String blockPoolId, long blockId, byte[] extra)
      throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ReleaseApi.writeBlock(new Sender(new DataOutputStream(out)),
        new ExtendedBlock(blockPoolId, blockId, 0, 1001L),
        StorageType.DEFAULT, new Token<BlockTokenIdentifier>(), "fuzz",
        new DatanodeInfo[0], new StorageType[0], null, 1, 1001L, null);
    return withExtra(out.toByteArray(), extra);
  }

  /**
   * A whole readBlock op (as Sender writes it) of {@code length} bytes at
   * {@code offset} of {@code block}, with {@code extra} appended to its
   * protobuf.
   */
  static byte[] readBlockOp(ExtendedBlock block,
      Token<BlockTokenIdentifier> token, long offset, long length,
      byte[] extra) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    new Sender(new DataOutputStream(out)).readBlock(block, token, "fuzz",
        offset, length, true, CachingStrategy.newDefaultStrategy());
    return withExtra(out.toByteArray(), extra);
  }

  /** An op frame (version, op code, proto) with bytes added to its proto. */
  private static byte[] withExtra(byte[] frame, byte[] extra)
      throws IOException {
    CodedInputStream in = CodedInputStream.newInstance(frame, 3,
        frame.length - 3);
    int protoLength = in.readRawVarint32();
    int protoStart = 3 + in.getTotalBytesRead();
    ByteArrayOutputStream op = new ByteArrayOutputStream();
    CodedOutputStream c = CodedOutputStream.newInstance(op);
    c.writeRawBytes(frame, 0, 3);
    c.writeRawVarint32(protoLength + extra.length);
    c.writeRawBytes(frame, protoStart, protoLength);
    c.writeRawBytes(extra);
    c.flush();
    return op.toByteArray();
  }

  /**
   * Protobuf bytes for field {@link ReadOfferField#NUMBER} of a readBlock
   * op that are, mostly, not one valid offer: random payloads, flipped
   * bits of a valid one (which may leave it valid: any client key is), other
   * wire types, the answer's field, a value missing or out of range, the
   * field twice, a length running past the op.
   */
  static byte[] hostileReadOffer(Random r) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    CodedOutputStream c = CodedOutputStream.newInstance(bytes);
    int f = ReadOfferField.NUMBER;
    byte[] key = new byte[ReadOffer.CLIENT_KEY_LENGTH];
    r.nextBytes(key);
    ReadOfferProto valid = ReadOfferProto.newBuilder()
        .setClientKey(ByteString.copyFrom(key))
        .setPacketBytes(ReadOffer.MAX_PACKET_BYTES)
        .setWindow(ReadOffer.MIN_WINDOW + r.nextInt(3)).build();
    int kind = r.nextInt(10);
    if (kind < BROKEN_FIELD_KINDS) {
      brokenField(r, c, f, valid.toByteString(), kind);
      c.flush();
      return bytes.toByteArray();
    }
    switch (kind) {
      case 6:
        // an answer where the offer goes
        c.writeBytes(ReadAnswerField.NUMBER, valid.toByteString());
        break;
      case 7:
        int packetBytes = r.nextBoolean()
            ? ReadOffer.MAX_PACKET_BYTES + 1 + r.nextInt(Integer.MAX_VALUE
                - ReadOffer.MAX_PACKET_BYTES - 1)
            : r.nextInt(ReadOffer.MIN_PACKET_BYTES);
        c.writeBytes(f, valid.toBuilder().setPacketBytes(
            r.nextInt(4) == 0 ? -1 - r.nextInt(1000) : packetBytes)
            .build().toByteString());
        break;
      case 8:
        c.writeBytes(f, valid.toBuilder().setWindow(r.nextBoolean()
            ? r.nextInt(ReadOffer.MIN_WINDOW)
            : ReadOffer.MAX_WINDOW + 1 + r.nextInt(1 << 20))
            .build().toByteString());
        break;
      default:
        ReadOfferProto.Builder bad = valid.toBuilder();
        switch (r.nextInt(4)) {
          case 0:
            bad.clear();
            break;
          case 1:
            bad.clearWindow();
            break;
          case 2:
            bad.setClientKey(ByteString.copyFrom(new byte[r.nextInt(
                ReadOffer.CLIENT_KEY_LENGTH)]));
            break;
          default:
            bad.setClientKey(ByteString.copyFrom(new byte[
                ReadOffer.CLIENT_KEY_LENGTH + 1 + r.nextInt(100)]));
        }
        c.writeBytes(f, bad.build().toByteString());
    }
    c.flush();
    return bytes.toByteArray();
  }

  /**
   * Runs {@code n} generated ops (hostile offers, and flipped bits of whole
   * ops) through {@link OpPeek#peekWriteRequest} as DataXceiver
   * calls it: it must return null or a request (whose constructor checked
   * every value), throw nothing else than IOException, and leave the
   * stream where it was.
   *
   * @return the number of ops run
   */
  static int peekGeneratedOffers(Random r, int n) throws IOException {
    for (int i = 0; i < n; i++) {
      byte[] op = writeBlockOp("BP-fuzz", i, hostileOffer(r));
      if (i % 2 == 1) {
        int bit = 24 + r.nextInt((op.length - 3) * 8);
        op[bit / 8] ^= (byte) (1 << (bit % 8));
      }
      byte[] after = Arrays.copyOfRange(op, 3, op.length);
      DataInputStream in = new DataInputStream(new BufferedInputStream(
          new ByteArrayInputStream(after)));
      try {
        OpPeek.peekWriteRequest(in);
      } catch (IOException e) {
        // a read failure: Hadoop's own parse would fail the same way
      }
      byte[] left = new byte[after.length];
      in.readFully(left);
      if (!Arrays.equals(after, left)) {
        throw new AssertionError("peek moved the op stream");
      }
    }
    return n;
  }

  /**
   * A successful reply of a mirror whose commit list is anything but the
   * mirror's own valid entry for {@code mirrorXferAddr}.
   */
  static BlockOpResponseProto hostileCommits(Random r, String mirrorXferAddr)
      throws IOException {
    BlockOpResponseProto.Builder b = BlockOpResponseProto.newBuilder()
        .setStatus(Status.SUCCESS).setFirstBadLink("");
    byte[] host = new byte[CommitEntry.HOST_ID_LENGTH];
    byte[] worker = new byte[1 + r.nextInt(300)];
    r.nextBytes(worker);
    CommitEntry other = new CommitEntry("10.0.0." + r.nextInt(255) + ":"
        + (1 + r.nextInt(65535)), worker, 0, host);
    CommitEntry own = new CommitEntry(mirrorXferAddr, worker, 0, host);
    CommitEntryProto.Builder ownProto = CommitEntryProto.newBuilder()
        .setXferAddr(mirrorXferAddr)
        .setWorkerAddress(ByteString.copyFrom(worker)).setUid(0)
        .setHostId(ByteString.copyFrom(host));
    UnknownFieldSet.Field.Builder field = UnknownFieldSet.Field.newBuilder();
    int number = CommitListField.NUMBER;
    switch (r.nextInt(8)) {
      case 0:
        return b.build(); // committed nothing
      case 1:
        return CommitListField.withCommits(b, Arrays.asList(other)).build();
      case 2:
        return CommitListField.withCommits(b, Arrays.asList(own, other))
            .build();
      case 3:
        byte[] junk = new byte[r.nextInt(200)];
        r.nextBytes(junk);
        field.addLengthDelimited(ByteString.copyFrom(junk));
        break;
      case 4:
        number = 5152; // the previous release's field
        field.addLengthDelimited(ByteString.copyFrom(
            WireSamples.previousReleaseEntry(mirrorXferAddr, worker, 0,
                host)));
        break;
      case 5:
        switch (r.nextInt(4)) {
          case 0:
            ownProto.clearXferAddr();
            break;
          case 1:
            ownProto.clearWorkerAddress();
            break;
          case 2:
            ownProto.clearUid();
            break;
          default:
            ownProto.clearHostId();
        }
        field.addLengthDelimited(ownProto.build().toByteString());
        break;
      case 6:
        field.addVarint(r.nextLong());
        break;
      default:
        ByteString payload;
        switch (r.nextInt(4)) {
          case 0:
            payload = ownProto.setHostId(ByteString.copyFrom(
                new byte[r.nextInt(16)])).build().toByteString();
            break;
          case 1:
            payload = ownProto.setWorkerAddress(ByteString.copyFrom(new byte[
                WireLimits.MAX_WORKER_ADDRESS_BYTES + 1 + r.nextInt(8)]))
                .build().toByteString();
            break;
          case 2:
            payload = ownProto.setIngestBytesPerSecond(-1 - r.nextInt(1000))
                .build().toByteString();
            break;
          default:
            // cut inside its last field, the host id
            ByteString whole = ownProto.build().toByteString();
            payload = whole.substring(0, whole.size() - 1 - r.nextInt(16));
        }
        field.addLengthDelimited(payload);
    }
    return b.setUnknownFields(UnknownFieldSet.newBuilder()
        .addField(number, field.build()).build()).build();
  }

  /**
   * Runs {@code n} generated replies (hostile lists and random field
   * contents) through {@link CommitListField#commitsOf}: a list of well-formed
   * entries or an IOException, nothing else.
   *
   * @return the number of replies parsed
   */
  static int parseGeneratedCommits(Random r, int n) throws IOException {
    for (int i = 0; i < n; i++) {
      BlockOpResponseProto reply = hostileCommits(r, "127.0.0.1:1");
      if (i % 2 == 1) {
        byte[] bytes = reply.toByteArray();
        int bit = r.nextInt(bytes.length * 8);
        bytes[bit / 8] ^= (byte) (1 << (bit % 8));
        try {
          reply = BlockOpResponseProto.parseFrom(bytes);
        } catch (IOException e) {
          continue; // protobuf itself refused it
        }
      }
      try {
        List<CommitEntry> entries = CommitListField.commitsOf(reply);
        if (entries.size() > WireLimits.MAX_COMMIT_ENTRIES) {
          throw new AssertionError(entries.size() + " entries");
        }
      } catch (IOException refused) {
        // as it should
      }
    }
    return n;
  }
}
