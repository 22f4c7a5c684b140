/**
 * A DataNode's side of the UCX path: per DataNode its settings and
 * metrics, per JVM the server of UCX sessions, per writeBlock op the
 * session and the fetch of its packets by one-sided get, the forwarding of
 * a chain, and the failures that send a block back to TCP. Like the client
 * side, it meets Hadoop only through the per-release layer.
 */
package org.hdfsrdma.hadoop.datanode;
