package org.apache.hadoop.hdfs;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;

import org.apache.hadoop.classification.InterfaceAudience;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.apache.hadoop.hdfs.protocol.datatransfer.PipelineAck;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.hadoop.client.ClientStream;
import org.hdfsrdma.hadoop.client.DeferredStart;
import org.hdfsrdma.hadoop.client.OutgoingPacket;
import org.hdfsrdma.hadoop.client.PipelineFailures;
import org.hdfsrdma.hadoop.client.UcxClients;
import org.hdfsrdma.hadoop.compat.CommitListField;
import org.hdfsrdma.hadoop.compat.DeclineField;
import org.hdfsrdma.hadoop.compat.OpRewriter;
import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.metrics.ClientOutcomes;
import org.hdfsrdma.hadoop.metrics.PacketPhaseTimes;
import org.hdfsrdma.hadoop.metrics.PipelineOutcome;
import org.hdfsrdma.hadoop.protocol.CommitEntry;
import org.hdfsrdma.hadoop.protocol.Decline;
import org.hdfsrdma.hadoop.protocol.FallbackAck;
import org.hdfsrdma.hadoop.protocol.WriteRequest;
import org.hdfsrdma.hadoop.util.LogOnce;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * DataStreamer's hooks into the UCX data path (patches 0002 and 0006),
 * for this Hadoop release: Hadoop's types in, the release-neutral
 * {@link ClientStream} behind. It turns the streamer's pipeline into
 * addresses and names, Hadoop's messages into the offer and the commit
 * list ({@code compat}), a {@link DFSPacket} into an
 * {@link OutgoingPacket}, and a pipeline UCX fails into a recovery of
 * the streamer's that keeps every DataNode and continues over TCP.
 */
@InterfaceAudience.Private
public final class UcxStreamerState {

  private static final Logger LOG =
      LoggerFactory.getLogger(UcxStreamerState.class);

  /** A stream that did not ask for UCX. */
  private static final UcxStreamerState OFF =
      new UcxStreamerState(null, null, null, 0, null);
  /** A stream on TCP although it asked for UCX, by outcome. */
  private static final UcxStreamerState[] OFF_BECAUSE =
      new UcxStreamerState[PipelineOutcome.values().length];

  static {
    for (PipelineOutcome o : PipelineOutcome.values()) {
      OFF_BECAUSE[o.ordinal()] = new UcxStreamerState(null, o, null, 0,
          null);
    }
  }

  /**
   * The stream's UCX side, or null when the stream writes over TCP; set
   * once, by the writer, when a deferred start ends.
   */
  private volatile ClientStream stream;
  /** Why a stream that asked for UCX is on TCP, counted per pipeline. */
  private volatile PipelineOutcome tcp;
  /** The JVM's first stream's start past its first block, or null. */
  private final DeferredStart deferred;
  private final int packetSize;
  private final PipelineFailures failures;
  private final OutgoingPacket outgoing = new OutgoingPacket();

  private UcxStreamerState(ClientStream stream, PipelineOutcome tcp,
      DeferredStart deferred, int packetSize, PipelineFailures failures) {
    this.stream = stream;
    this.tcp = tcp;
    this.deferred = deferred;
    this.packetSize = packetSize;
    this.failures = failures;
  }

  /**
   * The state of a new DataStreamer of {@code client}: whether and how it
   * writes over UCX, decided once, here, for every packet of the stream.
   * Sends that fail are reported to {@code errorState}.
   */
  static UcxStreamerState create(DFSClient client,
      DataStreamer.ErrorState errorState) {
    return create(null, client, errorState);
  }

  /**
   * As {@link #create(DFSClient, DataStreamer.ErrorState)} for
   * {@code streamer}, called from its constructor: a subclass of
   * DataStreamer gets no UCX. Hadoop 3's erasure-coded writes run a
   * {@code StripedDataStreamer} per cell stream, which has its own block
   * and recovery logic the UCX path was not built for; their packets stay
   * on the heap ({@link UcxPackets#forStream} finds no pool) and go over
   * TCP. Counted ({@code StripedStreamersOverTcp}), and logged once per
   * JVM.
   *
   * @param streamer the streamer under construction (only its class is
   *     read), or null
   */
  static UcxStreamerState create(DataStreamer streamer, DFSClient client,
      DataStreamer.ErrorState errorState) {
    if (streamer != null && streamer.getClass() != DataStreamer.class) {
      long n = ClientOutcomes.countStripedStreamer();
      LOG.debug("hdfs-rdma: {} streamer {} writes over TCP",
          streamer.getClass().getSimpleName(), n);
      if (!UcxClients.asked(client.getConfiguration())) {
        return OFF;
      }
      LogOnce.warn("excluded " + streamer.getClass().getName(), "hdfs-rdma: "
          + streamer.getClass().getSimpleName() + " streams (erasure-coded"
          + " files) write over TCP; the UCX path is for replicated files");
      return OFF_BECAUSE[PipelineOutcome.TCP_ERASURE_CODED.ordinal()];
    }
    UcxClients.Start start;
    ClientStream stream;
    int packetSize;
    try {
      start = UcxClients.start(client.getConfiguration());
      packetSize = client.getConf().getWritePacketSize();
      if (start.tcp == PipelineOutcome.TCP_DEFERRED) {
        return deferred(start, client, packetSize, errorState);
      }
      if (start.runtime == null) {
        return start.tcp == null ? OFF : OFF_BECAUSE[start.tcp.ordinal()];
      }
      stream = ClientStream.open(start, packetSize, new UcxPipelineFailures(errorState));
    } catch (RuntimeException | LinkageError e) {
      // UCX must never cost a write: whatever went wrong, Hadoop's own.
      LogOnce.warn("client-start-failed", "hdfs-rdma: starting UCX failed,"
          + " writes stay on TCP: " + e);
      return OFF_BECAUSE[PipelineOutcome.TCP_UCX_UNAVAILABLE.ordinal()];
    }
    return stream == null
        ? OFF_BECAUSE[PipelineOutcome.TCP_UCX_UNAVAILABLE.ordinal()]
        : new UcxStreamerState(stream, null, null, packetSize, null);
  }

