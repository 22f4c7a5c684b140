/**
 * The {@code check} command: what an operator asks of an installation
 * (the agent, the patched classes, the settings, the UCX library and
 * release, a probe of a live cluster). The top of the layer order: it may
 * look at every package below it and nothing depends on it.
 */
package org.hdfsrdma.hadoop.tools;
