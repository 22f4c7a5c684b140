/**
 * The memory an exposer sends from (a client, a DataNode feeding the next
 * in a chain, a DataNode serving a read): registered regions and their
 * announcements to each peer, and a DataNode's read buffers, kept apart
 * per reader; shared by the client and DataNode packages above it.
 */
package org.hdfsrdma.hadoop.sender;
