package org.hdfsrdma.hadoop.protocol;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import org.apache.hadoop.hdfs.protocol.datatransfer.DataTransferProtocol;
import org.apache.hadoop.hdfs.protocol.datatransfer.Op;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto;
import org.hdfsrdma.hadoop.client.ShapeChooser;
import org.hdfsrdma.hadoop.util.RateLimitedLog;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.UnknownFieldSet;
import com.google.protobuf.WireFormat;

/**
 * hdfs-rdma's per-pipeline negotiation, carried in protobuf unknown fields
 * of Hadoop's own data-transfer messages.
 *
 * <p>The client asks for a UCX pipeline with a {@link WriteRequest} in field
 * {@link #WRITE_REQUEST_FIELD} of the {@code writeBlock} op
 * ({@code OpWriteBlockProto}); every eligible DataNode relays it downstream.
 * Coming back up, each DataNode that commits puts its {@link CommitEntry}
 * first in the repeated field {@link #COMMIT_FIELD} of its
 * {@code BlockOpResponseProto}. Hadoop's messages are generated for the full
 * protobuf 2.5 runtime, which keeps unknown fields on parse and writes them
 * back on serialisation, so a stock Hadoop peer parses these messages and
 * silently ignores our fields; since nothing in stock Hadoop relays them, a
 * stock DataNode anywhere in the pipeline drops the request going down or
 * the commit list coming up, and the pipeline stays on TCP (DESIGN.md
 * section 1).
 *
 * <p>Both fields are length-delimited (wire type 2) and hold a small
 * big-endian payload of our own, documented on each value class, so the
 * payload can evolve by its version without touching protobuf schemas.
 * Nothing read from the network is trusted: every length is checked
 * before use, and a malformed payload is an {@link IOException}.
 *
 * <p>Also here: {@link #opOut} and {@link #peekWriteRequest}, the two
 * stream helpers the patched DataStreamer and DataXceiver use to write and
 * read the request without copying Hadoop's Sender and Receiver code, and
 * {@link #sessionId}, which binds a UCX session to the authenticated
 * socket (DESIGN.md section 2).
 */
public final class UcxWireFields {

  private static final Logger LOG =
      LoggerFactory.getLogger(UcxWireFields.class);

  /**
   * Field number of the {@link WriteRequest} in {@code OpWriteBlockProto}.
   * Deliberately high: the fields Hadoop has added to its data-transfer
   * messages, through Hadoop 3, all stay below about 20, so a number in the
   * thousands cannot collide with a field a newer Hadoop peer understands
   * (which would make it misparse our payload as its own field). It is also
   * outside protobuf's reserved range 19000-19999.
   */
  public static final int WRITE_REQUEST_FIELD = 5151;

  /**
   * Field number of the repeated {@link CommitEntry} in
   * {@code BlockOpResponseProto}; high for the same reason as
   * {@link #WRITE_REQUEST_FIELD}.
   */
  public static final int COMMIT_FIELD = 5152;

  /**
   * How far {@link #peekWriteRequest} may read ahead of a mark. A
   * {@code writeBlock} op is about 1 KB (a few hundred bytes per target);
   * 64 KiB leaves room for pipelines far longer than any real one.
   */
  public static final int PEEK_LIMIT = 64 * 1024;

  /**
   * Most commit entries {@link #commitsOf} accepts: Hadoop's default
   * {@code dfs.replication.max}, far above any real pipeline length.
   */
  public static final int MAX_COMMIT_ENTRIES = 512;

  /** Most bytes of any host or address string in a {@link CommitEntry}. */
  public static final int MAX_STRING_BYTES = 1024;

  /**
   * Most bytes of a UCX worker address in a {@link CommitEntry}: a few
   * hundred even with several RDMA devices.
   */
  public static final int MAX_WORKER_ADDRESS_BYTES = 4096;

  /** Domain label of {@link #sessionId}'s HMAC input. */
  private static final byte[] SESSION_LABEL =
      "hdfs-rdma/2".getBytes(StandardCharsets.US_ASCII);

  private static final String HMAC = "HmacSHA256";

  private static final SecureRandom RANDOM = new SecureRandom();

  /** Malformed offers come from the network: logged at a bounded rate. */
  private static final RateLimitedLog BAD_OFFERS =
      RateLimitedLog.of(LOG);

