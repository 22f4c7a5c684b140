/**
 * Logging that a busy or hostile JVM cannot turn into a flood: lines a JVM
 * needs once, and warnings rate-limited per condition. The bottom of the
 * Hadoop module's layers: it uses nothing of this project.
 */
package org.hdfsrdma.hadoop.util;
