"""What every part of the harness shares: where it lives in the
repository, its log lines and warnings, and the error that fails a run."""

import os
import sys
import time

# benchmarks/ (results, transfer.sh) and the repository around it (the
# build: the drop-in jar, the native fan-out benchmark, Maven).
BENCHMARKS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(BENCHMARKS)
# The Java clients a run starts (AppWorkload, DfsioOnYarn, SoakWriter), as
# the build compiles them (benchmarks/drivers).
DRIVER_CLASSES = os.path.join(BENCHMARKS, "drivers", "target", "classes")


class HarnessError(Exception):
    """The harness itself broke (not a timing): the run exits nonzero."""


def log(msg):
    print("[bench %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def warn(msg):
    print("[bench %s] WARNING: %s" % (time.strftime("%H:%M:%S"), msg),
          file=sys.stderr, flush=True)
