package org.hdfsrdma.ucx;

import java.io.ByteArrayOutputStream;
import java.util.List;
import java.util.Map;

/**
 * Structural check of a packed UCX remote key before any part of it reaches
 * ucp_ep_rkey_unpack, which takes no length and trusts its input: in UCX
 * 1.13 a key whose transport part fails to unpack sends it down an error
 * path that releases keys it never unpacked, and the process dies.
 *
 * <p>The layout, as ucp_rkey_pack and ucp_memh_pack write it for host
 * memory (little-endian, the packing host's order), read from UCX's
 * {@code src/ucp/core/ucp_rkey.c} of each release:
 *
 * <pre>
 *  0        8     9
 *  +--------+-----+------+----------+------+----------+---+---------
 *  | md_map | mem | len0 | key0     | len1 | key1     |...| trailer
 *  | u64    | u8  | u8   | len0 B   | u8   | len1 B   |   |
 *  +--------+-----+------+----------+------+----------+---+---------
 * </pre>
 *
 * one (length, key) pair per bit set in md_map, then the trailer:
 * <ul>
 * <li>UCX 1.9 to 1.19: none;
 * <li>UCX 1.20 to 1.22: the memory's system device, one byte: 0xff for
 * host memory UCX places on no device; otherwise the device (bit 7: the
 * peer must flush after puts), then one 3-byte distance (device, latency,
 * bandwidth) per device and a 0xff terminator.
 * </ul>
 * UCX itself reads the trailer only from a peer it knows to be 1.20 or
 * later (the release travels in the worker address), so keys of both kinds
 * meet in mixed clusters and both pass here; the key handed to UCX
 * ({@link #forEndpoint}) always ends with a trailer of 0xff, which UCX
 * before 1.20 never reads and later ones read as "no device". UCX 1.20
 * and later pack no entry for transports that need none (tcp, whose gets
 * are emulated with active messages): a key of memory only they reach is
 * the header alone, md_map 0, and so is the key handed to UCX for an
 * endpoint that reaches only such transports.
 *
 * <p>{@link #inspect} checks the framing only: the header, that the entries
 * exactly fill the key up to a well-formed trailer. Entries are handed to
 * UCX only by {@link #forEndpoint}: those of the peer's memory domains the
 * endpoint's lanes reach, each of the shape its transport packs (0 bytes
 * for self, cma and tcp, 8 for InfiniBand/RoCE, 12 for SysV shared
 * memory: a 4-byte segment id and the owner's 8-byte address of the
 * segment). UCX unpacks an entry with the code of the transport its memory
 * domain belongs to, whatever its length (POSIX shared memory's unpack of
 * a 12-byte or empty entry aborts the process in UCX 1.13), so a reached
 * domain of one of those transports with an entry of another shape is
 * refused; a reached domain of any other transport (POSIX shared memory,
 * whose file a writer could truncate under a reader, xpmem, knem, GPU
 * transports) is left out of the key, and UCX never parses it.
 */
final class PackedRemoteKey {

  /** ucs_memory_type_t of ordinary host memory, the only kind we expose. */
  private static final int MEMORY_TYPE_HOST = 0;
  private static final int HEADER = 9;
  /** Key entry lengths of self/cma/tcp, InfiniBand, SysV shared memory. */
  static final int EMPTY_ENTRY = 0;
  static final int IB_ENTRY = 8;
  static final int SYSV_ENTRY = 12;
  /** UCS_SYS_DEVICE_ID_UNKNOWN: no device, and the distances' end. */
  private static final int NO_DEVICE = 0xff;
  /** ucp_rkey_packed_distance_t: device, latency, bandwidth. */
  private static final int DISTANCE = 3;

  /**
   * A SysV entry: the peer's memory domain it is packed for, the segment
   * and the owner's address of its start.
   */
  static final class SysvEntry {
    final int memoryDomain;
    final int shmid;
    final long ownerAddress;

    SysvEntry(int memoryDomain, int shmid, long ownerAddress) {
      this.memoryDomain = memoryDomain;
      this.shmid = shmid;
      this.ownerAddress = ownerAddress;
    }

    @Override
    public String toString() {
      return "SysV segment " + shmid + " at 0x"
          + Long.toHexString(ownerAddress);
    }
  }

  private PackedRemoteKey() {
  }

  /**
   * Checks the framing of {@code key}.
   *
   * @return null when the key is well formed, otherwise what is wrong
   */
  static String inspect(byte[] key) {
    if (key.length < HEADER) {
      return "packed remote key of " + key.length + " bytes is shorter than"
          + " its " + HEADER + "-byte header";
    }
    long mdMap = littleEndian(key, 0, 8);
    int memoryType = key[8] & 0xFF;
    if (memoryType != MEMORY_TYPE_HOST) {
      return "packed remote key is for memory type " + memoryType
          + ", not host memory";
    }
    if (mdMap == 0 && key.length != HEADER) {
      return "packed remote key names no memory domain but has "
          + (key.length - HEADER) + " bytes after its header";
    }
    int p = HEADER;
    for (int md = 0; md < 64; md++) {
      if ((mdMap & (1L << md)) == 0) {
        continue;
      }
      if (p >= key.length) {
        return "packed remote key ends before the entry of memory domain "
            + md;
      }
      int len = key[p] & 0xFF;
      if (p + 1 + len > key.length) {
        return "entry of memory domain " + md + " runs past the end of the"
            + " packed remote key";
      }
      p += 1 + len;
    }
    return checkTrailer(key, p);
  }

