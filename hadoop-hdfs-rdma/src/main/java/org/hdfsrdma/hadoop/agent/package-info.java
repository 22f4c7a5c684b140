/**
 * The Java agent and what it records: which Hadoop classes it replaced with
 * the jar's patched ones, and whether the running Hadoop is a release the
 * jar carries. It sits low in the layer order because the runtime asks it
 * before starting UCX; it uses only the negotiation's values and the
 * bridge (to warm them up), never the client, DataNode or runtime code.
 */
package org.hdfsrdma.hadoop.agent;
