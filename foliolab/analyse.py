"""Analysis of a run, apart from its rendering: samples -> typed rows.

Per workload, each metric's statistics as StatRows (one per kernel
against the baseline), the attribution steps as StepRows, what limits the
table (too few runs, drift), the invalid samples, the counting analysis
(nondeterministic functions, differential profiles), the host over the
run and the boots that did not finish. The renderers (render/) and
results.json read these; nothing here formats a table.
"""

from __future__ import annotations

import logging
import math
import shlex
from collections import defaultdict
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from foliolab import bootrecord, counting, derive, reproduce, stats
from foliolab.derive import Sample, load_samples
from foliolab.manifest import VARIANTS, RunManifest
from foliolab.workloads import WORKLOADS
from foliolab.workloads.model import Workload, with_roots

log = logging.getLogger("foliolab")


@dataclass(frozen=True)
class StatRow:
    """One metric of one workload: a kernel against the baseline."""

    workload: str
    metric: str
    unit: str
    better: str                     # "lower" | "higher" | "none"
    label: str
    primary: bool
    baseline: str
    kernel: str
    base: stats.Summary
    other: stats.Summary
    comparison: stats.Comparison
    pct_diff: float
    mean_kind: str                  # "amean" | "hmean"
    paired: stats.Paired
    min_p: float                    # the smallest p these sizes allow

    # SPEC §7's names: vanilla is the baseline, patched the row's kernel
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
    def exact(self) -> bool:
        """Both kernels repeat one value exactly (a count with no spread):
        the values and their ratio are the result, no test is needed."""
        return self.base.n >= 2 and self.other.n >= 2 and \
            self.base.min == self.base.max and \
            self.other.min == self.other.max

    @property
    def ci_known(self) -> bool:
        """Enough samples for a confidence interval (exact rows need
        none)."""
        return not self.exact and \
            min(self.base.n, self.other.n) >= stats.MIN_N_FOR_CI

    @property
    def significant(self) -> bool:
        if self.exact:
            return self.base.min != self.other.min
        return self.ci_known and self.comparison.significant

    @property
    def pct_change(self) -> float | None:
        """LKP's %change: the kernel's mean against the baseline's, signed
        (+ = larger, whatever the better direction); None from 0."""
        return stats.pct_change(self.base.mean, self.other.mean)

    @property
    def improved(self) -> bool:
        return (self.other.mean < self.base.mean) == (self.better == "lower")

    @property
    def directed(self) -> bool:
        """The metric has a better direction (else it is a change only)."""
        return self.better in ("lower", "higher")

    @property
    def verdict(self) -> str:
        """"better" or "worse" when significant, "changed" when significant
        with no better direction, "" when not significant."""
        if not self.significant:
            return ""
        if not self.directed:
            return "changed"
        return "better" if self.improved else "worse"

    def as_json(self) -> dict:
        """The row as results.json's summary has it (SPEC §7)."""
        return {
            "workload": self.workload, "metric": self.metric,
            "unit": self.unit, "better": self.better, "label": self.label,
            "primary": self.primary, "baseline": self.baseline,
            "kernel": self.kernel, "n_vanilla": self.base.n,
            "n_patched": self.other.n, "vanilla_mean": self.base.mean,
            "patched_mean": self.other.mean, "ratio": self.ratio,
            "ci_low": self.ci_low if self.ci_known or self.exact else None,
            "ci_high": self.ci_high if self.ci_known or self.exact else None,
            "p_value": self.p_value, "significant": self.significant,
            "pct_diff": self.pct_diff, "mean_kind": self.mean_kind,
            "vanilla": self.base.as_dict(), "patched": self.other.as_dict(),
            "paired_n": self.paired.n, "paired_ratio": self.paired.ratio,
            "paired_ci_low": self.paired.ci_low,
            "paired_ci_high": self.paired.ci_high, "min_p": self.min_p,
            "exact": self.exact, "ci_known": self.ci_known,
            "pct_change": self.pct_change, "verdict": self.verdict}


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
    n: int = 0                      # the fewer samples of the two kernels

    @property
    def ci_known(self) -> bool:
        return self.n >= stats.MIN_N_FOR_CI

    @property
    def significant(self) -> bool:
        return self.ci_known and self.comparison.significant

    def as_json(self) -> dict:
        c = self.comparison
        return {"workload": self.workload, "metric": self.metric,
                "better": self.better, "primary": self.primary,
                "from": self.before, "to": self.after, "ratio": c.ratio,
                "ci_low": c.ci_low if self.ci_known else None,
                "ci_high": c.ci_high if self.ci_known else None,
                "p_value": c.p_value, "significant": self.significant,
                "n": self.n}


