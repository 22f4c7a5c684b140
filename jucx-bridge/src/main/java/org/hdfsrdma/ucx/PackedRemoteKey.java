package org.hdfsrdma.ucx;

/**
 * Structural check of a packed UCX remote key before it reaches
 * ucp_ep_rkey_unpack, which takes no length and trusts its input: in UCX
 * 1.13 a key whose transport part fails to unpack sends it down an error
 * path that releases keys it never unpacked, and the process dies.
 *
 * <p>The layout, as ucp_rkey_pack writes it for host memory in UCX 1.9
 * through 1.15 (little-endian, the packing host's order):
 *
 * <pre>
 *  0        8     9
 *  +--------+-----+------+----------+------+----------+---
 *  | md_map | mem | len0 | key0     | len1 | key1     | ...
 *  | u64    | u8  | u8   | len0 B   | u8   | len1 B   |
 *  +--------+-----+------+----------+------+----------+---
 * </pre>
 *
 * one (length, key) pair per bit set in md_map, and nothing after the last.
 *
 * <p>Only the entry shapes of the transports hdfs-rdma exposes memory
 * through are accepted: 0 bytes (self, cma and tcp carry no key), 8 bytes
 * (InfiniBand/RoCE: rkey and atomic rkey) and 12 bytes (SysV shared memory:
 * a 4-byte segment id and the owner's 8-byte address of the segment).
 * Anything else (POSIX shared memory, whose file a writer could truncate
 * under a reader; xpmem; knem; unknown transports) is refused before UCX
 * parses it. Every 12-byte entry is reported to the caller, which checks the
 * segment with the kernel before the key is unpacked when its endpoint
 * reaches the entry's memory domain ({@link RemoteRegion}).
 *
 * <p>A shape is not enough: UCX unpacks each entry with the code of the
 * transport its memory domain belongs to on the peer, whatever its length
 * (POSIX shared memory's unpack of a 12-byte or empty entry aborts the
 * process in UCX 1.13). {@link #forEndpoint} therefore hands UCX only the
 * entries of the domains the endpoint's lanes reach, each of the shape of
 * that domain's transport.
 */
final class PackedRemoteKey {

  /** ucs_memory_type_t of ordinary host memory, the only kind we expose. */
  private static final int MEMORY_TYPE_HOST = 0;
  private static final int HEADER = 9;
  /** Key entry lengths of self/cma/tcp, InfiniBand, SysV shared memory. */
  static final int EMPTY_ENTRY = 0;
  static final int IB_ENTRY = 8;
  static final int SYSV_ENTRY = 12;

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
   * @return null when the key is well formed, otherwise what is wrong
   */
  static String check(byte[] key) {
    return inspect(key, null);
  }

  /**
   * Checks the key and adds its SysV entries to {@code sysv} (when not
   * null).
   *
   * @return null when the key is well formed, otherwise what is wrong
   */
  static String inspect(byte[] key, java.util.List<SysvEntry> sysv) {
    if (key.length < HEADER) {
      return "packed remote key of " + key.length + " bytes is shorter than"
          + " its " + HEADER + "-byte header";
    }
    long mdMap = littleEndian(key, 0, 8);
    if (mdMap == 0) {
      return "packed remote key names no memory domain";
    }
    int memoryType = key[8] & 0xFF;
    if (memoryType != MEMORY_TYPE_HOST) {
      return "packed remote key is for memory type " + memoryType
          + ", not host memory";
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
      if (len != EMPTY_ENTRY && len != IB_ENTRY && len != SYSV_ENTRY) {
        return "entry of memory domain " + md + " is " + len + " bytes: not"
            + " a transport hdfs-rdma reads through (self, cma, tcp,"
            + " InfiniBand or SysV shared memory)";
      }
      if (len == SYSV_ENTRY && sysv != null) {
        sysv.add(new SysvEntry(md, (int) littleEndian(key, p + 1, 4),
            littleEndian(key, p + 5, 8)));
      }
      p += 1 + len;
    }
    if (p != key.length) {
      return "packed remote key has " + (key.length - p)
          + " unexplained trailing bytes";
    }
    return null;
  }

  /**
   * The key to hand ucp_ep_rkey_unpack on an endpoint whose lanes reach
   * the peer's memory domains {@code domains} (index to UCX component, as
   * {@link TransportReport#peerMemoryDomains()} reads them): the entries of
   * those domains only, each of the shape that domain's transport packs.
   * Entries of other domains are dropped: no lane uses them, and UCX would
   * unpack them with a transport this side cannot see. {@code key} must
   * have passed {@link #inspect}.
   *
   * @throws MalformedDescriptorException when an entry of a reached domain
   *     has another shape than its transport's keys, or belongs to a
   *     transport hdfs-rdma does not read through, or no entry is left
   */
  static byte[] forEndpoint(byte[] key, java.util.Map<Integer, String> domains)
      throws MalformedDescriptorException {
    long mdMap = littleEndian(key, 0, 8);
    long kept = 0;
    java.io.ByteArrayOutputStream entries =
        new java.io.ByteArrayOutputStream(key.length);
    int p = HEADER;
    for (int md = 0; md < 64; md++) {
      if ((mdMap & (1L << md)) == 0) {
        continue;
      }
      int len = key[p] & 0xFF;
      String component = domains.get(md);
      if (component != null) {
        int expected = entryLength(component);
        if (expected < 0) {
          throw new MalformedDescriptorException("entry of memory domain "
              + md + " is for UCX's " + component + " transport, which"
              + " hdfs-rdma does not read through");
        }
        if (len != expected) {
          throw new MalformedDescriptorException("entry of memory domain "
              + md + " is " + len + " bytes, but the peer's memory domain "
              + md + " is " + component + ", whose keys are " + expected
              + " bytes");
        }
        kept |= 1L << md;
        entries.write(key, p, 1 + len);
      }
      p += 1 + len;
    }
    if (kept == 0) {
      throw new MalformedDescriptorException("no entry of the packed remote"
          + " key is in a memory domain this endpoint reaches "
          + domains);
    }
    byte[] out = new byte[HEADER + entries.size()];
    for (int i = 0; i < 8; i++) {
      out[i] = (byte) (kept >>> (8 * i));
    }
    out[8] = (byte) MEMORY_TYPE_HOST;
    System.arraycopy(entries.toByteArray(), 0, out, HEADER, entries.size());
    return out;
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

  /** True when this library knows the packed layout of the loaded UCX. */
  static boolean layoutKnown(String ucxVersion) {
    if (ucxVersion == null) {
      return false;
    }
    String[] parts = ucxVersion.split("\\.");
    try {
      int major = Integer.parseInt(parts[0]);
      int minor = Integer.parseInt(parts[1]);
      return major == 1 && minor >= 9 && minor <= 15;
    } catch (RuntimeException e) {
      return false;
    }
  }
}
