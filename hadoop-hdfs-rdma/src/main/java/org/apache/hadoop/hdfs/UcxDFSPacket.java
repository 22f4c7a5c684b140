/**
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *     http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS,
 * WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and
 * limitations under the License.
 */
package org.apache.hadoop.hdfs;

import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.BufferOverflowException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;

import org.apache.hadoop.classification.InterfaceAudience;
import org.apache.hadoop.hdfs.protocol.HdfsConstants;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.apache.hadoop.hdfs.util.ByteArrayManager;
import org.hdfsrdma.hadoop.metrics.PacketPhaseTimes;
import org.hdfsrdma.ucx.RegisteredBufferPool;

/**
 * A {@link DFSPacket} whose checksums and data live in a buffer leased from
 * a {@link RegisteredBufferPool}: UCX-registered memory that a DataNode
 * reads with a one-sided get, so the user's bytes are copied once (into
 * registered memory) exactly as stock copies them once into its byte[].
 *
 * <p>The buffer has stock's layout, offsets counted from the start of the
 * lease: {@link PacketHeader#PKT_MAX_HEADER_LEN} bytes of header room, then
 * {@code chunksPerPkt * checksumSize} bytes of checksums, then the data.
 * Keeping the header room lets {@link #writeTo} (the TCP fallback) put the
 * header right before the checksums, as stock does, and send header,
 * checksums and data with a single {@code write} of one contiguous range:
 * the same bytes, the same single write to the socket stream, and the
 * fault injector's corrupted byte at the very same position. The header
 * room costs 33 bytes of registered memory per packet, nothing else.
 *
 * <p>Why the methods are overridden: DFSPacket's buffer and offsets are
 * private and its constructor takes a byte[]. This class keeps its own
 * offsets and overrides every method that reads or writes the byte[]
 * (both {@code writeData}, {@link #writeChecksum}, {@link #writeTo},
 * {@link #releaseBuffer}; the private {@code checkBuffer} is reached only
 * from those) and the one that reads the private offsets
 * ({@link #getLastByteOffsetBlock}, which {@code toString} calls). The
 * super class therefore gets a shared zero-length array that no inherited
 * method ever touches. Sequence number, offset, maximum and counted chunks,
 * last-packet flag, trace parents and scope stay in DFSPacket unchanged;
 * {@link #setSyncBlock} is overridden only to remember the flag, which
 * DFSPacket keeps private and the header needs.
 *
 * <p>Writing to the socket from direct memory needs one copy into a heap
 * array ({@code OutputStream} takes arrays); that copy happens only on the
 * TCP fallback, into an array kept per thread (the DataStreamer thread).
 *
 * <p>Thread-safety as DFSPacket: every method that touches the buffer is
 * synchronized on the packet.
 */
@InterfaceAudience.Private
class UcxDFSPacket extends DFSPacket {

  /** Handed to DFSPacket, which never uses it here (see class Javadoc). */
  private static final byte[] UNUSED_HEAP_BUFFER = new byte[0];

  /** Heap copy of a packet for the TCP fallback, reused per thread. */
  private static final ThreadLocal<byte[]> SCRATCH = new ThreadLocal<byte[]>();

  private final RegisteredBufferPool pool;
  private final long lease;
  private UcxPackets.LeaseReference tracker;
  private long sentNanos;
  private PacketPhaseTimes timesOnAck;
  /** The lease's buffer (its pool's view); null once released. */
  private ByteBuffer mem;
  /** Native address of the lease's first byte. */
  private final long address;
  /** Stock's buf.length: header room plus packetSize. */
  private final int capacity;
  private final long offsetInBlock;
  private boolean syncBlock;
  /** Flipped for a DataNode's get by the fault injector, not yet undone. */
  boolean corruptedForGet;

  // As in DFSPacket: [header room][checksums ... ][data ...]
  private int checksumStart;
  private int checksumPos;
  private final int dataStart;
  private int dataPos;

