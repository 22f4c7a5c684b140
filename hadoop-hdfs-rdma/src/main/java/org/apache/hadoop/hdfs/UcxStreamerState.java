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
import org.hdfsrdma.hadoop.client.ClientStream;
import org.hdfsrdma.hadoop.client.OutgoingPacket;
import org.hdfsrdma.hadoop.client.PipelineFailures;
import org.hdfsrdma.hadoop.client.UcxClients;
import org.hdfsrdma.hadoop.compat.CommitListField;
import org.hdfsrdma.hadoop.compat.DeclineField;
import org.hdfsrdma.hadoop.compat.OpRewriter;
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
      new UcxStreamerState(null, null);
  /** A stream on TCP although it asked for UCX, by outcome. */
  private static final UcxStreamerState[] OFF_BECAUSE =
      new UcxStreamerState[PipelineOutcome.values().length];

  static {
    for (PipelineOutcome o : PipelineOutcome.values()) {
      OFF_BECAUSE[o.ordinal()] = new UcxStreamerState(null, o);
    }
  }

  /** The stream's UCX side, or null when the stream writes over TCP. */
  private final ClientStream stream;
  /** Why a stream that asked for UCX is on TCP, counted per pipeline. */
  private final PipelineOutcome tcp;
  private final OutgoingPacket outgoing = new OutgoingPacket();

  private UcxStreamerState(ClientStream stream, PipelineOutcome tcp) {
    this.stream = stream;
    this.tcp = tcp;
  }

  /** Restarts the streamer's pipeline through its error state. */
  private static final class Failures implements PipelineFailures {
    private final DataStreamer.ErrorState errorState;

    Failures(DataStreamer.ErrorState errorState) {
      this.errorState = errorState;
    }

    @Override
    public void restartOverTcp() {
      UcxErrorStates.restart(errorState);
    }

    @Override
    public void forgive() {
      UcxErrorStates.forgive(errorState);
    }

    @Override
    public boolean pipelineFailed() {
      return errorState.hasError();
    }
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
    try {
      start = UcxClients.start(client.getConfiguration());
      if (start.runtime == null) {
        return start.tcp == null ? OFF : OFF_BECAUSE[start.tcp.ordinal()];
      }
      stream = ClientStream.open(start,
          client.getConf().getWritePacketSize(), new Failures(errorState));
    } catch (RuntimeException | LinkageError e) {
      // UCX must never cost a write: whatever went wrong, Hadoop's own.
      LogOnce.warn("client-start-failed", "hdfs-rdma: starting UCX failed,"
          + " writes stay on TCP: " + e);
      return OFF_BECAUSE[PipelineOutcome.TCP_UCX_UNAVAILABLE.ordinal()];
    }
    return stream == null
        ? OFF_BECAUSE[PipelineOutcome.TCP_UCX_UNAVAILABLE.ordinal()]
        : new UcxStreamerState(stream, null);
  }

  /** The pool this stream's packets are leased from, or null (UCX off). */
  RegisteredBufferPool pool() {
    return stream == null ? null : stream.pool();
  }

  /** How long a writer waits for a registered packet buffer. */
  long bufferWaitMs() {
    return stream == null ? 0 : stream.bufferWaitMs();
  }

  /** True while the current pipeline moves packets over UCX. */
  boolean isActive() {
    return stream != null && stream.isActive();
  }

  /**
   * Wraps the stream the writeBlock op goes out on so that the op offers
   * UCX, when this pipeline may use it. Called once per pipeline set-up.
   */
  DataOutputStream opOut(DataOutputStream out, DatanodeInfo[] pipeline,
      ExtendedBlock block, Token<BlockTokenIdentifier> token, long newGS,
      int packetSize) {
    if (stream == null) {
      if (tcp != null) {
        ClientOutcomes.count(tcp);
      }
      return out;
    }
    String[] nodes = new String[pipeline.length];
    String[] names = new String[pipeline.length];
    for (int i = 0; i < pipeline.length; i++) {
      nodes[i] = pipeline[i].getXferAddr();
      names[i] = pipeline[i].toString();
    }
    WriteRequest request = stream.offer(block.toString(), nodes, names,
        block.getBlockPoolId(), block.getBlockId(), newGS,
        token.getPassword(), packetSize);
    return request == null ? out
        : OpRewriter.withRequest(out, request);
  }

  /**
   * Reads DataNode 1's reply: the commit list decides whether the pipeline
   * moves over UCX (see {@link ClientStream#committed}).
   */
  void onConnectAck(BlockOpResponseProto reply) {
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
    if (stream != null) {
      stream.endPipeline();
    }
  }

  @Override
  public String toString() {
    return stream == null ? "UCX off" : stream.toString();
  }
}
