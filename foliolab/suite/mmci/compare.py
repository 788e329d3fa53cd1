"""Each case of repeated wrapper runs, k failures of n on ``up`` and on
``next``, and which cases are new failures on ``next``.

A case's runs on a kernel count as n (the runs where it ran: passed,
failed, stopped with an error, or was missing from a run that had it
elsewhere) and k (those where it did not hold); skips are counted apart
and are not runs of the case. Whether ``next`` fails it more often than
``up`` is Fisher's exact test on the 2x2 table (failed, held) x (next,
up), one-sided (next fails more), at ALPHA.

"New failure" is called when the test says so (p < ALPHA), or when
``up`` never failed the case and ``next`` always did, each in at least
MIN_ALWAYS runs. Why the second rule: Fisher's test cannot reach 0.05
with few runs (3 of 3 against 0 of 3 gives exactly p = 0.05; 2 of 2
against 0 of 2, p = 1/6), yet all-against-none is what a deterministic
break looks like, and a case whose failure rate r is the same on both
kernels shows it with probability r^n (1-r)^m (n runs on next, m on
up), at most 4^-3 = 1/64 when both are at least 3: below ALPHA for every
r. With 2 runs each the bound is 1/16, above ALPHA, so 3 it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from foliolab.testrecord import TestOutcome, TestStatus

ALPHA = 0.05
MIN_ALWAYS = 3
NEW = "new failure"
BOTH = "fails on both"  # next fails it, not significantly more than up
HOLDS = "holds"  # next never fails it
ONLY_UP = "fails on up only"
# next fails it, up never did, too few runs or failures to say
NOT_SIGNIFICANT = "not significant"
NOT_COMPARED = "not compared"  # no run of it on one of the kernels
_HELD = (TestStatus.PASS, TestStatus.DONE)
_NOT_HELD = (TestStatus.FAIL, TestStatus.ERROR, TestStatus.MISS)

Runs = Sequence[Sequence[TestOutcome]]  # a kernel's runs, each its rows


@dataclass(frozen=True)
class Tally:
    """One case on one kernel: k of n runs did not hold, ``skipped``
    runs skipped it."""

    k: int
    n: int
    skipped: int

    def text(self) -> str:
        return f"{self.k}/{self.n}" + (
            f" (+{self.skipped} skip)" if self.skipped else ""
        )


@dataclass(frozen=True)
class CaseComparison:
    path: str
    up: Tally
    next: Tally
    p: float | None  # Fisher's one-sided p; None when not compared
    verdict: str

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "up": {"k": self.up.k, "n": self.up.n, "skip": self.up.skipped},
            "next": {
                "k": self.next.k,
                "n": self.next.n,
                "skip": self.next.skipped,
            },
            "p": self.p,
            "verdict": self.verdict,
        }


def tally(path: str, runs: Sequence[Mapping[str, TestStatus]]) -> Tally:
    """``path`` over ``runs`` (each: path -> status, by_path()): a run
    without it missed it."""
    k = n = skipped = 0
    for statuses in runs:
        status = statuses.get(path, TestStatus.MISS)
        if status == TestStatus.SKIP:
            skipped += 1
            continue
        n += 1
        k += status in _NOT_HELD
    return Tally(k, n, skipped)


def by_path(runs: Runs) -> list[dict[str, TestStatus]]:
    """Each run's rows by path (a repeated path: its last row)."""
    return [{r.path: r.status for r in rows} for rows in runs]


def fisher_greater(up: Tally, nxt: Tally) -> float:
    """P of next failing at least this much more often than up, were
    their rates the same (Fisher's exact test, one-sided)."""
    from scipy import stats as sps  # 0.4 s to import: only when compared

    table = [[nxt.k, nxt.n - nxt.k], [up.k, up.n - up.k]]
    _, p = sps.fisher_exact(table, alternative="greater")
    return float(p)


def verdict_of(up: Tally, nxt: Tally) -> tuple[float | None, str]:
    if up.n == 0 or nxt.n == 0:
        return None, NOT_COMPARED
    # next never failing it: p is 1 (most cases; scipy not asked)
    p = fisher_greater(up, nxt) if nxt.k else 1.0
    always_vs_never = (
        up.k == 0 and nxt.k == nxt.n and min(up.n, nxt.n) >= MIN_ALWAYS
    )
    if p < ALPHA or always_vs_never:
        return p, NEW
    if nxt.k:
        return p, BOTH if up.k else NOT_SIGNIFICANT
    return p, ONLY_UP if up.k else HOLDS


