"""What a running JVM holds, read from outside it: from /proc (resident
memory, threads, open files, shared-memory mappings) and through the
HotSpot attach mechanism (the native memory tracking summary, and the JNI
global references that Thread.print reports).

The attach requests are made here over the JVM's attach socket rather
than by running `jcmd`: jcmd is itself a JVM, and a soak sample of seven
JVMs would start fourteen of them, seconds of CPU on a 2-core machine,
which would disturb what is measured. `jcmd` is still the fallback."""

import os
import re
import signal
import socket
import subprocess
import time

MiB = 1024 * 1024


def proc_status(pid):
    """(resident bytes, threads) from /proc/PID/status."""
    with open("/proc/%d/status" % pid) as f:
        text = f.read()
    rss = re.search(r"^VmRSS:\s+(\d+) kB", text, re.M)
    threads = re.search(r"^Threads:\s+(\d+)", text, re.M)
    return (int(rss.group(1)) * 1024 if rss else 0,
            int(threads.group(1)) if threads else 0)


# Threads that exist while a block or a stream is being written, by the
# name the kernel knows (a Java thread's name cut to 15 characters, set
# when it starts and when it renames itself): a DataNode's DataXceiver and
# PacketResponder per block, a client's DataStreamer and ResponseProcessor
# per stream. Hadoop's Daemon threads are "Thread-N" until they name
# themselves (a DataStreamer until it streams its first block).
WORK_THREAD = re.compile(r"DataXceiver for|PacketResponder|DataStreamer fo|"
                         r"ResponseProcess|Thread-\d+$")


def work_threads(pid):
    """How many of the threads of `pid` are doing a block's or a stream's
    work (WORK_THREAD); threads that end while being read are skipped."""
    n = 0
    task = "/proc/%d/task" % pid
    for tid in os.listdir(task):
        try:
            with open("%s/%s/comm" % (task, tid)) as f:
                if WORK_THREAD.match(f.read().rstrip("\n")):
                    n += 1
        except OSError:
            pass
    return n


def fd_kinds(targets):
    """Open files by kind, from the targets of /proc/PID/fd's links: all;
    io, the ones that come and go with the I/O in flight (block and meta
    files, sockets, pipes of child processes, and the epoll and eventfd
    pairs of Java NIO selectors, which Hadoop pools per socket timeout);
    blocks (block and meta files) and sockets among them."""
    out = dict(all=0, io=0, blocks=0, sockets=0)
    for t in targets:
        out["all"] += 1
        if "/blk_" in t:
            out["blocks"] += 1
        elif t.startswith("socket:"):
            out["sockets"] += 1
        elif not (t.startswith("pipe:") or t in (
                "anon_inode:[eventpoll]", "anon_inode:[eventfd]")):
            continue
        out["io"] += 1
    return out


def open_fds(pid):
    """fd_kinds of the files `pid` has open."""
    fd = "/proc/%d/fd" % pid
    targets = []
    for n in os.listdir(fd):
        try:
            targets.append(os.readlink("%s/%s" % (fd, n)))
        except OSError:
            pass
    return fd_kinds(targets)


def shm_segments(maps_text):
    """(SysV segments, POSIX /dev/shm files) mapped, from the text of
    /proc/PID/maps; each counted once however many mappings it has (by
    inode for SysV, whose keys are all 0 for private segments)."""
    sysv = set()
    posix = set()
    for line in maps_text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6:
            continue
        path = parts[5]
        if path.startswith("/SYSV"):
            sysv.add(parts[4])
        elif path.startswith("/dev/shm/"):
            posix.add(path.split(" (deleted)")[0])
    return len(sysv), len(posix)


