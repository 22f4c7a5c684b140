"""How the soak samples its JVMs: Sampler, and the DataNodes' beans it
reads. Its rows, one per JVM and sample, are what soak.csv holds and the
growth rule (soak_bounds) judges."""

from . import jvm_probe, ucx_counters
from .clusters import DATANODES
from .measurement import bean_sums

JVM_BEAN = "Hadoop:service=DataNode,name=HdfsRdma"
ACTIVITY_BEAN = "Hadoop:service=DataNode,name=DataNodeActivity-*"


class Sampler:
    """Samples every JVM: /proc each second (keeping each quantity's peak
    over the interval), and at each sample the attach quantities, the
    DataNodes' beans and the writers' last progress lines."""

    def __init__(self, cluster, writers):
        self.cluster = cluster
        self.writers = writers
        self.jvms = [("nn", cluster.nn)] + [
            ("dn%d" % (i + 1), p) for i, p in enumerate(cluster.dns)] + [
            (w.name, w.proc) for w in writers]
        self.peaks = {}
        self.rows = []          # one per (sample, JVM)

    def tick(self):
        """One /proc read of every live JVM into the interval's peaks."""
        for name, p in self.jvms:
            try:
                s = jvm_probe.proc_sample(p.pid)
            except OSError:
                continue
            peak = self.peaks.setdefault(name, {})
            for k, v in s.items():
                peak[k] = max(peak.get(k, v), v)

    def sample(self, t, tag):
        """A sample of every JVM at `t` seconds: rows appended, returned."""
        self.tick()
        rows = []
        for name, p in self.jvms:
            row = dict(sample=tag, t=round(t, 1), jvm=name, pid=p.pid)
            peak = self.peaks.pop(name, None)
            if peak is None:
                rows.append(row)
                continue
            row.update(peak)
            row.update(jvm_probe.jvm_sample(p.pid))
            rows.append(row)
        for i, addr in enumerate(self.cluster.dn_http):
            row = rows[1 + i]
            jb = bean_sums(addr, JVM_BEAN) or {}
            db = ucx_counters.datanode_counters(addr) or {}
            act = bean_sums(addr, ACTIVITY_BEAN) or {}
            row.update(
                pool=jb.get("LandingPoolRegisteredBytes"),
                conns=jb.get("ClientConnections"),
                sessions=jb.get("OpenSessions"),
                ucx_bytes=db.get(ucx_counters.BEAN_FETCHED),
                bytes_written=act.get("BytesWritten"),
                blocks_ucx=db.get(ucx_counters.BEAN_BLOCKS_OVER_UCX),
                blocks_tcp=db.get(ucx_counters.BEAN_BLOCKS_OVER_TCP))
        for w in self.writers:
            row = rows[1 + DATANODES + w.index]
            last = w.last("SOAK-END") or w.last()
            row.update(
                pool=last.get("ucx.ClientPoolRegisteredBytes"),
                connects=last.get("ucx.ClientConnects"),
                files=last.get("files"), written=last.get("written"),
                verified=last.get("verified"),
                mismatches=last.get("mismatches"),
                errors=last.get("errors"),
                write_ms_avg=last.get("write_ms_avg"),
                flush_ms_avg=last.get("flush_ms_avg"),
                append_ms_avg=last.get("append_ms_avg"),
                read_ms_avg=last.get("read_ms_avg"))
        self.rows.extend(rows)
        return rows