def compare(up: Runs, nxt: Runs) -> list[CaseComparison]:
    """Every path that any run of either kernel has, in first-seen
    order."""
    paths: dict[str, None] = {}
    for runs in (up, nxt):
        for rows in runs:
            for r in rows:
                paths.setdefault(r.path)
    up_runs, next_runs = by_path(up), by_path(nxt)
    out = []
    for path in paths:
        tu, tn = tally(path, up_runs), tally(path, next_runs)
        p, verdict = verdict_of(tu, tn)
        out.append(CaseComparison(path, tu, tn, p, verdict))
    return out


def allowed_failure(r: TestOutcome) -> bool:
    """A row that passed because the test allows what happened: its
    ``# XFAIL`` (results._outcome keeps the directive)."""
    return str(r.misc.get("directive", "")).upper().startswith("XFAIL")


@dataclass(frozen=True)
class AllowedFailures:
    """A case whose allowed failure (``# XFAIL``) happened in some runs:
    k of the n runs it held in, on each kernel, and Fisher's one-sided p
    of ``next`` having it more often. The mm CI counts these rows as
    passes, and so does the summary; they are listed because an allowed
    failure that a series makes more frequent (cow's hugetlb leak) is
    still a change of behaviour a reviewer asks about."""

    path: str
    up: Tally
    next: Tally
    p: float | None

    def in_every_run(self, compared: bool) -> bool:
        """Whether it came in every run of ``up`` (and of ``next`` when
        ``compared``); a kernel that never held the case (skipped or
        failed it every time) is no "every run"."""
        return all(
            t.n > 0 and t.k == t.n
            for t in ((self.up, self.next) if compared else (self.up,))
        )

    def to_json(self, compared: bool) -> dict[str, Any]:
        """The JSON's entry (``next`` and p only when ``compared``)."""
        d: dict[str, Any] = {
            "path": self.path,
            "up": {"k": self.up.k, "n": self.up.n},
        }
        if compared:
            d["next"] = {"k": self.next.k, "n": self.next.n}
            d["p"] = self.p
        return d


def allowed_failures(up: Runs, nxt: Runs) -> list[AllowedFailures]:
    """Every case with an allowed failure in any run, first-seen order;
    n counts the runs where the case held (passed or allowed failure)."""

    def counts(runs: list[dict[str, TestOutcome]], path: str) -> Tally:
        k = n = 0
        for by in runs:
            row = by.get(path)
            if row is not None and row.status in _HELD:
                n += 1
                k += allowed_failure(row)
        return Tally(k, n, 0)

    paths = dict.fromkeys(
        r.path
        for runs in (up, nxt)
        for rows in runs
        for r in rows
        if allowed_failure(r)
    )
    up_by = [{r.path: r for r in rows} for rows in up]
    next_by = [{r.path: r for r in rows} for rows in nxt]
    out = []
    for path in paths:
        tu, tn = counts(up_by, path), counts(next_by, path)
        p = (
            None
            if not nxt or tu.n == 0 or tn.n == 0
            else fisher_greater(tu, tn)
            if tn.k
            else 1.0
        )
        out.append(AllowedFailures(path, tu, tn, p))
    return out


def allowed_text(
    allowed: Sequence[AllowedFailures], up_name: str, next_name: str | None
) -> str:
    """The allowed failures that did not happen in every run of each
    kernel, as lines for the summary ("" when there are none); those
    that did (cow's hugetlb leaks: 15 or 16 cases in each arm64 boot
    of 7.3.4 in runs mmci-arm64-slow2 and mmci-arm64-cow2, 8 in each
    x86_64 boot of mmci-slow-73) are counted in one line and listed in
    the JSON."""
    if not allowed:
        return ""
    steady = [a for a in allowed if a.in_every_run(next_name is not None)]
    varied = [a for a in allowed if a not in steady]
    lines = [
        "",
        f"allowed failures (# XFAIL, counted as passes) in some runs, "
        f"k/n on {up_name}, on {next_name}; Fisher one-sided p, "
        f"{next_name} has them more:"
        if next_name
        else f"allowed failures (# XFAIL, counted as passes) in some runs, "
        f"k/n on {up_name}:",
    ]
    for a in varied:
        p = "-" if a.p is None else f"{a.p:.3g}"
        nxt = f" {a.next.text():>9} p={p:<6}" if next_name else ""
        lines.append(f"  {a.up.text():>9}{nxt} {a.path}")
    if not varied:
        lines.append("  none")
    if steady:
        lines.append(
            f"  and {len(steady)} in every run of "
            + ("each kernel" if next_name else up_name)
            + " (the JSON's allowed_failures)"
        )
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class SummaryRow:
    """A kernel's cases: held in every run, failed at least once,
    skipped in every run, and (the compared kernel's) new failures."""

    kernel: str
    passed: int
    failed: int
    skipped: int
    new: int | None  # None for the reference kernel

    def to_json(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "pass": self.passed,
            "fail": self.failed,
            "skip": self.skipped,
            "new": self.new,
        }


