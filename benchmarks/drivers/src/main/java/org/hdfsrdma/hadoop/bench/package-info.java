/**
 * The client JVMs {@code benchmarks/run.sh} starts for its application and
 * read workloads ({@code --apps}, {@code --reads}) and TestDFSIO on a mini
 * YARN cluster: Hadoop's public client API only, so the same classes
 * measure stock HDFS, the drop-in jar with UCX off and the UCX path; no
 * class of hdfs-rdma on their class path.
 */
package org.hdfsrdma.hadoop.bench;