# How many functions a differential profile shows per workload.
PROFILE_TOP = 10


@dataclass
class CountAnalysis:
    """What the counting samples of one workload say across samples: which
    functions are nondeterministic and where the kernels differ."""

    workload: str
    windows: dict[str, list[counting.Window]]   # kernel -> valid windows
    flagged: set[str]            # functions whose count varies in repeats
    known: bool                  # every kernel had two windows or more
    # kernel -> its profile against the baseline (the first kernel)
    profiles: dict[str, list[counting.ProfileRow]]
    notes: list[str]
    # kernels with a counting sample whose roots were per vCPU
    untracked: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return list(self.windows)

    @property
    def profile(self) -> list[counting.ProfileRow]:
        """The last kernel's profile (patched's, in a --patches run)."""
        return self.profiles.get(self.names[-1], []) if self.names else []

    def summary_line(self) -> str:
        n = "/".join(str(len(ws)) for ws in self.windows.values())
        who = ("v/p" if self.names == list(VARIANTS)
               else "/".join(self.names))
        if not self.known:
            return (f"determinism unknown: counting samples {who} {n} (a "
                    "function is flagged only when repeats of one kernel "
                    "differ)" + self.untracked_text())
        shares = []
        for ws in self.windows.values():
            for w in ws:
                if w.kernel_insns:
                    out = w.kernel_insns - counting.deterministic_insns(
                        w.insns(), w.kernel_insns, self.flagged)
                    shares.append(100.0 * out / w.kernel_insns)
        worst = max(shares, default=0.0)
        return (f"nondeterministic: {len(self.flagged)} functions flagged "
                f"over counting samples {who} {n}, up to {worst:.2f}% of a "
                "window; left out of kernel_insns_deterministic"
                + self.untracked_text())

    def untracked_text(self) -> str:
        if not self.untracked:
            return ""
        return ("; roots counted per vCPU, not following their task across "
                f"context switches, on {', '.join(self.untracked)} (a "
                "switched-out root counts the next task's work)")

    def as_dict(self) -> dict:
        base = self.names[0] if self.names else ""

        def rows(name: str) -> list[dict]:
            return [{"function": r.function, "insns": r.insns,
                     "calls": r.calls, "delta": r.delta(base, name),
                     "nondeterministic": r.nondeterministic}
                    for r in self.profiles.get(name, [])]
        return {"flagged": sorted(self.flagged), "known": self.known,
                "notes": self.notes, "roots_per_vcpu_on": self.untracked,
                "profile": rows(self.names[-1]) if self.names else [],
                "profiles": {k: rows(k) for k in self.names[1:]}}


def _counting_windows(out: Path, samples: list[Sample], notes: list[str]
                      ) -> list[tuple[Sample, counting.Window]]:
    """Each valid counting sample with its window, read from the run
    directory's raw plugin output (each file parsed once)."""
    cache: dict[str, list[counting.Window]] = {}
    pairs = []
    for s in samples:
        w = WORKLOADS.get(s.workload)
        if not s.counts or not s.valid or w is None:
            continue
        if s.counts not in cache:
            path = out / s.counts
            if not path.exists():
                notes.append(f"{path} is missing: its sample has no profile")
            cache[s.counts] = counting.read_windows(path, w.window)
        mine = cache[s.counts]
        if 0 <= s.count_window < len(mine):
            pairs.append((s, mine[s.count_window]))
    return pairs


