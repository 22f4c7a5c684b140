package org.hdfsrdma.hadoop.runtime;

import java.util.concurrent.atomic.AtomicLong;

import org.hdfsrdma.hadoop.metrics.UcxJvmMetrics;
import org.hdfsrdma.ucx.EndpointCache;
import org.hdfsrdma.ucx.PoolMetrics;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.UcxWorker;

/**
 * What the JVM's metrics source reads off the runtime's resources: sums
 * over the runtime's worker and the client lanes' own workers, the pools'
 * figures, the transports UCX chose. Read at each metrics snapshot.
 */
final class RuntimeGauges implements UcxJvmMetrics.Gauges {

  private final UcxWorker worker;
  private final ClientLanes lanes;
  private final EndpointCache endpoints;
  private final BufferPools pools;
  private final AtomicLong maintenanceFailures;
  private final TransportNotes transportNotes;

  RuntimeGauges(UcxWorker worker, ClientLanes lanes, EndpointCache endpoints,
      BufferPools pools, AtomicLong maintenanceFailures,
      TransportNotes transportNotes) {
    this.worker = worker;
    this.lanes = lanes;
    this.endpoints = endpoints;
    this.pools = pools;
    this.maintenanceFailures = maintenanceFailures;
    this.transportNotes = transportNotes;
  }

  @Override
  public long strayMessages() {
    return worker.strayMessages() + worker.oversizedMessages()
        + lanes.sumOverOwnWorkers(
            w -> w.strayMessages() + w.oversizedMessages());
  }

  @Override
  public long callbackFailures() {
    return worker.callbackFailures() + maintenanceFailures.get()
        + lanes.sumOverOwnWorkers(UcxWorker::callbackFailures);
  }

  @Override
  public long clientConnects() {
    return endpoints.connectCount() + lanes.connectsOnOwnLanes();
  }

  @Override
  public PoolMetrics clientPool() {
    RegisteredBufferPool p = pools.clientIfCreated();
    return p == null ? null : p.metrics();
  }

  @Override
  public PoolMetrics landingPool() {
    RegisteredBufferPool p = pools.landingIfCreated();
    return p == null ? null : p.metrics();
  }

  @Override
  public String transports() {
    return transportNotes.summary();
  }
}