  /**
   * The JVM's first stream, whose first block goes over TCP while UCX is
   * not started: UCX starts in the background once that block passes a
   * quarter of the client's block size ({@link DeferredStart}).
   */
  private static UcxStreamerState deferred(UcxClients.Start start,
      DFSClient client, int packetSize, DataStreamer.ErrorState errorState) {
    final RdmaConf rdma = start.conf;
    final Configuration conf = client.getConfiguration();
    DeferredStart deferred = new DeferredStart(
        client.getConf().getDefaultBlockSize() / 4,
        () -> UcxClients.startNow(rdma, conf));
    return new UcxStreamerState(null, PipelineOutcome.TCP_DEFERRED,
        deferred, packetSize, new UcxPipelineFailures(errorState));
  }

  /**
   * The writer's hook before it builds a packet with data at
   * {@code offsetInBlock}: where the stream's start was deferred, opens
   * the stream's UCX side at its second block's first packet.
   */
  void beforePacket(long offsetInBlock) {
    if (deferred == null || deferred.settled()) {
      return;
    }
    UcxClients.Start start = deferred.beforePacket(offsetInBlock);
    if (start == null) {
      return;
    }
    ClientStream opened = null;
    try {
      opened = ClientStream.open(start, packetSize, failures);
    } catch (RuntimeException | LinkageError e) {
      LogOnce.warn("client-start-failed", "hdfs-rdma: starting UCX failed,"
          + " writes stay on TCP: " + e);
    }
    if (opened == null) {
      tcp = start.tcp != null ? start.tcp
          : PipelineOutcome.TCP_UCX_UNAVAILABLE;
    } else {
      stream = opened;
    }
  }

  /** The pool this stream's packets are leased from, or null (UCX off). */
  RegisteredBufferPool pool() {
    ClientStream s = stream;
    return s == null ? null : s.pool();
  }

  /** How long a writer waits for a registered packet buffer. */
  long bufferWaitMs() {
    ClientStream s = stream;
    return s == null ? 0 : s.bufferWaitMs();
  }

  /** True while the current pipeline moves packets over UCX. */
  boolean isActive() {
    ClientStream s = stream;
    return s != null && s.isActive();
  }

  /**
   * Wraps the stream the writeBlock op goes out on so that the op offers
   * UCX, when this pipeline may use it. Called once per pipeline set-up.
   */
  DataOutputStream opOut(DataOutputStream out, DatanodeInfo[] pipeline,
      ExtendedBlock block, Token<BlockTokenIdentifier> token, long newGS,
      int packetSize) {
    if (deferred != null && deferred.stayOnTcp(block.getBlockId())) {
      ClientOutcomes.count(PipelineOutcome.TCP_DEFERRED);
      return out;
    }
    ClientStream stream = this.stream;
    if (stream == null) {
      PipelineOutcome why = tcp;
      if (why != null) {
        ClientOutcomes.count(why);
      }
      return out;
    }
    String[] nodes = new String[pipeline.length];
    String[] names = new String[pipeline.length];
    for (int i = 0; i < pipeline.length; i++) {
      nodes[i] = pipeline[i].getXferAddr();
      names[i] = pipeline[i].toString();
    }
    // out becomes the DataStreamer's blockStream: the packets' socket.
    WriteRequest request = stream.offer(block.toString(), nodes, names,
        block.getBlockPoolId(), block.getBlockId(), newGS,
        token.getPassword(), packetSize, out);
    return request == null ? out
        : OpRewriter.withRequest(out, request);
  }

  /**
   * Reads DataNode 1's reply: the commit list decides whether the pipeline
   * moves over UCX (see {@link ClientStream#committed}).
   */
  void onConnectAck(BlockOpResponseProto reply) {
    ClientStream stream = this.stream;
    if (stream == null || !stream.awaitsCommits()) {
      return;
    }
    List<CommitEntry> commits;
    Decline declined;
    try {
      commits = CommitListField.commitsOf(reply);
      declined = commits.isEmpty() ? DeclineField.declineOf(reply) : null;
    } catch (IOException e) {
      stream.commitsUnreadable(e);
      return;
    }
    stream.committed(commits, declined);
  }

