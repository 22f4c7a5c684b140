"""--defer-start on|off: the UCX clients' dfs.client.rdma.defer-start, and
what it makes the UCX checks expect. On (the product's default): the first
output stream of a client JVM in which UCX has not started writes its
first block over Hadoop's TCP pipeline (a pipelines-tcp-deferred
pipeline), and starts UCX in the background once that block passes a
quarter of dfs.blocksize; the stream's later blocks, and every other
stream of the JVM, go over UCX. So a put JVM of one file of S bytes at
block size B sends max(0, S - B) bytes by UCX (none, and no stats line at
all below B/4), and a JVM writing many files or threads at most one
block less than it wrote. Off: every byte of a UCX client over UCX
(--tiny's default, which proves UCX carries bytes end to end)."""

KEY = "dfs.client.rdma.defer-start"
CHOICES = ("on", "off")
# The client's totals-line key of its pipelines kept on TCP by the
# deferral (metric PipelinesTcpDeferred).
STATS_TCP_DEFERRED = "pipelines-tcp-deferred"


def add_option(ap):
    """The option (its default comes from the profile: on, --tiny off)."""
    ap.add_argument("--defer-start", choices=CHOICES,
                    help="the UCX clients' %s: on (the product's default; "
                    "each client JVM's first block over TCP, UCX started "
                    "past a quarter of it) or off (every byte over UCX); "
                    "default on, --tiny off" % KEY)


def value(args):
    """The key's value the UCX clients get: true or false."""
    return "false" if getattr(args, "defer_start", "on") == "off" \
        else "true"


def deferring(bench):
    """Whether the run's UCX clients defer their start (False for a bench
    without the setting: every byte over UCX)."""
    return bool(getattr(bench, "defer_start", False))


def put_ucx_bytes(bench, system, size):
    """Bytes a client JVM of `system` writing one file of `size` (a put,
    a TestDFSIO map) sends by UCX: all, or all but its first block."""
    if not deferring(bench):
        return size
    return max(0, size - bench.cluster_of[system].block_size)


def put_tcp_blocks(bench, size):
    """Blocks a client JVM writing one file of `size` sends over TCP
    although UCX is on: its first, where the start is deferred."""
    return 1 if deferring(bench) and size > 0 else 0


def jvm_allowance(bench, system, jvms):
    """What a batch of `jvms` UCX client JVMs (each writing any number of
    files or threads) may keep on TCP: (bytes, blocks), one block each
    where the start is deferred, nothing otherwise."""
    if not deferring(bench):
        return 0, 0
    return bench.cluster_of[system].block_size * jvms, jvms


def describe(bench):
    """The setting, for the summaries' head."""
    if deferring(bench):
        return ("%s=true (--defer-start on): each UCX client JVM's first "
                "stream writes its first block over TCP and starts UCX past"
                " a quarter of it; the checks expect UCX to carry the rest"
                % KEY)
    if getattr(bench.args, "defer_start", "on") == "off":
        return ("%s=false (--defer-start off): every byte of a UCX client "
                "over UCX" % KEY)
    return ("--defer-start on, but the drop-in jar does not know %s: its "
            "UCX clients start UCX at once, every byte over UCX" % KEY)