def summary(
    cases: Sequence[CaseComparison], up_name: str, next_name: str | None
) -> list[SummaryRow]:
    """A row per kernel (only ``up``'s when there is no other)."""
    rows = []
    sides = [(up_name, "up")] + ([(next_name, "next")] if next_name else [])
    for name, side in sides:
        tallies = [getattr(c, side) for c in cases]
        rows.append(
            SummaryRow(
                name,
                sum(t.n > 0 and t.k == 0 for t in tallies),
                sum(t.k > 0 for t in tallies),
                sum(t.n == 0 and t.skipped > 0 for t in tallies),
                None if side == "up" else sum(c.verdict == NEW for c in cases),
            )
        )
    return rows


def summary_text(
    cases: Sequence[CaseComparison],
    up_name: str,
    next_name: str | None,
    allowed: Sequence[AllowedFailures] = (),
) -> str:
    lines = [f"{'kernel':<12} {'pass':>6} {'fail':>6} {'skip':>6} {'new':>6}"]
    for s in summary(cases, up_name, next_name):
        new = "-" if s.new is None else str(s.new)
        lines.append(
            f"{s.kernel:<12} {s.passed:>6} {s.failed:>6} {s.skipped:>6} "
            f"{new:>6}"
        )
    flagged = [c for c in cases if c.up.k or c.next.k]
    if flagged:
        lines.append("")
        lines.append(
            f"cases that failed (k/n on {up_name}, on {next_name}; "
            f"Fisher one-sided p, {next_name} fails more):"
            if next_name
            else f"cases that failed (k/n on {up_name}):"
        )
        for c in flagged:
            p = "-" if c.p is None else f"{c.p:.3g}"
            lines.append(
                f"  {c.verdict:<16} {c.up.text():>9} {c.next.text():>9} "
                f"p={p:<6} {c.path}"
            )
    return "\n".join(lines) + "\n" + allowed_text(allowed, up_name, next_name)


def comparison_outcomes(
    cases: Sequence[CaseComparison], next_name: str
) -> list[TestOutcome]:
    """Each compared case as a row of the run's outcomes, on ``next``:
    ``compare.PATH``, fail for a new failure, pass for any other
    compared case, skip when one kernel never ran it; k/n and p in
    misc."""
    rows = []
    for c in cases:
        status = (
            TestStatus.FAIL
            if c.verdict == NEW
            else TestStatus.SKIP
            if c.verdict == NOT_COMPARED
            else TestStatus.PASS
        )
        misc: dict[str, str | int | float | bool] = {
            "verdict": c.verdict,
            "up_k": c.up.k,
            "up_n": c.up.n,
            "next_k": c.next.k,
            "next_n": c.next.n,
        }
        if c.p is not None:
            misc["p"] = round(c.p, 6)
        rows.append(
            TestOutcome(f"compare.{c.path}", status, next_name, misc=misc)
        )
    return rows


def write(
    out: Path,
    cases: Sequence[CaseComparison],
    up_name: str,
    next_name: str | None,
    extra: Mapping[str, Any] | None = None,
    suffix: str = "",
    heading: str = "",
    allowed: Sequence[AllowedFailures] = (),
) -> tuple[Path, Path]:
    """OUT/mmci-summary{suffix}.txt and .json; ``heading`` goes before
    the text's table."""
    text = out / f"mmci-summary{suffix}.txt"
    text.write_text(heading + summary_text(cases, up_name, next_name, allowed))
    js = out / f"mmci-summary{suffix}.json"
    js.write_text(
        json.dumps(
            {
                "up": up_name,
                "next": next_name,
                "alpha": ALPHA,
                "min_always": MIN_ALWAYS,
                "summary": [
                    s.to_json() for s in summary(cases, up_name, next_name)
                ],
                "cases": [c.to_json() for c in cases],
                "allowed_failures": [
                    a.to_json(next_name is not None) for a in allowed
                ],
                **(extra or {}),
            },
            indent=1,
        )
        + "\n"
    )
    return text, js
