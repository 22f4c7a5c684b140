package org.hdfsrdma.hadoop.metrics;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * Where a JVM's UCX packets spend their time, summed over all packets:
 * one nanosecond total per phase and a packet count. Switched on by
 * {@code dfs.client.rdma.packet-timers.enabled} and
 * {@code dfs.datanode.rdma.packet-timers.enabled}; when off, the hooks
 * that feed it read one field and return, so it costs nothing.
 *
 * <p>The benchmarks read it to break a put down per packet: on the client
 * (descriptor send, descriptor sent until the pipeline ack) and on the
 * DataNode (waiting for the descriptor, the get, the copy out of registered
 * memory, checksum verification, writing to disk, the rest of
 * BlockReceiver's work until the next packet).
 */
public final class PacketPhaseTimes {

  /** The phases, in the order a packet passes them. */
  public enum Phase {
    /** Client: DataStreamer sending one packet's descriptors. */
    CLIENT_SEND("client-send"),
    /** Client: descriptors sent until the pipeline ack released the buffer. */
    CLIENT_SENT_TO_ACK("client-sent-to-ack"),
    /** DataNode: waiting for the packet's descriptor. */
    DESCRIPTOR_WAIT("dn-descriptor-wait"),
    /** DataNode: issuing the get until it completed (in flight). */
    GET_LATENCY("dn-get-latency"),
    /** DataNode: the receiver thread blocked on a get it needed. */
    GET_WAIT("dn-get-wait"),
    /** DataNode: copying the packet out of registered memory. */
    COPY("dn-copy"),
    /** DataNode: BlockReceiver verifying the packet's checksums. */
    VERIFY("dn-verify"),
    /** DataNode: writing data and checksums to disk, with the flush. */
    DISK("dn-disk"),
    /** DataNode: the rest of BlockReceiver's work until the next packet. */
    OTHER("dn-other");

    private final String label;

    Phase(String label) {
      this.label = label;
    }

    /** The name used in reports and the JMX bean. */
    public String label() {
      return label;
    }
  }

  private final LongAdder[] nanos = new LongAdder[Phase.values().length];
  private final LongAdder[] counts = new LongAdder[Phase.values().length];

  public PacketPhaseTimes() {
    for (int i = 0; i < nanos.length; i++) {
      nanos[i] = new LongAdder();
      counts[i] = new LongAdder();
    }
  }

  /** Adds one packet's time in {@code phase}. */
  public void add(Phase phase, long elapsedNanos) {
    nanos[phase.ordinal()].add(elapsedNanos);
    counts[phase.ordinal()].increment();
  }

  /** Adds {@code packets} packets that took {@code nanos} in all. */
  public void add(Phase phase, long packets, long nanos) {
    this.nanos[phase.ordinal()].add(nanos);
    counts[phase.ordinal()].add(packets);
  }

  public long nanos(Phase phase) {
    return nanos[phase.ordinal()].sum();
  }

  public long count(Phase phase) {
    return counts[phase.ordinal()].sum();
  }

  /**
   * Phase label to total nanoseconds and packets measured, for the phases
   * seen at least once, e.g. {@code dn-get-wait-nanos} and
   * {@code dn-get-wait-packets}.
   */
  public Map<String, Long> snapshot() {
    Map<String, Long> out = new LinkedHashMap<String, Long>();
    for (Phase p : Phase.values()) {
      long n = count(p);
      if (n > 0) {
        out.put(p.label() + "-nanos", nanos(p));
        out.put(p.label() + "-packets", n);
      }
    }
    return out;
  }
}
