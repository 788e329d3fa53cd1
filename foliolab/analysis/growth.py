"""How a cost grows with a swept parameter (compare --sweep).

A sweep's points are workloads of their own (workloads/sweep.py); here
they are read together again: per swept workload and parameter, a table
with a row per point and a column per kernel (the mean of each metric the
sweep is about, Workload.growth_for), the ratio to the baseline at each
point, each kernel's growth exponent (the slope of log(cost) on
log(parameter), fitted to every valid sample, with its 95% interval), and
where a kernel's cost crosses the baseline's, if it does.

The exponent's interval is the least-squares slope's t interval: with
exact counts the samples of a point agree, so it says how far the points
are from one power law, not how noisy they are. Two points give a slope
and no interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import fmean

from scipy import stats as sps

from foliolab.boot.derive import Sample
from foliolab.workloads.model import Growth, Workload

# The interval of a fitted exponent.
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Exponent:
    """A kernel's fitted growth exponent over a sweep."""

    slope: float | None  # None: no fit (why says why)
    lo: float | None  # the interval; None: too few samples for one
    hi: float | None
    points: int  # distinct parameter values fitted
    samples: int  # samples fitted
    why: str = ""  # why there is no slope or no interval

    def as_json(self) -> dict[str, object]:
        return {
            "exponent": self.slope,
            "ci95": None if self.lo is None else [self.lo, self.hi],
            "points": self.points,
            "samples": self.samples,
            "note": self.why,
        }


@dataclass(frozen=True)
class GrowthPoint:
    """One point of a sweep: its parameter value and each kernel's mean."""

    value: float
    workload: str  # the point's name (its boots: raw/<name>/)
    means: dict[str, float | None]  # kernel -> mean (None: no samples)
    counts: dict[str, int]  # kernel -> valid samples with the metric
    # A table fitted against a measured quantity (Growth.against): each
    # kernel's mean of it at this point, over the samples that measured
    # it (a counting pass does); empty where none did.
    against: bool = False
    measured: dict[str, float] = field(default_factory=dict)

    @property
    def at(self) -> float:
        """The point on the fit's axis: the parameter's value, or the
        quantity measured (all kernels' mean; NaN: nothing measured it)."""
        if not self.against:
            return self.value
        return fmean(self.measured.values()) if self.measured else math.nan

    def measured_alike(self, within: float = 0.01) -> bool:
        """Every kernel measured the same quantity here, within a share."""
        v = list(self.measured.values())
        return not v or max(v) - min(v) <= within * max(abs(x) for x in v)

    def ratio(self, kernel: str, baseline: str) -> float | None:
        """``kernel``'s mean over the baseline's at this point."""
        a, b = self.means.get(kernel), self.means.get(baseline)
        if a is None or b is None or b == 0:
            return None
        return a / b


@dataclass(frozen=True)
class GrowthTable:
    """One metric of one swept workload against one parameter."""

    workload: str  # the workload swept
    param: str
    against: str  # the measured axis (Growth.against), "": the parameter
    fixed: tuple[tuple[str, str], ...]  # other swept parameters' values
    metric: str  # the metric's key
    label: str  # the metric as the table heads it (with its scaling)
    unit: str  # the metric's (before scaling)
    counted: bool  # an exact count (compare --count)
    better: str
    kernels: tuple[str, ...]  # baseline first
    points: tuple[GrowthPoint, ...]  # by parameter value
    exponents: dict[str, Exponent]
    crossings: dict[str, float | None]  # kernel -> value it crosses at

    @property
    def baseline(self) -> str:
        return self.kernels[0]

    @property
    def axis(self) -> str:
        """What the exponent is fitted against."""
        return self.against or self.param

    @property
    def unmeasured(self) -> bool:
        """Fitted against a measured quantity no sample measured."""
        return bool(self.against) and not any(p.measured for p in self.points)

    def as_json(self) -> dict[str, object]:
        return {
            "workload": self.workload,
            "param": self.param,
            "against": self.axis,
            "fixed": dict(self.fixed),
            "metric": self.metric,
            "label": self.label,
            "unit": self.unit,
            "counted": self.counted,
            "better": self.better,
            "kernels": list(self.kernels),
            "points": [
                {
                    "value": p.value,
                    "at": None if math.isnan(p.at) else p.at,
                    "measured": p.measured,
                    "workload": p.workload,
                    "means": p.means,
                    "n": p.counts,
                    "ratio": {
                        k: p.ratio(k, self.baseline) for k in self.kernels[1:]
                    },
                }
                for p in self.points
            ],
            "exponents": {k: e.as_json() for k, e in self.exponents.items()},
            "crossings": self.crossings,
        }


def fit_exponent(xs: list[float], ys: list[float]) -> Exponent:
    """The slope of log(y) on log(x) by least squares, with its t
    interval; points with y <= 0 have no logarithm and are left out (and
    said)."""
    pairs = [(x, y) for x, y in zip(xs, ys) if x > 0 and y > 0]
    dropped = len(xs) - len(pairs)
    note = f"{dropped} sample(s) at or below 0 left out" if dropped else ""
    distinct = len({x for x, _ in pairs})
    if distinct < 2:
        return Exponent(
            None,
            None,
            None,
            distinct,
            len(pairs),
            "; ".join(
                w for w in (note, "fewer than two parameter values") if w
            ),
        )
    lx = [math.log(x) for x, _ in pairs]
    ly = [math.log(y) for _, y in pairs]
    mx, my = fmean(lx), fmean(ly)
    sxx = sum((a - mx) ** 2 for a in lx)
    slope = sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sxx
    n = len(pairs)
    if n < 3:
        return Exponent(
            slope,
            None,
            None,
            distinct,
            n,
            "; ".join(p for p in (note, "two samples: no interval") if p),
        )
    intercept = my - slope * mx
    ssr = sum((b - intercept - slope * a) ** 2 for a, b in zip(lx, ly))
    se = math.sqrt(ssr / (n - 2) / sxx)
    t = float(sps.t.ppf(0.5 + CONFIDENCE / 2, n - 2))
    return Exponent(slope, slope - t * se, slope + t * se, distinct, n, note)


