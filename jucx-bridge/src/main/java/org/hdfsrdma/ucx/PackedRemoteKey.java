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
 * A random or truncated key fails this check with overwhelming
 * probability; a key crafted to pass it can still reach UCX (see the
 * module README).
 */
final class PackedRemoteKey {

  /** ucs_memory_type_t of ordinary host memory, the only kind we expose. */
  private static final int MEMORY_TYPE_HOST = 0;
  private static final int HEADER = 9;

  private PackedRemoteKey() {
  }

  /**
   * @return null when the key is well formed, otherwise what is wrong
   */
  static String check(byte[] key) {
    if (key.length < HEADER) {
      return "packed remote key of " + key.length + " bytes is shorter than"
          + " its " + HEADER + "-byte header";
    }
    long mdMap = 0;
    for (int i = 7; i >= 0; i--) {
      mdMap = (mdMap << 8) | (key[i] & 0xFF);
    }
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
      p += 1 + (key[p] & 0xFF);
      if (p > key.length) {
        return "entry of memory domain " + md + " runs past the end of the"
            + " packed remote key";
      }
    }
    if (p != key.length) {
      return "packed remote key has " + (key.length - p)
          + " unexplained trailing bytes";
    }
    return null;
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
