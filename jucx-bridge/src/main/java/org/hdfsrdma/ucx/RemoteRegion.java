package org.hdfsrdma.ucx;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntPredicate;

/**
 * A region of a peer's registered memory, announced by the peer with a
 * {@link RegionAnnouncement} and checked by this side before anything is
 * read from it: the getter's view of the exposer's packet buffers.
 *
 * <p><b>Direct regions</b> (same-host shared memory): UCX would map the
 * peer's SysV segment and read through a pointer ({@code ucp_rkey_ptr}),
 * with no hardware to enforce a key's bounds: it turns the remote address
 * into a local one by adding an offset the peer chose, so a lying
 * announcement makes the reader read its own memory. Here UCX only decides
 * that the peer's memory is directly reachable (the peer is on this host);
 * the bytes are read through this process's own read-only attachment of the
 * one SysV segment the key names, and only after the kernel's facts about
 * it ({@code IPC_STAT}) show that:
 * <ul>
 * <li>the segment is owned by this process's user (UCX creates segments
 * 0600: only processes of that user can exchange shared memory with this
 * one at all);
 * <li>it was not created by this process, unless the {@link Policy} knows
 * it as memory this process exposes itself (a client and a DataNode in one
 * JVM): a peer can never make this process read its own memory;
 * <li>the announced region lies inside the segment, by the segment's real
 * size from the kernel and the owner's address of its start.
 * </ul>
 * A key may name one SysV segment; it is attached read-only here before UCX
 * unpacks the key, so it cannot vanish between the check and UCX's own
 * attach (which would send UCX down the error path noted in
 * {@link PackedRemoteKey}); the attachment is held for the region's life
 * and is what the bytes are read through ({@link #reader()} is a buffer of
 * exactly the region's length, inside the segment). UCX is handed only the
 * key entries of the peer's memory domains this endpoint's lanes reach,
 * each of its transport's shape ({@link PackedRemoteKey#forEndpoint}); the
 * segment of a domain it does not reach (a peer on another host, whose key
 * still names its shared memory) is dropped unexamined.
 *
 * <p><b>Remote regions</b> (no direct mapping: RDMA hardware, where the NIC
 * enforces the key's bounds; or tcp, where UCX emulates gets with the
 * owner's CPU and which the policy refuses unless allowed) are read with
 * {@link #startGet} over this side's own endpoint to the peer.
 *
 * <p>Reference counted: {@link #retain()}, {@link #release()}; the last
 * release frees UCX's key and the attachments. Thread-safe.
 */
public final class RemoteRegion {

  /** What a getter allows besides the checks every region passes. */
  public static final class Policy {
    private final IntPredicate ownSegments;
    private final boolean allowEmulatedGets;

    /**
     * @param ownSegments the SysV segments of this process that peers may
     *     name (the memory this process exposes); all others of this
     *     process are refused
     * @param allowEmulatedGets whether regions may be read with gets that
     *     UCX emulates over tcp (the owner's CPU sends the bytes, so the get
     *     is not one-sided)
     */
    public Policy(IntPredicate ownSegments, boolean allowEmulatedGets) {
      this.ownSegments = ownSegments;
      this.allowEmulatedGets = allowEmulatedGets;
    }
  }

  private final long base;
  private final long length;
  private final RegionMapping mapping;
  private final ByteBuffer direct;
  private final String description;
  private final AtomicInteger references = new AtomicInteger(1);

  private RemoteRegion(long base, long length, RegionMapping mapping,
      ByteBuffer direct, String description) {
    this.base = base;
    this.length = length;
    this.mapping = mapping;
    this.direct = direct;
    this.description = description;
  }