def crossing(
    points: tuple[GrowthPoint, ...], kernel: str, baseline: str
) -> float | None:
    """The value on the fit's axis where ``kernel``'s mean crosses the
    baseline's (its ratio passes 1 between two neighbouring points,
    interpolated on log axes); None if it never does."""
    prev: tuple[float, float] | None = None
    # in the axis' order (a measured quantity need not follow the
    # parameter); a point where nothing measured it is not on the axis
    for p in sorted((p for p in points if p.at > 0), key=lambda p: p.at):
        r = p.ratio(kernel, baseline)
        if r is None or r <= 0:
            prev = None
            continue
        here = (math.log(p.at), math.log(r))
        if prev is not None and prev[1] * here[1] < 0:
            (x0, y0), (x1, y1) = prev, here
            return math.exp(x0 + (x1 - x0) * (0 - y0) / (y1 - y0))
        prev = here
    return None


def _param_value(w: Workload, param: str) -> float:
    """The value point ``w`` swept ``param`` to (vCPUs too), as a number
    (NaN: not a number)."""
    try:
        return float(w.point_value(param) or "")
    except ValueError:
        return math.nan


def growth_tables(
    workloads: list[Workload],
    samples: list[Sample],
    kernels: list[str],
) -> list[GrowthTable]:
    """Every swept workload's growth tables, in the run's order: for each
    parameter swept and each setting of the others, each metric the
    sweep is about."""
    by_base: dict[str, list[Workload]] = {}
    for w in workloads:
        if w.sweep_of:
            by_base.setdefault(w.sweep_of, []).append(w)
    out: list[GrowthTable] = []
    for base, points in by_base.items():
        swept = list(dict.fromkeys(k for w in points for k, _ in w.point))
        for param in swept:
            groups: dict[tuple[tuple[str, str], ...], list[Workload]] = {}
            for w in points:
                fixed = tuple((k, v) for k, v in w.point if k != param)
                groups.setdefault(fixed, []).append(w)
            for fixed, group in groups.items():
                for g in group[0].growth_for(param):
                    t = _table(base, param, fixed, g, group, samples, kernels)
                    # a metric of another setting (dirty-tlb's threads
                    # report no stress-ng rate): no table; a table whose
                    # axis nothing measured stays, to say so
                    if t.unmeasured or any(
                        n for p in t.points for n in p.counts.values()
                    ):
                        out.append(t)
    return out


def _table(
    base: str,
    param: str,
    fixed: tuple[tuple[str, str], ...],
    g: Growth,
    group: list[Workload],
    samples: list[Sample],
    kernels: list[str],
) -> GrowthTable:
    try:
        metric = group[0].metric(g.metric)
        label, better, counted = metric.label, metric.better, metric.counted
        unit = metric.unit
    except KeyError:
        label, better, counted, unit = g.metric, "lower", False, ""
    label = g.label or label
    rows = []
    fits: dict[str, tuple[list[float], list[float]]] = {
        k: ([], []) for k in kernels
    }
    for w in group:
        x = _param_value(w, param)
        here = [s for s in samples if s.workload == w.name and s.valid]
        # each kernel's measured value here (a counting pass measures it);
        # a sample of that kernel that did not measure it (a timed pass)
        # is placed at it, and left out where that kernel measured nothing
        measured = (
            {
                k: fmean(xs)
                for k in kernels
                if (
                    xs := [
                        s.values[g.against]
                        for s in here
                        if s.variant == k and g.against in s.values
                    ]
                )
            }
            if g.against
            else {}
        )
        means: dict[str, float | None] = {}
        counts: dict[str, int] = {}
        for k in kernels:
            mine = [
                s
                for s in here
                if s.variant == k
                and g.metric in s.values
                and (not g.against or k in measured)
            ]
            values = [g.value(s.values[g.metric], x) for s in mine]
            xs = [
                s.values.get(g.against, measured[k]) if g.against else x
                for s in mine
            ]
            means[k] = fmean(values) if values else None
            counts[k] = len(values)
            fits[k][0].extend(xs)
            fits[k][1].extend(values)
        rows.append(
            GrowthPoint(x, w.name, means, counts, bool(g.against), measured)
        )
    rows.sort(key=lambda p: p.value)
    points = tuple(rows)
    unmeasured = Exponent(
        None,
        None,
        None,
        0,
        0,
        f"no sample measured {g.against} (a counting pass does: "
        "compare --count)",
    )
    return GrowthTable(
        base,
        param,
        g.against,
        fixed,
        g.metric,
        label,
        unit,
        counted,
        better,
        tuple(kernels),
        points,
        {
            k: (
                unmeasured
                if g.against and not any(p.measured for p in points)
                else fit_exponent(*fits[k])
            )
            for k in kernels
        },
        {k: crossing(points, k, kernels[0]) for k in kernels[1:]},
    )
