"""The statistics of one workload's samples, as typed rows.

Per metric a StatRow for each kernel against the baseline, a StepRow for
each step of an attribution (a kernel against the one before it), what
limits the table (too few runs, drift) and the invalid samples, gathered
in a WorkloadAnalysis. Apart from analyse.py because this is the
statistics alone: it reads samples, never the run directory, and the
headline (headline.py) and every renderer read its rows.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Literal

from foliolab.analysis import stats
from foliolab.analysis.countanalysis import CountAnalysis
from foliolab.boot.derive import Sample
from foliolab.manifest import VARIANTS
from foliolab.workloads.model import Workload

# Which interval decides a row's significance, and is the one report.txt
# and the mail show: "paired" (the per-round ratios, with the signed-rank
# test) where the rounds pair every sample, "plain" (the ratio of means,
# with the Mann-Whitney test) elsewhere. results.json and the HTML keep
# both.
Decisive = Literal["paired", "plain"]


def decides(
    paired: stats.Paired, rounds: int, n_base: int, n_other: int
) -> Decisive:
    """The paired CI decides where each kernel's samples are its boots of
    the same ``rounds`` (one sample per boot; a kernel that lost a sample
    lost its round), every pair has a ratio (no zero) and there are
    enough rounds for the signed-rank test to reach ALPHA."""
    pairs_all = paired.n == rounds == min(n_base, n_other)
    if pairs_all and rounds >= stats.PAIRED_MIN_ROUNDS:
        return "paired"
    return "plain"


@dataclass(frozen=True)
class StatRow:
    """One metric of one workload: a kernel against the baseline."""

    workload: str
    metric: str
    unit: str
    better: str  # "lower" | "higher" | "none"
    label: str
    primary: bool
    baseline: str
    kernel: str
    base: stats.Summary
    other: stats.Summary
    comparison: stats.Comparison
    pct_diff: float
    mean_kind: str  # "amean" | "hmean"
    paired: stats.Paired
    min_p: float  # the smallest p these sizes allow
    decisive: Decisive = "plain"
    # each kernel's samples in two modes (stats.two_modes), or None
    base_modes: stats.Modes | None = None
    other_modes: stats.Modes | None = None
    # a secondary metric's Benjamini-Hochberg adjusted p over its family
    # (analysis/fdr.py); None for a lead metric and a row not tested
    q_value: float | None = None

    # results.json's names: vanilla is the baseline, patched the row's kernel
    @property
    def ratio(self) -> float:
        return self.comparison.ratio

    @property
    def ci_low(self) -> float:
        return self.comparison.ci_low

    @property
    def ci_high(self) -> float:
        return self.comparison.ci_high

    @property
    def p_value(self) -> float:
        return self.comparison.p_value

    @property
    def decisive_ratio(self) -> float:
        """The ratio beside the deciding CI: the paired one's geometric
        mean of per-round ratios, or the ratio of means."""
        return self.paired.ratio if self.decisive == "paired" else self.ratio

    @property
    def decisive_ci(self) -> tuple[float, float]:
        if self.decisive == "paired":
            return self.paired.ci_low, self.paired.ci_high
        return self.ci_low, self.ci_high

    @property
    def decisive_p(self) -> float:
        if self.decisive == "paired":
            return self.paired.p_value
        return self.p_value

    @property
    def exact(self) -> bool:
        """Both kernels repeat one value exactly (a count with no spread):
        the values and their ratio are the result, no test is needed."""
        return (
            self.base.n >= 2
            and self.other.n >= 2
            and self.base.min == self.base.max
            and self.other.min == self.other.max
        )

    @property
    def ci_known(self) -> bool:
        """Enough samples for a confidence interval (exact rows need
        none)."""
        return (
            not self.exact
            and min(self.base.n, self.other.n) >= stats.MIN_N_FOR_CI
        )

    @property
    def two_modes(self) -> bool:
        """Either kernel's samples split into two modes: the means are
        no kernel's typical value, so the row gets no verdict (a lead
        metric keeps its pre-declared one, said beside it)."""
        return self.base_modes is not None or self.other_modes is not None

    @property
    def tested(self) -> bool:
        """The row has a test whose p can decide it: not exact, a CI, a
        p; for a secondary metric also not in two modes. The secondary
        ones are the family analysis/fdr.py adjusts."""
        if self.exact or not self.ci_known:
            return False
        if not self.primary and self.two_modes:
            return False
        return math.isfinite(self.decisive_p)

    @property
    def raw_significant(self) -> bool:
        """The rule of one test: the deciding CI excludes 1 and its p <
        0.05 (what a secondary metric was called before the false
        discovery rate was controlled, kept to count it)."""
        if self.exact:
            return self.base.min != self.other.min
        if not self.ci_known:
            return False
        if self.decisive == "paired":
            return self.paired.significant
        return self.comparison.significant

    @property
    def significant(self) -> bool:
        """A lead metric (declared primary by its workload) is a
        pre-declared test: the rule of one test. A secondary metric is
        one of many: its deciding CI must exclude 1 and its adjusted p
        (q_value, Benjamini-Hochberg over the run's secondary metrics)
        be below stats.FDR_Q; in two modes it gets no verdict. An exact
        row (no spread on either kernel) needs no test."""
        if self.exact:
            return self.base.min != self.other.min
        if self.primary:
            return self.raw_significant
        if not self.tested or self.q_value is None:
            return False
        low, high = self.decisive_ci
        return (low > 1 or high < 1) and self.q_value < stats.FDR_Q

    @property
    def pct_change(self) -> float | None:
        """LKP's %change: the kernel's mean against the baseline's, signed
        (+ = larger, whatever the better direction); None from 0."""
        return stats.pct_change(self.base.mean, self.other.mean)

    @property
    def improved(self) -> bool:
        if self.decisive == "paired":  # the direction its CI decided
            return (self.paired.ratio < 1) == (self.better == "lower")
        return (self.other.mean < self.base.mean) == (self.better == "lower")

    @property
    def directed(self) -> bool:
        """The metric has a better direction (else it is a change only)."""
        return self.better in ("lower", "higher")

    @property
    def verdict(self) -> str:
        """ "better" or "worse" when significant, "changed" when significant
        with no better direction, "" when not significant."""
        if not self.significant:
            return ""
        if not self.directed:
            return "changed"
        return "better" if self.improved else "worse"

    def as_json(self) -> dict[str, Any]:
        """The row as results.json's summary has it (results.json's keys, named
        for two kernels, and beside them the same by the row's own two:
        ``baseline`` and ``kernel``)."""
        return {
            "workload": self.workload,
            "metric": self.metric,
            "unit": self.unit,
            "better": self.better,
            "label": self.label,
            "primary": self.primary,
            "baseline": self.baseline,
            "kernel": self.kernel,
            "n_vanilla": self.base.n,
            "n_patched": self.other.n,
            "vanilla_mean": self.base.mean,
            "patched_mean": self.other.mean,
            "n_baseline": self.base.n,
            "n_kernel": self.other.n,
            "baseline_mean": self.base.mean,
            "kernel_mean": self.other.mean,
            "ratio": self.ratio,
            "ci_low": self.ci_low if self.ci_known or self.exact else None,
            "ci_high": self.ci_high if self.ci_known or self.exact else None,
            "p_value": self.p_value,
            "significant": self.significant,
            "pct_diff": self.pct_diff,
            "mean_kind": self.mean_kind,
            "vanilla": self.base.as_dict(),
            "patched": self.other.as_dict(),
            "paired_n": self.paired.n,
            "paired_ratio": self.paired.ratio,
            "paired_ci_low": self.paired.ci_low,
            "paired_ci_high": self.paired.ci_high,
            "paired_p_value": self.paired.p_value,
            "decisive": self.decisive,
            "min_p": self.min_p,
            "exact": self.exact,
            "ci_known": self.ci_known,
            "pct_change": self.pct_change,
            "verdict": self.verdict,
            # lead metrics are pre-declared tests; secondary ones are
            # decided by q_value (None: lead, or not tested)
            "family": "lead" if self.primary else "secondary",
            "q_value": self.q_value,
            "raw_significant": self.raw_significant,
            "two_modes": self.two_modes,
            "baseline_modes": (
                self.base_modes.as_dict() if self.base_modes else None
            ),
            "kernel_modes": (
                self.other_modes.as_dict() if self.other_modes else None
            ),
        }


@dataclass(frozen=True)
class StepRow:
    """What one step adds: a kernel against the one before it."""

    workload: str
    metric: str
    better: str
    primary: bool
    before: str
    after: str
    comparison: stats.Comparison
    n: int = 0  # the fewer samples of the two kernels

    @property
    def ci_known(self) -> bool:
        return self.n >= stats.MIN_N_FOR_CI

    @property
    def significant(self) -> bool:
        return self.ci_known and self.comparison.significant

    def as_json(self) -> dict[str, Any]:
        c = self.comparison
        return {
            "workload": self.workload,
            "metric": self.metric,
            "better": self.better,
            "primary": self.primary,
            "from": self.before,
            "to": self.after,
            "ratio": c.ratio,
            "ci_low": c.ci_low if self.ci_known else None,
            "ci_high": c.ci_high if self.ci_known else None,
            "p_value": c.p_value,
            "significant": self.significant,
            "n": self.n,
        }


ByKernel = dict[str, dict[str, list[float]]]
ByRun = dict[str, dict[str, dict[int, float]]]


def _valid_values(
    w: Workload, samples: list[Sample]
) -> tuple[ByKernel, ByRun]:
    """The valid samples' values of workload ``w``, by metric and kernel,
    each kernel's also by run number (rounds pair up by run)."""
    by: ByKernel = defaultdict(lambda: defaultdict(list))
    by_run: ByRun = defaultdict(lambda: defaultdict(dict))
    for s in samples:
        if s.workload == w.name and s.valid:
            for k, v in s.values.items():
                by[k][s.variant].append(v)
                by_run[k][s.variant][s.run] = v
    return by, by_run


