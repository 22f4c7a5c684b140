package org.hdfsrdma.hadoop.protocol;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * One DataNode's commit to a UCX pipeline: what a client needs to reach
 * the DataNode over UCX. Coming back up the pipeline, each DataNode that
 * commits puts its own entry before those of the DataNodes behind it
 * (DESIGN.md section 1).
 *
 * <p>It holds the DataNode's data-transfer address ({@code host:port}),
 * by which the client matches the entry to the pipeline's
 * {@code DatanodeInfo}; its UCX worker address, which the client connects
 * its endpoint to (there is no UCX listening socket); the uid of the
 * DataNode's process and its host id (kernel boot id and IPC namespace,
 * {@link org.hdfsrdma.ucx.HostIdentity}), which tell a client whether
 * shared memory reaches the DataNode (UCX creates its segments for their
 * owner only); and, once measured, the DataNode's ingest rate (what its
 * gets, checksums and disk took in per second of its receivers' busy
 * time), from which a client shapes pipelines
 * ({@link org.hdfsrdma.hadoop.ShapeChooser}); and its shared-memory
 * profile (UCX release and shared-memory settings,
 * {@link org.hdfsrdma.ucx.UcxRelease#sharedMemoryProfile}), which a peer
 * on its host must share to use shared memory with it; and whether it
 * takes the block's descriptors on its socket ({@link
 * #takesSocketDescriptors}).
 *
 * <p>How it travels is not this class's business: it compiles unchanged
 * against every Hadoop release (see {@code org.hdfsrdma.hadoop.compat}).
 * Immutable; every value is checked by the constructor, for what this side
 * sends, and by {@link #received}, for what a peer sent.
 */
public final class CommitEntry {

  /** Length of the host id in bytes. */
  public static final int HOST_ID_LENGTH = 16;

  private final String xferAddr;
  private final byte[] workerAddress;
  private final int uid;
  private final byte[] hostId;
  private final long ingestBytesPerSecond;
  private final String sharedMemoryProfile;
  private final boolean socketDescriptors;

  /** An entry without an ingest rate or a shared-memory profile. */
  public CommitEntry(String xferAddr, byte[] workerAddress, int uid,
      byte[] hostId) {
    this(xferAddr, workerAddress, uid, hostId, 0, null);
  }

  /** An entry without a shared-memory profile (an older release's). */
  public CommitEntry(String xferAddr, byte[] workerAddress, int uid,
      byte[] hostId, long ingestBytesPerSecond) {
    this(xferAddr, workerAddress, uid, hostId, ingestBytesPerSecond, null);
  }

  /**
   * @param xferAddr the DataNode's transfer address, "host:port", 1 to
   *     {@link WireLimits#MAX_STRING_BYTES} bytes of UTF-8
   * @param workerAddress its UCX worker's address, 1 to
   *     {@link WireLimits#MAX_WORKER_ADDRESS_BYTES} bytes, copied
   * @param uid the DataNode process's user id
   * @param hostId {@link #HOST_ID_LENGTH} bytes naming its host, copied
   * @param ingestBytesPerSecond the DataNode's measured ingest rate, or 0
   *     when it has none yet
   * @param sharedMemoryProfile its shared-memory profile, 1 to
   *     {@link WireLimits#MAX_STRING_BYTES} bytes of UTF-8, or null
   * @throws IllegalArgumentException when a value is out of range
   */
  public CommitEntry(String xferAddr, byte[] workerAddress, int uid,
      byte[] hostId, long ingestBytesPerSecond, String sharedMemoryProfile) {
    if (xferAddr == null) {
      throw new IllegalArgumentException("xferAddr is null");
    }
    String problem = problem(xferAddr.getBytes(StandardCharsets.UTF_8),
        workerAddress, hostId, ingestBytesPerSecond,
        sharedMemoryProfile == null ? null
            : sharedMemoryProfile.getBytes(StandardCharsets.UTF_8));
    if (problem != null) {
      throw new IllegalArgumentException(problem);
    }
    this.xferAddr = xferAddr;
    this.workerAddress = workerAddress.clone();
    this.uid = uid;
    this.hostId = hostId.clone();
    this.ingestBytesPerSecond = ingestBytesPerSecond;
    this.sharedMemoryProfile = sharedMemoryProfile;
    this.socketDescriptors = false;
  }

  private CommitEntry(CommitEntry e) {
    this.xferAddr = e.xferAddr;
    this.workerAddress = e.workerAddress;
    this.uid = e.uid;
    this.hostId = e.hostId;
    this.ingestBytesPerSecond = e.ingestBytesPerSecond;
    this.sharedMemoryProfile = e.sharedMemoryProfile;
    this.socketDescriptors = true;
  }

  /**
   * This entry, saying the DataNode takes the block's descriptors on its
   * socket and passes them on to its mirror.
   */
  public CommitEntry takingSocketDescriptors() {
    return socketDescriptors ? this : new CommitEntry(this);
  }

  /**
   * Whether the DataNode takes the block's descriptors on its socket, as
   * the client's request asked, and passes them on to its mirror.
   */
  public boolean takesSocketDescriptors() {
    return socketDescriptors;
  }

  /**
   * An entry as a peer sent it.
   *
   * @param xferAddr the transfer address as UTF-8, decoded strictly: a
   *     lenient decode turns invalid bytes into U+FFFD, which re-encodes to
   *     up to three times as many bytes and would then fail the bound with
   *     an unchecked exception
   * @param ingestBytesPerSecond the ingest rate, 0 when the peer sent none
   * @param sharedMemoryProfile the shared-memory profile as UTF-8 (decoded
   *     strictly, too), or null when the peer sent none
   * @throws IOException naming the first value out of range
   */
  public static CommitEntry received(byte[] xferAddr, byte[] workerAddress,
      int uid, byte[] hostId, long ingestBytesPerSecond,
      byte[] sharedMemoryProfile) throws IOException {
    String problem = xferAddr == null ? "no xferAddr"
        : problem(xferAddr, workerAddress, hostId, ingestBytesPerSecond,
            sharedMemoryProfile);
    if (problem != null) {
      throw new IOException("hdfs-rdma commit entry with " + problem);
    }
    return new CommitEntry(utf8(xferAddr, "xferAddr"), workerAddress, uid,
        hostId, ingestBytesPerSecond, sharedMemoryProfile == null ? null
            : utf8(sharedMemoryProfile, "shared-memory profile"));
  }

  private static String utf8(byte[] bytes, String what) throws IOException {
    try {
      return StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes)).toString();
    } catch (CharacterCodingException e) {
      throw new IOException("hdfs-rdma commit entry " + what
          + " is not UTF-8");
    }
  }

  /** @return what is wrong with these values, or null */
  private static String problem(byte[] xferAddr, byte[] workerAddress,
      byte[] hostId, long ingestBytesPerSecond, byte[] sharedMemoryProfile) {
    if (sharedMemoryProfile != null && (sharedMemoryProfile.length == 0
        || sharedMemoryProfile.length > WireLimits.MAX_STRING_BYTES)) {
      return "a shared-memory profile of " + sharedMemoryProfile.length
          + " bytes, not 1 to " + WireLimits.MAX_STRING_BYTES;
    }
    if (xferAddr.length == 0
        || xferAddr.length > WireLimits.MAX_STRING_BYTES) {
      return "an xferAddr of " + xferAddr.length + " bytes, not 1 to "
          + WireLimits.MAX_STRING_BYTES;
    }
    if (workerAddress == null || workerAddress.length == 0
        || workerAddress.length > WireLimits.MAX_WORKER_ADDRESS_BYTES) {
      return "a worker address of " + (workerAddress == null ? "null"
          : workerAddress.length + " bytes") + ", not 1 to "
          + WireLimits.MAX_WORKER_ADDRESS_BYTES;
    }
    if (hostId == null || hostId.length != HOST_ID_LENGTH) {
      return "a host id of " + (hostId == null ? "null" : hostId.length
          + " bytes") + ", not " + HOST_ID_LENGTH;
    }
    if (ingestBytesPerSecond < 0) {
      return "ingest rate " + ingestBytesPerSecond;
    }
    return null;
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

  /**
   * The DataNode's UCX release and shared-memory settings, or null when
   * its release does not say (then nothing shares memory with it).
   */
  public String getSharedMemoryProfile() {
    return sharedMemoryProfile;
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
        && ingestBytesPerSecond == c.ingestBytesPerSecond
        && java.util.Objects.equals(sharedMemoryProfile,
            c.sharedMemoryProfile)
        && socketDescriptors == c.socketDescriptors;
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
            + " B/s" : "") + (sharedMemoryProfile != null ? ", UCX "
            + sharedMemoryProfile : "")
        + (socketDescriptors ? ", socket descriptors" : "") + "}";
  }
}
