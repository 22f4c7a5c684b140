package org.hdfsrdma.ucx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import org.junit.Test;

/**
 * Which UCX releases the library runs on: refused below the oldest, a
 * warning above the newest tested, and the loaded release's own remote
 * keys of a layout the library knows.
 */
public class TestUcxRelease {

  @Test(timeout = 10_000)
  public void testReleasesByNumber() {
    assertNull(UcxRelease.refusal("1.13.1"));
    assertNull(UcxRelease.refusal("1.22.0"));
    assertNull(UcxRelease.refusal("1.23.0"));
    assertEquals("UCX 1.12.1 is older than 1.13, the oldest release"
        + " hdfs-rdma runs on", UcxRelease.refusal("1.12.1"));
    assertEquals("the loaded UCX's release is unknown (unknown (UCX not"
        + " loaded))", UcxRelease.refusal("unknown (UCX not loaded)"));
    assertFalse(UcxRelease.newerThanTested("1.22.0"));
    assertFalse(UcxRelease.newerThanTested("1.14.1"));
    assertTrue(UcxRelease.newerThanTested("1.23.0"));
    assertTrue(UcxRelease.newerThanTested("2.0.0"));
    assertTrue(UcxRelease.sameRelease("1.13.1", "1.13.1"));
    assertFalse(UcxRelease.sameRelease("1.13.1", "1.22.0"));
    assertFalse(UcxRelease.sameRelease("1.22.0", "1.22.1"));
    assertFalse(UcxRelease.sameRelease(null, "1.22.1"));
  }

  @Test(timeout = 60_000)
  public void testTheLoadedReleaseIsSupportedAndItsKeysKnown()
      throws Exception {
    UcxTestUtils.assumeUcx();
    String release = UcxRelease.loaded();
    assertNull(release, UcxRelease.refusal(release));
    try (UcxContext context = new UcxContext(UcxTestUtils.options(
        UcxTestUtils.TLS_SHM))) {
      assertNull(UcxRelease.keyLayoutProblem(context));
      assertEquals("the check leaves nothing registered", 0,
          context.openDependents());
    }
  }

  /**
   * The profile two processes of a host compare before sharing memory
   * names the receive queue's size this library sets, which the JVM's own
   * view of the environment does not show: a process of a release before
   * that default (UCX's 64 entries) must not share memory with this one.
   */
  @Test(timeout = 60_000)
  public void testTheProfileNamesTheQueueSizeTheProcessRunsWith() {
    UcxTestUtils.assumeUcx();
    String profile = UcxRelease.sharedMemoryProfile();
    assertTrue(profile, profile.startsWith(UcxRelease.loaded()));
    if (System.getenv("UCX_MM_FIFO_SIZE") == null) {
      assertEquals("256", NativeIntrospection.appliedDefaults()
          .get("UCX_MM_FIFO_SIZE"));
      assertTrue(profile, profile.contains(" UCX_MM_FIFO_SIZE=256"));
    } else {
      assertTrue(profile, profile.contains(" UCX_MM_FIFO_SIZE="
          + System.getenv("UCX_MM_FIFO_SIZE")));
    }
    assertFalse("not a queue's layout: " + profile,
        profile.contains("UCX_MM_ERROR_HANDLING"));
  }
}
