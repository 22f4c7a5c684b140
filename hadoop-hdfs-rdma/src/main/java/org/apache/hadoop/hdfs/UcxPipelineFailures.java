package org.apache.hadoop.hdfs;

import org.apache.hadoop.classification.InterfaceAudience;
import org.hdfsrdma.hadoop.client.PipelineFailures;

/** Restarts a DataStreamer's pipeline through its error state. */
@InterfaceAudience.Private
final class UcxPipelineFailures implements PipelineFailures {
  private final DataStreamer.ErrorState errorState;

  UcxPipelineFailures(DataStreamer.ErrorState errorState) {
    this.errorState = errorState;
  }

  @Override
  public void restartOverTcp() {
    UcxErrorStates.restart(errorState);
  }

  @Override
  public void forgive() {
    UcxErrorStates.forgive(errorState);
  }

  @Override
  public boolean pipelineFailed() {
    return errorState.hasError();
  }
}
