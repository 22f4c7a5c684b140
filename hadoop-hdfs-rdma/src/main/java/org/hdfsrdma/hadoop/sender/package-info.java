/**
 * The memory an exposer sends from (a client, or a DataNode feeding the
 * next in a chain): registered regions and their announcements to each
 * peer, shared by the client and DataNode packages above it.
 */
package org.hdfsrdma.hadoop.sender;
