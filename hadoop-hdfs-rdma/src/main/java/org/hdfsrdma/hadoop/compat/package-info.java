/**
 * Where hdfs-rdma meets Hadoop's protobuf: the only hand-written classes
 * that import {@code com.google.protobuf} or Hadoop's
 * {@code DataTransferProtos}. They carry the values of
 * {@code org.hdfsrdma.hadoop.protocol} as the messages of
 * {@code src/main/proto/hdfs_rdma.proto} (generated into
 * {@code org.hdfsrdma.hadoop.compat.proto}) in unknown fields of Hadoop's
 * data-transfer messages, and hook the {@code writeBlock} and
 * {@code readBlock} ops on their way to a DataNode
 * ({@link org.hdfsrdma.hadoop.compat.OpRewriter}) and in it
 * ({@link org.hdfsrdma.hadoop.compat.OpPeek}).
 *
 * <p>Generated code is tied to the protobuf runtime of one Hadoop line
 * (protobuf-java 2.5 in Hadoop 2, a relocated 3.x in Hadoop 3), so this
 * package and its generated messages are what a build for another line
 * compiles again. They use only protobuf API that protobuf-java 2.5 and
 * 3.x share by name: {@code UnknownFieldSet}, {@code ByteString},
 * {@code CodedInputStream}, {@code CodedOutputStream}, and the generated
 * messages' {@code parseFrom}, {@code toByteString} and
 * {@code newBuilder}.
 */
package org.hdfsrdma.hadoop.compat;