  /**
   * Null when the bytes from {@code p} on are no trailer (UCX before 1.20)
   * or one trailer as UCX 1.20 to 1.22 write it.
   */
  private static String checkTrailer(byte[] key, int p) {
    if (p == key.length) {
      return null;
    }
    int device = key[p] & 0xFF;
    int q = p + 1;
    if (device != NO_DEVICE) {
      // Distances, each starting with a device id other than 0xff, then
      // the terminator.
      while (q < key.length && (key[q] & 0xFF) != NO_DEVICE
          && q + DISTANCE <= key.length) {
        q += DISTANCE;
      }
      if (q >= key.length || (key[q] & 0xFF) != NO_DEVICE) {
        return "packed remote key's system device " + device + " is not"
            + " followed by distances and their end";
      }
      q++;
    }
    if (q != key.length) {
      return "packed remote key has " + (key.length - q)
          + " unexplained trailing bytes";
    }
    return null;
  }

  /**
   * The SysV entries of this process's own key, {@code key} as its UCX
   * packed it (so well formed): the segments of its own memory that peers
   * may name. Every 12-byte entry is a candidate; the caller's kernel
   * check ({@code IPC_STAT}) tells a segment from another transport's key.
   */
  static void ownSysvEntries(byte[] key, List<SysvEntry> into) {
    long mdMap = littleEndian(key, 0, 8);
    int p = HEADER;
    for (int md = 0; md < 64 && p < key.length; md++) {
      if ((mdMap & (1L << md)) == 0) {
        continue;
      }
      int len = key[p] & 0xFF;
      if (len == SYSV_ENTRY && p + 1 + len <= key.length) {
        into.add(new SysvEntry(md, (int) littleEndian(key, p + 1, 4),
            littleEndian(key, p + 5, 8)));
      }
      p += 1 + len;
    }
  }

  /**
   * The key to hand ucp_ep_rkey_unpack on an endpoint whose lanes reach
   * the peer's memory domains {@code domains} (index to UCX component, as
   * {@link TransportReport#peerMemoryDomains()} reads them): the entries of
   * those domains whose transport hdfs-rdma reads through, each of that
   * transport's shape, and a trailer of "no device". Entries of other
   * domains are dropped: no lane uses them, or UCX would parse them with
   * code hdfs-rdma does not trust with a peer's bytes. {@code key} must
   * have passed {@link #inspect}.
   *
   * @param sysv receives the SysV entries handed to UCX (the segments a
   *     direct read would go through), when not null
   * @throws MalformedMessageException when an entry of a reached domain
   *     has another shape than its transport's keys, or no entry is left
   *     for an endpoint that reaches a transport needing one
   */
  static byte[] forEndpoint(byte[] key, Map<Integer, String> domains,
      List<SysvEntry> sysv) throws MalformedMessageException {
    long mdMap = littleEndian(key, 0, 8);
    long kept = 0;
    ByteArrayOutputStream entries = new ByteArrayOutputStream(key.length);
    int p = HEADER;
    for (int md = 0; md < 64; md++) {
      if ((mdMap & (1L << md)) == 0) {
        continue;
      }
      int len = key[p] & 0xFF;
      String component = domains.get(md);
      int expected = component == null ? -1 : entryLength(component);
      if (expected >= 0) {
        if (len != expected) {
          throw new MalformedMessageException("entry of memory domain "
              + md + " is " + len + " bytes, but the peer's memory domain "
              + md + " is " + component + ", whose keys are " + expected
              + " bytes");
        }
        kept |= 1L << md;
        entries.write(key, p, 1 + len);
        if (len == SYSV_ENTRY && sysv != null) {
          sysv.add(new SysvEntry(md, (int) littleEndian(key, p + 1, 4),
              littleEndian(key, p + 5, 8)));
        }
      }
      p += 1 + len;
    }
    if (kept == 0 && !onlyKeyless(domains)) {
      throw new MalformedMessageException("no entry of the packed remote"
          + " key is in a memory domain this endpoint reaches through a"
          + " transport hdfs-rdma reads through " + domains);
    }
    byte[] out = new byte[HEADER + entries.size() + (kept == 0 ? 0 : 1)];
    for (int i = 0; i < 8; i++) {
      out[i] = (byte) (kept >>> (8 * i));
    }
    out[8] = (byte) MEMORY_TYPE_HOST;
    System.arraycopy(entries.toByteArray(), 0, out, HEADER, entries.size());
    if (kept != 0) {
      out[out.length - 1] = (byte) NO_DEVICE;
    }
    return out;
  }

  /** Whether every domain reached is of a transport that needs no key. */
  private static boolean onlyKeyless(Map<Integer, String> domains) {
    for (String component : domains.values()) {
      if (entryLength(component) != EMPTY_ENTRY) {
        return false;
      }
    }
    return !domains.isEmpty();
  }

  /**
   * The length of the key entries UCX's {@code component} packs for host
   * memory, or -1 for components hdfs-rdma does not read through.
   */
  private static int entryLength(String component) {
    switch (component) {
      case "self":
      case "tcp":
      case "cma":
        return EMPTY_ENTRY;
      case "ib":
        return IB_ENTRY;
      case "sysv":
        return SYSV_ENTRY;
      default:
        return -1;
    }
  }

  private static long littleEndian(byte[] b, int from, int n) {
    long v = 0;
    for (int i = n - 1; i >= 0; i--) {
      v = (v << 8) | (b[from + i] & 0xFF);
    }
    return v;
  }
}
