"""LAVA's logs read back: each job's log parsed once into its boots.

A log is lava-run's (one JSON record per line), a server's download (the
same records as YAML list items) or a plain console capture. The guest
console is cut into boots at each kernel banner and each boot named by the
``foliolab.boot=`` of its command line (or its records' begin line, on a
board); each becomes a BootCapture for outcome.judge, as a QEMU boot here
would.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from foliolab.errors import LavaError
from foliolab.executors.base import (
    BootCapture,
    Ended,
    ExecutorKind,
    JobEnd,
    NotRun,
)

# Where each boot's console starts in a multi-boot log: the kernel banner.
_BANNER = "Linux version "
_CMDLINE_ID = re.compile(r"foliolab\.boot=([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)")
_BEGIN_ID = re.compile(r"@@=begin ([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)")


@dataclass
class ConsoleLine:
    text: str
    at: dt.datetime | None = None  # LAVA's timestamp, when it has one
    # LAVA's namespace of a line it logged late, as "feedback": the
    # console of an earlier boot's connection, read when the job ends
    late_from: str = ""


@dataclass
class BootLog:
    """One boot's part of a job's console."""

    lines: list[ConsoleLine] = field(default_factory=list)
    boot_id: str = ""  # from its kernel command line

    @property
    def elapsed(self) -> float | None:
        times = [x.at for x in self.lines if x.at and not x.late_from]
        return (times[-1] - times[0]).total_seconds() if times else None

    def console(self) -> bytes:
        return "".join(x.text + "\n" for x in self.lines).encode(
            "utf-8", "replace"
        )


def log_records(text: str) -> list[dict[str, Any]]:
    """The records of a LAVA log: one per line, as lava-run writes them
    (JSON objects, one per line) or as a server's log download has them
    (the same objects as YAML list items, "- {...}"). Empty for a plain
    console capture."""
    out = []
    for line in text.splitlines():
        body = line[2:] if line.startswith("- {") else line
        if not body.startswith("{"):
            continue
        rec = _log_record(body)
        if rec is not None and "lvl" in rec:
            out.append(rec)
    return out


def _console(records: list[dict[str, Any]], text: str) -> list[ConsoleLine]:
    """The guest console in a LAVA log: its ``lvl: target`` records, or the
    whole text when it is a plain console capture."""
    if records:
        # LAVA logs a boot's console as "target" while it watches that
        # boot; what it reads from an earlier boot's connection later (at
        # the latest when the job ends) is "feedback" with the boot's
        # namespace: often the very line the monitor ended on, @@=end
        return [
            ConsoleLine(
                r["msg"],
                _time(r.get("dt")),
                r.get("ns", "") if r["lvl"] == "feedback" else "",
            )
            for r in records
            if isinstance(r.get("msg"), str)
            and (
                r.get("lvl") == "target"
                or (r.get("lvl") == "feedback" and r.get("ns"))
            )
        ]
    return [ConsoleLine(line.rstrip("\r")) for line in text.splitlines()]


def _job_end(records: list[dict[str, Any]]) -> tuple[JobEnd, str]:
    """How LAVA says the job ended, and its words for an end other than
    complete ("Infrastructure: ...", "Job: ...", "Test: ...")."""
    for rec in records:
        msg = rec.get("msg")
        if (
            rec.get("lvl") == "results"
            and isinstance(msg, dict)
            and msg.get("definition") == "lava"
            and msg.get("case") == "job"
        ):
            if msg.get("result") == "pass":
                return JobEnd.COMPLETE, ""
            why = (
                f"{msg.get('error_type', '?')}: "
                f"{msg.get('error_msg', 'no message')}"
            )
            # LAVA's timeouts (of an action, a connection or the job) are
            # its exceptions' "... timed out after N seconds": the one
            # place foliolab reads LAVA's words
            timed_out = "timed out" in str(msg.get("error_msg", ""))
            return (JobEnd.TIMEOUT if timed_out else JobEnd.ERROR), why
    return JobEnd.CUT, "the log has no end of job (cut short?)"


@dataclass
class JobLog:
    """A job's log, parsed once: its boots' consoles and how it ended."""

    boots: list[BootLog]
    end: JobEnd
    why: str  # LAVA's words, for an end not complete

    @classmethod
    def read(cls, text: str) -> JobLog:
        records = log_records(text)
        end, why = _job_end(records)
        return cls(split_boots(_console(records, text)), end, why)

    @property
    def named(self) -> list[str]:
        return [b.boot_id for b in self.boots if b.boot_id]


def _log_record(text: str) -> dict[str, Any] | None:
    try:
        rec = json.loads(text)  # lava-run writes JSON-compatible YAML
    except ValueError:
        try:
            rec = yaml.safe_load(text)
        except yaml.YAMLError:
            return None
    return rec if isinstance(rec, dict) else None


def _time(value: object) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value
    try:
        return dt.datetime.fromisoformat(str(value))
    except ValueError:
        return None


def split_boots(lines: list[ConsoleLine]) -> list[BootLog]:
    """A job's console cut into its boots at each kernel banner; what comes
    before the first (firmware, LAVA) goes with the first. Each boot is
    named by the foliolab.boot= of its kernel command line, if shown."""
    boots: list[BootLog] = []
    pre: list[ConsoleLine] = []
    late: list[ConsoleLine] = []
    for line in lines:
        if line.late_from:
            late.append(line)
        elif _BANNER in line.text:
            boots.append(BootLog(pre + [line]))
            pre = []
        elif boots:
            boots[-1].lines.append(line)
        else:
            pre.append(line)
    for line in late:
        # the job's namespaces are its boots in order: boot00, boot01, ...
        m = re.fullmatch(r"boot(\d+)", line.late_from)
        if m and int(m.group(1)) < len(boots):
            boots[int(m.group(1))].lines.append(line)
    for b in boots:
        for line in b.lines:
            # the command line (qemu) or the records' begin line (boards)
            m = _CMDLINE_ID.search(line.text) or _BEGIN_ID.search(line.text)
            if m:
                b.boot_id = m.group(1)
                break
    return boots


def captures(
    log: JobLog,
    boot_ids: list[str],
    rundirs: list[Path],
    source: str,
    executor: ExecutorKind,
) -> list[BootCapture]:
    """The boots of one job from its log, in the job's order. A log whose
    boots are not the job's, in its order, is refused (LavaError); boots
    after the last one the log shows did not run."""
    parts = log.boots
    if len(parts) > len(boot_ids):
        raise LavaError(
            f"{source}: {len(parts)} boots in a job of {len(boot_ids)}",
            hint="a log holds one exported job's boots",
        )
    out = []
    for k, part in enumerate(parts):
        if part.boot_id and part.boot_id != boot_ids[k]:
            raise LavaError(
                f"{source}: its boot {k + 1} is {part.boot_id}, "
                f"the job has {boot_ids[k]} there",
                hint="a log holds one exported job's boots in their order",
            )
        out.append(
            BootCapture(
                rundirs[k],
                Ended.EXITED,
                part.console(),
                None,
                part.elapsed or 0.0,
                executor=executor,
                log=source,
            )
        )
    if out:
        # the boot the job ended in
        out[-1].job_end, out[-1].why = log.end, log.why
    why = log.why or "the job completed without this boot"
    return out + not_run(
        rundirs[len(parts) :], NotRun.JOB_ENDED, why, source, executor
    )


def not_run(
    rundirs: list[Path],
    reason: NotRun,
    why: str,
    source: str,
    executor: ExecutorKind,
) -> list[BootCapture]:
    """Boots a job never ran (its log has no console of them): recorded as
    such, never as samples."""
    return [
        BootCapture(
            d,
            Ended.NOT_RUN,
            executor=executor,
            log=source,
            not_run=reason,
            why=why,
        )
        for d in rundirs
    ]
