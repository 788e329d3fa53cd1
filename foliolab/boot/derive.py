"""Samples from raw boots: the analysing half's only way in.

A sample is derived from one boot's records (``results.txt``), its counting
windows (``counts.txt``) and how the boot ended (``boot.json``), with the
workload's own derive function. The live run and ``foliolab report`` call
the same functions here on the same files, so a report redone later (after
a fixed derive function, say) gives the samples the run would have given.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from foliolab import bootrecord, records
from foliolab.bootrecord import BootJob, BootResult, BootStatus, Pass
from foliolab.guestdata import countwindows, parse
from foliolab.guestdata.window import TimedWindow, timed_window
from foliolab.workloads import find
from foliolab.workloads.model import COUNTING, Workload, with_roots

log = logging.getLogger("foliolab")


@dataclass
class Sample:
    workload: str
    variant: str
    run: int
    values: dict[str, float]
    valid: bool
    reasons: list[str]
    boot: BootStatus  # how its boot ended
    rundir: str
    boot_s: float | None = None  # guest uptime when the job started
    wall_s: float | None = None  # host wall time of the whole boot
    # A counting pass's sample: its plugin output (relative to the run
    # directory) and which of the workload's windows in it is this one.
    counts: str = ""
    count_window: int = -1
    cpu_s: float | None = None  # QEMU's CPU time for the whole boot
    # A counting sample's roots followed their task across context
    # switches (countwindows.SwitchTracking); None: no roots were counted.
    roots_follow_tasks: bool | None = None
    # A timed sample's window: User/System/Elapsed and reclaim's vmstat
    # counters (report.txt's per-kernel summary); None for a counting
    # sample and in samples.jsonl from before it was kept.
    window: TimedWindow | None = None

    def __post_init__(self) -> None:
        self.boot = BootStatus(self.boot)  # as read from samples.jsonl
        if isinstance(self.window, dict):  # as read from samples.jsonl
            self.window = TimedWindow(**self.window)

    def rows(self) -> list[dict[str, Any]]:
        """The flat {workload, variant, run, metric, value, valid} rows."""
        return [
            {
                "workload": self.workload,
                "variant": self.variant,
                "run": self.run,
                "metric": k,
                "value": v,
                "valid": self.valid,
            }
            for k, v in self.values.items()
        ]


def count_values(
    w: Workload,
    arch: str,
    derived: dict[str, float],
    window: countwindows.Window | None,
    reasons: list[str],
) -> dict[str, float]:
    """A counting sample's metrics from its window of the plugin output
    (and the timed metrics it was derived with, for per-page figures)."""
    if window is None:
        reasons.append(f"no counting window {w.window} in counts.txt")
        return {}
    v = countwindows.window_metrics(window, arch, w.count_unit, w.count_roots)
    if w.count_extra:
        v.update(w.count_extra(v, derived, w.count_roots))
    if w.count_unit and not window.roots.get(w.count_unit.root, (0, 0))[1]:
        reasons.append(
            f"{w.count_unit.root} was never entered in the "
            "window (no units to count per)"
        )
    return v


def samples_from_boot(
    w: Workload,
    params: dict[str, str],
    variant: str,
    first_run: int,
    res: BootResult,
    expected: int,
    counted: str = "",
    out: Path | None = None,
) -> list[Sample]:
    """Turn one boot's output into samples; a bad boot invalidates them all.

    ``counted``: the guest arch of a counting boot, whose samples carry
    the counts of their windows instead of the timed metrics.
    """
    g = parse.parse_records(res.records)
    counts_path = res.console.parent / "counts.txt"
    counts = countwindows.read_counts(counts_path) if counted else None
    windows = counts.tagged(w.window) if counts else []
    follow = None
    if counts and (w.count_roots or w.count_unit):
        follow = counts.switch_tracking.tracked
        if not follow:
            log.info(
                "%s: roots counted per vCPU, not following tasks "
                "across switches (%s)",
                counts_path,
                counts.switch_tracking.detail,
            )
    out_samples = []
    for i in range(expected):
        gs = g.samples[i] if i < len(g.samples) else parse.GuestSample()
        d = w.derive(gs, {**params, COUNTING: "1"} if counted else params)
        reasons = list(d.invalid)
        if counted:
            # Only what holds the setup (validity) and the counts: times
            # from a boot slowed by the plugin mean nothing.
            d.values = count_values(
                w,
                counted,
                d.values,
                windows[i] if i < len(windows) else None,
                reasons,
            )
        if not res.clean:
            reasons.insert(
                0, f"boot {res.describe()} (console: {res.console})"
            )
        elif g.exit_code not in (0, None):
            reasons.append(f"job exited {g.exit_code}")
        if i >= len(g.samples):
            reasons.append("sample missing from guest output")
        rel = ""
        if counted:
            rel = str(counts_path.relative_to(out) if out else counts_path)
        out_samples.append(
            Sample(
                w.name,
                variant,
                first_run + i,
                d.values,
                not reasons,
                reasons,
                res.status,
                str(res.console.parent),
                g.boot_s,
                round(res.elapsed, 2),
                rel,
                i if counted else -1,
                res.cpu_s,
                follow,
                None if counted else timed_window(gs),
            )
        )
    return out_samples


def load_samples(out: Path) -> list[Sample]:
    """samples.jsonl of a run from before job.json; a damaged line is
    named, never a traceback."""
    path = out / "samples.jsonl"
    if not path.exists() and not path.is_symlink():
        return []
    hint = (
        "this run has no raw boots to derive its samples from again: "
        "run the comparison again"
    )
    samples = []
    for n, d in records.read_lines(path, records.RecordKind.SAMPLES, hint):
        f = records.Fields(path, d, hint, f"line {n}")
        window = None
        if f.has("window"):
            w = records.Fields(path, f.object("window"), hint, f"line {n}")
            window = TimedWindow(
                w.optional_number("user_s", minimum=0),
                w.optional_number("sys_s", minimum=0),
                w.optional_number("elapsed_s", minimum=0),
                {k: int(v) for k, v in w.numbers("vmstat").items()}
                if w.has("vmstat")
                else {},
            )
        roots_follow = d.get("roots_follow_tasks")
        if roots_follow is not None:
            roots_follow = f.boolean("roots_follow_tasks")
        try:
            boot = BootStatus(f.string("boot"))
        except ValueError:
            f.wrong("boot", "a boot status")
        samples.append(
            Sample(
                workload=f.string("workload"),
                variant=f.string("variant"),
                run=f.integer("run", minimum=0),
                values=f.numbers("values"),
                valid=f.boolean("valid"),
                reasons=f.strings("reasons"),
                boot=boot,
                rundir=f.string("rundir", ""),
                boot_s=f.optional_number("boot_s", minimum=0),
                wall_s=f.optional_number("wall_s", minimum=0),
                counts=f.string("counts", ""),
                count_window=f.integer("count_window", default=-1),
                cpu_s=f.optional_number("cpu_s", minimum=0),
                roots_follow_tasks=roots_follow,
                window=window,
            )
        )
    return samples


def samples_of_boot(out: Path, rundir: Path) -> list[Sample]:
    """The samples of one finished boot directory of the run in ``out``
    (none if the boot never finished or its workload is unknown here)."""
    job = BootJob.read(rundir)
    res = bootrecord.read_boot(rundir)
    w = find(job.workload)
    if res is None or w is None:
        return []
    w = with_roots(w, tuple(job.count_roots))  # compare's --root too
    counted = job.arch if job.pass_ is Pass.COUNT else ""
    return samples_from_boot(
        w,
        job.params,
        job.kernel,
        job.first_run,
        res,
        job.samples,
        counted,
        out,
    )


def rederive(out: Path) -> list[Sample] | None:
    """Every sample of the run, derived again from its raw boots, in boot
    order; None for a run directory from before job.json existed."""
    dirs = bootrecord.boot_dirs(out)
    if not dirs:
        return None
    return [s for d in dirs for s in samples_of_boot(out, d)]


def run_samples(out: Path, dest: Path | None = None) -> list[Sample]:
    """Every sample of the run in ``out``, derived again from its raw boots
    (samples.jsonl rewritten, in ``dest`` if given), or read from
    samples.jsonl for runs from before job.json."""
    samples = rederive(out)
    if samples is None:
        samples = load_samples(out)
        if dest is None or dest == out:
            return samples
    write_samples(dest or out, samples)
    return samples


def write_samples(out: Path, samples: list[Sample]) -> None:
    """samples.jsonl, rewritten whole."""
    records.write_whole(
        out / "samples.jsonl",
        "".join(json.dumps(asdict(s)) + "\n" for s in samples),
    )
