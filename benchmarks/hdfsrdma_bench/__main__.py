"""python3 -m hdfsrdma_bench: what benchmarks/run.sh runs."""

import sys

from .cli import main

sys.exit(main(sys.argv[1:]))