  private UcxWireFields() {
  }

  /**
   * The client's request for a UCX pipeline, in {@code OpWriteBlockProto}
   * field {@link #WRITE_REQUEST_FIELD}.
   *
   * <p>Payload, 24 bytes, big-endian:
   * <pre>
   *  0       2       4               8
   *  +-------+-------+---------------+
   *  |version| flags |  packetSize   |
   *  +-------+-------+---------------+  8
   *  |                               |
   *  |   nonce R (16 random bytes)   |
   *  |                               |
   *  +-------------------------------+ 24
   * </pre>
   * {@code packetSize} is the client's write packet size (positive); the
   * nonce feeds {@link UcxWireFields#sessionId}. The low four bits of
   * {@code flags} are the pipeline's feeders m ({@link #feeders}): 0, the
   * client feeds every DataNode (fan-out); otherwise it feeds DataNodes 1..m
   * and DataNode k feeds DataNode k+m from its own landing buffers (m = 1 is
   * a chain). Other flag bits are reserved, 0.
   */
  public static final class WriteRequest {

    /**
     * The payload version this code writes and the only one it reads.
     * Version 1 (listener-based releases) is refused, so a pipeline mixing
     * releases stays on TCP.
     */
    public static final int VERSION = 2;
    /** Length of the nonce R in bytes (128 bits). */
    public static final int NONCE_LENGTH = 16;
    /** Length of the version 2 payload in bytes. */
    public static final int ENCODED_LENGTH = 8 + NONCE_LENGTH;
    /** The flag bits that hold the pipeline's feeders. */
    public static final int FEEDERS_MASK = 0xf;

    private final int version;
    private final byte[] nonce;
    private final int packetSize;
    private final int flags;

    /**
     * A request of the current {@link #VERSION}.
     *
     * @param nonce 16 bytes, copied
     * @param packetSize the client's write packet size, positive
     * @param flags 0 to 65535
     */
    public WriteRequest(byte[] nonce, int packetSize, int flags) {
      this(VERSION, nonce, packetSize, flags);
    }

    /**
     * A request of any payload version (another version is only useful to
     * test what a peer of another release sees).
     *
     * @param version 1 to 65535
     * @param nonce 16 bytes, copied
     * @param packetSize the client's write packet size, positive
     * @param flags 0 to 65535
     */
    public WriteRequest(int version, byte[] nonce, int packetSize,
        int flags) {
      checkU16("version", version, 1);
      checkU16("flags", flags, 0);
      if (nonce == null || nonce.length != NONCE_LENGTH) {
        throw new IllegalArgumentException("nonce must be " + NONCE_LENGTH
            + " bytes, not "
            + (nonce == null ? "null" : nonce.length + " bytes"));
      }
      if (packetSize <= 0) {
        throw new IllegalArgumentException(
            "packetSize must be positive: " + packetSize);
      }
      this.version = version;
      this.nonce = nonce.clone();
      this.packetSize = packetSize;
      this.flags = flags;
    }

    /** A current-version request with a fresh random nonce. */
    public static WriteRequest create(int packetSize, int flags) {
      byte[] r = new byte[NONCE_LENGTH];
      RANDOM.nextBytes(r);
      return new WriteRequest(r, packetSize, flags);
    }

    public int getVersion() {
      return version;
    }

    /** @return a copy of the nonce R */
    public byte[] getNonce() {
      return nonce.clone();
    }

    public int getPacketSize() {
      return packetSize;
    }

    public int getFlags() {
      return flags;
    }

    /**
     * How many DataNodes the client feeds itself: 0 for all of them
     * (fan-out); m for the first m, each DataNode k then feeding k+m.
     */
    public int feeders() {
      return flags & FEEDERS_MASK;
    }

    /** @return the payload described on this class */
    public byte[] encode() {
      ByteBuffer b = ByteBuffer.allocate(ENCODED_LENGTH);
      b.putShort((short) version).putShort((short) flags).putInt(packetSize)
          .put(nonce);
      return b.array();
    }

