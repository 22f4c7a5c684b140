/**
 * hdfs-rdma's per-pipeline negotiation as plain values: the client's
 * {@link org.hdfsrdma.hadoop.protocol.WriteRequest}, each DataNode's
 * {@link org.hdfsrdma.hadoop.protocol.CommitEntry}, the
 * {@link org.hdfsrdma.hadoop.protocol.WireLimits} a receiver holds them to,
 * and the {@link org.hdfsrdma.hadoop.protocol.SessionIds} derived from
 * them. Nothing here knows protobuf or Hadoop's messages, so this package
 * compiles unchanged against every Hadoop release; how the values travel
 * in Hadoop's data-transfer messages is {@code org.hdfsrdma.hadoop.compat}'s
 * business.
 */
package org.hdfsrdma.hadoop.protocol;
