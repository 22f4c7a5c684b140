"""What a put costs the processes around it, and how the daemons are
asked: CPU seconds and context switches read from /proc, and HTTP to the
daemons (JMX and WebHDFS; on loopback no proxies, redirects by hand)."""

import json
import os
import re
import threading
import urllib.parse
import urllib.request


def cpu_seconds(pid):
    """utime + stime of a live process, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class ContextSwitches:
    """Context switches of a set of processes over an interval, summed over
    their threads, exited ones included: /proc/PID/status counts only the
    main thread and a thread's counts vanish with it, so a background
    thread reads /proc/PID/task/*/status every `period` seconds and keeps
    each thread's last values. A thread that exits loses at most its last
    period (DataXceiver threads live for a whole block)."""

    def __init__(self, pids, period=0.1):
        self.pids = list(pids)
        self.period = period
        self.first = {}     # (pid, tid) -> (voluntary, involuntary) at start
        self.last = {}
        self.stopping = threading.Event()
        self.thread = None

    @staticmethod
    def read(pid):
        out = {}
        try:
            tids = os.listdir("/proc/%d/task" % pid)
        except OSError:
            return out
        for tid in tids:
            try:
                with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                    text = f.read()
            except OSError:
                continue
            v = re.search(r"^voluntary_ctxt_switches:\s+(\d+)", text, re.M)
            n = re.search(r"^nonvoluntary_ctxt_switches:\s+(\d+)", text,
                          re.M)
            if v and n:
                out[(pid, tid)] = (int(v.group(1)), int(n.group(1)))
        return out

    def sample(self):
        for pid in self.pids:
            self.last.update(self.read(pid))

    def start(self):
        for pid in self.pids:
            self.first.update(self.read(pid))
        self.last = dict(self.first)

        def loop():
            while not self.stopping.wait(self.period):
                self.sample()
        self.thread = threading.Thread(target=loop, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        """(voluntary, involuntary) switches since start()."""
        self.stopping.set()
        self.thread.join()
        self.sample()
        vol = inv = 0
        for key, (v, n) in self.last.items():
            v0, n0 = self.first.get(key, (0, 0))
            vol += v - v0
            inv += n - n0
        return vol, inv


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


_http = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                    _NoRedirect())


def http(method, url, timeout=30):
    req = urllib.request.Request(url, method=method)
    return _http.open(req, timeout=timeout)


def http_json(method, url, timeout=30):
    with http(method, url, timeout) as r:
        return json.loads(r.read().decode())


def jmx(addr, query):
    """The beans matching `query` on a daemon's http address ([] if none):
    `addr` is a port on 127.0.0.1 or "host:port"."""
    if isinstance(addr, int):
        addr = "127.0.0.1:%d" % addr
    url = "http://%s/jmx?qry=%s" % (addr, urllib.parse.quote(
        query, safe=":=,*"))
    return http_json("GET", url, timeout=10).get("beans", [])


def numeric_attrs(bean):
    """Numeric attributes of a bean; a map attribute (JMX TabularData, which
    the /jmx servlet renders as [{"key": k, "value": v}, ...]) becomes one
    entry per key, named attribute.key (the packet phase timers)."""
    out = {}
    for k, v in bean.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = v
        elif isinstance(v, list):
            for item in v:
                if (isinstance(item, dict) and "key" in item
                        and isinstance(item.get("value"), (int, float))):
                    out["%s.%s" % (k, item["key"])] = item["value"]
    return out


def bean_sums(addr, query):
    """The numeric attributes of the beans matching `query` on a daemon's
    http address, summed over the beans; None where no bean matches or the
    daemon does not answer."""
    try:
        beans = jmx(addr, query)
    except (OSError, ValueError):
        return None
    if not beans:
        return None
    total = {}
    for bean in beans:
        for k, v in numeric_attrs(bean).items():
            total[k] = total.get(k, 0) + v
    return total
