"""What Spark's event log says of one spark-* run (spark_job.py): the
stages of each phase the job tagged with its local property
(spark_job.PHASE_KEY), and of the write phase the stage's own time,
from its submission to the completion of its last task, with its tasks'
durations and the bytes and records their output metrics counted.

The event log is Spark's JSON lines (spark.eventLog.enabled, written
uncompressed and not rolled to a local directory the harness gives the
run; a rolled one is read too): a
SparkListenerJobStart names its stages and carries the job's local
properties; a SparkListenerStageCompleted has the stage's "Submission
Time" and "Completion Time" (ms since the epoch); a SparkListenerTaskEnd
has its task's "Launch Time", "Finish Time" and "Output Metrics". A
stage the job skipped (the cached DataFrame's) never completes and is
not counted."""

import json
import os

PHASE_KEY = "hdfsrdma.phase"    # spark_job.PHASE_KEY


def event_files(directory):
    """The event log files under `directory`, in name order: a single
    file per application (an unfinished one ends in .inprogress), or,
    where Spark rolls its log, eventlog_v2_APP/events_N_APP files (the
    appstatus_APP marker and Hadoop's .crc files left out)."""
    out = []
    for d, _, files in os.walk(directory):
        out += [os.path.join(d, f) for f in files
                if not f.startswith((".", "appstatus_"))]
    return sorted(out)


def read_events(lines):
    """The events of an event log's lines (JSON objects); lines that do
    not parse (a log cut short) are left out."""
    out = []
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if isinstance(e, dict) and "Event" in e:
            out.append(e)
    return out


def load(directory):
    """Every event of every event log under `directory`."""
    out = []
    for path in event_files(directory):
        with open(path, errors="replace") as f:
            out.extend(read_events(f))
    return out


def phase_stages(events):
    """{stage id: phase} of every stage a job with the phase property
    listed."""
    out = {}
    for e in events:
        if e["Event"] != "SparkListenerJobStart":
            continue
        phase = (e.get("Properties") or {}).get(PHASE_KEY)
        if phase is None:
            continue
        for sid in e.get("Stage IDs") or ():
            out[sid] = phase
    return out


def phase_figures(events, phase):
    """The figures of `phase`'s completed stages, or None where it has
    none: stage_s (from the first stage's submission to the last one's
    completion), stages, tasks, failed_stages, task_p50_s and task_max_s
    (launch to finish of its successful tasks), bytes_written and
    records_written (the tasks' output metrics)."""
    stages = {sid for sid, p in phase_stages(events).items() if p == phase}
    done = [e["Stage Info"] for e in events
            if e["Event"] == "SparkListenerStageCompleted"
            and e.get("Stage Info", {}).get("Stage ID") in stages]
    done = [s for s in done if s.get("Submission Time") is not None
            and s.get("Completion Time") is not None]
    if not done:
        return None
    start = min(s["Submission Time"] for s in done)
    end = max(s["Completion Time"] for s in done)
    durations, written, records = [], 0, 0
    for e in events:
        if e["Event"] != "SparkListenerTaskEnd" or \
                e.get("Stage ID") not in stages:
            continue
        if (e.get("Task End Reason") or {}).get("Reason") != "Success":
            continue
        info = e.get("Task Info") or {}
        if info.get("Launch Time") is not None and \
                info.get("Finish Time") is not None:
            durations.append((info["Finish Time"] - info["Launch Time"])
                             / 1e3)
        out = (e.get("Task Metrics") or {}).get("Output Metrics") or {}
        written += out.get("Bytes Written", 0) or 0
        records += out.get("Records Written", 0) or 0
    durations.sort()
    return dict(stage_s=round((end - start) / 1e3, 3), stages=len(done),
                tasks=len(durations),
                failed_stages=sum(1 for s in done if s.get("Failure Reason")),
                task_p50_s=durations[(len(durations) - 1) // 2]
                if durations else None,
                task_max_s=durations[-1] if durations else None,
                bytes_written=written, records_written=records)
