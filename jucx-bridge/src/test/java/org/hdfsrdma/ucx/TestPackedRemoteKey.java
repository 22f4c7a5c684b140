package org.hdfsrdma.ucx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.Test;

/**
 * The shape check of packed remote keys, which runs before UCX parses a
 * key a peer sent (ucp_ep_rkey_unpack trusts its input): only the entry
 * shapes of the transports hdfs-rdma reads through pass, and every SysV
 * entry is reported for the kernel checks of {@link RemoteRegion}.
 */
public class TestPackedRemoteKey {

  /** Builds a key: md_map, memory type, then the given entry lengths. */
  static byte[] key(long mdMap, int memoryType, int... entryLengths) {
    int total = 9;
    for (int length : entryLengths) {
      total += 1 + length;
    }
    byte[] k = new byte[total];
    putLittleEndian(k, 0, mdMap, 8);
    k[8] = (byte) memoryType;
    int p = 9;
    for (int length : entryLengths) {
      k[p] = (byte) length;
      for (int i = 1; i <= length; i++) {
        k[p + i] = (byte) (0x10 + i);
      }
      p += 1 + length;
    }
    return k;
  }

  /** A key of one 12-byte SysV entry at memory domain {@code md}. */
  static byte[] sysvKey(int md, int shmid, long ownerAddress) {
    byte[] k = key(1L << md, 0, 12);
    putLittleEndian(k, 10, shmid, 4);
    putLittleEndian(k, 14, ownerAddress, 8);
    return k;
  }

  static void putLittleEndian(byte[] b, int at, long value, int n) {
    for (int i = 0; i < n; i++) {
      b[at + i] = (byte) (value >>> (8 * i));
    }
  }

  /** The SysV entries of a key this process packed, after its check. */
  static List<PackedRemoteKey.SysvEntry> sysvOf(byte[] key) {
    assertNull(UcxTestUtils.hex(key), PackedRemoteKey.inspect(key));
    List<PackedRemoteKey.SysvEntry> sysv =
        new ArrayList<PackedRemoteKey.SysvEntry>();
    PackedRemoteKey.ownSysvEntries(key, sysv);
    return sysv;
  }

  /** {@code key} with {@code trailer} appended. */
  static byte[] withTrailer(byte[] key, int... trailer) {
    byte[] k = Arrays.copyOf(key, key.length + trailer.length);
    for (int i = 0; i < trailer.length; i++) {
      k[key.length + i] = (byte) trailer[i];
    }
    return k;
  }

  @Test(timeout = 60_000)
  public void testARealKeyPassesAndNamesItsSegment() throws Exception {
    UcxTestUtils.assumeUcx();
    try (UcxContext context = new UcxContext(UcxTestUtils.options(
            UcxTestUtils.TLS_SHM));
         RegisteredBufferPool pool = new RegisteredBufferPool(context, "k",
             4096, 8192, 8192, false)) {
      long token = pool.acquire(1000);
      byte[] key = pool.regionKey(pool.regionId(token));
      List<PackedRemoteKey.SysvEntry> sysv = sysvOf(key);
      assertEquals("one SysV entry in " + UcxTestUtils.hex(key), 1,
          sysv.size());
      PackedRemoteKey.SysvEntry entry = sysv.get(0);
      // The owner's address of the segment is the slab's address.
      assertEquals(pool.regionAddress(0), entry.ownerAddress);
      assertTrue(pool.ownsSegment(entry.shmid));
      assertFalse(pool.ownsSegment(entry.shmid + 1));
      // The kernel knows the segment: this process made it, big enough.
      long[] facts = new long[6];
      assertEquals(0, NativeUcx.shmStat(entry.shmid, facts));
      assertTrue(facts[0] >= pool.regionLength(0));
      assertEquals(NativeUcx.pid(), facts[1]);
      assertEquals(NativeUcx.euid(), facts[2]);

      // Every truncation of the real key that cuts an entry fails, and so
      // does a byte after the trailer of either kind.
      int trailer = UcxRelease.parse(UcxRelease.loaded())[1] >= 20 ? 1 : 0;
      for (int n = 0; n < key.length - trailer; n++) {
        assertNotNull("prefix of " + n + " bytes", PackedRemoteKey.inspect(
            Arrays.copyOf(key, n)));
      }
      byte[] untrailed = Arrays.copyOf(key, key.length - trailer);
      assertNull(PackedRemoteKey.inspect(untrailed));
      assertNull(PackedRemoteKey.inspect(withTrailer(untrailed, 0xff)));
      assertEquals("packed remote key has 1 unexplained trailing bytes",
          PackedRemoteKey.inspect(withTrailer(untrailed, 0xff, 0xff)));
      pool.release(token);
    }
  }

