"""What the soak judges, and by which bounds: the growth rule over every
JVM's samples, each quantity's bound with the reason for it, and what the
DataNodes must have let go of once the writers stopped. soak.py runs the
soak and hands its sampled rows here.

Growth rule. Samples are taken at t=0 (writers starting) and every
interval. The first third (rounded up) is warm-up: pools fill, the JIT
compiles, connections open. Of the rest, the median of the last third is
compared with the median of the middle third; growth beyond the
quantity's bound fails the run. The /proc quantities of a sample are the
peak of 1-second reads over its interval (a leak raises the peak as it
raises the floor, and a peak does not depend on where in the load cycle
the sample fell). Medians of those peaks, not their max: the max of a
third is decided by its single busiest second, while a leak of rate r
still moves the median by r times a third of the run. Growth slopes over
the samples after warm-up are reported too (growth.csv), not judged.

Work in flight is taken out of what is judged while the writers write,
and judged once they have stopped instead. A DataNode's threads and open
files rise and fall with the blocks it happens to be receiving: in a
2-minute run one DataNode's peak threads went 79 to 95 from one interval
to the next, and a fresh-clone test command's soak failed once on +10
threads between the thirds' medians (bound 8) that were 16 writers landing
on that DataNode, not a leak. So `threads` counts the threads that are
not a block's or a stream's (jvm_probe.WORK_THREAD: DataXceiver,
PacketResponder, DataStreamer, ResponseProcessor), which held within 64-71
on each DataNode of a 2-minute run while all its threads went 65-94; and
`fds` counts the files that are not block files, sockets, pipes or NIO
selectors (jvm_probe.fd_kinds). Once every writer has exited, each
DataNode must within DRAIN_TIMEOUT have no such thread and no block file
open, and no more sockets than SOCKETS_AFTER over the ones it had before
the writers started (listeners, the NameNode, its UCX connections to the
other DataNodes): a block, a stream or a socket left behind shows there,
however few.

Every JVM is started with -Xms = -Xmx and -XX:+AlwaysPreTouch, so its
heap is resident from the start and RSS growth is growth outside the heap.

Bounds, per JVM, on the growth between the thirds' medians:

quantity  bound    why
rss       +64 MiB  glibc malloc arenas (one per thread that mallocs, up to
                   8 x cores, touched as used) and late JIT code; a leak of
                   1 KiB per 64 KiB packet exceeds it within a minute
native    +64 MiB  NMT committed outside the heap and the JIT: metaspace,
                   stacks, direct buffers (UCX's own mallocs are not in
                   NMT: see rss). The JIT's code cache and compiler arenas
                   are left out: in a 2-minute run a client's code cache
                   grew 14 to 19 MiB after warm-up and its arenas swung
                   0-23 MiB with each compilation. Direct buffers are
                   freed only when a GC reaches their owners: the same
                   client's (Hadoop's packet and socket read buffers, NMT
                   "Other") swung 37-65 MiB from one sample to the next,
                   and the thirds' medians moved by up to 22 MiB; a 64 KiB
                   buffer leaked per block would be hundreds of MiB a
                   minute
threads   +8       threads outside blocks and streams in flight: Hadoop's
                   pools (IPC connections and parameter senders, Jetty,
                   disk checks, process reapers of du and df) start and
                   end threads on their own schedules, a few at a time
fds       +16      files outside the I/O in flight: jars, logs, locks,
                   shared-memory files, UCX's own descriptors
jni_refs  +64      JNI global references made on first use of a path.
                   JUCX 1.12.1 leaks one per JUCX request (fixed in 1.15);
                   this project's data path makes no JUCX requests (its own
                   JNI sends and gets), only connects and closes do, so in
                   steady state even that leak would not grow here
sysv,     +2       SysV segments and /dev/shm files mapped: a JVM's own
posix              pool slabs and UCX FIFOs, and every peer's it reads; a
                   pool's new slab (see pool) maps once in each reader
pool      +16 MiB  registered bytes of the client packet pool (clients) or
                   the landing pool (DataNodes): slabs of 8 MiB are added
                   on demand up to a cap, and a burst after warm-up may
                   add one or two; a pool that never reuses buffers would
                   grow to its cap
conns     +2       a DataNode's UCX connections: one per client JVM and per
                   DataNode feeding it in chains (5 here), made in warm-up
connects  +4       a client's UCX connections opened since start (a
                   counter): one per DataNode, made in warm-up; growth
                   means connections are being dropped and remade

With short-lived clients (--churn-seconds), a DataNode's sysv, posix and
conns bounds grow by CHURN_DN_EXTRA: whether a sample's peak holds none,
one or two short-lived clients (the one ending and its successor) is
chance, and each maps a few SysV segments (its UCX FIFO and pool slabs),
a /dev/shm file and a connection in every DataNode it writes to. A 2-minute
CI soak saw a DataNode's sysv peaks go 28, 29, 31 with one of them
connected, and back to 25 once the writers stopped; a mapping leaked per
short-lived client still exceeds the bound within the 60-minute soak
(180 clients).

OpenSessions (a DataNode's blocks being received over UCX) is work in
flight too and is judged after the writers stop: it must be 0."""

