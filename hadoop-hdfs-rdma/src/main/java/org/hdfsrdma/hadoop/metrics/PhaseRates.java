package org.hdfsrdma.hadoop.metrics;

import org.apache.hadoop.metrics2.lib.MetricsRegistry;
import org.apache.hadoop.metrics2.lib.MutableRate;
import org.hdfsrdma.hadoop.metrics.PacketPhaseTimes.Phase;

/**
 * One side's packet phase timers as metrics2 rates, fed at snapshot time
 * from {@link PacketPhaseTimes}: per phase the packets timed since the last
 * snapshot ({@code ...NanosNumOps}) and their mean nanoseconds
 * ({@code ...NanosAvgTime}), as DataNodeMetrics' {@code FlushNanos}. The
 * data path keeps adding to its adders; nothing per packet takes the lock
 * that {@code MutableRate.add} takes in Hadoop 2.9.
 */
final class PhaseRates {

  /** Suffix of every phase rate's name: the values are nanoseconds. */
  static final String NANOS = "Nanos";

  private final PacketPhaseTimes times;
  /** Per phase (by ordinal): its rate, or null when not this side's. */
  private final MutableRate[] rates = new MutableRate[Phase.values().length];
  private final long[] lastCounts = new long[rates.length];
  private final long[] lastNanos = new long[rates.length];

  /**
   * Registers in {@code registry} a rate per phase of this side
   * ({@code client} phases or the DataNode's), fed from {@code times}.
   */
  PhaseRates(MetricsRegistry registry, PacketPhaseTimes times,
      boolean client) {
    this.times = times;
    for (Phase p : Phase.values()) {
      if (isClientPhase(p) == client) {
        rates[p.ordinal()] = registry.newRate(rateName(p),
            (client ? "Client" : "DataNode") + " nanoseconds per packet in "
                + p.label(), false);
      }
    }
  }

  /**
   * The rate's name for a phase: its label in CamelCase plus
   * {@value #NANOS}, e.g. {@code dn-get-wait} gives {@code DnGetWaitNanos}.
   */
  static String rateName(Phase phase) {
    StringBuilder name = new StringBuilder();
    for (String word : phase.label().split("-")) {
      name.append(Character.toUpperCase(word.charAt(0)))
          .append(word.substring(1));
    }
    return name.append(NANOS).toString();
  }

  static boolean isClientPhase(Phase phase) {
    return phase.label().startsWith("client-");
  }

  /** Adds what the timers measured since the last call; snapshot time. */
  void update() {
    for (Phase p : Phase.values()) {
      int i = p.ordinal();
      MutableRate rate = rates[i];
      if (rate == null) {
        continue;
      }
      long count = times.count(p);
      long nanos = times.nanos(p);
      if (count > lastCounts[i]) {
        rate.add(count - lastCounts[i], nanos - lastNanos[i]);
        lastCounts[i] = count;
        lastNanos[i] = nanos;
      }
    }
  }
}