  /**
   * Checks and opens the region a peer announced. Only inside
   * {@link MessageHandler#onMessage}: {@code replyEndpoint} (the peer's
   * endpoint UCX handed the handler) is valid only there.
   *
   * @param peer who announced it, for messages
   * @throws MalformedMessageException when the key or the region fails a
   *     check (nothing of it was handed to UCX, or what was is released)
   */
  public static RemoteRegion open(long replyEndpoint, RegionAnnouncement a,
      Policy policy, String peer) throws IOException {
    if (replyEndpoint == 0) {
      throw new MalformedMessageException("region " + a.regionId()
          + " from " + peer + " came without a reply endpoint");
    }
    byte[] packed = a.rkey();
    String problem = PackedRemoteKey.inspect(packed);
    if (problem != null) {
      throw new MalformedMessageException(problem + " (region "
          + a.regionId() + " from " + peer + ")");
    }
    long regionBase = a.regionBase();
    long regionLength = a.regionLength();
    // UCX unpacks each entry as its memory domain's transport: it is
    // handed only entries of the domains this endpoint reaches, of their
    // shape. A segment of a domain it does not reach (the peer's shared
    // memory, seen from another host or IPC namespace) is never mapped, so
    // it is neither examined nor attached: the kernel here may not know it,
    // or know another segment under its id.
    TransportReport lanes = TransportReport.parse(
        NativeIntrospection.endpointInfo(replyEndpoint));
    Map<Integer, String> reached = lanes.peerMemoryDomains();
    List<PackedRemoteKey.SysvEntry> segments =
        new ArrayList<PackedRemoteKey.SysvEntry>(2);
    byte[] forUcx;
    try {
      forUcx = PackedRemoteKey.forEndpoint(packed, reached, segments);
    } catch (MalformedMessageException e) {
      throw new MalformedMessageException(e.getMessage() + " (region "
          + a.regionId() + " from " + peer + ")");
    }
    if (segments.size() > 1) {
      throw new MalformedMessageException("the key of region "
          + a.regionId() + " from " + peer + " names " + segments.size()
          + " SysV segments; a region lies in one");
    }
    RegionMapping mapping = new RegionMapping(segments.size());
    try {
      for (PackedRemoteKey.SysvEntry s : segments) {
        checkSegment(s, regionBase, regionLength, policy, peer);
        mapping.attach(s, peer);
      }
      mapping.unpackKey(replyEndpoint, forUcx, "region " + a.regionId()
          + " from " + peer);
      ByteBuffer view = null;
      String how;
      if (mapping.mapsDirectly(regionBase)) {
        // UCX can map the peer's memory: the peer is on this host. Read
        // through this process's own read-only attachment of the segment
        // the kernel vouched for, never through UCX's pointer, which is
        // the peer's address plus an offset the peer chose.
        if (segments.size() != 1) {
          throw new MalformedMessageException("region " + a.regionId()
              + " from " + peer + " maps directly but names "
              + segments.size() + " SysV segments, not exactly one whose"
              + " bounds the kernel vouches for");
        }
        view = NativeUcx.view(mapping.attachment(0)
            + (regionBase - segments.get(0).ownerAddress), regionLength);
        mapping.dropKey();
        how = "shared memory";
      } else {
        boolean emulated = lanes.rmaTransports().isEmpty()
            || lanes.rmaTransports().contains("tcp");
        if (emulated && !policy.allowEmulatedGets) {
          throw new MalformedMessageException("gets of region "
              + a.regionId() + " from " + peer + " would be emulated by"
              + " the peer's CPU (RMA lanes " + lanes.rmaTransports()
              + "), which this getter does not allow");
        }
        how = "RMA over " + lanes.rmaTransports();
      }
      return new RemoteRegion(regionBase, regionLength, mapping, view,
          "region " + a.regionId() + " of " + peer + " (" + regionLength
          + " bytes, " + how + ")");
    } catch (IOException | RuntimeException | Error e) {
      Closeables.closeAfterFailure(e, mapping);
      throw e;
    }
  }

  /** The kernel's checks of one SysV segment a key names. */
  private static void checkSegment(PackedRemoteKey.SysvEntry s,
      long regionBase, long regionLength, Policy policy, String peer)
      throws MalformedMessageException {
    long[] facts = new long[6];
    int rc = NativeUcx.shmStat(s.shmid, facts);
    if (rc != 0) {
      throw new MalformedMessageException(s + " named by " + peer
          + " cannot be examined: errno " + (-rc));
    }
    long size = facts[0];
    long creatorPid = facts[1];
    long ownerUid = facts[2];
    if (ownerUid != NativeUcx.euid()) {
      throw new MalformedMessageException(s + " named by " + peer
          + " belongs to uid " + ownerUid + ", not to this process's user");
    }
    if (creatorPid == NativeUcx.pid() && !policy.ownSegments.test(s.shmid)) {
      throw new MalformedMessageException(s + " named by " + peer
          + " is this process's own memory");
    }
    long end = s.ownerAddress + size;
    if (s.ownerAddress == 0 || end < s.ownerAddress
        || regionBase < s.ownerAddress || regionBase + regionLength > end) {
      throw new MalformedMessageException("region [0x"
          + Long.toHexString(regionBase) + ", +" + regionLength + ") of "
          + peer + " does not lie inside " + s + " of " + size + " bytes");
    }
  }

  /** Whether this region is read by pointer (same-host shared memory). */
  public boolean isDirect() {
    return direct != null;
  }

  /** The peer's address of the region's first byte. */
  public long base() {
    return base;
  }

  public long length() {
    return length;
  }

  /**
   * True when [address, address + len) lies inside this region (overflow
   * safe).
   */
  public boolean contains(long address, long len) {
    return len >= 0 && address >= base && address - base <= length - len;
  }

  /**
   * A buffer over the whole region for one reader (its own position and
   * limit); direct regions only. Position p reads the peer's address
   * base + p.
   */
  public ByteBuffer reader() {
    if (direct == null) {
      throw new IllegalStateException(description + " is not direct");
    }
    return direct.duplicate();
  }

  /**
   * Starts a get of [address, address + len) into local registered memory
   * over {@code to}, this side's own endpoint to the peer (UCX refuses RMA
   * on the endpoint a message handler is handed: it is not paired yet);
   * remote regions only, any thread.
   *
   * @return 0 when done, {@link NativeUcx#IN_PROGRESS} when {@code slot}
   *     will receive the status
   * @throws IOException naming the peer when the endpoint failed or UCX
   *     refused the get
   */
  public int startGet(UcxEndpoint to, long address, long localAddress,
      int len, long slot) throws IOException {
    if (direct != null) {
      throw new IllegalStateException(description + " is read directly");
    }
    return to.get(address, mapping.key(), localAddress, len, slot);
  }

  /** Adds a reference. */
  public RemoteRegion retain() {
    int n;
    do {
      n = references.get();
      if (n <= 0) {
        throw new IllegalStateException(description + " is released");
      }
    } while (!references.compareAndSet(n, n + 1));
    return this;
  }

  /**
   * Drops a reference; the last frees UCX's key and the attachments, once
   * (a release past the last does nothing).
   */
  public void release() {
    if (references.decrementAndGet() == 0) {
      mapping.close();
    }
  }

  @Override
  public String toString() {
    return description;
  }
}