def summarize_workload(
    w: Workload, samples: list[Sample], names: list[str] | None = None
) -> list[StatRow]:
    """The statistics of one workload (valid samples only): one row per
    metric and kernel after the baseline, that kernel against the
    baseline."""
    names = list(names or VARIANTS)
    base = names[0]
    by, by_run = _valid_values(w, samples)
    rows = []
    for m in w.metrics:
        if not any(by[m.key][k] for k in names):
            continue
        a = by[m.key][base]
        sa = stats.summarize(a, m.is_rate)
        for other in names[1:]:
            b = by[m.key][other]
            sb = stats.summarize(b, m.is_rate)
            runs_a, runs_b = by_run[m.key][base], by_run[m.key][other]
            # the rounds as pairs: geometric mean of per-round ratios
            rounds = [r for r in sorted(runs_a) if r in runs_b]
            paired = stats.paired_ratio(
                [(runs_a[r], runs_b[r]) for r in rounds]
            )
            decisive = decides(paired, len(rounds), sa.n, sb.n)
            rows.append(
                StatRow(
                    w.name,
                    m.key,
                    m.unit,
                    m.better,
                    m.label,
                    m.primary,
                    base,
                    other,
                    sa,
                    sb,
                    stats.compare(a, b, m.is_rate),
                    stats.pct_diff(sa.mean, sb.mean, m.better),
                    "hmean" if m.is_rate else "amean",
                    paired,
                    stats.paired_min_p(paired.n)
                    if decisive == "paired"
                    else stats.min_p_value(sa.n, sb.n),
                    decisive,
                    stats.two_modes(a),
                    stats.two_modes(b),
                )
            )
    return rows


