package org.hdfsrdma.hadoop.metrics;

import java.io.FileWriter;
import java.io.IOException;
import java.io.Writer;
import java.util.LinkedHashMap;
import java.util.Map;

import org.hdfsrdma.hadoop.metrics.PacketPhaseTimes.Phase;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A runtime's totals line: what it moved over UCX, summed over its client
 * streams and every DataNode that served on it, as {@code key=value}
 * pairs. Logged
 * when the runtime closes at exit ({@code hdfs-rdma totals: ...}) and
 * appended to the file the system property {@value #FILE_PROPERTY} names:
 * a YARN container whose logging is already down at exit still leaves its
 * line in its log directory that way, and test and benchmark runs sum
 * these lines over their JVMs. A view of the same counters the metrics2
 * sources publish, not a count of its own.
 */
public final class Totals {

  private static final Logger LOG = LoggerFactory.getLogger(Totals.class);

  /** The system property naming the file the line is appended to. */
  public static final String FILE_PROPERTY = "hdfsrdma.stats.file";

  private Totals() {
  }

  /** The line of {@code jvm} and every DataNode that served on it. */
  public static String line(UcxJvmMetrics jvm) {
    StringBuilder b = new StringBuilder();
    b.append("ucx-data-bytes-sent=").append(jvm.dataBytesSent())
        .append(" ucx-data-bytes-fetched=")
        .append(jvm.dataNodeTotal(UcxDataNodeMetrics.FETCHED_BYTES))
        .append(" ucx-data-bytes-fetched-from-datanodes=")
        .append(jvm.dataNodeTotal(
            UcxDataNodeMetrics.FETCHED_FROM_DATANODES))
        .append(" ucx-data-bytes-forwarded=")
        .append(jvm.dataNodeTotal(UcxDataNodeMetrics.FORWARDED_BYTES))
        .append(" transports=")
        .append(jvm.gauges().transports().replace("; ", ";").replace(' ', '_'));
    long overUcx = 0;
    long overTcp = 0;
    long fellBack = 0;
    for (UcxDataNodeMetrics m : jvm.dataNodes()) {
      overUcx += m.blocksOverUcx();
      overTcp += m.blocksOverTcp();
      fellBack += m.blocksFellBack();
    }
    b.append(" blocks-over-ucx=").append(overUcx)
        .append(" blocks-over-tcp=").append(overTcp)
        .append(" blocks-fell-back=").append(fellBack)
        .append(" packets-fetched=")
        .append(jvm.dataNodeTotal(UcxDataNodeMetrics.PACKETS_FETCHED))
        .append(" rejected-messages=").append(jvm.rejectedMessages())
        .append(" queued-sends=").append(jvm.queuedSends())
        .append(" ucx-read-bytes=").append(jvm.reads().bytesRead())
        .append(" reads-over-ucx=").append(jvm.reads().readsAnswered())
        .append(" reads-fell-back=").append(jvm.reads().readsFellBack())
        .append(" read-offers-served-stock=")
        .append(jvm.reads().readsStock())
        .append(" read-offers-withheld=")
        .append(jvm.reads().readsWithheld())
        .append(" striped-streamers-over-tcp=")
        .append(ClientOutcomes.stripedStreamersOverTcp());
    // The JVM's pipelines: those on TCP before UCX started count too.
    for (PipelineOutcome o : PipelineOutcome.values()) {
      b.append(' ').append(o.label()).append('=')
          .append(ClientOutcomes.pipelines(o));
    }
    for (Map.Entry<String, Long> e : phases(jvm).entrySet()) {
      b.append(' ').append(e.getKey()).append('=').append(e.getValue());
    }
    return b.toString();
  }

  /** Phase timer totals of the client and of every timed DataNode. */
  private static Map<String, Long> phases(UcxJvmMetrics jvm) {
    PacketPhaseTimes sum = new PacketPhaseTimes();
    addAll(sum, jvm.clientTimes());
    for (UcxDataNodeMetrics m : jvm.dataNodes()) {
      addAll(sum, m.times());
    }
    return sum.snapshot();
  }

  private static void addAll(PacketPhaseTimes into, PacketPhaseTimes from) {
    if (from == null) {
      return;
    }
    for (Phase p : Phase.values()) {
      into.add(p, from.count(p), from.nanos(p));
    }
  }

  /** Logs the line and appends it to {@value #FILE_PROPERTY}, if set. */
  public static void report(UcxJvmMetrics jvm) {
    String line = line(jvm);
    LOG.info("hdfs-rdma totals: {}", line);
    String file = System.getProperty(FILE_PROPERTY);
    if (file != null) {
      try (Writer w = new FileWriter(file, true)) {
        w.write(line + "\n");
      } catch (IOException e) {
        LOG.warn("cannot append UCX totals to {}: {}", file, e.toString());
      }
    }
  }

  /** A map of the line's values, for tests and the check command. */
  public static Map<String, String> parse(String line) {
    Map<String, String> values = new LinkedHashMap<String, String>();
    for (String pair : line.trim().split(" ")) {
      int eq = pair.indexOf('=');
      if (eq > 0) {
        values.put(pair.substring(0, eq), pair.substring(eq + 1));
      }
    }
    return values;
  }
}
