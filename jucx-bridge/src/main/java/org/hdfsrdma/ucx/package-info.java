/**
 * The UCX layer, with no Hadoop in it: one {@code Closeable} class per UCX
 * resource (context, worker, endpoint, registered memory, remote region),
 * the wire messages as flyweights checked against what the receiver knows,
 * the packed-key checks per UCX release, and the JNI glue. Everything of
 * the Hadoop module sits above it.
 */
package org.hdfsrdma.ucx;