def caveat_lines(
    w: Workload, samples: list[Sample], rows: list[StatRow], names: list[str]
) -> list[str]:
    """What limits this workload's table: too few runs for any row to be
    significant, and a drift of the host over the run (a trend in the
    baseline's primary metric over its rounds)."""
    out = []
    small = [r for r in rows if r.min_p >= stats.ALPHA and not r.exact]
    if small:
        r = small[0]
        out.append(
            f"WARNING: with n={r.base.n}/{r.other.n} no "
            f"row can be significant (the smallest p a rank test can "
            f"give is {r.min_p:.3g}); use --runs "
            f"{stats.runs_needed()} or more"
            + (
                "; counts that repeat exactly are reported as exact"
                if any(x.exact for x in rows)
                else ""
            )
        )
    few = [r for r in rows if not r.exact and not r.ci_known]
    if few:
        r = few[0]
        out.append(
            f"NO CI: n={r.base.n}/{r.other.n} is fewer than "
            f"{stats.MIN_N_FOR_CI} samples per kernel, too few for "
            "a confidence interval; the ratios are point estimates"
        )
    for m in (m for m in w.metrics if m.primary):
        mine = sorted(
            (s.run, s.values[m.key])
            for s in samples
            if s.workload == w.name
            and s.variant == names[0]
            and s.valid
            and m.key in s.values
        )
        rho, p = stats.trend([v for _, v in mine])
        if p < stats.ALPHA:
            out.append(
                f"DRIFT: {names[0]}'s {m.key} "
                f"{'rises' if rho > 0 else 'falls'} over the run "
                f"(Spearman rho {rho:.2f}, p={p:.3g}, n={len(mine)}): "
                "the host changed speed; the paired ratios are the "
                "safer read"
            )
    return out


