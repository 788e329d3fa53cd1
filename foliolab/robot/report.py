"""What the robot reports: the diagnostics each patch adds (its
findings), how long each cell took, and robot.txt and robot.json; and
the same as the run's outcomes (``Report.tests``), a test per cell and
patch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from foliolab.robot import diagnostics as dg
from foliolab.robot import objects
from foliolab.robot.cache import CellResult
from foliolab.robot.matrix import Cell
from foliolab.robot.prefixes import Prefix, SeriesTrees
from foliolab.robot.treecheck import Said
from foliolab.testrecord import TestOutcome, TestStatus


@dataclass(frozen=True)
class Finding:
    """A diagnostic a patch adds on a cell."""

    patch: str  # 0003
    cell: str  # arm/mm, all/kernel-doc
    diagnostic: dg.Diagnostic
    whole: bool = False  # seen on the whole series, laid to the patch

    def line(self) -> str:
        return (
            f"{self.patch}: {self.cell}: {self.diagnostic.where()}: "
            f"{self.diagnostic.text()}"
        )


@dataclass
class CellTime:
    """How long a cell took in this run, and on which prefixes."""

    cell: str
    prepare_s: float = 0.0
    compile_s: dict[int, float] = field(default_factory=dict)
    cached: list[int] = field(default_factory=list)
    objects: int = 0
    cpu_s: float = 0.0  # its compilers' and make's CPU time
    cached_s: float = 0.0  # what the cached results took when made
    cached_cpu_s: float = 0.0

    @property
    def total(self) -> float:
        return self.prepare_s + sum(self.compile_s.values())

    def row(self) -> str:
        done = sorted(self.compile_s)
        parts = f"compiled {_ranges(done) or '-'}"
        if self.cached:
            parts += (
                f"; cached {_ranges(sorted(self.cached))} "
                f"({self.cached_s:.0f} s, CPU "
                f"{self.cached_cpu_s:.0f} s when made)"
            )
        return (
            f"{self.cell:20s} {self.total:5.0f} s, CPU "
            f"{self.cpu_s:5.0f} s (prepare {self.prepare_s:.0f} s; "
            f"{self.objects} objects; {parts})"
        )


def _ranges(nums: list[int]) -> str:
    """[0, 1, 2, 3, 12] -> 0-3,12"""
    runs: list[list[int]] = []
    for n in nums:
        if runs and runs[-1][1] == n - 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ",".join(f"{a}-{b}" if b > a else str(a) for a, b in runs)


@dataclass(frozen=True)
class CellRun:
    """A cell, or a tree-wide check, on one prefix in this run (compiled,
    or taken from the cache)."""

    cell: str  # arm/mm, all/kernel-doc
    prefix: int  # 0: the base
    arch: str = ""  # a cell's; "" for a tree-wide check
    config: str = ""  # a cell's variant: perf, mm, ...
    whole: bool = False  # a cell of the base and the whole series only
    log: str = ""  # its make log, if it has one
    cached: bool = False


@dataclass
class Report:
    findings: list[Finding]
    times: list[CellTime]
    notes: list[str]
    elapsed: float
    broken: dict[str, str] = field(default_factory=dict)
    # what ran, cell by cell (a broken cell: the prefixes it finished)
    ran: list[CellRun] = field(default_factory=list)
    # cells asked for and not run (their toolchain is unusable): why
    skipped: dict[str, str] = field(default_factory=dict)
    # the series' prefixes: the base and one a patch
    prefixes: tuple[Prefix, ...] = ()

    def lines(self) -> list[str]:
        return [f.line() for f in self.findings]

    def built(self) -> list[Prefix]:
        """The prefixes a cell or a check ran on, in order: the
        run's kernels."""
        done = {r.prefix for r in self.ran}
        return [p for p in self.prefixes if p.index in done]

    def tests(self, out: Path) -> list[TestOutcome]:
        """A test per cell (and tree-wide check) and patch, on the
        kernel of the prefix that patch makes (the prefix's label, e.g.
        0003; a cell of the whole series: the last prefix, whose
        findings it lays to their patches): pass when the cell has no
        finding of the patch, fail when it has (how many, the first's
        line), error on every patch of a broken cell (its findings are
        not reported), skip for a cell not run. The duration is the
        compile of the prefix in this run (none when cached or for the
        whole series); the log the cell's make log when it lies in
        ``out``, else in the misc as build_log. The misc also has the
        cell, its arch and config (the kernels have no build: the robot
        builds per cell) and the patch's commit (its prefix's)."""
        n = len(self.prefixes) - 1
        if n < 1:
            return []
        tip = self.prefixes[n]
        found: dict[tuple[str, str], list[Finding]] = {}
        for f in self.findings:
            found.setdefault((f.cell, f.patch), []).append(f)
        compile_s = {t.cell: t.compile_s for t in self.times}
        runs: dict[str, dict[int, CellRun]] = {}
        for r in self.ran:
            runs.setdefault(r.cell, {})[r.prefix] = r
        tests = []
        for cell in [*runs, *(c for c in self.broken if c not in runs)]:
            by_prefix = runs.get(cell, {})
            one = next(iter(by_prefix.values()), CellRun(cell, 0))
            for p in self.prefixes[1:]:
                ran = by_prefix.get(tip.index if one.whole else p.index)
                misc: dict[str, str | int | float | bool] = {
                    "cell": cell,
                    "commit": p.commit,
                }
                if one.arch:
                    misc.update(arch=one.arch, config=one.config)
                if one.whole:
                    misc["whole_series"] = True
                if cell in self.broken or ran is None:
                    # a broken cell's findings are not reported: none of
                    # its patches has a verdict
                    misc["why"] = self.broken.get(cell, "not run")
                    tests.append(
                        TestOutcome(
                            outcome_path(cell, p.label),
                            TestStatus.ERROR,
                            self.prefixes[ran.prefix].label if ran else "",
                            misc=misc,
                        )
                    )
                    continue
                mine = found.get((cell, p.label), [])
                log = _under(ran.log, out)
                if ran.log and not log:
                    misc["build_log"] = ran.log
                if ran.cached:
                    misc["cached"] = True
                if mine:
                    misc.update(findings=len(mine), first=mine[0].line())
                tests.append(
                    TestOutcome(
                        outcome_path(cell, p.label),
                        TestStatus.FAIL if mine else TestStatus.PASS,
                        self.prefixes[ran.prefix].label,
                        None
                        if one.whole
                        else compile_s.get(cell, {}).get(ran.prefix),
                        log,
                        misc,
                    )
                )
        for cell, why in self.skipped.items():
            for p in self.prefixes[1:]:
                tests.append(
                    TestOutcome(
                        outcome_path(cell, p.label),
                        TestStatus.SKIP,
                        misc={"cell": cell, "why": why},
                    )
                )
        return tests


