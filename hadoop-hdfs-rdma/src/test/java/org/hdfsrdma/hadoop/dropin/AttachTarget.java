package org.hdfsrdma.hadoop.dropin;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * Run in a JVM of its own by {@link TestDropinJar}: with argument
 * "preload" it loads DataStreamer first; then it says "ready", waits for a
 * line on standard input (the test attaches the agent meanwhile), and runs
 * {@link PatchProbe}.
 */
public final class AttachTarget {

  private AttachTarget() {
  }

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && "preload".equals(args[0])) {
      Class.forName("org.apache.hadoop.hdfs.DataStreamer", false,
          AttachTarget.class.getClassLoader());
    }
    System.out.println("ready");
    System.out.flush();
    new BufferedReader(new InputStreamReader(System.in,
        StandardCharsets.UTF_8)).readLine();
    PatchProbe.main(new String[0]);
  }
}
