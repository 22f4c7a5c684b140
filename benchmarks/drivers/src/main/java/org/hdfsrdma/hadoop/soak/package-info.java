/**
 * The soak's long-lived writer JVMs ({@code dev-support/soak.sh}) and the
 * content they write and compare, on Hadoop's public client API only.
 */
package org.hdfsrdma.hadoop.soak;