  /**
   * Creates an empty packet in {@code lease}, which it owns from now on and
   * returns to its pool in {@link #releaseBuffer}.
   *
   * @param pool the pool {@code lease} came from
   * @param lease a token of {@code pool}, for a buffer of at least
   *     {@code PKT_MAX_HEADER_LEN + packetSize} bytes
   * @param packetSize checksums plus data the packet may hold, as given to
   *     {@code DFSOutputStream.createPacket}
   * @throws IllegalArgumentException when the lease is too small
   */
  UcxDFSPacket(RegisteredBufferPool pool, long lease, int packetSize,
      int chunksPerPkt, long offsetInBlock, long seqno, int checksumSize,
      boolean lastPacketInBlock) {
    super(UNUSED_HEAP_BUFFER, chunksPerPkt, offsetInBlock, seqno,
        checksumSize, lastPacketInBlock);
    this.capacity = PacketHeader.PKT_MAX_HEADER_LEN + packetSize;
    if (packetSize < 0 || pool.bufferSize() < capacity) {
      throw new IllegalArgumentException("registered buffer of "
          + pool.bufferSize() + " bytes cannot hold a packet of " + packetSize
          + " bytes plus " + PacketHeader.PKT_MAX_HEADER_LEN
          + " bytes of header");
    }
    this.pool = pool;
    this.lease = lease;
    this.mem = pool.buffer(lease);
    this.address = pool.address(lease);
    this.offsetInBlock = offsetInBlock;
    this.checksumStart = PacketHeader.PKT_MAX_HEADER_LEN;
    this.checksumPos = checksumStart;
    this.dataStart = checksumStart + chunksPerPkt * checksumSize;
    this.dataPos = dataStart;
  }

  @Override
  synchronized void writeData(byte[] inarray, int off, int len)
      throws ClosedChannelException {
    checkBuffer();
    if (dataPos + len > capacity) {
      throw new BufferOverflowException();
    }
    mem.position(dataPos);
    mem.put(inarray, off, len);
    dataPos += len;
  }

  /**
   * Hadoop 3's DFSPacket has this method (erasure-coded streams write
   * parity cells with it); it is overridden there, and an unused extra on
   * Hadoop 2, so no {@code @Override}. Copies at most {@code len} bytes.
   */
  public synchronized void writeData(ByteBuffer inBuffer, int len)
      throws ClosedChannelException {
    checkBuffer();
    len = Math.min(len, inBuffer.remaining());
    if (dataPos + len > capacity) {
      throw new BufferOverflowException();
    }
    ByteBuffer from = inBuffer.duplicate();
    from.limit(from.position() + len);
    mem.position(dataPos);
    mem.put(from);
    inBuffer.position(inBuffer.position() + len);
    dataPos += len;
  }

  // public: Hadoop 3's DFSPacket has it public, Hadoop 2's package-private
  @Override
  public synchronized void writeChecksum(byte[] inarray, int off, int len)
      throws ClosedChannelException {
    checkBuffer();
    if (len == 0) {
      return;
    }
    if (checksumPos + len > dataStart) {
      throw new BufferOverflowException();
    }
    mem.position(checksumPos);
    mem.put(inarray, off, len);
    checksumPos += len;
  }

  /**
   * Writes header, checksums and data to {@code stm} exactly as
   * DFSPacket#writeTo would, fault injection included: the header goes into
   * the header room, the range is copied once to a heap array and written
   * with one call.
   */
  @Override
  public synchronized void writeTo(DataOutputStream stm) throws IOException {
    checkBuffer();

    final int dataLen = dataPos - dataStart;
    final int checksumLen = checksumPos - checksumStart;
    final int pktLen = HdfsConstants.BYTES_IN_INTEGER + dataLen + checksumLen;

    PacketHeader header = new PacketHeader(
        pktLen, offsetInBlock, getSeqno(), isLastPacketInBlock(), dataLen,
        syncBlock);

    moveChecksums();

    final int headerLen = header.getSerializedSize();
    final int headerStart = checksumStart - headerLen;
    assert headerStart >= 0;
    mem.position(headerStart);
    mem.put(header.getBytes(), 0, headerLen);

    final int len = headerLen + checksumLen + dataLen;
    final int last = headerStart + len - 1;
    if (DFSClientFaultInjector.get().corruptPacket()) {
      flip(last);
    }

    byte[] scratch = scratch(len);
    mem.position(headerStart);
    mem.get(scratch, 0, len);
    stm.write(scratch, 0, len);

    if (DFSClientFaultInjector.get().uncorruptPacket()) {
      flip(last);
    }
  }

  /**
   * Makes checksums and data contiguous in registered memory (the move
   * {@link #writeTo} makes), for a descriptor a DataNode gets them with.
   * Idempotent; the packet must not be written to afterwards (as after
   * stock's writeTo). The bytes stay valid until {@link #releaseBuffer}; a
   * DataNode may read them until then. Then {@link #getAddress},
   * {@link #getChecksumLength} and {@link #getDataLength} say where they are.
   *
   * @throws ClosedChannelException when the buffer was released
   */
  public synchronized void prepareForGet() throws ClosedChannelException {
    checkBuffer();
    moveChecksums();
  }

  /** Native address of the first checksum byte (after prepareForGet). */
  synchronized long getAddress() {
    return address + checksumStart;
  }

