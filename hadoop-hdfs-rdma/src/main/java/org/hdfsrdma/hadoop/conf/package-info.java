/**
 * hdfs-rdma's configuration keys, their defaults (documented in
 * {@code hdfs-rdma-default.xml}) and the holder that reads them once.
 */
package org.hdfsrdma.hadoop.conf;
