/**
 * A JVM's UCX resources and their life cycle: the context, the worker,
 * the buffer pools, the client's endpoint cache, the maintenance sweep and
 * the parts attached to them, opened once and closed in reverse order; and
 * what a JVM knows of transports and of the DataNodes on its host.
 */
package org.hdfsrdma.hadoop.runtime;
