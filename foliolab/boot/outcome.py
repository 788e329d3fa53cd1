"""How a boot ended: the one judge of every boot, whoever ran it.

An executor (QEMU here, LAVA's dispatcher, a LAVA lab) hands back what it
captured of a boot: the console, the records (from the results port, or
framed on the console), its times, how the machine ended and where it
ran. ``judge`` turns that into the boot's BootResult: the records taken
from the console when they were framed there, the kernel issues the
console shows, the job's exit code, the status. It is the only writer of
boot.json.
"""

from __future__ import annotations

import enum
import json
import re

from foliolab.bootrecord import BOOT_FILE, BootResult, BootStatus
from foliolab.executors.base import BootCapture, Ended, JobEnd
from foliolab.guestdata import parse


class IssueKind(str, enum.Enum):
    """What a console line says went wrong in the kernel."""

    PANIC = "panic"
    OOPS = "oops"
    BUG = "bug"
    WARNING = "warning"
    BAD_PAGE = "bad-page"
    STALL = "stall"
    SWAP_CORRUPTION = "swap-corruption"  # corrupted swap counts
    FAULT_LOOP = "fault-loop"  # an endless fault loop


# Console lines that make a boot a failure.
KERNEL_ISSUES = [
    (IssueKind.PANIC, re.compile(r"Kernel panic - not syncing")),
    (
        IssueKind.OOPS,
        re.compile(
            r"\bOops: |general protection fault|"
            r"BUG: unable to handle"
        ),
    ),
    (IssueKind.BUG, re.compile(r"\bBUG: |kernel BUG at ")),
    (IssueKind.WARNING, re.compile(r"\bWARNING: ")),
    (IssueKind.BAD_PAGE, re.compile(r"\bBad page (state|map)\b")),
    (
        IssueKind.STALL,
        re.compile(
            r"rcu: INFO: .*stall|soft lockup|"
            r"hung_task"
        ),
    ),
    (
        IssueKind.SWAP_CORRUPTION,
        re.compile(
            r"Bad swap (file|offset) entry|"
            r"Unused swap (file|offset) entry|"
            r"swap_dup: Bad swap"
        ),
    ),
    (IssueKind.FAULT_LOOP, re.compile(r"VM_FAULT_OOM leaked out")),
]


def scan(text: str) -> list[tuple[IssueKind, str]]:
    """The kernel issues in a console log: each kind once, its first
    line."""
    found = []
    for kind, rx in KERNEL_ISSUES:
        for line in text.splitlines():
            if rx.search(line):
                found.append((kind, line.strip()[:120]))
                break
    return found


def records_from_console(console: bytes) -> tuple[str, str, list[str]]:
    """A console that carried the records: (the records as the results
    port would have had them, the kernel's own text to scan for issues,
    what was lost on the way)."""
    stream = parse.console_records(console)
    records = "".join(line + "\n" for line in stream.lines)
    return records, stream.kernel_text, stream.problems()


def exit_code_of(records_text: str) -> int | None:
    """The job's exit code from its ``@@ exit`` record."""
    return parse.parse_records(records_text.splitlines()).exit_code


def _source(c: BootCapture) -> str:
    return c.executor.teller


def _status(
    c: BootCapture,
    kinds: set[IssueKind],
    code: int | None,
    lost: list[str],
) -> tuple[BootStatus, list[str]]:
    """The boot's status, and the issues that explain it beside the
    kernel's own (the executor's or QEMU's word on why it ended, records
    lost on the console)."""
    if c.ended is Ended.NOT_RUN:
        return BootStatus.NOT_RUN, [f"{_source(c)}: {c.why}"]
    if c.ended is Ended.TIMEOUT:
        return BootStatus.TIMEOUT, []
    if IssueKind.PANIC in kinds:
        return BootStatus.PANIC, []
    if code is not None:
        # a record lost on the console makes its samples doubtful
        return BootStatus.OK, [f"console-records: {x}" for x in lost]
    if c.ended is Ended.QEMU_ERROR:
        return BootStatus.QEMU_ERROR, [f"qemu: {c.error or '?'}"]
    if c.job_end is not JobEnd.COMPLETE:
        # the boot its job ended in: LAVA says why
        why = [f"{_source(c)}: {c.why}"]
        if c.job_end is JobEnd.TIMEOUT:
            return BootStatus.TIMEOUT, why
        return BootStatus.NO_EXIT, why
    return BootStatus.NO_EXIT, []


def judge(c: BootCapture) -> BootResult:
    """The boot's result from what was captured; its console.log,
    results.txt and boot.json written in its directory."""
    c.rundir.mkdir(parents=True, exist_ok=True)
    console = c.rundir / "console.log"
    results = c.rundir / "results.txt"
    console.write_bytes(c.console)
    lost: list[str] = []
    if c.records is None:
        records, kernel_text, lost = records_from_console(c.console)
    else:
        records, kernel_text = c.records, c.console.decode(errors="replace")
    results.write_text(records)
    found = scan(kernel_text)
    code = exit_code_of(records)
    status, explained = _status(c, {kind for kind, _ in found}, code, lost)
    res = BootResult(
        status,
        code,
        [f"{kind.value}: {line}" for kind, line in found] + explained,
        console,
        results,
        c.elapsed,
        records.splitlines(),
        c.cpu_s,
        c.host,
        # the executor's own word on an ending that is not the job's
        why_ended=explained[0]
        if status is not BootStatus.OK and explained
        else "",
    )
    _write(res, c)
    return res


def _write(res: BootResult, c: BootCapture) -> None:
    """boot.json beside the console log (the records stay in
    results.txt)."""
    d = {
        "status": res.status.value,
        "exit_code": res.exit_code,
        "issues": res.issues,
        "elapsed": res.elapsed,
        "cpu_s": res.cpu_s,
        "console": res.console.name,
        "results": res.results.name,
        "host": res.host.to_json(),
        "ended": c.ended.value,
        "executor": {"kind": c.executor.text, "log": c.log},
    }
    if c.not_run is not None:
        d["not_run"] = c.not_run.value
    (c.rundir / BOOT_FILE).write_text(json.dumps(d, indent=1) + "\n")
