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

  @Test(timeout = 60_000)
  public void testARealKeyPassesAndNamesItsSegment() throws Exception {
    UcxTestUtils.assumeUcx();
    assertTrue("the loaded UCX's key layout is known: "
        + NativeIntrospection.loadedUcxVersion(),
        PackedRemoteKey.layoutKnown(NativeIntrospection.loadedUcxVersion()));
    try (UcxContext context = new UcxContext(UcxTestUtils.options(
            UcxTestUtils.TLS_SHM));
         RegisteredBufferPool pool = new RegisteredBufferPool(context, "k",
             4096, 8192, 8192, false)) {
      long token = pool.acquire(1000);
      byte[] key = pool.regionKey(pool.regionId(token));
      List<PackedRemoteKey.SysvEntry> sysv =
          new ArrayList<PackedRemoteKey.SysvEntry>();
      assertNull(PackedRemoteKey.inspect(key, sysv));
      assertNull(PackedRemoteKey.check(key));
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

      // Every truncation of the real key, and any trailing byte, fails.
      for (int n = 0; n < key.length; n++) {
        assertNotNull("prefix of " + n + " bytes", PackedRemoteKey.check(
            Arrays.copyOf(key, n)));
      }
      String trailing = PackedRemoteKey.check(Arrays.copyOf(key,
          key.length + 1));
      assertEquals("packed remote key has 1 unexplained trailing bytes",
          trailing);
      pool.release(token);
    }
  }

  @Test(timeout = 10_000)
  public void testTheShapesThatPass() {
    List<PackedRemoteKey.SysvEntry> sysv =
        new ArrayList<PackedRemoteKey.SysvEntry>();
    // tcp alone: one empty entry.
    assertNull(PackedRemoteKey.inspect(key(1, 0, 0), sysv));
    // self, SysV, cma as UCX 1.13 packs a slab on one host.
    byte[] slab = key(0b1011, 0, 0, 12, 0);
    putLittleEndian(slab, 11, 622606, 4);
    putLittleEndian(slab, 15, 0x7f28d8a20000L, 8);
    assertNull(PackedRemoteKey.inspect(slab, sysv));
    assertEquals(1, sysv.size());
    assertEquals(622606, sysv.get(0).shmid);
    assertEquals(0x7f28d8a20000L, sysv.get(0).ownerAddress);
    // InfiniBand devices: 8-byte entries, at high memory domains too.
    sysv.clear();
    assertNull(PackedRemoteKey.inspect(key(0x8000000000000006L, 0, 8, 8, 0),
        sysv));
    assertTrue(sysv.isEmpty());
    // A null list only checks.
    assertNull(PackedRemoteKey.inspect(slab, null));
  }

  @Test(timeout = 10_000)
  public void testPosixAndUnknownShapesAreRefused() {
    // POSIX shared memory: seg_id, address, length (24 bytes) - a file a
    // writer could truncate under the reader.
    String posix = PackedRemoteKey.check(key(0b101, 0, 0, 24));
    assertEquals("entry of memory domain 2 is 24 bytes: not a transport"
        + " hdfs-rdma reads through (self, cma, tcp, InfiniBand or SysV"
        + " shared memory)", posix);
    for (int length = 1; length < 256; length++) {
      String problem = PackedRemoteKey.check(key(1, 0, length));
      if (length == 8 || length == 12) {
        assertNull(problem);
      } else {
        assertNotNull("entry of " + length + " bytes", problem);
        assertTrue(problem, problem.contains("is " + length + " bytes"));
      }
    }
    // A good entry does not excuse a bad one after it.
    assertNotNull(PackedRemoteKey.check(key(0b11, 0, 12, 16)));
  }

  @Test(timeout = 10_000)
  public void testHeaderAndFramingAreChecked() {
    assertEquals("packed remote key of 8 bytes is shorter than its 9-byte"
        + " header", PackedRemoteKey.check(new byte[8]));
    assertEquals("packed remote key names no memory domain",
        PackedRemoteKey.check(key(0, 0)));
    assertEquals("packed remote key is for memory type 1, not host memory",
        PackedRemoteKey.check(key(1, 1, 0)));
    // An md_map promising more entries than the key has.
    assertEquals("packed remote key ends before the entry of memory domain"
        + " 1", PackedRemoteKey.check(key(0b11, 0, 0)));
    // An entry length pointing past the end.
    byte[] cut = key(1, 0, 12);
    assertEquals("entry of memory domain 0 runs past the end of the packed"
        + " remote key", PackedRemoteKey.check(Arrays.copyOf(cut, 15)));
    // Bytes after the last entry.
    assertEquals("packed remote key has 3 unexplained trailing bytes",
        PackedRemoteKey.check(Arrays.copyOf(key(1, 0, 8), 21)));
  }

  @Test(timeout = 60_000)
  public void testRandomKeysAreRefused() {
    Random random = new Random(5);
    int passed = 0;
    for (int i = 0; i < 200_000; i++) {
      byte[] key = new byte[1 + random.nextInt(160)];
      random.nextBytes(key);
      if (PackedRemoteKey.check(key) == null) {
        passed++;
      }
    }
    assertEquals("random keys that passed the shape check", 0, passed);
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
    // A slab's key (self, SysV, cma): UCX gets the SysV entry alone.
    byte[] slab = key(0b1011, 0, 0, 12, 0);
    byte[] sysvOnly = Arrays.copyOfRange(slab, 9 + 1, 9 + 1 + 13);
    byte[] forUcx = PackedRemoteKey.forEndpoint(slab, shm);
    assertEquals(UcxTestUtils.hex(key(0b10, 0, 12)).substring(0, 18)
        + UcxTestUtils.hex(sysvOnly), UcxTestUtils.hex(forUcx));
    assertNull(PackedRemoteKey.check(forUcx));
    // tcp: its empty entry.
    Map<Integer, String> tcp = TransportReport.parse(TCP_ENDPOINT)
        .peerMemoryDomains();
    assertEquals(UcxTestUtils.hex(key(1, 0, 0)), UcxTestUtils.hex(
        PackedRemoteKey.forEndpoint(key(0b11, 0, 0, 8), tcp)));
    // Entries of a reached domain in another transport's shape, or of a
    // transport hdfs-rdma does not read through.
    expectRefused(key(0b100, 0, 12), shm, "entry of memory domain 2 is for"
        + " UCX's posix transport, which hdfs-rdma does not read through");
    expectRefused(key(0b100, 0, 0), shm, "memory domain 2 is for UCX's posix");
    expectRefused(key(0b10, 0, 8), shm, "entry of memory domain 1 is 8"
        + " bytes, but the peer's memory domain 1 is sysv, whose keys are 12"
        + " bytes");
    expectRefused(key(0b10, 0, 0), shm, "memory domain 1 is 0 bytes");
    expectRefused(key(1, 0, 12), tcp, "memory domain 0 is 12 bytes");
    // Nothing left for UCX.
    expectRefused(key(0b1001, 0, 0, 12), shm, "no entry of the packed remote"
        + " key is in a memory domain this endpoint reaches {1=sysv,"
        + " 2=posix}");
    expectRefused(key(1, 0, 0), new java.util.TreeMap<Integer, String>(),
        "no entry");
  }

  private static void expectRefused(byte[] key, Map<Integer, String> domains,
      String message) {
    try {
      PackedRemoteKey.forEndpoint(key, domains);
      fail("handed " + UcxTestUtils.hex(key) + " to UCX");
    } catch (MalformedDescriptorException e) {
      assertTrue("\"" + e.getMessage() + "\" should say \"" + message
          + "\"", e.getMessage().contains(message));
    }
  }

  @Test(timeout = 10_000)
  public void testLayoutIsKnownForUcx19To115Only() {
    assertTrue(PackedRemoteKey.layoutKnown("1.13.1"));
    assertTrue(PackedRemoteKey.layoutKnown("1.9.0"));
    assertTrue(PackedRemoteKey.layoutKnown("1.15.0"));
    assertFalse(PackedRemoteKey.layoutKnown("1.8.1"));
    assertFalse(PackedRemoteKey.layoutKnown("1.16.0"));
    assertFalse(PackedRemoteKey.layoutKnown("2.0.0"));
    assertFalse(PackedRemoteKey.layoutKnown("garbage"));
    assertFalse(PackedRemoteKey.layoutKnown(null));
  }
}