    /**
     * Parses a payload written by {@link #encode}.
     *
     * @param payload the field's bytes, or null when the field is absent
     * @return the request, or null when {@code payload} is null
     * @throws IOException when the payload is truncated, of another
     *     version, of the wrong length or holds an invalid value
     */
    public static WriteRequest decode(byte[] payload) throws IOException {
      if (payload == null) {
        return null;
      }
      if (payload.length < 2) {
        throw new IOException("hdfs-rdma write request truncated: "
            + payload.length + " bytes, no version");
      }
      ByteBuffer b = ByteBuffer.wrap(payload);
      int v = b.getShort() & 0xffff;
      if (v != VERSION) {
        throw new IOException("hdfs-rdma write request of unsupported"
            + " version " + v + " (this side speaks version " + VERSION
            + ")");
      }
      if (payload.length != ENCODED_LENGTH) {
        throw new IOException("hdfs-rdma write request of version " + v
            + " must be " + ENCODED_LENGTH + " bytes, not "
            + payload.length);
      }
      int f = b.getShort() & 0xffff;
      int size = b.getInt();
      if (size <= 0) {
        throw new IOException("hdfs-rdma write request with invalid packet"
            + " size " + size);
      }
      byte[] r = new byte[NONCE_LENGTH];
      b.get(r);
      return new WriteRequest(v, r, size, f);
    }

    @Override
    public boolean equals(Object o) {
      if (!(o instanceof WriteRequest)) {
        return false;
      }
      WriteRequest w = (WriteRequest) o;
      return version == w.version && packetSize == w.packetSize
          && flags == w.flags && Arrays.equals(nonce, w.nonce);
    }

    @Override
    public int hashCode() {
      return ((version * 31 + flags) * 31 + packetSize) * 31
          + Arrays.hashCode(nonce);
    }

    /** Shows no nonce: it keys the session id on clusters without tokens. */
    @Override
    public String toString() {
      return "WriteRequest{version=" + version + ", packetSize=" + packetSize
          + ", flags=0x" + Integer.toHexString(flags) + "}";
    }
  }

  /**
   * One DataNode's commit to a UCX pipeline, an element of the repeated
   * {@code BlockOpResponseProto} field {@link #COMMIT_FIELD}: what a client
   * needs to reach the DataNode over UCX.
   *
   * <p>Payload, big-endian, no padding:
   * <pre>
   *  0       2       4               8
   *  +-------+-------+---------------+
   *  |version| flags |      uid      |
   *  +-------+-------+---------------+  8
   *  |        host id (16 bytes)     |
   *  |                               |
   *  +-------+-----------------------+ 24
   *  |addrLen| xferAddr (UTF-8, addrLen bytes) ...
   *  +-------+-------------------------
   *  |wkLen  | UCX worker address (wkLen bytes) ...
   *  +-------+-------------------------
   *  |  ingest bytes/s (8 bytes, with flag INGEST only)  |
   *  +----------------------------------------------------
   * </pre>
   * {@code xferAddr} is the DataNode's data-transfer address as
   * {@code host:port}, by which the client matches the entry to the
   * pipeline's {@code DatanodeInfo}; the worker address is what the client
   * connects its UCX endpoint to (there is no UCX listening socket). The
   * uid (the DataNode process's user) and the host id (its kernel boot and
   * IPC namespace, see {@link org.hdfsrdma.ucx.HostIdentity}) let a
   * client tell whether shared memory can reach the DataNode: UCX creates
   * its segments for their owner only. {@code flags} is 0 or
   * {@link #FLAG_INGEST}: then the DataNode's measured ingest rate (what
   * its gets, checksums and disk took in per second of its receivers'
   * busy time, positive) follows, from which a client shapes pipelines
   * ({@link ShapeChooser}). Lengths: xferAddr 1 to
   * {@link #MAX_STRING_BYTES}, worker address 1 to
   * {@link #MAX_WORKER_ADDRESS_BYTES}; the payload ends right after the
   * worker address or the ingest rate.
   */
  public static final class CommitEntry {

    /**
     * The payload version this code writes and the only one it reads
     * (version 1 named a UCX listener; such a commit is refused and the
     * pipeline stays on TCP).
     */
    public static final int VERSION = 2;
    /** Length of the host id in bytes. */
    public static final int HOST_ID_LENGTH = 16;
    /** The entry carries the DataNode's measured ingest rate. */
    public static final int FLAG_INGEST = 0x1;

    private final String xferAddr;
    private final byte[] workerAddress;
    private final int uid;
    private final byte[] hostId;
    private final long ingestBytesPerSecond;

