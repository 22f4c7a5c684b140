"""The harness's child processes. Every child gets its own session
(Ctrl-C reaches only the harness, which stops the children in order), dies
with the harness if it is killed (PR_SET_PDEATHSIG), and is reaped by pid
with its rusage."""

import ctypes
import os
import signal
import subprocess
import time

from .harness import HarnessError

libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


class Timeout(Exception):
    """The alarm of Procs.wait_all went off."""


class Procs:
    def __init__(self):
        self.live = {}          # pid -> (Popen, name)
        self.parent = os.getpid()

    def _child_setup(self):
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != self.parent:
            os._exit(1)

    def spawn(self, argv, logpath=None, env=None, name=None, cwd=None):
        out = open(logpath, "ab") if logpath else subprocess.DEVNULL
        try:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                 start_new_session=True,
                                 preexec_fn=self._child_setup)
        finally:
            if logpath:
                out.close()
        self.live[p.pid] = (p, name or os.path.basename(argv[0]))
        return p

    def _reaped(self, pid, status):
        p, _ = self.live.pop(pid, (None, None))
        if p is not None:
            p.returncode = os.waitstatus_to_exitcode(status)
        return p

    def wait_all(self, procs, timeout, cluster_pids=()):
        """Waits for every process of `procs` (reaping by pid, so nothing
        else is disturbed); returns {pid: (end monotonic, rc, rusage)}.
        A cluster JVM that exits meanwhile is an error."""
        want = {p.pid for p in procs}
        done = {}

        def on_alarm(signum, frame):
            raise Timeout()
        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            while want - set(done):
                pid, status, ru = os.wait4(-1, 0)
                now = time.monotonic()
                p = self._reaped(pid, status)
                if pid in want:
                    done[pid] = (now, p.returncode, ru)
                elif pid in cluster_pids:
                    raise HarnessError("a cluster JVM (pid %d) exited with %s"
                                       % (pid, os.waitstatus_to_exitcode(
                                           status)))
        except Timeout:
            raise HarnessError("timed out after %.0f s waiting for %s" % (
                timeout, ", ".join(self.live[p][1] for p in want - set(done)
                                   if p in self.live)))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
        return done

    def alive(self, p):
        if p.pid not in self.live:
            return False
        pid, status = os.waitpid(p.pid, os.WNOHANG)
        if pid == 0:
            return True
        self._reaped(pid, status)
        return False

    def stop(self, procs, grace=20.0):
        """SIGTERM to each process group, wait up to `grace`, then SIGKILL."""
        procs = [p for p in procs if p.pid in self.live]
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        for p in procs:
            while p.pid in self.live and time.monotonic() < deadline:
                pid, status = os.waitpid(p.pid, os.WNOHANG)
                if pid:
                    self._reaped(pid, status)
                else:
                    time.sleep(0.05)
        for p in procs:
            if p.pid in self.live:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                _, status = os.waitpid(p.pid, 0)
                self._reaped(p.pid, status)

    def stop_all(self):
        self.stop([p for p, _ in list(self.live.values())], grace=15.0)


def on_signals():
    """SIGTERM and SIGHUP end the harness as Ctrl-C does (KeyboardInterrupt:
    its children are stopped, what was measured is written)."""
    def on_term(signum, frame):
        raise KeyboardInterrupt()
    signal.signal(signal.SIGTERM, on_term)
    # Even where SIGINT came in ignored (started in the background).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGHUP, on_term)