def proc_sample(pid):
    """The /proc quantities of a live JVM: rss (bytes); threads_all and
    threads, the latter without the threads of blocks and streams in
    flight (work_threads); fds_all and fds, the latter without the files
    of I/O in flight (fd_kinds), and of those block_fds and sockets; sysv
    and posix (segments mapped)."""
    rss, threads = proc_status(pid)
    work = work_threads(pid)
    fds = open_fds(pid)
    with open("/proc/%d/maps" % pid) as f:
        sysv, posix = shm_segments(f.read())
    return dict(rss=rss, threads_all=threads, work_threads=work,
                threads=threads - work, fds_all=fds["all"],
                fds=fds["all"] - fds["io"], block_fds=fds["blocks"],
                sockets=fds["sockets"], sysv=sysv, posix=posix)


# NMT categories of the JIT: compiled code, and the arenas compilations
# allocate from. Rarely taken paths still get compiled minutes after
# warm-up, a few MiB at a time; RSS still counts them.
JIT_CATEGORIES = ("Code", "Compiler", "Arena Chunk")


def parse_nmt(text):
    """Bytes committed outside the Java heap, from the output of
    `VM.native_memory summary` (KB units): (all of it, the part outside
    the JIT's JIT_CATEGORIES), or None."""
    total = re.search(r"^Total: reserved=\d+KB, committed=(\d+)KB", text,
                      re.M)
    cats = {m.group(1): int(m.group(2)) * 1024 for m in re.finditer(
        r"^-\s+(\S.*?) \(reserved=\d+KB, committed=(\d+)KB", text, re.M)}
    if not total or "Java Heap" not in cats:
        return None
    outside = int(total.group(1)) * 1024 - cats["Java Heap"]
    return outside, outside - sum(cats.get(c, 0) for c in JIT_CATEGORIES)


def parse_jni_refs(text):
    """The JNI global references Thread.print reports at its end."""
    m = re.search(r"^JNI global refs: (\d+)", text, re.M)
    return int(m.group(1)) if m else None


class AttachError(Exception):
    pass


def attach_jcmd(pid, command, timeout=30.0):
    """Runs a diagnostic command in JVM `pid` over its attach socket
    (protocol 1: "1", "jcmd", the command and two empty arguments, each
    NUL-terminated; the reply is the status line then the output). A JVM
    opens the socket when it sees .attach_pid<pid> in its temporary
    directory on SIGQUIT; without that file SIGQUIT prints a thread dump,
    so the file is made first."""
    path = "/tmp/.java_pid%d" % pid
    if not os.path.exists(path):
        trigger = "/tmp/.attach_pid%d" % pid
        with open(trigger, "w"):
            pass
        try:
            os.kill(pid, signal.SIGQUIT)
            deadline = time.monotonic() + 10
            while not os.path.exists(path):
                if time.monotonic() > deadline:
                    raise AttachError("pid %d opened no attach socket" % pid)
                time.sleep(0.05)
        finally:
            os.unlink(trigger)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        s.sendall(b"1\0jcmd\0" + command.encode() + b"\0\0\0")
        chunks = []
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        s.close()
    status, _, out = b"".join(chunks).decode(errors="replace").partition(
        "\n")
    if status.strip() != "0":
        raise AttachError("pid %d: %s: status %s: %s" % (
            pid, command, status.strip(), out.strip()[:200]))
    return out


def jcmd(pid, command):
    """A diagnostic command's output, by the attach socket or else by the
    jcmd tool; None when neither answers (the JVM may be exiting)."""
    try:
        return attach_jcmd(pid, command)
    except (OSError, AttachError):
        pass
    try:
        r = subprocess.run(["jcmd", str(pid)] + command.split(),
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout if r.returncode == 0 else None


def jvm_sample(pid):
    """What the attach mechanism says of JVM `pid`: native_all (bytes
    committed outside the Java heap, by native memory tracking; the JVM
    needs -XX:NativeMemoryTracking=summary), native (the same without the
    JIT's) and jni_refs (JNI global references). A value that cannot be
    read is None."""
    out = {"native_all": None, "native": None, "jni_refs": None}
    nmt = jcmd(pid, "VM.native_memory summary")
    parsed = parse_nmt(nmt) if nmt else None
    if parsed:
        out["native_all"], out["native"] = parsed
    dump = jcmd(pid, "Thread.print")
    if dump:
        out["jni_refs"] = parse_jni_refs(dump)
    return out
