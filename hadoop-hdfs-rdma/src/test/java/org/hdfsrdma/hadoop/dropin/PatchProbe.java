package org.hdfsrdma.hadoop.dropin;

import java.lang.reflect.Field;
import java.lang.reflect.Method;

/**
 * Run in a JVM of its own by {@link TestDropinJar}: prints, for a class of
 * each patched group, whether the class this JVM loaded is hdfs-rdma's
 * patched one, judged by a member only the patch adds (DataStreamer's
 * field "ucx", BlockReceiver's setPacketReceiver, DataXceiver's field
 * "ucxWrite"), not by anything the agent reports.
 */
public final class PatchProbe {

  private PatchProbe() {
  }

  public static void main(String[] args) throws Exception {
    ClassLoader loader = PatchProbe.class.getClassLoader();
    Class<?> streamer = Class.forName("org.apache.hadoop.hdfs.DataStreamer",
        false, loader);
    Class<?> receiver = Class.forName(
        "org.apache.hadoop.hdfs.server.datanode.BlockReceiver", false, loader);
    Class<?> xceiver = Class.forName(
        "org.apache.hadoop.hdfs.server.datanode.DataXceiver", false, loader);
    System.out.println("DataStreamer patched=" + hasField(streamer, "ucx"));
    System.out.println("BlockReceiver patched="
        + hasMethod(receiver, "setPacketReceiver"));
    System.out.println("DataXceiver patched="
        + hasField(xceiver, "ucxWrite"));
  }

  private static boolean hasField(Class<?> c, String name) {
    for (Field f : c.getDeclaredFields()) {
      if (f.getName().equals(name)) {
        return true;
      }
    }
    return false;
  }

  private static boolean hasMethod(Class<?> c, String name) {
    for (Method m : c.getDeclaredMethods()) {
      if (m.getName().equals(name)) {
        return true;
      }
    }
    return false;
  }
}
