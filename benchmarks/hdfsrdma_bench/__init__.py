"""Put latency of stock HDFS, the drop-in jar with UCX off, and the UCX
write path (hdfs-rdma), side by side in one run, every JVM on one Apache
Hadoop release (--hadoop, default systems.DEFAULT_RELEASE, 3.4.2).

Three systems, every put `FsShell -put` in its own JVM as `hdfs dfs -put`
runs it, alternating stock, jar, ucx on the same file:

- stock: that release's stock jars only, on a cluster of its own (a
  NameNode and four DataNodes as separate JVMs on loopback, storage on
  disk).
- jar: the client gets the drop-in jar as -javaagent: with
  dfs.client.rdma.enabled=false (in its hdfs-site.xml, as an operator
  turns UCX off, and as a generic option), so the pipeline is Hadoop's
  TCP pipeline with whatever else the jar changes in the client. It shares the UCX
  cluster (see systems.start_clusters for why).
- ucx: the drop-in jar as -javaagent: in the client and in every daemon of
  the UCX cluster, UCX on.

Each HDFS file is deleted after its put and the next put on a cluster waits
until the replicas are gone from the DataNodes' disks, so every put finds
its cluster in the same (empty) state. Next to the puts, in the same run:
the machine's limit (a plain local copy of the same bytes into r DataNode
storage directories, and the native UCX fan-out benchmark), concurrent
writers, a linear fit of cost against size, and the targets
(benchmarks/README.md, "Targets").

With --conf DIR the same comparison runs against an existing cluster
(Hadoop configuration directory DIR, the jar installed on its DataNodes):
nothing is started or stopped there, the puts switch
dfs.client.rdma.enabled per put (false: jar, true: ucx; stock only with
--stock-classpath), and everything is written under one HDFS test
directory that the run creates and deletes (see existing_cluster).

Run by benchmarks/run.sh (which sets up Java) as `python3 -m
hdfsrdma_bench`; see benchmarks/README.md, which lists the modules.
Never asserts timings: it fails only when the harness breaks (a cluster does
not start, a put fails, a file reads back different, a UCX put moved no
bytes over UCX, a jar put moved any).
"""
