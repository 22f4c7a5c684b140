#!/usr/bin/env python3
"""Where a put's CPU went, from async-profiler's collapsed stacks.

Reads the ``*.collapsed`` files that ``run.sh --flamegraphs`` writes (one
per JVM: client and DataNodes, per system) and sorts every sample into one
category, by the first rule below that matches any frame of its stack, so
that a flame graph's wide towers become a table two runs can be compared
with. Samples are CPU samples at the profiling interval (1 ms unless
``--profile-interval-us`` said otherwise), so counts read as milliseconds.

    benchmarks/profile_summary.py DIR [DIR ...]    # flamegraphs folders
"""

import argparse
import collections
import os
import re
import sys

# (category, pattern over one frame), first match over the stack wins.
# Order matters: a checksum computed inside DataStreamer is "checksums",
# the UCX send it then makes is "UCX".
RULES = [
    ("JIT compiler", r"CompileBroker|C2Compiler|C1Compiler|Compilation::"),
    ("GC", r"G1[A-Z]|GCTaskThread|WorkerThread::run|VM_G1|ParallelGC"
     r"|ConcurrentGCThread|G1ConcurrentRefine|SafepointSynchronize"),
    ("spin/yield", r"Thread\.yield|sched_yield|SwitchToThread"
     r"|JVM_Yield"),
    ("checksums", r"(?i)crc32|DataChecksum\.(calculate|verify)"
     r"|ChecksumVerifier|Crc32cVerifier|NativeCrc32"),
    ("UCX", r"^lib(ucp|uct|ucs|ucm)|^u(cp|ct|cs)_|org/openucx"
     r"|org/hdfsrdma/ucx|hdfsrdma_|Java_org_hdfsrdma"),
    ("socket I/O", r"SocketOutputStream|SocketInputStream|sun/nio/ch/Socket"
     r"|SocketChannelImpl|tcp_|inet_|sock_|__sys_(send|recv)"),
    ("disk I/O", r"FileOutputStream\.write|FileDispatcherImpl|FileChannelImpl"
     r"|ext4_|vfs_write|fdatasync|fsync|ReplicaOutputStreams"),
    ("park/wake", r"Unsafe\.park|LockSupport\.park|futex|Object\.wait"
     r"|pthread_cond"),
    ("class loading/start-up", r"ClassLoader|defineClass|loadClass"
     r"|Interpreter|java/util/zip|URLClassPath|JarFile|ServiceLoader"),
]
COMPILED = [(name, re.compile(p)) for name, p in RULES]
# C2 inlines Hadoop's pure-Java CRC into its caller: samples whose own
# frame is that caller are checksum work too.
LEAF_RULES = [("checksums", re.compile(r"FSOutputSummer\.writeChecksumChunks"
                                       r"|BlockReceiver\.verifyChunks"))]


def categorize(stack):
    frames = stack.split(";")
    for name, pattern in LEAF_RULES:
        if pattern.search(frames[-1]):
            return name
    for name, pattern in COMPILED:
        for f in frames:
            if pattern.search(f):
                return name
    return "other"


def summarize(path):
    counts = collections.Counter()
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, n = line.rpartition(" ")
            try:
                counts[categorize(stack)] += int(n)
            except ValueError:
                continue
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+", help="flamegraphs folders")
    args = ap.parse_args()
    names = [n for n, _ in RULES] + ["other"]
    print("| profile | JVM | samples | "
          + " | ".join(names) + " |")
    print("|---" * (len(names) + 3) + "|")
    for d in args.dirs:
        files = sorted(x for x in os.listdir(d) if x.endswith(".collapsed"))
        if not files:
            print(f"no .collapsed files in {d}", file=sys.stderr)
        for name in files:
            c = summarize(os.path.join(d, name))
            total = sum(c.values())
            print(f"| {os.path.basename(os.path.normpath(d))} "
                  f"| {name[:-len('.collapsed')]} | {total} | "
                  + " | ".join(str(c[n]) for n in names) + " |")


if __name__ == "__main__":
    main()