  @Test(timeout = 10_000)
  public void testTheShapesThatPass() {
    // tcp alone: one empty entry.
    assertTrue(sysvOf(key(1, 0, 0)).isEmpty());
    // self, SysV, cma as UCX 1.13 packs a slab on one host.
    byte[] slab = key(0b1011, 0, 0, 12, 0);
    putLittleEndian(slab, 11, 622606, 4);
    putLittleEndian(slab, 15, 0x7f28d8a20000L, 8);
    List<PackedRemoteKey.SysvEntry> sysv = sysvOf(slab);
    assertEquals(1, sysv.size());
    assertEquals(622606, sysv.get(0).shmid);
    assertEquals(0x7f28d8a20000L, sysv.get(0).ownerAddress);
    // The same as UCX 1.20 and later pack it: a system device after the
    // entries (none, for host memory).
    assertEquals(1, sysvOf(withTrailer(slab, 0xff)).size());
    // InfiniBand devices: 8-byte entries, at high memory domains too.
    assertTrue(sysvOf(key(0x8000000000000006L, 0, 8, 8, 0)).isEmpty());
    // Entries of transports hdfs-rdma does not read through still frame a
    // key: POSIX shared memory's 24 bytes, a GPU transport's.
    assertNull(PackedRemoteKey.inspect(key(0b101, 0, 0, 24)));
    assertNull(PackedRemoteKey.inspect(key(0b11, 0, 12, 40)));
  }

  @Test(timeout = 10_000)
  public void testTheTrailerOfUcx120IsChecked() {
    byte[] k = key(0b11, 0, 12, 0);
    // A device, distances of 3 bytes, and the 0xff that ends them; the
    // flush bit (bit 7) on the device.
    assertNull(PackedRemoteKey.inspect(withTrailer(k, 3, 0xff)));
    assertNull(PackedRemoteKey.inspect(withTrailer(k, 0x83, 0, 7, 9, 1,
        0xff, 0xff, 0xff)));
    assertEquals("packed remote key's system device 3 is not followed by"
        + " distances and their end", PackedRemoteKey.inspect(
            withTrailer(k, 3)));
    assertEquals("packed remote key's system device 3 is not followed by"
        + " distances and their end", PackedRemoteKey.inspect(
            withTrailer(k, 3, 0, 7, 9, 1)));
    assertEquals("packed remote key's system device 3 is not followed by"
        + " distances and their end", PackedRemoteKey.inspect(
            withTrailer(k, 3, 0, 7)));
    assertEquals("packed remote key has 2 unexplained trailing bytes",
        PackedRemoteKey.inspect(withTrailer(k, 3, 0xff, 4, 5)));
  }