    /** An entry without an ingest rate. */
    public CommitEntry(String xferAddr, byte[] workerAddress, int uid,
        byte[] hostId) {
      this(xferAddr, workerAddress, uid, hostId, 0);
    }

    /**
     * @param xferAddr the DataNode's transfer address, "host:port"
     * @param workerAddress its UCX worker's address, copied
     * @param uid the DataNode process's user id
     * @param hostId {@link #HOST_ID_LENGTH} bytes naming its host, copied
     * @param ingestBytesPerSecond the DataNode's measured ingest rate, or 0
     *     when it has none yet
     */
    public CommitEntry(String xferAddr, byte[] workerAddress, int uid,
        byte[] hostId, long ingestBytesPerSecond) {
      checkString("xferAddr", xferAddr);
      if (workerAddress == null || workerAddress.length == 0
          || workerAddress.length > MAX_WORKER_ADDRESS_BYTES) {
        throw new IllegalArgumentException("worker address of "
            + (workerAddress == null ? "null" : workerAddress.length
                + " bytes"));
      }
      if (hostId == null || hostId.length != HOST_ID_LENGTH) {
        throw new IllegalArgumentException("host id must be "
            + HOST_ID_LENGTH + " bytes");
      }
      this.xferAddr = xferAddr;
      this.workerAddress = workerAddress.clone();
      this.uid = uid;
      this.hostId = hostId.clone();
      if (ingestBytesPerSecond < 0) {
        throw new IllegalArgumentException("ingest rate "
            + ingestBytesPerSecond);
      }
      this.ingestBytesPerSecond = ingestBytesPerSecond;
    }

    public String getXferAddr() {
      return xferAddr;
    }

    /** @return a copy of the UCX worker address */
    public byte[] getWorkerAddress() {
      return workerAddress.clone();
    }

    public int getUid() {
      return uid;
    }

    /** @return a copy of the host id */
    public byte[] getHostId() {
      return hostId.clone();
    }

    /** The DataNode's measured ingest rate in bytes/s, or 0: unknown. */
    public long getIngestBytesPerSecond() {
      return ingestBytesPerSecond;
    }

    /** @return the payload described on this class */
    public byte[] encode() {
      byte[] addr = xferAddr.getBytes(StandardCharsets.UTF_8);
      boolean ingest = ingestBytesPerSecond > 0;
      ByteBuffer b = ByteBuffer.allocate(8 + HOST_ID_LENGTH + 2 + addr.length
          + 2 + workerAddress.length + (ingest ? 8 : 0));
      b.putShort((short) VERSION).putShort((short) (ingest ? FLAG_INGEST : 0))
          .putInt(uid).put(hostId)
          .putShort((short) addr.length).put(addr)
          .putShort((short) workerAddress.length).put(workerAddress);
      if (ingest) {
        b.putLong(ingestBytesPerSecond);
      }
      return b.array();
    }

    /**
     * Parses a payload written by {@link #encode}.
     *
     * @throws IOException when the payload is truncated, of another
     *     version, has a length out of bounds or trailing bytes, or holds
     *     an invalid value
     */
    public static CommitEntry decode(byte[] payload) throws IOException {
      if (payload == null) {
        throw new IOException("hdfs-rdma commit entry missing");
      }
      ByteBuffer b = ByteBuffer.wrap(payload);
      need(b, 2, "version");
      int v = b.getShort() & 0xffff;
      if (v != VERSION) {
        throw new IOException("hdfs-rdma commit entry of unsupported"
            + " version " + v + " (this side speaks version " + VERSION
            + ")");
      }
      need(b, 6, "flags and uid");
      int flags = b.getShort() & 0xffff;
      if ((flags & ~FLAG_INGEST) != 0) {
        throw new IOException("hdfs-rdma commit entry with unknown flags 0x"
            + Integer.toHexString(flags));
      }
      int uid = b.getInt();
      need(b, HOST_ID_LENGTH, "host id");
      byte[] host = new byte[HOST_ID_LENGTH];
      b.get(host);
      String addr = utf8(getBytes(b, "xferAddr", MAX_STRING_BYTES));
      byte[] worker = getBytes(b, "worker address", MAX_WORKER_ADDRESS_BYTES);
      long ingest = 0;
      if ((flags & FLAG_INGEST) != 0) {
        need(b, 8, "ingest rate");
        ingest = b.getLong();
        if (ingest <= 0) {
          throw new IOException("hdfs-rdma commit entry with ingest rate "
              + ingest);
        }
      }
      if (b.hasRemaining()) {
        throw new IOException("hdfs-rdma commit entry has "
            + b.remaining() + " trailing bytes");
      }
      return new CommitEntry(addr, worker, uid, host, ingest);
    }

