"""A run's boots: what they say about the run rather than about its
kernels (its samples, derived again from the boots on disk, are
derive.run_samples').

The host while they ran (load, steal, CPU governor, from each boot.json),
the planned boots that did not finish, the boots that failed and what
counting cost in wall and CPU time. Apart from the statistics
(workloadstats.py) because none of it compares kernels: it reads the
run directory and the boots' own records, for the report's notes and
the orchestrator's list of failures.
"""

from __future__ import annotations

from pathlib import Path

from foliolab import bootrecord
from foliolab.boot.derive import Sample
from foliolab.manifest import RunManifest
from foliolab.workloads import find


def host_line(out: Path) -> str:
    """The host while the run's boots ran: load average at their start and
    the CPU time stolen from it during them, and the other guests beside
    them (from each boot.json)."""
    loads, steal, governors, others = [], [], set(), []
    for d in bootrecord.boot_dirs(out):
        res = bootrecord.read_boot(d)
        if res is None:
            continue
        if res.host.loadavg_1m is not None:
            loads.append(res.host.loadavg_1m)
        if res.host.steal_pct is not None:
            steal.append(res.host.steal_pct)
        if res.host.governor:
            governors.add(res.host.governor)
        if res.host.other_guests is not None:
            others.append(res.host.other_guests)
    if not loads:
        return ""
    text = (
        f"host: load average {min(loads):.2f}-{max(loads):.2f} at the "
        f"start of {len(loads)} boots"
    )
    if steal:
        text += f", steal up to {max(steal):.1f}% of CPU time during one"
    if others:
        beside = [n for n in others if n]
        text += "; other guests as a boot started: " + (
            f"up to {max(beside)}, in {len(beside)} of {len(others)} boots"
            if beside
            else f"none (in {len(others)} boots)"
        )
    if governors:
        text += f"; CPU frequency governor {', '.join(sorted(governors))}"
    return text


def missing_boots(m: RunManifest, out: Path) -> list[str]:
    """Per workload and kernel, the planned boots without a boot.json
    ("1 of 2 boots of pageout/patched finished"). A workload with no
    counting window was planned no counting boots (measure.plan); one
    this checkout does not know is taken to have one."""
    rounds = -(-m.runs // max(1, m.samples_per_boot))
    lines = []
    for w in m.workloads:
        known = find(w)
        counted = m.count and (known is None or known.has_window)
        per_kernel = rounds * (2 if counted else 1)
        for k in m.names:
            done = [
                d
                for d in (out / "raw" / w).glob(f"{k}-[0-9][0-9][0-9]*")
                if (d / bootrecord.BOOT_FILE).exists()
                and d.name[len(k) + 1 : len(k) + 4].isdigit()
            ]
            if len(done) < per_kernel:
                lines.append(
                    f"{len(done)} of {per_kernel} boots of {w}/{k} finished"
                )
    return lines


def failed_boots(out: Path) -> list[str]:
    """The run's failed boots, as the boots on disk say."""
    failures = []
    for rundir in bootrecord.boot_dirs(out):
        res = bootrecord.read_boot(rundir)
        if res is not None and not res.clean:
            failures.append(
                f"{rundir.parent.name}/{rundir.name}: "
                f"{res.describe()}; console log: {res.console}"
            )
    return failures


def boot_cost_line(name: str, samples: list[Sample]) -> str:
    """What counting cost: mean wall and QEMU CPU time of the timed and of
    the counting boots of one workload (one line, empty if not counted)."""

    def cost(counted: bool) -> str:
        boots = {
            s.rundir: s
            for s in samples
            if s.workload == name and bool(s.counts) == counted
        }.values()
        wall = [s.wall_s for s in boots if s.wall_s is not None]
        cpu = [s.cpu_s for s in boots if s.cpu_s is not None]
        text = f"{sum(wall) / len(wall):.1f} s wall" if wall else "? wall"
        if cpu:
            text += f", {sum(cpu) / len(cpu):.1f} s CPU"
        return text + f" over {len(boots)} boots"

    if not any(s.counts for s in samples if s.workload == name):
        return ""
    return (
        f"boot cost: timed {cost(False)}; counting {cost(True)} "
        "(means per boot; a timed boot also runs the profiled passes)"
    )
