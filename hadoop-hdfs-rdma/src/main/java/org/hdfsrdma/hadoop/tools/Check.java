package org.hdfsrdma.hadoop.tools;

import java.io.PrintStream;
import java.util.Arrays;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.util.Tool;
import org.apache.hadoop.util.ToolRunner;
import org.hdfsrdma.hadoop.agent.PatchState;
import org.hdfsrdma.hadoop.tools.Findings.Level;

/**
 * {@code hdfs-rdma check}: is the UCX write path active in a JVM started
 * like this one? Run it with the class path, JVM options (the
 * {@code -javaagent:}) and configuration of the job or daemon in question:
 *
 * <pre>
 * java -javaagent:JAR -cp CONF:HADOOP_CLASSPATH org.hdfsrdma.hadoop.tools.Check
 *     [-D key=value ...] [--client | --datanode]
 *     [--probe [--probe-path P] [--probe-bytes N]]
 * hadoop jar JAR check ...                   (with the agent in HADOOP_OPTS)
 * </pre>
 *
 * It prints one line per finding ({@code OK}, {@code INFO}, {@code WARN},
 * {@code PROBLEM}): the Hadoop on the class path, whether the agent runs
 * and replaced the client and DataNode classes (with each class's code
 * source), the UCX libraries and their version, UCX's transports and
 * devices, the effective {@code dfs.*.rdma.*} settings, the DataNode
 * plugin, and with {@code --probe} a small write to fs.defaultFS
 * confirmed by this JVM's UCX counter and by each DataNode's metrics2
 * source {@code Hadoop:service=DataNode,name=HdfsRdmaDataNode-*}. Exits 1
 * when any line is a PROBLEM, each saying why in one line.
 *
 * <p>Roles: {@code --client} checks what a writer needs (a YARN container,
 * a Spark executor, the hdfs command), {@code --datanode} what a DataNode
 * needs; by default both, the DataNode part only where hadoop-hdfs's
 * DataNode classes are on the class path.
 *
 * <p>This class reads the command line and runs the parts in the order of
 * the output: {@link InstallCheck} (Hadoop, agent, patched classes),
 * {@link UcxCheck} (libraries, transports and devices, later the
 * runtime), {@link SettingsReport} (settings, distribution) and
 * {@link Probe}; {@link Findings} prints the lines and gives the exit
 * code. It is the drop-in jar's Main-Class.
 */
public final class Check extends Configured implements Tool {

  private static final String USAGE = "usage: check [-D key=value ...]"
      + " [--client | --datanode] [--probe [--probe-path PATH]"
      + " [--probe-bytes N]] | --help";
  private static final String HELP = USAGE + "\n"
      + "Is the UCX write path active in a JVM started like this one (its"
      + " class path,\n-javaagent: and configuration)? One line per"
      + " finding: OK, INFO, WARN, PROBLEM.\n"
      + "  -D key=value     a setting, as in the job or daemon checked\n"
      + "  --client         only what a writer needs (a container, an"
      + " executor, hdfs dfs)\n"
      + "  --datanode       only what a DataNode needs\n"
      + "  --probe          write a small file to fs.defaultFS and confirm"
      + " that UCX carried it\n"
      + "  --probe-path P   where the probe writes (deleted after)\n"
      + "  --probe-bytes N  how much the probe writes\n"
      + "  --help           this text\n"
      + "Exit code: 0 no problem, 1 a PROBLEM line, 2 bad usage.";

  private final PrintStream out;

  Check(PrintStream out) {
    this.out = out;
  }

  /** Exits 0 when nothing is a problem, 1 otherwise, 2 on bad usage. */
  public static void main(String[] args) {
    // "hadoop jar hdfs-rdma-dropin.jar check ..." passes the word along.
    String[] rest = args.length > 0 && "check".equals(args[0])
        ? Arrays.copyOfRange(args, 1, args.length) : args;
    int code;
    try {
      code = ToolRunner.run(new HdfsConfiguration(), new Check(System.out),
          rest);
    } catch (Throwable t) {
      System.out.println("PROBLEM check: failed: " + t);
      code = 1;
    }
    System.out.flush();
    System.exit(code);
  }

  /**
   * Reads the options (generic ones are gone already: ToolRunner applied
   * them to the configuration) and runs the checks they ask for. Returns
   * the exit code: 0, 1 when a finding is a PROBLEM, 2 on bad usage.
   */
  @Override
  public int run(String[] args) throws Exception {
    boolean client = true;
    boolean dataNode = true;
    boolean dataNodeAsked = false;
    boolean probe = false;
    String probePath = null;
    long probeBytes = 1024 * 1024 + 17;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--client":
          dataNode = false;
          break;
        case "--datanode":
          client = false;
          dataNodeAsked = true;
          break;
        case "--probe":
          probe = true;
          break;
        case "--probe-path":
          probePath = ++i < args.length ? args[i] : null;
          break;
        case "--probe-bytes":
          probeBytes = ++i < args.length ? Long.parseLong(args[i]) : -1;
          break;
        case "--help":
        case "-h":
          out.println(HELP);
          return 0;
        default:
          System.err.println("unknown argument " + args[i] + "\n" + USAGE);
          return 2;
      }
    }
    if (!client && !dataNode || probeBytes < 1
        || (probe && !client)) {
      System.err.println(USAGE);
      return 2;
    }
    Configuration conf = getConf();
    Findings findings = new Findings(out);
    findings.add(Level.INFO, "hdfs-rdma", version() + " ("
        + PatchState.ownLocation() + ")");
    findings.add(Level.INFO, "java", System.getProperty("java.version")
        + " (" + System.getProperty("java.home") + ")");
    InstallCheck install = new InstallCheck(findings);
    install.hadoop();
    install.agent();
    boolean clientActive = false;
    boolean dataNodeActive = false;
    if (client) {
      clientActive = install.classes(PatchState.Group.CLIENT);
    }
    if (dataNode) {
      if (!dataNodeAsked && getClass().getClassLoader().getResource(
          "org/apache/hadoop/hdfs/server/datanode/DataNode.class") == null) {
        findings.add(Level.INFO, "patch", "hadoop-hdfs's DataNode is not on"
            + " the class path: checking a client only");
        dataNode = false;
      } else {
        dataNodeActive = install.classes(PatchState.Group.DATANODE);
      }
    }
    UcxCheck ucxCheck = new UcxCheck(findings);
    boolean ucx = ucxCheck.libraries();
    SettingsReport settings = new SettingsReport(findings, conf);
    settings.report(client, dataNode);
    if (ucx && clientActive) {
      settings.distribution();
    }
    if (ucx && (clientActive || dataNodeActive)) {
      ucxCheck.runtime(conf);
    }
    if (probe) {
      new Probe(findings, conf).run(probePath, probeBytes);
    }
    return findings.close();
  }

  /** The jar's Implementation-Version, which names its release. */
  static String version() {
    String v = Check.class.getPackage().getImplementationVersion();
    return v != null ? v : "unknown (not run from the built jar)";
  }
}
