"""What a report opens with, chosen from the analysed rows.

Per workload its primary metrics (the lead one always, others that
changed significantly, HEADLINE_ROWS in all), a count of each kernel's
other significant changes, every significant change for results.json,
then the command that reproduces the run and its kernels as built: the
typed Headline that render/headline.py draws. Apart from the statistics
(workloadstats.py) because it only selects and reshapes their rows for
the reader and adds the run's provenance from its manifest.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field
from functools import partial

from foliolab.analysis import reproduce
from foliolab.analysis.fdr import FdrFamily
from foliolab.analysis.workloadstats import (
    Decisive,
    StatRow,
    WorkloadAnalysis,
)
from foliolab.manifest import RunManifest


@dataclass(frozen=True)
class Change:
    """One significant change of a workload's kernel against the baseline
    (results.json's headline entries)."""

    metric: str
    unit: str
    primary: bool
    pct_change: float | None  # signed, + = larger; None from 0
    improved: bool
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    exact: bool  # both repeat one value: no test needed
    base_value: float
    value: float
    verdict: str = ""  # better | worse | changed (no direction)
    # the ratio, CI and p above: paired or of the means, as decided
    decisive: Decisive = "plain"


@dataclass(frozen=True)
class HeadlineEntry:
    """A workload's kernel against the baseline: its significant changes
    (none: "no significant change", with why when too few samples)."""

    workload: str
    kernel: str
    baseline: str
    changes: list[Change]
    n_base: int
    n_other: int
    ci_known: bool  # some row had enough samples for a CI


@dataclass(frozen=True)
class HeadlineRow:
    """A primary metric of a workload, a kernel against the baseline, as
    the headline shows it: each kernel's mean and sd, then the change."""

    workload: str
    metric: str
    unit: str
    better: str
    baseline: str
    kernel: str
    base_mean: float
    base_sd: float
    mean: float
    sd: float
    n_base: int
    n: int
    pct_change: float | None  # + = larger; None from 0
    ratio: float | None  # None from 0
    ci_low: float | None  # None: exact, too few samples or from 0
    ci_high: float | None
    p_value: float | None  # None: exact (no test needed)
    exact: bool
    significant: bool
    verdict: str  # better | worse | changed | ""
    # which CI and p the row has: the one that decides (StatRow.decisive)
    decisive: Decisive = "plain"


@dataclass(frozen=True)
class OtherChanges:
    """A kernel's significant changes that the headline's rows leave to
    the tables, by verdict."""

    kernel: str
    better: int = 0
    worse: int = 0
    changed: int = 0  # metrics with no better direction

    @property
    def total(self) -> int:
        return self.better + self.worse + self.changed


@dataclass(frozen=True)
class Headline:
    """What a report opens with: per workload its primary metrics (the
    lead one always, others that changed significantly, HEADLINE_ROWS in
    all), a count of the other significant changes, then the command that
    reproduces the run and its kernels as built. ``entries`` (every
    significant change) is kept for results.json's readers."""

    entries: list[HeadlineEntry]
    command: str  # shell-quoted as recorded; "" if not
    rows: list[HeadlineRow] = field(default_factory=list)
    others: list[OtherChanges] = field(default_factory=list)
    no_samples: list[str] = field(default_factory=list)  # workloads
    reproduce: str = ""  # the command with every kernel's spec
    kernels: list[str] = field(default_factory=list)  # as built, if known
    same_kernel: bool = False  # an A/A run
    names: list[str] = field(default_factory=list)  # baseline first
    specs: list[str] = field(default_factory=list)  # as given
    # the secondary metrics decided together, per kernel (fdr.py)
    fdr: list[FdrFamily] = field(default_factory=list)


# The headline's metrics in a default run (7 workloads): each workload's
# lead metric and one more that changed significantly.
HEADLINE_ROWS = 8


def _change(r: StatRow) -> Change:
    return Change(
        r.metric,
        r.unit,
        r.primary,
        r.pct_change,
        r.improved,
        r.decisive_ratio,
        *r.decisive_ci,
        r.decisive_p,
        r.exact,
        r.base.mean,
        r.other.mean,
        r.verdict,
        r.decisive,
    )


def _entries(
    workloads: list[WorkloadAnalysis], names: list[str]
) -> list[HeadlineEntry]:
    entries = []
    for wa in workloads:
        for kernel in names[1:]:
            rows = [r for r in wa.rows if r.kernel == kernel]
            sig = sorted(
                (r for r in rows if r.significant),
                key=lambda r: (not r.primary, -_size(r)),
            )
            n = [(r.base.n, r.other.n) for r in rows] or [(0, 0)]
            entries.append(
                HeadlineEntry(
                    wa.workload.name,
                    kernel,
                    names[0],
                    [_change(r) for r in sig],
                    min(a for a, _ in n),
                    min(b for _, b in n),
                    any(r.ci_known for r in rows),
                )
            )
    return entries


def _size(r: StatRow) -> float:
    """How large a change is, for ordering: |%change|, a change from 0
    the largest."""
    return math.inf if r.pct_change is None else abs(r.pct_change)


def _finite(x: float) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def headline_row(r: StatRow) -> HeadlineRow:
    ci = r.ci_known and _finite(r.ratio) is not None
    ci_low, ci_high = r.decisive_ci
    return HeadlineRow(
        r.workload,
        r.metric,
        r.unit,
        r.better,
        r.baseline,
        r.kernel,
        r.base.mean,
        r.base.stddev,
        r.other.mean,
        r.other.stddev,
        r.base.n,
        r.other.n,
        r.pct_change,
        _finite(r.ratio),
        _finite(ci_low) if ci else None,
        _finite(ci_high) if ci else None,
        None if r.exact else _finite(r.decisive_p),
        r.exact,
        r.significant,
        r.verdict,
        r.decisive,
    )


def headline_metrics(
    workloads: list[WorkloadAnalysis], limit: int = HEADLINE_ROWS
) -> list[tuple[str, str]]:
    """(workload, metric) the headline shows, in the report's order: each
    workload's lead (first) primary metric, then, while fewer than
    ``limit``, its other primary metrics that changed significantly,
    the largest change first."""
    leads = {
        (wa.workload.name, wa.primary[0][0].metric)
        for wa in workloads
        if wa.primary
    }
    extra = sorted(
        (
            (wa.workload.name, g[0].metric, max(map(_size, sig)))
            for wa in workloads
            for g in wa.primary[1:]
            if (sig := [r for r in g if r.significant])
        ),
        key=lambda t: -t[2],
    )
    chosen = leads | {
        (w, m) for w, m, _ in extra[: max(0, limit - len(leads))]
    }
    return [
        (wa.workload.name, g[0].metric)
        for wa in workloads
        for g in wa.primary
        if (wa.workload.name, g[0].metric) in chosen
    ]


def other_changes(
    workloads: list[WorkloadAnalysis], kernel: str, shown: set[tuple[str, str]]
) -> OtherChanges:
    """``kernel``'s significant changes outside the headline's rows."""
    verdicts = [
        r.verdict
        for wa in workloads
        for r in wa.rows
        if r.kernel == kernel
        and r.significant
        and (r.workload, r.metric) not in shown
    ]
    return OtherChanges(
        kernel,
        verdicts.count("better"),
        verdicts.count("worse"),
        verdicts.count("changed"),
    )


def headline(
    workloads: list[WorkloadAnalysis],
    m: RunManifest,
    families: list[FdrFamily] | None = None,
) -> Headline:
    # a sweep's points lead with their growth exponents (render/growth.py),
    # not with a row each; their significant changes are still counted
    shown = headline_metrics(
        [wa for wa in workloads if not wa.workload.sweep_of]
    )
    rows = {
        (r.workload, r.metric, r.kernel): r
        for wa in workloads
        for r in wa.rows
    }
    return Headline(
        _entries(workloads, m.names),
        shlex.join(m.command) if m.command else "",
        [
            headline_row(rows[w, metric, k])
            for w, metric in shown
            for k in m.names[1:]
            if (w, metric, k) in rows
        ],
        [other_changes(workloads, k, set(shown)) for k in m.names[1:]],
        [wa.workload.name for wa in workloads if not wa.rows],
        reproduce.line(m),
        [n for n in map(partial(reproduce.kernel_note, m), m.names) if n],
        reproduce.same_kernel(m),
        m.names,
        [k.spec for k in m.kernels],
        list(families or []),
    )