def analyse_counts(out: Path, samples: list[Sample],
                   names: list[str] | None = None
                   ) -> dict[str, CountAnalysis]:
    """Flag nondeterministic functions per workload (over every kernel's
    repeats), add ``kernel_insns_deterministic`` and
    ``nondeterministic_pct`` to each counting sample when that is known,
    and build the differential profile."""
    notes: list[str] = []
    pairs = _counting_windows(out, samples, notes)
    by: dict[str, dict[str, list[tuple[Sample, counting.Window]]]] = \
        defaultdict(lambda: defaultdict(list))
    for s, win in pairs:
        by[s.workload][s.variant].append((s, win))
    names = list(names or VARIANTS)
    result = {}
    for name, variants in by.items():
        windows = {v: [win for _, win in variants.get(v, [])]
                   for v in names}
        known = all(len(ws) >= 2 for ws in windows.values())
        flagged = counting.nondeterministic_functions(
            {v: [win.insns() for win in ws] for v, ws in windows.items()})
        if known:
            for s, win in (p for v in variants.values() for p in v):
                det = counting.deterministic_insns(win.insns(),
                                                   win.kernel_insns, flagged)
                s.values["kernel_insns_deterministic"] = det
                if win.kernel_insns:
                    s.values["nondeterministic_pct"] = \
                        100.0 * (1 - det / win.kernel_insns)
        profiles = {k: counting.differential_profile(
            windows, names[0], k, flagged, PROFILE_TOP) for k in names[1:]}
        untracked = [v for v in names
                     if any(s.roots_follow_tasks is False
                            for s, _ in variants.get(v, []))]
        result[name] = CountAnalysis(name, windows, flagged, known, profiles,
                                     list(notes), untracked)
    return result


def host_line(out: Path) -> str:
    """The host while the run's boots ran: load average at their start and
    the CPU time stolen from it during them (from each boot.json)."""
    loads, steal, governors = [], [], set()
    for d in bootrecord.boot_dirs(out):
        res = bootrecord.read_boot(d)
        if res is None:
            continue
        if "loadavg_1m" in res.host:
            loads.append(res.host["loadavg_1m"])
        if "steal_pct" in res.host:
            steal.append(res.host["steal_pct"])
        if "governor" in res.host:
            governors.add(res.host["governor"])
    if not loads:
        return ""
    text = (f"host: load average {min(loads):.2f}-{max(loads):.2f} at the "
            f"start of {len(loads)} boots")
    if steal:
        text += f", steal up to {max(steal):.1f}% of CPU time during one"
    if governors:
        text += f"; CPU frequency governor {', '.join(sorted(governors))}"
    return text


def _valid_values(w: Workload, samples: list[Sample]):
    """The valid samples' values of workload ``w``, by metric and kernel,
    each kernel's also by run number (rounds pair up by run)."""
    by = defaultdict(lambda: defaultdict(list))
    by_run = defaultdict(lambda: defaultdict(dict))
    for s in samples:
        if s.workload == w.name and s.valid:
            for k, v in s.values.items():
                by[k][s.variant].append(v)
                by_run[k][s.variant][s.run] = v
    return by, by_run


def summarize_workload(w: Workload, samples: list[Sample],
                       names: list[str] | None = None) -> list[StatRow]:
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
            paired = stats.paired_ratio([(runs_a[r], runs_b[r])
                                         for r in sorted(runs_a)
                                         if r in runs_b])
            rows.append(StatRow(
                w.name, m.key, m.unit, m.better, m.label, m.primary, base,
                other, sa, sb, stats.compare(a, b, m.is_rate),
                stats.pct_diff(sa.mean, sb.mean, m.better),
                "hmean" if m.is_rate else "amean", paired,
                stats.min_p_value(sa.n, sb.n)))
    return rows


