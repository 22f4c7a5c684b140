package org.hdfsrdma.hadoop.tools;

import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.hadoop.client.DistributionPolicy;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.conf.RdmaSettings;
import org.hdfsrdma.hadoop.conf.UnknownKeys;
import org.hdfsrdma.hadoop.datanode.DataNodeStart;
import org.hdfsrdma.hadoop.tools.Findings.Level;

/**
 * The configuration as hdfs-rdma sees it: every key of hdfs-rdma
 * ({@link RdmaSettings}, the one list) with its effective value and where
 * that came from (an operator's first question is often which file set
 * it), keys that look like hdfs-rdma's but are not (a typo keeps a
 * default), values outside their range (the default is used), the
 * settings that keep writes on TCP (data-transfer encryption or SASL
 * integrity/privacy, the path switched off), whether a plugin entry is
 * left that rollback must remove,
 * and what a writer in a JVM like this one would do with pipelines.
 */
final class SettingsReport {

  private final Findings findings;
  private final Configuration conf;

  SettingsReport(Findings findings, Configuration conf) {
    this.findings = findings;
    this.conf = conf;
  }

  /** The resource that set {@code key} last, as Hadoop recorded it. */
  private String source(String key) {
    String[] sources = conf.getPropertySources(key);
    return sources == null || sources.length == 0 ? "set"
        : sources[sources.length - 1];
  }

  /**
   * Reports every setting, then what keeps a writer ({@code client}) or a
   * DataNode ({@code dataNode}) with this configuration on TCP.
   */
  void report(boolean client, boolean dataNode) {
    Map<String, String> defaults = RdmaSettings.defaults();
    for (Map.Entry<String, String> d : defaults.entrySet()) {
      String value = conf.get(d.getKey());
      findings.add(Level.INFO, "setting", d.getKey() + "=" + (value == null
          ? d.getValue() + " (default)"
          : value + " (" + source(d.getKey()) + ")"));
    }
    for (String k : UnknownKeys.unknownKeys(conf)) {
      String suggestion = UnknownKeys.closest(k);
      findings.add(Level.WARN, "setting", k + "=" + conf.get(k) + " ("
          + source(k) + ") is not an hdfs-rdma key; see "
          + HdfsRdmaConfigKeys.DEFAULT_RESOURCE + (suggestion == null ? ""
          : "; did you mean " + suggestion + "?"));
    }
    for (String problem : new RdmaConf(conf).problems()) {
      findings.add(Level.WARN, "setting",
          problem.replaceFirst("^hdfs-rdma: ", ""));
    }
    if (RdmaConf.transferProtected(conf)) {
      findings.add(Level.PROBLEM, "setting", "writes stay on TCP: "
          + RdmaConf.TRANSFER_PROTECTED_REASON);
    }
    if (client && !conf.getBoolean(
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY,
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_DEFAULT)) {
      findings.add(Level.PROBLEM, "setting",
          HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY + " is not true:"
          + " this JVM's writes stay on TCP");
    }
    if (dataNode) {
      dataNode();
    }
  }

  /** What keeps a DataNode with this configuration from serving UCX. */
  private void dataNode() {
    if (!conf.getBoolean(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY,
        HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_DEFAULT)) {
      findings.add(Level.PROBLEM, "setting",
          HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY + " is not"
          + " true: a DataNode with this configuration receives over TCP");
    }
    if (DataNodeStart.pluginListed(conf)) {
      findings.add(Level.INFO, "datanode plugin", DataNodeStart.PLUGIN
          + " in dfs.datanode.plugins is not needed with the agent, which"
          + " starts the DataNode side itself; remove the entry before you"
          + " remove the agent (a DataNode that cannot load a listed plugin"
          + " does not start)");
    } else {
      findings.add(Level.OK, "datanode plugin", "none needed: the agent"
          + " starts the DataNode side");
    }
  }

  /**
   * Whether a writer in a JVM like this one would start UCX (checked before
   * this check starts UCX itself), and how it distributes pipelines.
   */
  void distribution() {
    RdmaConf rdma = new RdmaConf(conf);
    String why = DistributionPolicy.reasonNotToStart(rdma);
    if (why == null) {
      findings.add(Level.INFO, "distribution", rdma.distribution()
          + ": writers start UCX; " + shape(rdma));
    } else {
      findings.add(Level.WARN, "distribution", "writers in a JVM like this"
          + " one would not start UCX and write over TCP: " + why + " ("
          + HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_DISTRIBUTION_KEY
          + "=fan-out forces UCX)");
    }
  }

  /** What pipelines look like under the client's distribution. */
  private static String shape(RdmaConf rdma) {
    switch (rdma.distribution()) {
    case FAN_OUT:
      return "pipelines fan out where every get is one-sided or emulated";
    case CHAIN:
      return "every DataNode fetches from the one before it (chain)";
    case HYBRID:
      return "the client feeds the first " + rdma.hybridFeeders()
          + " DataNodes of a pipeline, those feed the rest (hybrid)";
    default:
      return "pipelines fan out where every get is one-sided";
    }
  }
}
