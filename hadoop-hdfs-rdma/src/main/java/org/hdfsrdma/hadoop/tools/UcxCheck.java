package org.hdfsrdma.hadoop.tools;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.hadoop.tools.Findings.Level;
import org.hdfsrdma.ucx.NativeIntrospection;
import org.hdfsrdma.ucx.UcxLibrary;
import org.hdfsrdma.ucx.UcxRelease;
import org.hdfsrdma.ucx.UcxUnavailableException;

/**
 * UCX in this JVM and on this host: whether its native libraries load
 * (and which files the process mapped, with UCX's version), the
 * transports and devices UCX can use ({@code ucx_info -d} when it is on
 * the PATH, {@code /sys/class/infiniband}), and whether hdfs-rdma's UCX
 * runtime starts with the configuration given.
 */
final class UcxCheck {

  private final Findings findings;

  UcxCheck(Findings findings) {
    this.findings = findings;
  }

  /**
   * Reports the UCX libraries, then UCX's transports and devices; true
   * when the libraries are usable.
   */
  boolean libraries() {
    if (!UcxLibrary.isAvailable()) {
      findings.add(Level.PROBLEM, "ucx", "UCX native libraries are not"
          + " usable (install libucx0, or point LD_LIBRARY_PATH at a UCX"
          + " build): " + UcxLibrary.unavailableReason());
      return false;
    }
    String release = UcxRelease.loaded();
    String libraries = String.join(", ", mappedUcxLibraries());
    String refusal = UcxRelease.refusal(release);
    String range = "hdfs-rdma runs on UCX " + UcxRelease.OLDEST + " to "
        + UcxRelease.NEWEST_TESTED;
    if (refusal != null) {
      findings.add(Level.PROBLEM, "ucx", refusal + " (" + range + "; writes"
          + " stay on TCP): " + libraries);
      return false;
    }
    if (UcxRelease.newerThanTested(release)) {
      findings.add(Level.WARN, "ucx", "UCX " + release + " loaded, newer"
          + " than tested (" + range + "); it runs when its remote keys"
          + " have a layout hdfs-rdma knows (ucx runtime, below): "
          + libraries);
    } else {
      findings.add(Level.OK, "ucx", "UCX " + release + " loaded, supported"
          + " (" + range + "): " + libraries);
    }
    findings.add(Level.INFO, "ucx shared memory", "profile \""
        + UcxRelease.sharedMemoryProfile() + "\": processes of this host"
        + " exchange data through shared memory only when theirs is the"
        + " same (UCX release and UCX_MM_*, UCX_SYSV_*, UCX_POSIX_*"
        + " settings)");
    String tls = System.getenv("UCX_TLS");
    if (tls != null) {
      findings.add(Level.INFO, "ucx", "UCX_TLS=" + tls
          + " in the environment");
    }
    ucxDevices();
    rdmaDevices();
    return true;
  }

  /** Paths of the UCX libraries this process mapped, from /proc. */
  private static Set<String> mappedUcxLibraries() {
    Set<String> libs = new LinkedHashSet<String>();
    try {
      for (String line : Files.readAllLines(Paths.get("/proc/self/maps"),
          StandardCharsets.UTF_8)) {
        int slash = line.indexOf('/');
        if (slash >= 0) {
          String path = line.substring(slash);
          String file = path.substring(path.lastIndexOf('/') + 1);
          if (file.matches("libuc[pstm]\\.so.*")
              || path.contains("/ucx/libuct_")) {
            libs.add(path);
          }
        }
      }
    } catch (IOException | RuntimeException e) {
      libs.add("(cannot read /proc/self/maps: " + e + ")");
    }
    return libs;
  }

  /** UCX's transports and devices, as ucx_info -d on the PATH lists them. */
  private void ucxDevices() {
    List<String> lines = command("ucx_info", "-d");
    if (lines == null) {
      findings.add(Level.INFO, "ucx devices", "ucx_info is not on the PATH"
          + " (Debian: ucx-utils): transports and devices not listed");
      return;
    }
    List<String> pairs = new ArrayList<String>();
    String transport = null;
    for (String line : lines) {
      String t = line.replaceFirst("^#\\s*", "");
      if (t.startsWith("Transport:")) {
        transport = t.substring("Transport:".length()).trim();
      } else if (t.startsWith("Device:") && transport != null) {
        pairs.add(transport + "/" + t.substring("Device:".length()).trim());
      }
    }
    findings.add(Level.INFO, "ucx devices", pairs.isEmpty()
        ? "ucx_info -d listed none" : "transport/device pairs UCX can use"
        + " here (ucx_info -d): " + String.join(", ", pairs));
  }

  /** The RDMA devices the kernel lists, whatever UCX makes of them. */
  private void rdmaDevices() {
    File[] devices = new File("/sys/class/infiniband").listFiles();
    if (devices == null || devices.length == 0) {
      findings.add(Level.INFO, "rdma devices", "none in"
          + " /sys/class/infiniband: UCX moves data over TCP and shared"
          + " memory here");
      return;
    }
    List<String> names = new ArrayList<String>();
    for (File d : devices) {
      names.add(d.getName());
    }
    Collections.sort(names);
    findings.add(Level.INFO, "rdma devices", String.join(", ", names));
  }

  /** The command's output lines, or null when it cannot run. */
  private static List<String> command(String... command) {
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true)
          .start();
      List<String> lines = new ArrayList<String>();
      try (BufferedReader r = new BufferedReader(new InputStreamReader(
          p.getInputStream(), StandardCharsets.UTF_8))) {
        for (String l; (l = r.readLine()) != null;) {
          lines.add(l);
        }
      }
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return null;
      }
      return lines;
    } catch (IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  /**
   * Starts hdfs-rdma's UCX runtime in this JVM with {@code conf}, as a
   * writer or DataNode would, and reports whether it started.
   */
  void runtime(Configuration conf) {
    try {
      UcxRuntime.get(conf);
      findings.add(Level.OK, "ucx runtime", "started in this JVM (UCX "
          + NativeIntrospection.loadedUcxVersion() + ")");
    } catch (UcxUnavailableException | RuntimeException e) {
      findings.add(Level.PROBLEM, "ucx runtime", "cannot start: "
          + e.getMessage());
    }
  }
}
