"""The PySpark job of --apps' spark-* workloads, run by the pyspark's own
bin/spark-submit (app_spark.py builds its command line): one Spark
driver JVM, local[N], whose N tasks each write one Parquet file to HDFS.
It runs in the Spark driver's Python, not in the harness: the standard
library and pyspark only, nothing of hdfsrdma_bench (spark-submit runs
this file by its path).

What it does, in this order, each phase tagged with the Spark local
property PHASE_KEY so that the harness can tell its stages apart in the
event log (spark_events.py):

- warmup: the same DataFrame, smaller (about WARMUP_BYTES over the
  tasks), written as Parquet to DIR/warmup: the JVM's JIT, the HDFS
  client's connections and, with UCX, its start, before the timed write;
- materialise: the measured DataFrame generated in N partitions and
  cached (df.cache(), then count()), so that its write reads nothing
  but memory; the job fails unless every partition is cached in memory
  (none on disk): a write that recomputed or read from local disk would
  not be the HDFS write alone;
- write: df.write.parquet(DIR/data), timed here with time.monotonic_ns
  (the write job: its one stage of N tasks and the job commit); the
  harness takes the stage's own time from the event log;
- verify: the rows of DIR/data counted from the Parquet footers against
  the rows generated, every file's length and block count listed.

The data: per row an id (long), id % 1000 (int, few values: dictionary
encoded), a uniform double and RANDSTR_CHARS random alphanumeric
characters (Spark's randstr: barely compressible by Parquet's default
snappy); ROW_BYTES estimates a row in the file, so that each task's file
is close to the workload's size.

Its last line is `APP-RESULT key=value ...` with the keys apps.py's
parse_result expects, and `APP-ERROR ...` for an error (exit status 1).
"""

import argparse
import sys
import time

PHASE_KEY = "hdfsrdma.phase"
RANDSTR_CHARS = 200
# A row in the Parquet file: 200 random characters and their 4-byte
# length, the double (8), the id (8, which snappy shrinks a little) and
# the dictionary-encoded int (about 1).
ROW_BYTES = 218
WARMUP_BYTES = 32 << 20
SEED = 20261202


def parse(argv):
    ap = argparse.ArgumentParser(prog="spark_job.py")
    ap.add_argument("--dir", required=True,
                    help="the run's HDFS directory (a URI or a path of "
                    "fs.defaultFS)")
    ap.add_argument("--tasks", type=int, required=True)
    ap.add_argument("--size", type=int, required=True,
                    help="bytes of each task's Parquet file, about")
    ap.add_argument("--rep", type=int, required=True)
    return ap.parse_args(argv)


def rows_for(size):
    """Rows of one task's file of about `size` bytes (at least 1)."""
    return max(1, size // ROW_BYTES)


def frame(spark, rows, tasks):
    """The DataFrame of `rows` rows in `tasks` partitions."""
    from pyspark.sql import functions as F
    return spark.range(0, rows, 1, tasks).select(
        F.col("id"), (F.col("id") % 1000).cast("int").alias("k"),
        F.rand(SEED).alias("x"),
        F.randstr(F.lit(RANDSTR_CHARS), F.lit(SEED)).alias("payload"))


def listing(spark, uri):
    """(bytes, files with data, blocks) of every file under `uri`."""
    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(uri)
    fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
    it = fs.listFiles(path, True)
    total = files = blocks = 0
    while it.hasNext():
        st = it.next()
        total += st.getLen()
        if st.getLen() > 0:
            files += 1
        blocks += len(st.getBlockLocations())
    return total, files, blocks


def cached(spark):
    """(partitions cached, bytes in memory, bytes on disk) of every cached
    RDD of the application."""
    parts = mem = disk = 0
    for info in spark.sparkContext._jsc.sc().getRDDStorageInfo():
        parts += info.numCachedPartitions()
        mem += info.memSize()
        disk += info.diskSize()
    return parts, mem, disk


def run(a):
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.appName("hdfsrdma-bench-spark").getOrCreate()
    sc = spark.sparkContext
    conf = spark._jsc.hadoopConfiguration()
    conf.set("dfs.replication", str(a.rep))
    base = a.dir.rstrip("/")
    print("APP-START mode=spark spark=%s hadoop=%s master=%s" % (
        spark.version, spark._jvm.org.apache.hadoop.util.VersionInfo
        .getVersion(), sc.master), flush=True)

    sc.setLocalProperty(PHASE_KEY, "warmup")
    warm_rows = rows_for(max(1 << 20, WARMUP_BYTES // a.tasks)) * a.tasks
    frame(spark, warm_rows, a.tasks).write.parquet(base + "/warmup")

    sc.setLocalProperty(PHASE_KEY, "materialise")
    rows = rows_for(a.size) * a.tasks
    df = frame(spark, rows, a.tasks).cache()
    counted = df.count()
    parts, mem, disk = cached(spark)
    if counted != rows or parts != a.tasks or disk:
        raise RuntimeError("the DataFrame is not all in memory: %d of %d "
                           "rows counted, %d of %d partitions cached, %d "
                           "bytes on disk (raise spark.driver.memory)"
                           % (counted, rows, parts, a.tasks, disk))

    sc.setLocalProperty(PHASE_KEY, "write")
    start = time.monotonic_ns()
    df.write.parquet(base + "/data")
    end = time.monotonic_ns()

    sc.setLocalProperty(PHASE_KEY, "verify")
    read = spark.read.parquet(base + "/data").count()
    if read != rows:
        raise RuntimeError("%s/data: %d rows read back, %d written"
                           % (base, read, rows))
    data_bytes, data_files, data_blocks = listing(spark, base + "/data")
    warm_bytes, warm_files, warm_blocks = listing(spark, base + "/warmup")
    if data_files != a.tasks:
        raise RuntimeError("%s/data: %d Parquet files, not one per task (%d)"
                           % (base, data_files, a.tasks))
    sc.setLocalProperty(PHASE_KEY, None)
    report("APP-RESULT mode=spark start_ns=%d end_ns=%d measured_bytes=%d "
           "measured_files=%d records=%d samples=0 bytes=%d blocks=%d "
           "verified_bytes=0 rows_read=%d data_blocks=%d warmup_bytes=%d "
           "warmup_files=%d cached_mem_bytes=%d status=ok" % (
               start, end, data_bytes, data_files, rows,
               data_bytes + warm_bytes, data_blocks + warm_blocks, read,
               data_blocks, warm_bytes, warm_files, mem))
    spark.stop()



def report(line):
    """Writes `line` and its newline in one write: spark-submit runs this
    unbuffered (PYTHONUNBUFFERED), where print() writes the text and the
    newline apart, and the driver JVM's log lines, on the same file, can
    land between them (seen: "status=ok" run into Spark's next log line,
    which failed a run that had succeeded)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()

def main(argv):
    a = parse(argv)
    try:
        run(a)
    except Exception as e:  # the harness reads the reason from the log
        report("APP-ERROR %s: %s" % (type(e).__name__,
                                     str(e).replace("\n", " ")[:2000]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