def caveat_lines(w: Workload, samples: list[Sample], rows: list[StatRow],
                 names: list[str]) -> list[str]:
    """What limits this workload's table: too few runs for any row to be
    significant, and a drift of the host over the run (a trend in the
    baseline's primary metric over its rounds)."""
    out = []
    small = [r for r in rows if r.min_p >= stats.ALPHA and not r.exact]
    if small:
        r = small[0]
        out.append(f"WARNING: with n={r.base.n}/{r.other.n} no "
                   f"row can be significant (the smallest p a rank test can "
                   f"give is {r.min_p:.3g}); use --runs "
                   f"{stats.runs_needed()} or more" + (
                       "; counts that repeat exactly are reported as exact"
                       if any(x.exact for x in rows) else ""))
    few = [r for r in rows if not r.exact and not r.ci_known]
    if few:
        r = few[0]
        out.append(f"NO CI: n={r.base.n}/{r.other.n} is fewer than "
                   f"{stats.MIN_N_FOR_CI} samples per kernel, too few for "
                   "a confidence interval; the ratios are point estimates")
    for m in (m for m in w.metrics if m.primary):
        mine = sorted((s.run, s.values[m.key]) for s in samples
                      if s.workload == w.name and s.variant == names[0]
                      and s.valid and m.key in s.values)
        rho, p = stats.trend([v for _, v in mine])
        if p < stats.ALPHA:
            out.append(f"DRIFT: {names[0]}'s {m.key} "
                       f"{'rises' if rho > 0 else 'falls'} over the run "
                       f"(Spearman rho {rho:.2f}, p={p:.3g}, n={len(mine)}): "
                       "the host changed speed; the paired ratios are the "
                       "safer read")
    return out


def attribution_rows(w: Workload, samples: list[Sample],
                     names: list[str]) -> list[StepRow]:
    """What each step adds: for every metric, each kernel against the one
    before it (for ``attribute``: prefix k against prefix k-1)."""
    by, _ = _valid_values(w, samples)
    rows = []
    for m in w.metrics:
        for before, after in zip(names, names[1:]):
            a, b = by[m.key][before], by[m.key][after]
            if a and b:
                rows.append(StepRow(w.name, m.key, m.better, m.primary,
                                    before, after,
                                    stats.compare(a, b, m.is_rate),
                                    min(len(a), len(b))))
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


def invalid_lines(w: Workload, samples: list[Sample],
                  names: list[str] | None = None) -> list[str]:
    out = []
    for variant in names or VARIANTS:
        mine = [s for s in samples
                if s.workload == w.name and s.variant == variant]
        bad = [s for s in mine if not s.valid]
        if bad:
            out.append(f"{variant}: {len(bad)} of {len(mine)} samples "
                       "INVALID (excluded):")
            for s in bad:
                out.append(f"  run {s.run}: {'; '.join(s.reasons)}")
    return out


def missing_boots(m: RunManifest, out: Path) -> list[str]:
    """Per workload and kernel, the planned boots without a boot.json
    ("1 of 2 boots of pageout/patched finished")."""
    per_kernel = -(-m.runs // max(1, m.samples_per_boot)) * (
        2 if m.count else 1)
    lines = []
    for w in m.workloads:
        for k in m.names:
            done = [d for d in (out / "raw" / w).glob(f"{k}-[0-9][0-9][0-9]*")
                    if (d / bootrecord.BOOT_FILE).exists()
                    and d.name[len(k) + 1:len(k) + 4].isdigit()]
            if len(done) < per_kernel:
                lines.append(f"{len(done)} of {per_kernel} boots of {w}/{k} "
                             "finished")
    return lines


def failed_boots(out: Path) -> list[str]:
    """The run's failed boots, as the boots on disk say."""
    failures = []
    for rundir in bootrecord.boot_dirs(out):
        res = bootrecord.read_boot(rundir)
        if res is not None and not res.clean:
            failures.append(f"{rundir.parent.name}/{rundir.name}: "
                            f"{res.describe()}; console log: {res.console}")
    return failures


def run_samples(out: Path) -> list[Sample]:
    """Every sample of the run in ``out``, derived again from its raw boots
    (samples.jsonl rewritten), or read from samples.jsonl for runs from
    before job.json."""
    samples = derive.rederive(out)
    if samples is None:
        return load_samples(out)
    derive.write_samples(out, samples)
    return samples


