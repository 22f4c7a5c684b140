/**
 * Command-line tools on the UCX layer alone: the packet read bandwidth of
 * the bridge between two JVMs, held against raw UCX.
 */
package org.hdfsrdma.ucx.tools;
