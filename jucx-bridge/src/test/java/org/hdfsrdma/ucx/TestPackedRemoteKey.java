package org.hdfsrdma.ucx;

import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.util.Arrays;
import java.util.Random;

import org.junit.Test;

/** The structural check of packed remote keys. */
public class TestPackedRemoteKey {

  @Test(timeout = 60_000)
  public void testRealKeysPass() throws Exception {
    UcxTestUtils.assumeUcx();
    assertTrue("the loaded UCX's key layout is known: "
        + NativeIntrospection.loadedUcxVersion(),
        PackedRemoteKey.layoutKnown(NativeIntrospection.loadedUcxVersion()));
    try (UcxContext context = new UcxContext(UcxContext.Options.defaults());
         RegisteredBufferPool pool = new RegisteredBufferPool(context, "k",
             4096, 4096, 4096, false);
         RegisteredBuffer b = pool.acquire(1000)) {
      byte[] key = b.remoteKey();
      assertNull(PackedRemoteKey.check(key));
      // Truncated or extended, the same key fails.
      assertNotNull(PackedRemoteKey.check(Arrays.copyOf(key, key.length - 1)));
      assertNotNull(PackedRemoteKey.check(Arrays.copyOf(key, key.length + 1)));
    }
  }

  @Test
  public void testGarbageFails() {
    Random random = new Random(5);
    int passed = 0;
    for (int i = 0; i < 100_000; i++) {
      byte[] key = new byte[8 + random.nextInt(120)];
      random.nextBytes(key);
      if (PackedRemoteKey.check(key) == null) {
        passed++;
      }
    }
    assertTrue(passed + " random keys passed", passed < 10);
  }

  @Test
  public void testHandWrittenLayouts() {
    // md 0 and md 2, two-byte and zero-byte entries, host memory.
    byte[] good = {5, 0, 0, 0, 0, 0, 0, 0, 0, 2, 7, 7, 0};
    assertNull(PackedRemoteKey.check(good));
    byte[] cuda = good.clone();
    cuda[8] = 1;
    assertNotNull(PackedRemoteKey.check(cuda));
    byte[] noMd = new byte[9];
    assertNotNull(PackedRemoteKey.check(noMd));
    assertFalse(PackedRemoteKey.layoutKnown("1.16.0"));
    assertTrue(PackedRemoteKey.layoutKnown("1.13.1"));
    assertFalse(PackedRemoteKey.layoutKnown(null));
  }
}