  synchronized int getChecksumLength() {
    return checksumPos - checksumStart;
  }

  synchronized int getDataLength() {
    return dataPos - dataStart;
  }

  /**
   * The get path's {@code DFSClientFaultInjector.corruptPacket()}: when the
   * injector asks for it, flips the last byte of checksums plus data in
   * registered memory, as stock flips the last byte it writes. Call after
   * {@link #prepareForGet} and before sending descriptors; undo with
   * {@link #undoCorruptionForGet} only once no DataNode can still be reading
   * (after the ACK, or before the packet is sent again). Does nothing for a
   * packet without checksums or data (there is nothing a get would read).
   *
   * @return whether a byte was flipped
   */
  synchronized boolean injectCorruptionForGet()
      throws ClosedChannelException {
    checkBuffer();
    if (DFSClientFaultInjector.get().corruptPacket()
        && dataPos > checksumStart) {
      moveChecksums();
      flip(dataPos - 1);
      return true;
    }
    return false;
  }

  /**
   * The get path's {@code DFSClientFaultInjector.uncorruptPacket()}: flips
   * the byte of {@link #injectCorruptionForGet} back when the injector asks
   * for it.
   *
   * @return whether a byte was flipped
   */
  synchronized boolean undoCorruptionForGet() throws ClosedChannelException {
    checkBuffer();
    if (DFSClientFaultInjector.get().uncorruptPacket()
        && dataPos > checksumStart) {
      moveChecksums();
      flip(dataPos - 1);
      return true;
    }
    return false;
  }

  /**
   * Returns the registered buffer to its pool; later writes fail with
   * ClosedChannelException as stock's do. Idempotent. {@code bam} is not
   * used: this packet holds no heap array.
   */
  @Override
  synchronized void releaseBuffer(ByteArrayManager bam) {
    mem = null;
    pool.release(lease);
    if (tracker != null) {
      tracker.forget();
      tracker = null;
    }
    if (timesOnAck != null && sentNanos != 0) {
      timesOnAck.add(PacketPhaseTimes.Phase.CLIENT_SENT_TO_ACK,
          System.nanoTime() - sentNanos);
      sentNanos = 0;
    }
  }

  /** Set once by UcxPackets: forgotten when the packet releases itself. */
  synchronized void trackedBy(UcxPackets.LeaseReference reference) {
    tracker = reference;
  }

  /**
   * Notes that the packet's descriptors went out, so that its release on
   * the pipeline ack times {@code CLIENT_SENT_TO_ACK} into {@code times}.
   */
  synchronized void sentAt(long nanos, PacketPhaseTimes times) {
    sentNanos = nanos;
    timesOnAck = times;
  }

  /** Offset of the packet's first data byte in its block. */
  long offsetInBlock() {
    return offsetInBlock;
  }

  /** Whether the writer asked DataNodes to sync the block (hsync). */
  synchronized boolean syncBlock() {
    return syncBlock;
  }

  /** The pool token of the registered buffer this packet was created in. */
  long lease() {
    return lease;
  }

  /** The pool the packet's buffer belongs to. */
  RegisteredBufferPool pool() {
    return pool;
  }

  /** Whether {@link #releaseBuffer} has returned the registered buffer. */
  public synchronized boolean isReleased() {
    return mem == null;
  }

  @Override
  synchronized long getLastByteOffsetBlock() {
    return offsetInBlock + dataPos - dataStart;
  }

  @Override
  synchronized void setSyncBlock(boolean syncBlock) {
    super.setSyncBlock(syncBlock);
    this.syncBlock = syncBlock;
  }

  /** As DFSPacket: close the gap between checksums and data (hflush, last). */
  private void moveChecksums() {
    if (checksumPos != dataStart) {
      final int checksumLen = checksumPos - checksumStart;
      // Through the heap: at most chunksPerPkt * checksumSize bytes, and
      // source and target may overlap.
      byte[] sums = new byte[checksumLen];
      mem.position(checksumStart);
      mem.get(sums);
      mem.position(dataStart - checksumLen);
      mem.put(sums);
      checksumPos = dataStart;
      checksumStart = checksumPos - checksumLen;
    }
  }

  private void flip(int index) {
    mem.put(index, (byte) (mem.get(index) ^ 0xff));
  }

  private void checkBuffer() throws ClosedChannelException {
    if (mem == null) {
      throw new ClosedChannelException();
    }
  }

  private static byte[] scratch(int len) {
    byte[] scratch = SCRATCH.get();
    if (scratch == null || scratch.length < len) {
      scratch = new byte[len];
      SCRATCH.set(scratch);
    }
    return scratch;
  }
}