def outcome_path(cell: str, label: str) -> str:
    """``robot.<cell>.<patch>``: the cell's / as dots (x86_64/perf:
    x86_64.perf), any character but a letter, digit, _ or - as _ (so a
    cell's name never adds or empties a dotted part)."""
    parts = [re.sub(r"[^A-Za-z0-9_-]", "_", c) or "_" for c in cell.split("/")]
    return ".".join(["robot", *parts, label])


def _under(log: str, out: Path) -> str:
    """``log`` relative to ``out``, "" when it is elsewhere (or none)."""
    if not log:
        return ""
    try:
        return str(Path(log).resolve().relative_to(out.resolve()))
    except ValueError:
        return ""


def findings(
    series: SeriesTrees,
    cells: Sequence[Cell],
    results: Mapping[tuple[str, int], CellResult],
    said: Sequence[Said],
) -> list[Finding]:
    """What each patch adds: on each cell that compiled (``results`` by
    cell name and prefix index) and by each tree-wide check (``said``, in
    the order of their findings on one patch and line)."""
    n = series.patches
    added = [
        objects.added_lines(p.made_by().read_text(errors="replace"))
        for p in series.prefixes[1:]
    ]
    found: list[Finding] = []
    for i in range(1, n + 1):
        label = series.prefixes[i].label
        for s in said:
            for d in s.of_patch(i):
                found.append(Finding(label, s.check.cell, d))
    for cell in cells:
        if cell.per_prefix:
            # A prefix's compile is incremental: it says only what the
            # objects it recompiled say. An object a header change
            # recompiles at prefix i (lib/vsprintf.o, say) repeats its
            # old warnings, which prefix i-1, not recompiling it, did
            # not print: so prefix i is held against everything the
            # base and the prefixes before it said, not against i-1's
            # log alone.
            earlier: list[dg.Diagnostic] = []
            for i in range(1, n + 1):
                earlier += results[(cell.name, i - 1)].diagnostics
                for d in dg.added(
                    earlier,
                    results[(cell.name, i)].diagnostics,
                ):
                    found.append(
                        Finding(series.prefixes[i].label, cell.name, d)
                    )
        elif n:
            for d in dg.added(
                results[(cell.name, 0)].diagnostics,
                results[(cell.name, n)].diagnostics,
            ):
                i = objects.blame(d.file, d.source, added)
                found.append(
                    Finding(series.prefixes[i].label, cell.name, d, whole=True)
                )
    order = {c.name: k for k, c in enumerate(cells)}
    # the tree-wide checks' findings first on a patch; ties keep the
    # order they were found in
    found.sort(
        key=lambda f: (
            f.patch,
            order.get(f.cell, -1),
            f.diagnostic.file,
            f.diagnostic.line,
        )
    )
    return found


def write(
    out: Path,
    series: SeriesTrees,
    cells: Sequence[Cell],
    report: Report,
) -> None:
    """robot.txt (a finding a line) and robot.json in ``out``; ``cells``:
    the cells asked for, the broken ones too."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "robot.txt").write_text(
        "".join(f.line() + "\n" for f in report.findings)
    )
    (out / "robot.json").write_text(
        json.dumps(
            {
                "onto": series.onto,
                "patches": [p.made_by().name for p in series.prefixes[1:]],
                "cells": [c.name for c in cells],
                "findings": [
                    {
                        "patch": f.patch,
                        "cell": f.cell,
                        "whole_series": f.whole,
                        **f.diagnostic.to_json(),
                    }
                    for f in report.findings
                ],
                "times": [
                    {
                        "cell": t.cell,
                        "total_s": round(t.total, 1),
                        "prepare_s": round(t.prepare_s, 1),
                        "compile_s": {
                            str(k): round(v, 1) for k, v in t.compile_s.items()
                        },
                        "cpu_s": round(t.cpu_s, 1),
                        "cached_s": round(t.cached_s, 1),
                        "cached_cpu_s": round(t.cached_cpu_s, 1),
                        "cached": t.cached,
                        "objects": t.objects,
                    }
                    for t in report.times
                ],
                "notes": report.notes,
                "broken": report.broken,
                "elapsed_s": round(report.elapsed, 1),
            },
            indent=1,
        )
        + "\n"
    )
