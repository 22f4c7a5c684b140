package org.hdfsrdma.ucx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * Hostile region announcements against a real getter: a getter worker in
 * this JVM whose handler opens regions through every check of
 * {@link RemoteRegion}, and an exposer worker that announces its real slab
 * and crafted lies with {@link UcxEndpoint#send}. The product's transports
 * (everything but tcp: same-host shared memory).
 *
 * <p>Each lie must be refused with a message that says what is wrong,
 * leave nothing readable (no region, no attachment of the segment it
 * named), leave the getter running, and a true announcement right after it
 * must be read byte-exact.
 *
 * <p>The getter's policy owns the exposer's pool (the two share this JVM,
 * as a client and a DataNode of one JVM would); segments of another user
 * come from native/'s {@code shm_fixture}.
 */
public class TestRemoteRegionChecks {

  private static final int BUFFER = 64 * 1024;
  private static final long SESSION = 7L;
  private static final long WAIT_MS = 10_000;

  private final AtomicReference<RegisteredBufferPool> exposed =
      new AtomicReference<RegisteredBufferPool>();
  private TestGetter getter;
  private TestExposer exposer;
  private UcxWorker.Driver driver;
  private long token;
  private PackedRemoteKey.SysvEntry slab;
  private long slabSize;
  /** The exposer's memory domains of SysV and POSIX shared memory. */
  private int sysvMd;
  private int posixMd;
  private int nextGoodRegion = 1000;

  @Before
  public void setUp() throws Exception {
    UcxTestUtils.assumeUcx();
    getter = new TestGetter(UcxTestUtils.TLS_SHM, new RemoteRegion.Policy(
        id -> exposed.get() != null && exposed.get().ownsSegment(id),
        false));
    exposer = new TestExposer(UcxTestUtils.TLS_SHM, getter.worker.address(),
        BUFFER, 4);
    exposed.set(exposer.pool);
    token = exposer.pool.acquire(1000);
    UcxTestUtils.fill(exposer.pool.buffer(token), BUFFER, 11);
    byte[] key = exposer.pool.regionKey(0);
    List<PackedRemoteKey.SysvEntry> sysv = TestPackedRemoteKey.sysvOf(key);
    assertEquals(1, sysv.size());
    slab = sysv.get(0);
    slabSize = facts(slab.shmid)[0];
    assertTrue(slabSize >= exposer.pool.regionLength(0));
    sysvMd = memoryDomainOf(key, 12);
    posixMd = laneMemoryDomain(exposer.endpoint, "posix");
    driver = getter.worker.registerDriver();
  }

  @After
  public void tearDown() {
    if (driver != null) {
      getter.worker.unregisterDriver(driver);
    }
    if (exposer != null) {
      exposer.pool.release(token);
      exposer.close();
    }
    if (getter != null) {
      getter.close();
    }
  }

  // ----------------------------------------------------------- the lies

  @Test(timeout = 60_000)
  public void testRegionPastTheSegmentsRealSize() throws Exception {
    long base = slab.ownerAddress;
    expectRefused(1, base, slabSize + 1, slabKey(), "does not lie inside "
        + slab + " of " + slabSize + " bytes");
    expectRefused(2, base + slabSize - 4096, 8192, slabKey(),
        "does not lie inside");
    expectRefused(3, base - 4096, 4096, slabKey(), "does not lie inside");
    expectRefused(4, base + slabSize, 1, slabKey(), "does not lie inside");
    // The exact segment is fine.
    announceAndRead(slab.ownerAddress, slabSize, slabKey());
  }

  @Test(timeout = 60_000)
  public void testOwnerAddressThatLies() throws Exception {
    long base = slab.ownerAddress;
    // The key places the segment after the region's start.
    expectRefused(1, base, BUFFER, key(sysvMd, slab.shmid, base + 4096),
        "does not lie inside SysV segment " + slab.shmid);
    // No address at all.
    expectRefused(2, base, BUFFER, key(sysvMd, slab.shmid, 0),
        "does not lie inside");
    // A segment whose end would wrap past the top of the address space.
    long high = 0x7fffffffffff0000L;
    expectRefused(3, high + 4096, 4096, key(sysvMd, slab.shmid, high),
        "does not lie inside");
    // A region in the top half of the address space (no user memory
    // there): with a negative base, contains() would overflow.
    long top = -4096L;
    expectRefused(4, top, 4096, key(sysvMd, slab.shmid, top),
        "bad region: base 0xfffffffffffff000");
  }

  /**
   * A lie that keeps the region inside the segment only renames the
   * segment's own bytes: the reader still covers the segment and nothing
   * else.
   */
  @Test(timeout = 60_000)
  public void testAConsistentLieStaysInsideTheSegment() throws Exception {
    long claimed = 0x100000000L;
    exposer.announce(SESSION, 1, claimed, slabSize,
        key(sysvMd, slab.shmid, claimed));
    UcxTestUtils.waitFor(() -> getter.regions.containsKey(1)
        || !getter.rejections.isEmpty(), WAIT_MS, "the announcement");
    assertTrue(getter.rejections.toString(), getter.rejections.isEmpty());
    RemoteRegion r = getter.regions.get(1);
    assertTrue(r.isDirect());
    assertEquals(slabSize, r.reader().capacity());
    assertFalse(r.contains(claimed + slabSize - 1, 2));
    exposer.describeAt(SESSION, 1, claimed, BUFFER, 11);
    assertEquals(-1, UcxTestUtils.firstMismatch(ByteBuffer.wrap(
        getter.read(getter.next(driver, WAIT_MS))), BUFFER, 11));
  }

  @Test(timeout = 60_000)
  public void testSegmentThatDoesNotExist() throws Exception {
    int gone;
    try (ShmFixture f = ShmFixture.start(4096, -1)) {
      gone = f.shmid;
    }
    UcxTestUtils.waitFor(() -> NativeUcx.shmStat(gone, new long[6]) != 0,
        WAIT_MS, "the fixture's segment to go");
    expectRefused(1, 0x10000000L, 4096, key(sysvMd, gone, 0x10000000L),
        "SysV segment " + gone + " at 0x10000000 named by exposer cannot be"
        + " examined: errno");
  }

  @Test(timeout = 60_000)
  public void testThisProcesssSegmentNotOwnedByThePolicy() throws Exception {
    try (RegisteredBufferPool secret = new RegisteredBufferPool(
        getter.context, "secret", 4096, 4096, 4096, false)) {
      long t = secret.acquire(1000);
      UcxTestUtils.fill(secret.buffer(t), 4096, 99);
      List<PackedRemoteKey.SysvEntry> sysv =
          TestPackedRemoteKey.sysvOf(secret.regionKey(0));
      PackedRemoteKey.SysvEntry s = sysv.get(0);
      expectRefused(1, s.ownerAddress, 4096, secret.regionKey(0),
          s + " named by exposer is this process's own memory");
      // Named through a key of the exposer's shape, the same.
      expectRefused(2, s.ownerAddress, 4096,
          key(sysvMd, s.shmid, s.ownerAddress), "this process's own memory");
      assertEquals(1, facts(s.shmid)[4]);
      secret.release(t);
    }
  }

  @Test(timeout = 60_000)
  public void testSegmentOfAnotherUser() throws Exception {
    int other = NativeUcx.euid() == 65534 ? 65533 : 65534;
    try (ShmFixture f = ShmFixture.start(65536, other)) {
      assertEquals(other, facts(f.shmid)[2]);
      expectRefused(1, f.ownerAddress, 4096,
          key(sysvMd, f.shmid, f.ownerAddress), "SysV segment " + f.shmid
          + " at 0x" + Long.toHexString(f.ownerAddress) + " named by exposer"
          + " belongs to uid " + other + ", not to this process's user");
      assertEquals("only the fixture is attached", 1, facts(f.shmid)[4]);
    }
  }

  /**
   * The control of the previous test: a segment of this user made by
   * another process passes every check and is read (the fixture fills it
   * with 0xA5).
   */
  @Test(timeout = 60_000)
  public void testSegmentOfAnotherProcessOfThisUserIsRead() throws Exception {
    try (ShmFixture f = ShmFixture.start(65536, -1)) {
      exposer.announce(SESSION, 1, f.ownerAddress, f.size,
          key(sysvMd, f.shmid, f.ownerAddress));
      UcxTestUtils.waitFor(() -> getter.regions.containsKey(1)
          || !getter.rejections.isEmpty(), WAIT_MS, "the announcement");
      assertTrue(getter.rejections.toString(), getter.rejections.isEmpty());
      exposer.describeAt(SESSION, 1, f.ownerAddress + 100, 300, 0);
      byte[] bytes = getter.read(getter.next(driver, WAIT_MS));
      assertEquals(300, bytes.length);
      for (byte b : bytes) {
        assertEquals((byte) 0xA5, b);
      }
      assertEquals("the getter holds one attachment", 2,
          facts(f.shmid)[4]);
      getter.regions.remove(1).release();
      assertEquals(1, facts(f.shmid)[4]);
    }
  }

  /**
   * Keys with a second 12-byte entry beside the slab's, in POSIX shared
   * memory's domain (which the endpoint reaches) or in one it does not
   * reach, naming the slab again or another segment of this user: only
   * the entry of the reached SysV domain is examined and handed to UCX, so
   * the region reads the slab and nothing attaches the other segment.
   */
  @Test(timeout = 60_000)
  public void testOnlyTheReachedSysvEntryIsUsed() throws Exception {
    try (ShmFixture f = ShmFixture.start(slabSize, -1)) {
      long base = slab.ownerAddress;
      long length = exposer.pool.regionLength(0);
      byte[] twice = key(1L << sysvMd | 1L << posixMd, 0, 12, 12);
      putEntry(twice, 9, slab.shmid, base);
      putEntry(twice, 22, slab.shmid, base);
      announceAndRead(base, length, twice);
      byte[] two = key(1L << sysvMd | 1L << posixMd, 0, 12, 12);
      putEntry(two, 9, slab.shmid, base);
      putEntry(two, 22, f.shmid, base);
      announceAndRead(base, length, two);
      byte[] far = key(1L << sysvMd | 1L << 40, 0, 12, 12);
      putEntry(far, 9, slab.shmid, base);
      putEntry(far, 22, f.shmid, base);
      announceAndRead(base, length, far);
      assertEquals("only the fixture is attached", 1, facts(f.shmid)[4]);
    }
  }

  /**
   * Well-shaped entries in the wrong memory domain: UCX unpacks each entry
   * with the transport of its domain, and POSIX shared memory's unpack of
   * a SysV entry or of an empty one aborts the process
   * (mm_posix.c:360 "Assertion `length > 0' failed" in UCX 1.13).
   */
  @Test(timeout = 60_000)
  public void testEntriesInTheWrongMemoryDomain() throws Exception {
    long base = slab.ownerAddress;
    // Entries of POSIX shared memory's domain never reach UCX.
    String none = "no entry of the packed remote key";
    expectRefused(1, base, BUFFER, key(posixMd, slab.shmid, base), none);
    expectRefused(2, base, BUFFER, key(1L << posixMd, 0, 0), none);
    expectRefused(3, base, BUFFER, key(1L << posixMd, 0, 8), none);
    expectRefused(4, base, BUFFER, key(1L << sysvMd, 0, 8),
        "memory domain " + sysvMd);
    expectRefused(5, base, BUFFER, key(1L << sysvMd, 0, 0),
        "memory domain " + sysvMd);
    expectRefused(6, base, BUFFER, key(1L << posixMd, 0, 24), none);
  }

  /**
   * A peer on another host packs its shared-memory segment into its keys
   * too. An endpoint that reaches it over the network only never maps that
   * segment, so the getter must not examine it: the kernel here does not
   * know the segment (the chain's downstream DataNode on another host was
   * refused with "cannot be examined: errno 22"), or knows another one
   * under its id. Here the exposer's segment is this process's own, which
   * the getter's policy does not vouch for: examined, it would be refused.
   * The region is read by gets over tcp instead, and nothing attaches the
   * segment.
   */
  @Test(timeout = 60_000)
  public void testSegmentOfADomainTheEndpointDoesNotReachIsNotExamined()
      throws Exception {
    try (TestGetter far = new TestGetter(UcxTestUtils.TLS_TCP,
            new RemoteRegion.Policy(id -> false, true));
         TestExposer near = new TestExposer("tcp,sysv",
             far.worker.address(), BUFFER, 2);
         RegisteredBufferPool landing = new RegisteredBufferPool(
             far.context, "landing", BUFFER, BUFFER, BUFFER, false)) {
      long t = near.pool.acquire(1000);
      UcxTestUtils.fill(near.pool.buffer(t), BUFFER, 23);
      List<PackedRemoteKey.SysvEntry> sysv = TestPackedRemoteKey.sysvOf(
          near.pool.regionKey(near.pool.regionId(t)));
      assertEquals("the exposer's key names its segment", 1, sysv.size());
      long attachedBefore = facts(sysv.get(0).shmid)[4];
      UcxWorker.Driver farDriver = far.worker.registerDriver();
      try {
        near.announce(SESSION, 1, t);
        near.describe(SESSION, 1, t, BUFFER, 1);
        PacketDescriptor d = far.next(farDriver, WAIT_MS);
        assertTrue(far.rejections.toString(), far.rejections.isEmpty());
        RemoteRegion r = far.regions.get(1);
        assertFalse(r + " is read by gets", r.isDirect());
        assertEquals(attachedBefore, facts(sysv.get(0).shmid)[4]);
        byte[] bytes = far.fetch(farDriver, d, landing, new StatusSlots(1),
            WAIT_MS);
        assertEquals(-1, UcxTestUtils.firstMismatch(ByteBuffer.wrap(bytes),
            BUFFER, 23));
      } finally {
        far.worker.unregisterDriver(farDriver);
        near.pool.release(t);
      }
    }
  }

  // ------------------------------------------------------------ helpers

  /**
   * Announces a lie under {@code regionId} and expects it refused, with
   * nothing left of it, and the getter still serving a true region.
   */
  private void expectRefused(int regionId, long base, long length,
      byte[] key, String message) throws Exception {
    long attachedBefore = facts(slab.shmid)[4];
    exposer.announce(SESSION, regionId, base, length, key);
    String why = getter.rejections.poll(WAIT_MS, TimeUnit.MILLISECONDS);
    assertNotNull("no rejection of " + UcxTestUtils.hex(key), why);
    assertTrue("\"" + why + "\" should say \"" + message + "\"",
        why.contains(message));
    assertFalse("a region was opened", getter.regions.containsKey(regionId));
    assertEquals("an attachment was left behind", attachedBefore,
        facts(slab.shmid)[4]);
    assertTrue(getter.worker.isRunning());
    assertTrue(getter.worker.progressThread().isAlive());
    announceAndRead(slab.ownerAddress, exposer.pool.regionLength(0),
        slabKey());
  }

  /** Announces a true region under a fresh id and reads a packet of it. */
  private void announceAndRead(long base, long length, byte[] key)
      throws Exception {
    int id = nextGoodRegion++;
    exposer.announce(SESSION, id, base, length, key);
    long seqno = id;
    exposer.describe(SESSION, id, token, BUFFER, seqno);
    PacketDescriptor d = getter.next(driver, WAIT_MS);
    assertEquals(seqno, d.seqno());
    assertTrue(getter.rejections.toString(), getter.rejections.isEmpty());
    assertTrue(getter.regions.get(id).isDirect());
    assertEquals(-1, UcxTestUtils.firstMismatch(ByteBuffer.wrap(
        getter.read(d)), BUFFER, 11));
    getter.regions.remove(id).release();
  }

  private byte[] slabKey() {
    return exposer.pool.regionKey(0);
  }

  /** A key of one SysV entry in memory domain {@code md}. */
  private static byte[] key(int md, int shmid, long ownerAddress) {
    byte[] k = key(1L << md, 0, 12);
    putEntry(k, 9, shmid, ownerAddress);
    return k;
  }

  private static byte[] key(long mdMap, int memoryType, int... lengths) {
    return TestPackedRemoteKey.key(mdMap, memoryType, lengths);
  }

  /** Writes a SysV entry (length byte at {@code at}). */
  private static void putEntry(byte[] k, int at, int shmid, long address) {
    k[at] = 12;
    TestPackedRemoteKey.putLittleEndian(k, at + 1, shmid, 4);
    TestPackedRemoteKey.putLittleEndian(k, at + 5, address, 8);
  }

  /** The kernel's facts about a segment (see NativeUcx.shmStat). */
  private static long[] facts(int shmid) {
    long[] facts = new long[6];
    int rc = NativeUcx.shmStat(shmid, facts);
    assertEquals("IPC_STAT of " + shmid, 0, rc);
    return facts;
  }

  /** The memory domain of the first entry of {@code length} bytes. */
  private static int memoryDomainOf(byte[] key, int length) {
    long mdMap = ByteBuffer.wrap(key, 0, 8).order(
        java.nio.ByteOrder.LITTLE_ENDIAN).getLong();
    int p = 9;
    for (int md = 0; md < 64; md++) {
      if ((mdMap & (1L << md)) != 0) {
        if ((key[p] & 0xFF) == length) {
          return md;
        }
        p += 1 + (key[p] & 0xFF);
      }
    }
    throw new AssertionError("no entry of " + length + " bytes");
  }

  /** The memory domain UCX reaches the peer's {@code transport} in. */
  private static int laneMemoryDomain(UcxEndpoint e, String transport) {
    String info = e.transports().raw();
    Matcher m = Pattern.compile("->\\s*md\\[(\\d+)\\]/" + transport + "/")
        .matcher(info);
    assertTrue("no " + transport + " lane in " + info, m.find());
    return Integer.parseInt(m.group(1));
  }
}
