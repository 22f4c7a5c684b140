package org.hdfsrdma.hadoop.protocol;

import static org.hdfsrdma.hadoop.protocol.WireSamples.assertIOException;
import static org.hdfsrdma.hadoop.protocol.WireSamples.commits;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertThrows;

import java.io.IOException;

import org.junit.Test;

/**
 * The read path's offer and answer as values: every bound at both ends,
 * what a peer sends refused with an IOException naming the value, what
 * this side would send refused before it is sent, and the answer checked
 * against the reader's own offer, connection and chunk size.
 */
public class TestReadNegotiation {

  private static final byte[] KEY = WireSamples.NONCE;
  private static final CommitEntry DN = commits().get(0);

  @Test(timeout = 10_000)
  public void testOfferBounds() throws IOException {
    for (int bytes : new int[] {ReadOffer.MIN_PACKET_BYTES, 65536,
        ReadOffer.MAX_PACKET_BYTES}) {
      for (int window : new int[] {ReadOffer.MIN_WINDOW, 8,
          ReadOffer.MAX_WINDOW}) {
        ReadOffer o = ReadOffer.received(KEY, bytes, window);
        assertEquals(new ReadOffer(KEY, bytes, window), o);
        assertEquals(bytes, o.getPacketBytes());
        assertEquals(window, o.getWindow());
        assertArrayEquals(KEY, o.getClientKey());
      }
    }
    ReadOffer o = new ReadOffer(KEY, 65536, 8);
    o.getClientKey()[0] ^= 1;
    assertArrayEquals("the key is a copy", KEY, o.getClientKey());

    Object[][] wrong = {
        {null, 65536, 8, "client key of null"},
        {new byte[15], 65536, 8, "client key of 15 bytes, not 16"},
        {new byte[17], 65536, 8, "client key of 17 bytes"},
        {KEY, 4095, 8, "packet bytes 4095 out of range"},
        {KEY, (1 << 20) + 1, 8, "packet bytes 1048577"},
        {KEY, -1, 8, "packet bytes -1"},
        {KEY, 65536, 1, "window 1 out of range [2, 64]"},
        {KEY, 65536, 65, "window 65"},
        {KEY, 65536, Integer.MIN_VALUE, "window -2147483648"}};
    for (Object[] w : wrong) {
      assertIOException((String) w[3], () -> ReadOffer.received(
          (byte[]) w[0], (Integer) w[1], (Integer) w[2]));
      assertThrows(IllegalArgumentException.class, () -> new ReadOffer(
          (byte[]) w[0], (Integer) w[1], (Integer) w[2]));
    }
  }

  @Test(timeout = 10_000)
  public void testAnswerBounds() throws IOException {
    long id = 0x5eedf00d5eedf00dL;
    ReadAnswer a = ReadAnswer.received(DN, id, 65536, 16);
    assertEquals(new ReadAnswer(DN, id, 65536, 16), a);
    assertNotEquals(new ReadAnswer(DN, 1L, 65536, 16), a);
    assertEquals(DN, a.getDataNode());
    assertEquals(id, a.getReadId());
    assertEquals(-1L, ReadAnswer.received(DN, -1L, 1, 2).getReadId());
    assertFalse("the read id is not shown", a.toString().contains(
        Long.toString(id)) || a.toString().contains("5eedf00d"));
    Object[][] wrong = {
        {null, 1L, 65536, 8, "no DataNode"},
        {DN, 0L, 65536, 8, "read id 0"},
        {DN, 1L, 0, 8, "packet bytes 0 out of range [1, 1048576]"},
        {DN, 1L, (1 << 20) + 1, 8, "packet bytes 1048577"},
        {DN, 1L, 65536, 1, "window 1 out of range"},
        {DN, 1L, 65536, 65, "window 65"}};
    for (Object[] w : wrong) {
      assertIOException((String) w[4], () -> ReadAnswer.received(
          (CommitEntry) w[0], (Long) w[1], (Integer) w[2], (Integer) w[3]));
      assertThrows(IllegalArgumentException.class, () -> new ReadAnswer(
          (CommitEntry) w[0], (Long) w[1], (Integer) w[2], (Integer) w[3]));
    }
  }

  /** What only the reader knows: its offer, its connection, its chunk. */
  @Test(timeout = 10_000)
  public void testAnswerAgainstTheOffer() throws IOException {
    ReadOffer offer = new ReadOffer(KEY, 65536, 8);
    String addr = DN.getXferAddr();
    new ReadAnswer(DN, 7, 65536, 8).checkFor(offer, addr, 512);
    new ReadAnswer(DN, 7, 4096, 2).checkFor(offer, addr, 512);
    new ReadAnswer(DN, 7, 65535, 8).checkFor(offer, addr, 65535 / 5);
    assertIOException("DataNode " + addr + " on a connection to dn:1",
        () -> new ReadAnswer(DN, 7, 65536, 8).checkFor(offer, "dn:1", 512));
    assertIOException("packet bytes 65000 not whole chunks of 512",
        () -> new ReadAnswer(DN, 7, 65000, 8).checkFor(offer, addr, 512));
    assertIOException("not whole chunks of 0",
        () -> new ReadAnswer(DN, 7, 65536, 8).checkFor(offer, addr, 0));
    assertIOException("packet bytes 131072 above the offer's 65536",
        () -> new ReadAnswer(DN, 7, 131072, 8).checkFor(offer, addr, 512));
    assertIOException("window 9 above the offer's 8",
        () -> new ReadAnswer(DN, 7, 65536, 9).checkFor(offer, addr, 512));
  }
}
