"""The profiles of run.sh (--tiny, --small, --paper): the sizes,
replication factors, runs and writers each measures, the UCX clients'
--defer-start, and the application-shaped workloads of --apps. An option
given on the command line wins over its profile's value."""

from .units import GiB, KiB, MiB

# --apps (apps.py): the long-lived writer's SIZE:COUNT files at each
# replication of app_reps; logs of wal_records records for wal_seconds
# each (hflush, hsync), and one of wal_threads logs at once; app_writers
# concurrent JVMs of app_writer_files files of app_writer_size each;
# app_threads writer threads in one JVM, app_thread_files files of each
# of app_thread_sizes per thread, at each of app_reps; app_mixed writer
# threads beside one log in one JVM; TestDFSIO jobs of
# dfsio MAPS x SIZE (Hadoop 2.9.2 only); Spark jobs of each of
# app_spark_tasks tasks writing a Parquet file of each of
# app_spark_sizes; an idle client for idle_seconds.
APPS = dict(app_files=[(1 * MiB, 1000), (16 * MiB, 100), (128 * MiB, 16)],
            app_reps=[3, 1], wal_records=[1 * KiB, 4 * KiB, 64 * KiB],
            wal_seconds=30.0, wal_threads=8, app_writers=[1, 2, 4, 8],
            app_writer_size=512 * MiB, app_writer_files=2,
            app_threads=[1, 4, 8, 16],
            app_thread_sizes=[16 * MiB, 128 * MiB], app_thread_files=2,
            app_mixed=8, dfsio=[(4, 1 * GiB), (16, 256 * MiB)],
            app_spark_tasks=[8], app_spark_sizes=[128 * MiB],
            idle_seconds=30.0)
# --apps --tiny: every kind of workload, end to end, in a few minutes.
APPS_TINY = dict(app_files=[(1 * MiB, 16), (16 * MiB, 2)], app_reps=[3, 1],
                 wal_records=[1 * KiB, 64 * KiB], wal_seconds=2.0,
                 wal_threads=8, app_writers=[1, 2],
                 app_writer_size=16 * MiB, app_writer_files=1,
                 app_threads=[2], app_thread_sizes=[16 * MiB],
                 app_thread_files=1, app_mixed=2,
                 dfsio=[(2, 16 * MiB)], app_spark_tasks=[2],
                 app_spark_sizes=[16 * MiB], idle_seconds=3.0)

# --reads (reads.py): files of read_seq sizes read whole, about read_bytes
# per batch; read_pread positional reads, pread_count per batch, of a file
# of pread_file; read_threads threads of one JVM each reading files of
# read_threads_size; every file at replication read_rep.
READS = dict(read_seq=[1 * MiB, 64 * MiB, 1 * GiB],
             read_pread=[4 * KiB, 64 * KiB, 1 * MiB], pread_file=256 * MiB,
             pread_count=2000, read_threads=[4],
             read_threads_size=64 * MiB, read_bytes=1 * GiB, read_rep=3)
READS_TINY = dict(read_seq=[1 * MiB, 16 * MiB],
                  read_pread=[4 * KiB, 64 * KiB], pread_file=16 * MiB,
                  pread_count=100, read_threads=[2],
                  read_threads_size=16 * MiB, read_bytes=32 * MiB,
                  read_rep=3)

PROFILES = {
    # CI: proves the harness works end to end, in a couple of minutes.
    "tiny": dict(sizes=[1 * MiB, 16 * MiB], reps=[1, 3], runs=1,
                 writers=[1, 2], writer_size=16 * MiB, scale_reps=[3],
                 scale_runs=1, verify="all", warmup=16 * MiB,
                 # Every byte of a UCX client over UCX, the first block
                 # too: the short puts prove UCX carries bytes end to end.
                 defer_start="off", **APPS_TINY, **READS_TINY),
    # The default: 1 MiB to 512 MiB (7 minutes on 2 cores with two
    # systems, about half as long again with three).
    "small": dict(sizes=[1 * MiB, 16 * MiB, 128 * MiB, 512 * MiB],
                  reps=[1, 3], runs=3, writers=[1, 2, 4],
                  writer_size=128 * MiB, scale_reps=[3], scale_runs=1,
                  verify="first", warmup=128 * MiB, defer_start="on",
                  **APPS, **READS),
    # The paper's sizes (Figs. 6 and 7), 512 MiB for the targets, and the
    # scale study: one run covers every target.
    "paper": dict(sizes=[1 * MiB, 16 * MiB, 128 * MiB, 512 * MiB, 1 * GiB,
                         2 * GiB, 3 * GiB, 4 * GiB, 5 * GiB],
                  reps=[1, 3], runs=3, writers=[1, 2, 4, 8],
                  writer_size=512 * MiB, scale_reps=[3, 1], scale_runs=3,
                  verify="first", warmup=128 * MiB, defer_start="on",
                  **APPS, **dict(READS, read_seq=[1 * MiB, 64 * MiB,
                                                  1 * GiB, 5 * GiB])),
}