  @Test(timeout = 10_000)
  public void testHeaderAndFramingAreChecked() {
    assertEquals("packed remote key of 8 bytes is shorter than its 9-byte"
        + " header", PackedRemoteKey.inspect(new byte[8]));
    // Memory no domain needs a key for (UCX 1.20 and later, tcp alone):
    // the header alone, and nothing after it.
    assertNull(PackedRemoteKey.inspect(key(0, 0)));
    assertEquals("packed remote key names no memory domain but has 1 bytes"
        + " after its header", PackedRemoteKey.inspect(withTrailer(key(0, 0),
            0xff)));
    assertEquals("packed remote key is for memory type 1, not host memory",
        PackedRemoteKey.inspect(key(1, 1, 0)));
    // An md_map promising more entries than the key has.
    assertEquals("packed remote key ends before the entry of memory domain"
        + " 1", PackedRemoteKey.inspect(key(0b11, 0, 0)));
    // An entry length pointing past the end.
    byte[] cut = key(1, 0, 12);
    assertEquals("entry of memory domain 0 runs past the end of the packed"
        + " remote key", PackedRemoteKey.inspect(Arrays.copyOf(cut, 15)));
    // Bytes after the last entry that are no trailer.
    assertEquals("packed remote key's system device 0 is not followed by"
        + " distances and their end", PackedRemoteKey.inspect(
            Arrays.copyOf(key(1, 0, 8), 21)));
  }

  /**
   * Random bytes never reach UCX: whatever frames as a key must also carry
   * entries of the exact shapes of the domains an endpoint reaches.
   */
  @Test(timeout = 60_000)
  public void testRandomKeysAreRefused() throws Exception {
    Random random = new Random(5);
    Map<Integer, String> shm = TransportReport.parse(SHM_ENDPOINT)
        .peerMemoryDomains();
    int framed = 0;
    int handedToUcx = 0;
    for (int i = 0; i < 200_000; i++) {
      byte[] key = new byte[1 + random.nextInt(160)];
      random.nextBytes(key);
      if (PackedRemoteKey.inspect(key) != null) {
        continue;
      }
      framed++;
      try {
        PackedRemoteKey.forEndpoint(key, shm, null);
        handedToUcx++;
      } catch (MalformedMessageException expected) {
        // refused
      }
    }
    assertEquals("random keys handed to UCX (" + framed + " framed as"
        + " keys)", 0, handedToUcx);
  }

  /** ucp_ep_print_info of a shared-memory endpoint, UCX 1.13.1. */
  static final String SHM_ENDPOINT = "#\n# UCP endpoint \n#\n"
      + "#               peer: <no debug data>\n"
      + "#                 lane[0]:  1:sysv/memory.0 md[1]           ->"
      + " md[1]/sysv/sysdev[255] am am_bw#0 keepalive\n"
      + "#                 lane[1]:  2:posix/memory.0 md[2]          ->"
      + " md[2]/posix/sysdev[255]\n#\n";
  /** The same of a tcp endpoint. */
  static final String TCP_ENDPOINT = "#                 lane[0]:  0:tcp/lo.0"
      + " md[0]                -> md[0]/tcp/sysdev[255] am am_bw#0"
      + " keepalive wireup\n";

  @Test(timeout = 10_000)
  public void testTheEndpointsMemoryDomainsAreRead() {
    Map<Integer, String> shm = TransportReport.parse(SHM_ENDPOINT)
        .peerMemoryDomains();
    assertEquals("{1=sysv, 2=posix}", shm.toString());
    assertEquals("{0=tcp}", TransportReport.parse(TCP_ENDPOINT)
        .peerMemoryDomains().toString());
    assertEquals("{3=ib}", TransportReport.parse("lane[0]:  5:"
        + "rc_mlx5/mlx5_0:1.0 md[3]  -> addr[1].md[3]/ib/sysdev[0] rma_bw#0"
        + " am\n")
        .peerMemoryDomains().toString());
    assertTrue(TransportReport.parse(null).peerMemoryDomains().isEmpty());
  }

