/**
 * A writer's side of the UCX path, the same on every Hadoop release:
 * whether a JVM starts UCX, per pipeline the offer, the DataNodes' commit
 * list and the connects, per packet the descriptors, and the fallback of
 * a pipeline to TCP. Hadoop's types reach it only as plain values, through
 * the per-release layer in Hadoop's packages.
 */
package org.hdfsrdma.hadoop.client;