def boot_cost_line(name: str, samples: list[Sample]) -> str:
    """What counting cost: mean wall and QEMU CPU time of the timed and of
    the counting boots of one workload (one line, empty if not counted)."""
    def cost(counted: bool) -> str:
        boots = {s.rundir: s for s in samples if s.workload == name
                 and bool(s.counts) == counted}.values()
        wall = [s.wall_s for s in boots if s.wall_s is not None]
        cpu = [s.cpu_s for s in boots if s.cpu_s is not None]
        text = f"{sum(wall) / len(wall):.1f} s wall" if wall else "? wall"
        if cpu:
            text += f", {sum(cpu) / len(cpu):.1f} s CPU"
        return text + f" over {len(boots)} boots"
    if not any(s.counts for s in samples if s.workload == name):
        return ""
    return (f"boot cost: timed {cost(False)}; counting {cost(True)} "
            "(means per boot; a timed boot also runs the profiled passes)")


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
        return [g for g in by_metric([r for r in self.rows
                                      if not r.primary]) if not all_zero(g)]

    @property
    def zero(self) -> list[str]:
        return zero_metrics(by_metric([r for r in self.rows
                                       if not r.primary]))

    @property
    def constant(self) -> list[str]:
        """Metrics (not zero) with one value in every sample of every
        kernel: exact and unchanged, named instead of plotted."""
        zero = set(self.zero)
        return [g[0].metric for g in by_metric(self.rows)
                if g[0].metric not in zero
                and all(r.exact and not r.significant for r in g)]


@dataclass(frozen=True)
class Change:
    """One significant change of a workload's kernel against the baseline
    (results.json's headline entries)."""

    metric: str
    unit: str
    primary: bool
    pct_change: float | None     # signed, + = larger; None from 0
    improved: bool
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    exact: bool                  # both repeat one value: no test needed
    base_value: float
    value: float
    verdict: str = ""            # better | worse | changed (no direction)


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
    ci_known: bool               # some row had enough samples for a CI


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
    pct_change: float | None     # + = larger; None from 0
    ratio: float | None          # None from 0
    ci_low: float | None         # None: exact, too few samples or from 0
    ci_high: float | None
    p_value: float | None        # None: exact (no test needed)
    exact: bool
    significant: bool
    verdict: str                 # better | worse | changed | ""


@dataclass(frozen=True)
class OtherChanges:
    """A kernel's significant changes that the headline's rows leave to
    the tables, by verdict."""

    kernel: str
    better: int = 0
    worse: int = 0
    changed: int = 0             # metrics with no better direction

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
    command: str                 # shell-quoted as recorded; "" if not
    rows: list[HeadlineRow] = field(default_factory=list)
    others: list[OtherChanges] = field(default_factory=list)
    no_samples: list[str] = field(default_factory=list)   # workloads
    reproduce: str = ""          # the command with every kernel's spec
    kernels: list[str] = field(default_factory=list)  # as built, if known
    same_kernel: bool = False    # an A/A run
    names: list[str] = field(default_factory=list)       # baseline first
    specs: list[str] = field(default_factory=list)       # as given


# The headline's metrics in a default run (7 workloads): each workload's
# lead metric and one more that changed significantly.
HEADLINE_ROWS = 8


def _change(r: StatRow) -> Change:
    return Change(r.metric, r.unit, r.primary, r.pct_change, r.improved,
                  r.ratio, r.ci_low, r.ci_high, r.p_value, r.exact,
                  r.base.mean, r.other.mean, r.verdict)


def _entries(workloads: list[WorkloadAnalysis], names: list[str]
             ) -> list[HeadlineEntry]:
    entries = []
    for wa in workloads:
        for kernel in names[1:]:
            rows = [r for r in wa.rows if r.kernel == kernel]
            sig = sorted((r for r in rows if r.significant),
                         key=lambda r: (not r.primary, -_size(r)))
            n = [(r.base.n, r.other.n) for r in rows] or [(0, 0)]
            entries.append(HeadlineEntry(
                wa.workload.name, kernel, names[0],
                [_change(r) for r in sig], min(a for a, _ in n),
                min(b for _, b in n), any(r.ci_known for r in rows)))
    return entries


def _size(r: StatRow) -> float:
    """How large a change is, for ordering: |%change|, a change from 0
    the largest."""
    return math.inf if r.pct_change is None else abs(r.pct_change)


