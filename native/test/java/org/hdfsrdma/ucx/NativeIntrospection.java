package org.hdfsrdma.ucx;

/**
 * Test stand-in only (ctest "jni_jvm_load"): the real class lives in
 * jucx-bridge. Same package, name and native method signatures, so loading
 * the library in a real JVM and calling the natives checks that the C
 * symbol names and signatures match what the JVM resolves.
 */
public final class NativeIntrospection {
  static native String ucxVersion();

  static native String endpointInfo(long ucpEp);

  static native String workerInfo(long ucpWorker);

  public static void main(String[] args) {
    System.load(args[0]);
    String v = ucxVersion();
    String ep = endpointInfo(0L);
    String w = workerInfo(0L);
    System.out.println("ucxVersion()=" + v + " endpointInfo(0)=" + ep
        + " workerInfo(0)=" + w);
    if (v == null || v.isEmpty() || ep != null || w != null) {
      System.out.println("FAILED");
      System.exit(1);
    }
    System.out.println("OK");
  }
}