    private static void need(ByteBuffer b, int n, String what)
        throws IOException {
      if (b.remaining() < n) {
        throw new IOException("hdfs-rdma commit entry truncated: "
            + b.remaining() + " bytes left for " + what + ", which needs "
            + n);
      }
    }

    /**
     * Strict UTF-8: a lenient decode turns invalid bytes into U+FFFD, which
     * re-encodes to up to three times as many bytes and then fails the
     * constructor's bound with an unchecked exception.
     */
    private static String utf8(byte[] bytes) throws IOException {
      try {
        return StandardCharsets.UTF_8.newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT)
            .decode(ByteBuffer.wrap(bytes)).toString();
      } catch (CharacterCodingException e) {
        throw new IOException("hdfs-rdma commit entry xferAddr is not UTF-8");
      }
    }

    private static byte[] getBytes(ByteBuffer b, String what, int max)
        throws IOException {
      need(b, 2, what + " length");
      int n = b.getShort() & 0xffff;
      if (n == 0 || n > max) {
        throw new IOException("hdfs-rdma commit entry " + what + " length "
            + n + " out of bounds [1, " + max + "]");
      }
      need(b, n, what);
      byte[] s = new byte[n];
      b.get(s);
      return s;
    }

    @Override
    public boolean equals(Object o) {
      if (!(o instanceof CommitEntry)) {
        return false;
      }
      CommitEntry c = (CommitEntry) o;
      return uid == c.uid && xferAddr.equals(c.xferAddr)
          && Arrays.equals(workerAddress, c.workerAddress)
          && Arrays.equals(hostId, c.hostId)
          && ingestBytesPerSecond == c.ingestBytesPerSecond;
    }

    @Override
    public int hashCode() {
      return (xferAddr.hashCode() * 31 + Arrays.hashCode(workerAddress)) * 31
          + uid;
    }