def _finite(x: float) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def headline_row(r: StatRow) -> HeadlineRow:
    ci = r.ci_known and _finite(r.ratio) is not None
    return HeadlineRow(
        r.workload, r.metric, r.unit, r.better, r.baseline, r.kernel,
        r.base.mean, r.base.stddev, r.other.mean, r.other.stddev, r.base.n,
        r.other.n, r.pct_change, _finite(r.ratio),
        _finite(r.ci_low) if ci else None, _finite(r.ci_high) if ci else None,
        None if r.exact else _finite(r.p_value), r.exact, r.significant,
        r.verdict)


def headline_metrics(workloads: list[WorkloadAnalysis],
                     limit: int = HEADLINE_ROWS) -> list[tuple[str, str]]:
    """(workload, metric) the headline shows, in the report's order: each
    workload's lead (first) primary metric, then, while fewer than
    ``limit``, its other primary metrics that changed significantly,
    the largest change first."""
    leads = {(wa.workload.name, wa.primary[0][0].metric)
             for wa in workloads if wa.primary}
    extra = sorted(((wa.workload.name, g[0].metric, max(map(_size, sig)))
                    for wa in workloads for g in wa.primary[1:]
                    if (sig := [r for r in g if r.significant])),
                   key=lambda t: -t[2])
    chosen = leads | {(w, m) for w, m, _ in
                      extra[:max(0, limit - len(leads))]}
    return [(wa.workload.name, g[0].metric) for wa in workloads
            for g in wa.primary if (wa.workload.name, g[0].metric) in chosen]


def other_changes(workloads: list[WorkloadAnalysis], kernel: str,
                  shown: set[tuple[str, str]]) -> OtherChanges:
    """``kernel``'s significant changes outside the headline's rows."""
    verdicts = [r.verdict for wa in workloads for r in wa.rows
                if r.kernel == kernel and r.significant
                and (r.workload, r.metric) not in shown]
    return OtherChanges(kernel, verdicts.count("better"),
                        verdicts.count("worse"), verdicts.count("changed"))


def headline(workloads: list[WorkloadAnalysis], m: RunManifest
             ) -> Headline:
    shown = headline_metrics(workloads)
    rows = {(r.workload, r.metric, r.kernel): r
            for wa in workloads for r in wa.rows}
    return Headline(
        _entries(workloads, m.names),
        shlex.join(m.command) if m.command else "",
        [headline_row(rows[w, metric, k]) for w, metric in shown
         for k in m.names[1:] if (w, metric, k) in rows],
        [other_changes(workloads, k, set(shown)) for k in m.names[1:]],
        [wa.workload.name for wa in workloads if not wa.rows],
        reproduce.line(m), [n for n in map(partial(reproduce.kernel_note, m),
                                           m.names) if n],
        reproduce.same_kernel(m), m.names, [k.spec for k in m.kernels])


@dataclass
class Analysis:
    """A run analysed: its manifest, samples and every workload's rows."""

    m: RunManifest
    samples: list[Sample]
    workloads: list[WorkloadAnalysis]
    counts: dict[str, CountAnalysis]
    host_line: str = ""
    missing: list[str] = field(default_factory=list)   # unfinished boots
    headline: Headline = field(default_factory=lambda: Headline([], ""))

    @property
    def names(self) -> list[str]:
        return self.m.names


def analyse(out: Path, m: RunManifest, samples: list[Sample]) -> Analysis:
    """The run in ``out`` analysed from its manifest and samples."""
    names = m.names
    counts = analyse_counts(out, samples, names)
    workloads = []
    for name in m.workloads:
        w = WORKLOADS.get(name)
        if w is None:
            continue
        w = with_roots(w, tuple(m.extra_roots))
        rows = summarize_workload(w, samples, names)
        workloads.append(WorkloadAnalysis(
            w, rows, attribution_rows(w, samples, names)
            if m.attribution else [], caveat_lines(w, samples, rows, names),
            invalid_lines(w, samples, names), counts.get(name),
            boot_cost_line(name, samples)))
    missing = missing_boots(m, out) if (out / "raw").is_dir() else []
    return Analysis(m, samples, workloads, counts, host_line(out), missing,
                    headline(workloads, m))