  @Test(timeout = 10_000)
  public void testUcxIsHandedOnlyTheEntriesOfReachedDomains()
      throws Exception {
    Map<Integer, String> shm = TransportReport.parse(SHM_ENDPOINT)
        .peerMemoryDomains();
    // A slab's key (self, SysV, cma): UCX gets the SysV entry alone, and a
    // trailer of no device.
    byte[] slab = key(0b1011, 0, 0, 12, 0);
    putLittleEndian(slab, 11, 622606, 4);
    byte[] sysvOnly = Arrays.copyOfRange(slab, 9 + 1, 9 + 1 + 13);
    List<PackedRemoteKey.SysvEntry> sysv =
        new ArrayList<PackedRemoteKey.SysvEntry>();
    byte[] forUcx = PackedRemoteKey.forEndpoint(slab, shm, sysv);
    assertEquals(UcxTestUtils.hex(key(0b10, 0, 12)).substring(0, 18)
        + UcxTestUtils.hex(sysvOnly) + "ff", UcxTestUtils.hex(forUcx));
    assertNull(PackedRemoteKey.inspect(forUcx));
    assertEquals(1, sysv.size());
    assertEquals(1, sysv.get(0).memoryDomain);
    assertEquals(622606, sysv.get(0).shmid);
    // UCX 1.20's key of the same slab: the same for UCX.
    assertEquals(UcxTestUtils.hex(forUcx), UcxTestUtils.hex(
        PackedRemoteKey.forEndpoint(withTrailer(slab, 0xff), shm, null)));
    assertEquals(UcxTestUtils.hex(forUcx), UcxTestUtils.hex(
        PackedRemoteKey.forEndpoint(withTrailer(slab, 0x85, 1, 2, 3, 0xff),
            shm, null)));
    // tcp: its empty entry.
    Map<Integer, String> tcp = TransportReport.parse(TCP_ENDPOINT)
        .peerMemoryDomains();
    assertEquals(UcxTestUtils.hex(key(1, 0, 0)) + "ff", UcxTestUtils.hex(
        PackedRemoteKey.forEndpoint(key(0b11, 0, 0, 8), tcp, null)));
    // A reached domain of a transport hdfs-rdma does not read through is
    // left out: UCX never parses it.
    assertEquals(UcxTestUtils.hex(PackedRemoteKey.forEndpoint(
        key(0b10, 0, 12), shm, null)), UcxTestUtils.hex(
            PackedRemoteKey.forEndpoint(key(0b110, 0, 12, 24), shm, null)));
    // Entries of a reached domain in another transport's shape.
    expectRefused(key(0b10, 0, 8), shm, "entry of memory domain 1 is 8"
        + " bytes, but the peer's memory domain 1 is sysv, whose keys are 12"
        + " bytes");
    expectRefused(key(0b10, 0, 0), shm, "memory domain 1 is 0 bytes");
    expectRefused(key(1, 0, 12), tcp, "memory domain 0 is 12 bytes");
    // UCX 1.20's keys over tcp, which needs none: the header alone.
    assertEquals(UcxTestUtils.hex(key(0, 0)), UcxTestUtils.hex(
        PackedRemoteKey.forEndpoint(key(0, 0), tcp, null)));
    assertEquals(UcxTestUtils.hex(key(0, 0)), UcxTestUtils.hex(
        PackedRemoteKey.forEndpoint(withTrailer(key(0b10, 0, 12), 0xff),
            tcp, null)));
    // Nothing left for UCX of a key that had entries.
    expectRefused(key(0b100, 0, 12), shm, "no entry of the packed remote"
        + " key is in a memory domain this endpoint reaches through a"
        + " transport hdfs-rdma reads through {1=sysv, 2=posix}");
    expectRefused(key(0b1001, 0, 0, 12), shm, "no entry");
    expectRefused(key(1, 0, 0), new java.util.TreeMap<Integer, String>(),
        "no entry");
    expectRefused(key(0, 0), shm, "no entry");
  }

  private static void expectRefused(byte[] key, Map<Integer, String> domains,
      String message) {
    try {
      PackedRemoteKey.forEndpoint(key, domains, null);
      fail("handed " + UcxTestUtils.hex(key) + " to UCX");
    } catch (MalformedMessageException e) {
      assertTrue("\"" + e.getMessage() + "\" should say \"" + message
          + "\"", e.getMessage().contains(message));
    }
  }
}