from . import jvm_probe
from .stats import median
from .units import MiB

DRAIN_SECONDS = 3.0     # metrics period 1 s, cached for one period
# Once the writers have exited: how long the DataNodes get to end their
# blocks' threads and close their block files, and how many sockets more
# than before the writers started they may keep (what they keep open to
# each other for chains; a 2-minute run ended with 9 against 8 before).
DRAIN_TIMEOUT = 30.0
SOCKETS_AFTER = 8

# quantity -> its growth bound; the reasons are in the docstring.
BOUNDS = {
    "rss": 64 * MiB,
    "native": 64 * MiB,
    "threads": 8,
    "fds": 16,
    "jni_refs": 64,
    "sysv": 2,
    "posix": 2,
    "pool": 16 * MiB,
    "conns": 2,
    "connects": 4,
}
# A DataNode's extra bounds with short-lived clients: two of them at once,
# each up to 4 SysV segments, a /dev/shm file and a connection.
CHURN_DN_EXTRA = {"sysv": 8, "posix": 2, "conns": 2}
BYTE_QUANTITIES = ("rss", "native", "pool")


# -- the growth rule -------------------------------------------------------

def thirds(n):
    """(warm-up, middle, last) index ranges of n samples: the last two
    thirds get n // 3 samples each, warm-up the rest (at least a third)."""
    k = n // 3
    return range(0, n - 2 * k), range(n - 2 * k, n - k), range(n - k, n)


def slope_per_minute(ts, ys):
    """Least-squares slope of ys over ts (seconds), per minute; None for
    fewer than two points."""
    pts = [(t, y) for t, y in zip(ts, ys) if y is not None]
    if len(pts) < 2:
        return None
    mt = sum(t for t, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    den = sum((t - mt) ** 2 for t, _ in pts)
    if den == 0:
        return None
    return 60.0 * sum((t - mt) * (y - my) for t, y in pts) / den


def growth(ts, ys, bound):
    """The growth rule on one quantity of one JVM: a dict with the middle
    and last thirds' medians, their difference, the slope after warm-up,
    the bound and the verdict (ok, GROWS, or n/a where either third has no
    value or there are fewer than 6 samples)."""
    _, mid, last = thirds(len(ys))
    mvals = [ys[i] for i in mid if ys[i] is not None]
    lvals = [ys[i] for i in last if ys[i] is not None]
    row = dict(mid=None, last=None, growth=None, bound=bound,
               slope_per_min=None, verdict="n/a")
    if len(ys) < 6 or not mvals or not lvals:
        return row
    row["mid"], row["last"] = median(mvals), median(lvals)
    row["growth"] = row["last"] - row["mid"]
    after = list(mid) + list(last)
    row["slope_per_min"] = slope_per_minute([ts[i] for i in after],
                                            [ys[i] for i in after])
    row["verdict"] = "GROWS" if row["growth"] > bound else "ok"
    return row


def judge_growth(rows, churn=False):
    """growth.csv's rows: the growth rule per JVM and quantity, over the
    regular samples (not the drained one); `churn`: short-lived clients
    came and went (a DataNode's bounds then add CHURN_DN_EXTRA)."""
    out = []
    regular = [r for r in rows if r["sample"] != "drained"]
    for jvm in sorted({r["jvm"] for r in regular},
                      key=lambda j: (j[0] != "n", j[0] == "c", j)):
        series = [r for r in regular if r["jvm"] == jvm]
        ts = [r["t"] for r in series]
        for q, bound in BOUNDS.items():
            if churn and jvm.startswith("dn"):
                bound += CHURN_DN_EXTRA.get(q, 0)
            ys = [r.get(q) for r in series]
            if all(y is None for y in ys):
                continue
            g = growth(ts, ys, bound)
            out.append(dict(jvm=jvm, quantity=q, **g))
    return out


# -- once the writers have stopped -----------------------------------------

def drained(pids):
    """Whether no DataNode of `pids` has a block's thread or file left."""
    for pid in pids:
        try:
            s = jvm_probe.proc_sample(pid)
        except OSError:
            continue
        if s["work_threads"] or s["block_fds"]:
            return False
    return True


def drain_failures(rows, drained_rows):
    """What the DataNodes' `drained_rows`, sampled after every writer
    exited, hold that they should not: UCX sessions, threads of blocks,
    block files, or more sockets than SOCKETS_AFTER over their first
    sample in `rows` (before the writers connected)."""
    out = []
    first = {r["jvm"]: r for r in rows if r["sample"] == "0"}
    for r in drained_rows:
        jvm = r["jvm"]
        for key, what in (("sessions", "UCX sessions"),
                          ("work_threads", "threads of blocks"),
                          ("block_fds", "block files")):
            if r.get(key):
                out.append("%s: %d %s left after the writers "
                           "stopped" % (jvm, r[key], what))
        before = first.get(jvm, {}).get("sockets")
        if r.get("sockets") is not None and before is not None and \
                r["sockets"] - before > SOCKETS_AFTER:
            out.append("%s: %d sockets after the writers stopped, %d "
                       "before they started (bound +%d)" % (
                           jvm, r["sockets"], before, SOCKETS_AFTER))
    return out