  /**
   * Sends {@code packet} as descriptors when the pipeline is on UCX;
   * returns false when it is on TCP (the caller writes the packet to the
   * socket as stock does). See {@link ClientStream#send}.
   *
   * @throws IOException when the packet cannot go over UCX at all
   */
  boolean send(DFSPacket packet) throws IOException {
    ClientStream stream = this.stream;
    if (stream == null || !stream.isActive()) {
      return false;
    }
    PacketPhaseTimes times = stream.times();
    long started = times == null ? 0 : System.nanoTime();
    UcxDFSPacket registered = null;
    if (packet instanceof UcxDFSPacket) {
      registered = (UcxDFSPacket) packet;
      describe(registered);
    } else {
      // A heap packet: its header says what it is.
      PacketHeader header = headerOf(packet);
      if (header.getDataLen() != 0) {
        throw stream.notInRegisteredMemory(packet.getSeqno());
      }
      // Nothing to fetch: heartbeats and empty end-of-block or sync packets.
      outgoing.set(packet.getSeqno(), header.getOffsetInBlock(),
          packet.isHeartbeatPacket(), packet.isLastPacketInBlock(),
          header.getSyncBlock(), RegisteredBufferPool.NO_LEASE, 0, 0, 0);
    }
    ClientStream.Sent sent = stream.send(outgoing,
        !UcxHeartbeats.SENT_UNDER_QUEUE_LOCK);
    if (sent == ClientStream.Sent.DESCRIBED && times != null) {
      long sentAt = System.nanoTime();
      times.add(PacketPhaseTimes.Phase.CLIENT_SEND, sentAt - started);
      if (registered != null) {
        registered.sentAt(sentAt, times);
      }
    }
    return sent != ClientStream.Sent.ON_TCP;
  }

  /** Fills {@link #outgoing} from a packet in registered memory. */
  private void describe(UcxDFSPacket p) throws IOException {
    p.prepareForGet();
    if (p.corruptedForGet) {
      // Sent again after recovery: the old pipeline's reads are over.
      p.corruptedForGet = !p.undoCorruptionForGet();
    }
    if (p.injectCorruptionForGet()) {
      p.corruptedForGet = true;
    }
    int checksumLength = p.getChecksumLength();
    int dataLength = p.getDataLength();
    boolean empty = checksumLength + dataLength == 0;
    outgoing.set(p.getSeqno(), p.offsetInBlock(), p.isHeartbeatPacket(),
        p.isLastPacketInBlock(), p.syncBlock(),
        empty ? RegisteredBufferPool.NO_LEASE : p.lease(),
        empty ? 0 : p.getAddress(), checksumLength, dataLength);
  }

  /** The header a heap packet would send, read back from its bytes. */
  private static PacketHeader headerOf(DFSPacket packet) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    packet.writeTo(new DataOutputStream(bytes));
    PacketHeader header = new PacketHeader();
    header.readFields(ByteBuffer.wrap(bytes.toByteArray()));
    return header;
  }

  /**
   * The ResponseProcessor read {@code ack} (hook, before Hadoop looks at
   * it). Heartbeat acks pace UCX heartbeats. On a UCX pipeline, a
   * DataNode's out-of-band fallback ack ({@link FallbackAck}) ends the
   * pipeline, to be restarted over TCP with every DataNode; an ack that
   * reports a bad DataNode is Hadoop's evidence, left to Hadoop.
   *
   * @throws IOException for a fallback ack
   */
  void onAck(PipelineAck ack) throws IOException {
    ClientStream stream = this.stream;
    if (stream == null) {
      return;
    }
    if (ack.getSeqno() == DFSPacket.HEART_BEAT_SEQNO) {
      stream.heartbeatAcked();
    }
    if (!stream.isActive()) {
      return;
    }
    int fellBack = -1;
    for (int i = 0; i < ack.getNumOfReplies(); i++) {
      Status reply = PipelineAck.getStatusFromHeader(ack.getHeaderFlag(i));
      if (reply.getNumber() == FallbackAck.STATUS_NUMBER
          && ack.getSeqno() == PipelineAck.UNKOWN_SEQNO) {
        fellBack = i;
      } else if (reply != Status.SUCCESS
          && !PipelineAck.isRestartOOBStatus(reply)) {
        stream.ackReportedBadNode();
        return;
      }
    }
    if (fellBack >= 0) {
      throw stream.dataNodeFellBack(fellBack);
    }
  }

  /** The pipeline is over (end of block, error, close). */
  void endPipeline() {
    ClientStream stream = this.stream;
    if (stream != null) {
      stream.endPipeline();
    }
  }

  @Override
  public String toString() {
    ClientStream stream = this.stream;
    return stream != null ? stream.toString()
        : deferred != null ? deferred.toString() : "UCX off";
  }
}