def attribution_rows(
    w: Workload, samples: list[Sample], names: list[str]
) -> list[StepRow]:
    """What each step adds: for every metric, each kernel against the one
    before it (for ``attribute``: prefix k against prefix k-1)."""
    by, _ = _valid_values(w, samples)
    rows = []
    for m in w.metrics:
        for before, after in zip(names, names[1:]):
            a, b = by[m.key][before], by[m.key][after]
            if a and b:
                rows.append(
                    StepRow(
                        w.name,
                        m.key,
                        m.better,
                        m.primary,
                        before,
                        after,
                        stats.compare(a, b, m.is_rate),
                        min(len(a), len(b)),
                    )
                )
    return rows


def by_metric(rows: list[StatRow]) -> list[list[StatRow]]:
    """Rows grouped by metric (one row per kernel), in order."""
    groups: dict[str, list[StatRow]] = {}
    for r in rows:
        groups.setdefault(r.metric, []).append(r)
    return list(groups.values())


def all_zero(group: list[StatRow]) -> bool:
    """Every sample of every kernel is zero: the event never happened."""
    return all(s.min == s.max == 0 for r in group for s in (r.base, r.other))


def zero_metrics(groups: list[list[StatRow]]) -> list[str]:
    """The metrics (of by_metric's groups) that are zero in every sample
    of every kernel; the tables list them by name only (results.json keeps
    their rows)."""
    return [g[0].metric for g in groups if all_zero(g)]


def invalid_lines(
    w: Workload, samples: list[Sample], names: list[str] | None = None
) -> list[str]:
    out = []
    for variant in names or VARIANTS:
        mine = [
            s for s in samples if s.workload == w.name and s.variant == variant
        ]
        bad = [s for s in mine if not s.valid]
        if bad:
            out.append(
                f"{variant}: {len(bad)} of {len(mine)} samples "
                "INVALID (excluded):"
            )
            for s in bad:
                out.append(f"  run {s.run}: {'; '.join(s.reasons)}")
    return out


@dataclass
class WorkloadAnalysis:
    workload: Workload
    rows: list[StatRow]
    steps: list[StepRow]
    caveats: list[str]
    invalid: list[str]
    counts: CountAnalysis | None
    boot_cost: str

    @property
    def primary(self) -> list[list[StatRow]]:
        return by_metric([r for r in self.rows if r.primary])

    @property
    def secondary(self) -> list[list[StatRow]]:
        """The secondary metrics that are not zero everywhere."""
        return [
            g
            for g in by_metric([r for r in self.rows if not r.primary])
            if not all_zero(g)
        ]

    @property
    def zero(self) -> list[str]:
        return zero_metrics(by_metric([r for r in self.rows if not r.primary]))

    @property
    def constant(self) -> list[str]:
        """Metrics (not zero) with one value in every sample of every
        kernel: exact and unchanged, named instead of plotted."""
        zero = set(self.zero)
        return [
            g[0].metric
            for g in by_metric(self.rows)
            if g[0].metric not in zero
            and all(r.exact and not r.significant for r in g)
        ]
