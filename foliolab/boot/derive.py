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
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from foliolab import bootrecord
from foliolab.bootrecord import BootJob, BootResult, BootStatus, Pass
from foliolab.errors import DamagedRunError
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


def _is_number(v: object) -> bool:
    return (
        isinstance(v, (int, float))
        and not isinstance(v, bool)
        and math.isfinite(v)
    )


def _checked(s: Sample) -> Sample:
    """``s`` as read from samples.jsonl, its fields of their types and its
    values finite numbers; ValueError naming the first that is not (a
    string, NaN or a list where a number goes ended in a traceback deep
    in the statistics, or in a plausible report)."""
    for name, want in (
        ("workload", str),
        ("variant", str),
        ("rundir", str),
        ("counts", str),
        ("valid", bool),
    ):
        if not isinstance(getattr(s, name), want):
            raise ValueError(
                f"{name} {getattr(s, name)!r} is not a {want.__name__}"
            )
    if not isinstance(s.run, int) or isinstance(s.run, bool) or s.run < 0:
        raise ValueError(f"run {s.run!r} is not a run number")
    if not isinstance(s.reasons, list) or not all(
        isinstance(r, str) for r in s.reasons
    ):
        raise ValueError(f"reasons {s.reasons!r} are not words")
    if not isinstance(s.values, dict):
        raise ValueError(f"values {s.values!r} are not metric: number")
    for metric, v in s.values.items():
        if not _is_number(v):
            raise ValueError(f"{metric} {v!r} is not a finite number")
    for name in ("boot_s", "wall_s", "cpu_s"):
        v = getattr(s, name)
        if v is not None and not _is_number(v):
            raise ValueError(f"{name} {v!r} is not a finite number")
    return s


def load_samples(out: Path) -> list[Sample]:
    """samples.jsonl of a run from before job.json; a damaged line is
    named, never a traceback."""
    path = out / "samples.jsonl"
    if not path.exists() and not path.is_symlink():
        return []
    samples = []
    text = bootrecord.record_text(
        path,
        "this run has no raw boots to derive its samples from again: "
        "run the comparison again",
    )
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            samples.append(_checked(Sample(**json.loads(line))))
        except (ValueError, TypeError) as e:
            raise DamagedRunError(
                f"{path}: line {n} is not a sample ({e})",
                hint="this run has no raw boots to derive "
                "its samples from again: run the "
                "comparison again",
            ) from None
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
    tmp = out / "samples.jsonl.tmp"
    tmp.write_text("".join(json.dumps(asdict(s)) + "\n" for s in samples))
    tmp.replace(out / "samples.jsonl")
