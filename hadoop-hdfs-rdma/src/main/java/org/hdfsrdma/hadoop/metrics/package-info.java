/**
 * metrics2 sources and the counters behind them: per DataNode, per JVM,
 * per writer; the outcomes of pipelines and the phase times of packets.
 * Counters are written on the data path without allocation or shared
 * locks; metrics2 reads them on its own timer.
 */
package org.hdfsrdma.hadoop.metrics;