    @Override
    public String toString() {
      return "CommitEntry{xferAddr=" + xferAddr + ", worker address "
          + workerAddress.length + " bytes, uid=" + uid
          + (ingestBytesPerSecond > 0 ? ", ingest " + ingestBytesPerSecond
              + " B/s" : "") + "}";
    }
  }

  /**
   * @return {@code op} with {@code r} in field {@link #WRITE_REQUEST_FIELD},
   *     replacing any request it had; every other field is kept
   */
  public static OpWriteBlockProto withRequest(OpWriteBlockProto op,
      WriteRequest r) {
    UnknownFieldSet fields = without(op.getUnknownFields(),
        WRITE_REQUEST_FIELD)
        .addField(WRITE_REQUEST_FIELD, UnknownFieldSet.Field.newBuilder()
            .addLengthDelimited(ByteString.copyFrom(r.encode())).build())
        .build();
    return op.toBuilder().setUnknownFields(fields).build();
  }

  /**
   * @return the request in {@code op}, or null when it has none. Should the
   *     field occur more than once, the last occurrence counts, as protobuf
   *     does for a singular field.
   * @throws IOException when the field is not length-delimited or its
   *     payload is malformed (see {@link WriteRequest#decode})
   */
  public static WriteRequest requestOf(OpWriteBlockProto op)
      throws IOException {
    UnknownFieldSet fields = op.getUnknownFields();
    if (!fields.hasField(WRITE_REQUEST_FIELD)) {
      return null;
    }
    UnknownFieldSet.Field f = fields.getField(WRITE_REQUEST_FIELD);
    List<ByteString> values = f.getLengthDelimitedList();
    if (values.isEmpty()) {
      throw new IOException("hdfs-rdma write request field "
          + WRITE_REQUEST_FIELD + " is not length-delimited");
    }
    return WriteRequest.decode(values.get(values.size() - 1).toByteArray());
  }

  /**
   * Puts {@code entries}, in order, into field {@link #COMMIT_FIELD} of
   * {@code b}, replacing any it had. An empty list removes the field (no
   * commit). The first entry must be the replying DataNode's, the others
   * those of the downstream DataNodes in pipeline order.
   *
   * @return {@code b}
   */
  public static BlockOpResponseProto.Builder withCommits(
      BlockOpResponseProto.Builder b, List<CommitEntry> entries) {
    if (entries.size() > MAX_COMMIT_ENTRIES) {
      throw new IllegalArgumentException(entries.size()
          + " commit entries, more than " + MAX_COMMIT_ENTRIES);
    }
    UnknownFieldSet.Builder fields =
        without(b.getUnknownFields(), COMMIT_FIELD);
    if (!entries.isEmpty()) {
      UnknownFieldSet.Field.Builder f = UnknownFieldSet.Field.newBuilder();
      for (CommitEntry e : entries) {
        f.addLengthDelimited(ByteString.copyFrom(e.encode()));
      }
      fields.addField(COMMIT_FIELD, f.build());
    }
    return b.setUnknownFields(fields.build());
  }

  /**
   * @return the commit entries of {@code resp} in order, or an empty list
   *     when it has none
   * @throws IOException when the field is not length-delimited, has more
   *     than {@link #MAX_COMMIT_ENTRIES} entries, or an entry is malformed
   *     (see {@link CommitEntry#decode})
   */
  public static List<CommitEntry> commitsOf(BlockOpResponseProto resp)
      throws IOException {
    UnknownFieldSet fields = resp.getUnknownFields();
    if (!fields.hasField(COMMIT_FIELD)) {
      return Collections.emptyList();
    }
    UnknownFieldSet.Field f = fields.getField(COMMIT_FIELD);
    List<ByteString> values = f.getLengthDelimitedList();
    if (values.isEmpty()) {
      throw new IOException("hdfs-rdma commit field " + COMMIT_FIELD
          + " is not length-delimited");
    }
    if (values.size() > MAX_COMMIT_ENTRIES) {
      throw new IOException(values.size() + " hdfs-rdma commit entries,"
          + " more than " + MAX_COMMIT_ENTRIES);
    }
    List<CommitEntry> entries = new ArrayList<>(values.size());
    for (ByteString v : values) {
      entries.add(CommitEntry.decode(v.toByteArray()));
    }
    return Collections.unmodifiableList(entries);
  }

  /**
   * The stream to give {@code new Sender(...)} so that the
   * {@code writeBlock} op it sends carries {@code request}.
   *
   * <p>{@code Sender.send} writes one op as
   * <pre>
   *   u16 DATA_TRANSFER_VERSION | u8 op code | varint n | n bytes of proto
   * </pre>
   * and then flushes. The returned stream buffers everything written until
   * its first {@code flush()}, then, if the buffered bytes are exactly one
   * such {@code WRITE_BLOCK} op, writes the op to {@code out} with the
   * request appended to the proto (protobuf concatenation: the stock fields
   * keep Sender's exact bytes, the varint length is rewritten), and
   * flushes {@code out}. Anything else, another op or bytes that are not
   * one complete op, goes to {@code out} unchanged (the latter logged).
   * From the first flush on the stream passes every byte straight through;
   * closing it flushes, then closes {@code out}.
   *
   * @param out the stream to the DataNode
   * @param request the request to carry, or null for none
   * @return {@code out} itself when {@code request} is null
   */
  public static DataOutputStream opOut(DataOutputStream out,
      WriteRequest request) {
    if (request == null) {
      return out;
    }
    return new DataOutputStream(new OpRewriter(out, request));
  }

  /** The stream behind {@link #opOut}. */
  private static final class OpRewriter extends FilterOutputStream {
    private final WriteRequest request;
    /** Buffer of the first op; null once it went out. */
    private ByteArrayOutputStream op = new ByteArrayOutputStream(1024);

    OpRewriter(OutputStream out, WriteRequest request) {
      super(out);
      this.request = request;
    }

    @Override
    public void write(int b) throws IOException {
      if (op != null) {
        op.write(b);
      } else {
        out.write(b);
      }
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      if (op != null) {
        op.write(b, off, len);
      } else {
        out.write(b, off, len);
      }
    }

    @Override
    public void flush() throws IOException {
      if (op != null && op.size() > 0) {
        byte[] bytes = op.toByteArray();
        op = null;
        out.write(rewrite(bytes, request));
      }
      out.flush();
    }
  }

  /**
   * @return {@code frame} with {@code request} appended to its proto when
   *     it is exactly one WRITE_BLOCK op, else {@code frame}
   */
  private static byte[] rewrite(byte[] frame, WriteRequest request)
      throws IOException {
    // u16 version, u8 op code, varint length (1 to 5 bytes)
    if (frame.length < 4) {
      LOG.warn("Not one data-transfer op ({} bytes); sent without the"
          + " hdfs-rdma request", frame.length);
      return frame;
    }
    if (frame[2] != Op.WRITE_BLOCK.code) {
      return frame;
    }
    int version = ((frame[0] & 0xff) << 8) | (frame[1] & 0xff);
    int protoLen;
    int protoStart;
    try {
      CodedInputStream c =
          CodedInputStream.newInstance(frame, 3, frame.length - 3);
      protoLen = c.readRawVarint32();
      protoStart = 3 + c.getTotalBytesRead();
    } catch (InvalidProtocolBufferException e) {
      protoLen = -1;
      protoStart = frame.length;
    }
    if (version != DataTransferProtocol.DATA_TRANSFER_VERSION
        || protoLen < 0 || protoLen != frame.length - protoStart) {
      LOG.warn("Not exactly one writeBlock op of data-transfer version {}"
          + " (version {}, {} bytes, proto length {}); sent without the"
          + " hdfs-rdma request", DataTransferProtocol.DATA_TRANSFER_VERSION,
          version, frame.length, protoLen);
      return frame;
    }
    byte[] payload = request.encode();
    int extra = CodedOutputStream.computeTagSize(WRITE_REQUEST_FIELD)
        + CodedOutputStream.computeRawVarint32Size(payload.length)
        + payload.length;
    int newLen = protoLen + extra;
    byte[] result = new byte[3
        + CodedOutputStream.computeRawVarint32Size(newLen) + newLen];
    CodedOutputStream c = CodedOutputStream.newInstance(result);
    c.writeRawBytes(frame, 0, 3);
    c.writeRawVarint32(newLen);
    c.writeRawBytes(frame, protoStart, protoLen);
    c.writeTag(WRITE_REQUEST_FIELD, WireFormat.WIRETYPE_LENGTH_DELIMITED);
    c.writeRawVarint32(payload.length);
    c.writeRawBytes(payload);
    c.checkNoSpaceLeft();
    return result;
  }

  /**
   * The request in the {@code writeBlock} op that {@code in} is about to
   * deliver, leaving {@code in} where it was.
   *
   * <p>For {@code DataXceiver.run}, right after {@code readOp()} returned
   * {@code WRITE_BLOCK} and before {@code processOp} reads the op's
   * varint-delimited {@code OpWriteBlockProto}: marks {@code in}, reads and
   * parses the op, and resets {@code in}, so Hadoop then reads exactly the
   * bytes it would have read without us.
   *
   * <p>Returns null, without reading, when {@code in} does not support
   * mark; returns null, after resetting, when the op is longer than
   * {@link #PEEK_LIMIT} (its varint length is read first, so nothing past
   * the mark limit is ever read), when the stream ends within the op, when
   * the op does not parse, or when its request is malformed or of another
   * version (logged). In all those cases Hadoop's own parse then behaves
   * as it does in stock Hadoop, and the pipeline stays on TCP.
   *
   * @throws IOException when reading {@code in} fails (after trying to
   *     reset it)
   */
  public static WriteRequest peekWriteRequest(DataInputStream in)
      throws IOException {
    if (!in.markSupported()) {
      return null;
    }
    in.mark(PEEK_LIMIT);
    try {
      OpWriteBlockProto op;
      try {
        int first = in.read();
        if (first < 0) {
          return null;
        }
        int len = CodedInputStream.readRawVarint32(first, in);
        if (len < 0 || len > PEEK_LIMIT - 5) {
          BAD_OFFERS.warn("writeBlock op of " + len + " bytes, over the peek"
              + " limit " + PEEK_LIMIT + "; no hdfs-rdma request read");
          return null;
        }
        byte[] proto = new byte[len];
        in.readFully(proto);
        op = OpWriteBlockProto.parseFrom(proto);
      } catch (EOFException | InvalidProtocolBufferException e) {
        // truncated or malformed op: Hadoop's own parse will say so
        LOG.debug("writeBlock op unreadable; no hdfs-rdma request", e);
        return null;
      }
      try {
        WriteRequest r = requestOf(op);
        LOG.debug("Peeked {}", r);
        return r;
      } catch (IOException e) {
        BAD_OFFERS.warn("Ignoring an hdfs-rdma request: " + e.getMessage());
        return null;
      }
    } finally {
      in.reset();
    }
  }

  /**
   * The UCX session id S of one DataNode's part of a pipeline (DESIGN.md
   * section 2): the first 8 bytes, as a big-endian long, of HMAC-SHA256
   * with {@code key} over
   * <pre>
   *   u32 len | "hdfs-rdma/2" | u32 len | nonce | u32 len |
   *   blockPoolId (UTF-8) | u32 len | dataNode (UTF-8) | u64 blockId |
   *   u64 generationStamp
   * </pre>
   * Every variable-length part is length-prefixed, so no two input tuples
   * give the same message. The client and the DataNode compute S
   * independently; it never travels on the socket. It names the DataNode,
   * so each node of a pipeline has its own session even where several
   * DataNodes share one JVM and one UCX worker (MiniDFSCluster), and a
   * descriptor meant for one DataNode is refused by another.
   *
   * @param key the block token's password; when null or empty (block
   *     tokens off, data transfer unauthenticated anyway), the nonce is
   *     the key
   * @param nonce the request's 16-byte nonce R
   * @param dataNode the DataNode's transfer address, ip:port
   */
  public static long sessionId(byte[] key, byte[] nonce, String blockPoolId,
      String dataNode, long blockId, long generationStamp) {
    if (nonce == null || nonce.length != WriteRequest.NONCE_LENGTH) {
      throw new IllegalArgumentException("nonce must be "
          + WriteRequest.NONCE_LENGTH + " bytes");
    }
    if (blockPoolId == null || dataNode == null) {
      throw new IllegalArgumentException("blockPoolId or dataNode is null");
    }
    byte[] k = key == null || key.length == 0 ? nonce : key;
    byte[] pool = blockPoolId.getBytes(StandardCharsets.UTF_8);
    byte[] node = dataNode.getBytes(StandardCharsets.UTF_8);
    ByteBuffer msg = ByteBuffer.allocate(16 + SESSION_LABEL.length
        + nonce.length + pool.length + node.length + 16);
    msg.putInt(SESSION_LABEL.length).put(SESSION_LABEL)
        .putInt(nonce.length).put(nonce)
        .putInt(pool.length).put(pool)
        .putInt(node.length).put(node)
        .putLong(blockId).putLong(generationStamp);
    try {
      Mac mac = Mac.getInstance(HMAC);
      mac.init(new SecretKeySpec(k, HMAC));
      return ByteBuffer.wrap(mac.doFinal(msg.array())).getLong();
    } catch (GeneralSecurityException e) {
      // every Java 8 platform has HmacSHA256
      throw new IllegalStateException(HMAC + " unavailable", e);
    }
  }

  /** @return a builder holding every field of {@code set} but one */
  private static UnknownFieldSet.Builder without(UnknownFieldSet set,
      int number) {
    UnknownFieldSet.Builder b = UnknownFieldSet.newBuilder();
    for (Map.Entry<Integer, UnknownFieldSet.Field> e
        : set.asMap().entrySet()) {
      if (e.getKey() != number) {
        b.addField(e.getKey(), e.getValue());
      }
    }
    return b;
  }

  private static void checkU16(String what, int v, int min) {
    if (v < min || v > 0xffff) {
      throw new IllegalArgumentException(what + " out of range [" + min
          + ", 65535]: " + v);
    }
  }

  private static void checkString(String what, String s) {
    if (s == null || s.isEmpty()) {
      throw new IllegalArgumentException(what + " is empty");
    }
    int n = s.getBytes(StandardCharsets.UTF_8).length;
    if (n > MAX_STRING_BYTES) {
      throw new IllegalArgumentException(what + " is " + n
          + " bytes of UTF-8, more than " + MAX_STRING_BYTES);
    }
  }
}
