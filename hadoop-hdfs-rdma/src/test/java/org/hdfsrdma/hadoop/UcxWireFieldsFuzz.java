package org.hdfsrdma.hadoop;

import java.io.BufferedInputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.BlockConstructionStage;
import org.apache.hadoop.hdfs.protocol.datatransfer.Sender;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.server.datanode.CachingStrategy;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.hadoop.protocol.UcxWireFields.CommitEntry;
import org.hdfsrdma.hadoop.protocol.UcxWireFields.WriteRequest;
import org.hdfsrdma.hadoop.protocol.UcxWireFields;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.UnknownFieldSet;
import com.google.protobuf.WireFormat;

/**
 * Hostile UCX offers and commit lists, generated: what a writer can put in
 * its writeBlock op and a mirror in its reply, in every shape but a valid
 * one, and drivers that run them through the real readers.
 */
final class UcxWireFieldsFuzz {

  private UcxWireFieldsFuzz() {
  }

  /**
   * Protobuf bytes for field {@link UcxWireFields#WRITE_REQUEST_FIELD}
   * that are not one valid offer: random payloads, flipped bits of a real
   * one, other wire types, other versions, out-of-range values, the field
   * twice, a length running past the op.
   */
  static byte[] hostileOffer(Random r) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    CodedOutputStream c = CodedOutputStream.newInstance(bytes);
    int f = UcxWireFields.WRITE_REQUEST_FIELD;
    byte[] valid = WriteRequest.create(65536, 0).encode();
    switch (r.nextInt(10)) {
      case 0:
        byte[] junk = new byte[r.nextInt(65)];
        r.nextBytes(junk);
        c.writeBytes(f, ByteString.copyFrom(junk));
        break;
      case 1:
        byte[] flipped = valid.clone();
        int bit = r.nextInt(32); // version, flags, packet size
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
        c.writeFixed32(f, r.nextInt());
        break;
      case 5:
        byte[] v1 = valid.clone();
        v1[0] = 0;
        v1[1] = 1;
        c.writeBytes(f, ByteString.copyFrom(v1));
        break;
      case 6:
        ByteBuffer b = ByteBuffer.wrap(valid.clone());
        b.putInt(4, r.nextBoolean() ? -r.nextInt(Integer.MAX_VALUE) : 0);
        c.writeBytes(f, ByteString.copyFrom(b.array()));
        break;
      case 7:
        c.writeBytes(f, ByteString.copyFrom(valid));
        c.writeBytes(f, ByteString.copyFrom(new byte[r.nextInt(30)]));
        break;
      case 8:
        c.writeTag(f, WireFormat.WIRETYPE_LENGTH_DELIMITED);
        c.writeRawVarint32(1000 + r.nextInt(100_000));
        break;
      default:
        ByteBuffer big = ByteBuffer.wrap(valid.clone());
        big.putInt(4, 16 * 1024 * 1024); // more than a DataNode takes
        c.writeBytes(f, ByteString.copyFrom(big.array()));
    }
    c.flush();
    return bytes.toByteArray();
  }

  /**
   * A whole writeBlock op (as Sender writes it) for a new block with
   * {@code extra} appended to its protobuf.
   */
  static byte[] writeBlockOp(String blockPoolId, long blockId, byte[] extra)
      throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    new Sender(new DataOutputStream(out)).writeBlock(
        new ExtendedBlock(blockPoolId, blockId, 0, 1001L),
        StorageType.DEFAULT, new Token<BlockTokenIdentifier>(), "fuzz",
        new DatanodeInfo[0], new StorageType[0], null,
        BlockConstructionStage.PIPELINE_SETUP_CREATE, 1, 0, 0, 1001L,
        DataChecksum.newDataChecksum(DataChecksum.Type.CRC32C, 512),
        CachingStrategy.newDefaultStrategy(), false, false, null);
    byte[] frame = out.toByteArray();
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
   * Runs {@code n} generated ops (hostile offers, and flipped bits of whole
   * ops) through {@link UcxWireFields#peekWriteRequest} as DataXceiver
   * calls it: it must return null or a valid request, throw nothing else
   * than IOException, and leave the stream where it was.
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
        WriteRequest request = UcxWireFields.peekWriteRequest(in);
        if (request != null && request.getVersion()
            != WriteRequest.VERSION) {
          throw new AssertionError("accepted " + request);
        }
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
    UnknownFieldSet.Field.Builder field = UnknownFieldSet.Field.newBuilder();
    switch (r.nextInt(8)) {
      case 0:
        return b.build(); // committed nothing
      case 1:
        return UcxWireFields.withCommits(b, Arrays.asList(other)).build();
      case 2:
        return UcxWireFields.withCommits(b, Arrays.asList(own, other))
            .build();
      case 3:
        byte[] junk = new byte[r.nextInt(200)];
        r.nextBytes(junk);
        field.addLengthDelimited(ByteString.copyFrom(junk));
        break;
      case 4:
        byte[] v1 = own.encode();
        v1[1] = 1;
        field.addLengthDelimited(ByteString.copyFrom(v1));
        break;
      case 5:
        byte[] flagged = own.encode();
        flagged[3] = (byte) (1 + r.nextInt(255));
        field.addLengthDelimited(ByteString.copyFrom(flagged));
        break;
      case 6:
        field.addVarint(r.nextLong());
        break;
      default:
        byte[] trailing = Arrays.copyOf(own.encode(), own.encode().length
            + 1 + r.nextInt(8));
        field.addLengthDelimited(ByteString.copyFrom(trailing));
    }
    return b.setUnknownFields(UnknownFieldSet.newBuilder()
        .addField(UcxWireFields.COMMIT_FIELD, field.build()).build()).build();
  }

  /**
   * Runs {@code n} generated replies (hostile lists and random field
   * contents) through {@link UcxWireFields#commitsOf}: a list of well-formed
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
        List<CommitEntry> entries = UcxWireFields.commitsOf(reply);
        if (entries.size() > UcxWireFields.MAX_COMMIT_ENTRIES) {
          throw new AssertionError(entries.size() + " entries");
        }
      } catch (IOException refused) {
        // as it should
      }
    }
    return n;
  }
}
