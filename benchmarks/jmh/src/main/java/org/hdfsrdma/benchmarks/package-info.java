/**
 * JMH benchmarks of one transfer between two JVMs of a host, UCX through
 * the bridge against a socket ({@code benchmarks/transfer.sh}), with the
 * peer process they drive and its wire; no Hadoop.
 */
package org.hdfsrdma.benchmarks;
