"""The profiles of run.sh (--tiny, --small, --paper): the sizes,
replication factors, runs and writers each measures. An option given on
the command line wins over its profile's value."""

from .units import GiB, MiB

PROFILES = {
    # CI: proves the harness works end to end, in a couple of minutes.
    "tiny": dict(sizes=[1 * MiB, 16 * MiB], reps=[1, 3], runs=1,
                 writers=[1, 2], writer_size=16 * MiB, scale_reps=[3],
                 scale_runs=1, verify="all", warmup=16 * MiB),
    # The default: 1 MiB to 512 MiB (7 minutes on 2 cores with two
    # systems, about half as long again with three).
    "small": dict(sizes=[1 * MiB, 16 * MiB, 128 * MiB, 512 * MiB],
                  reps=[1, 3], runs=3, writers=[1, 2, 4],
                  writer_size=128 * MiB, scale_reps=[3], scale_runs=1,
                  verify="first", warmup=128 * MiB),
    # The paper's sizes (Figs. 6 and 7), 512 MiB for the targets, and the
    # scale study: one run covers every target.
    "paper": dict(sizes=[1 * MiB, 16 * MiB, 128 * MiB, 512 * MiB, 1 * GiB,
                         2 * GiB, 3 * GiB, 4 * GiB, 5 * GiB],
                  reps=[1, 3], runs=3, writers=[1, 2, 4, 8],
                  writer_size=512 * MiB, scale_reps=[3, 1], scale_runs=3,
                  verify="first", warmup=128 * MiB),
}
