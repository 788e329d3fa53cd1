"""The plots of a run, as PNG bytes (render/report.py writes them to
plots/ and report.html carries them inline).

One overview (a forest plot: every workload's primary metrics, each
kernel's ratio to the baseline with its 95% CI, a line at 1.0, on a log
axis so that a ratio of 0.001 and one of 0.9 both have their place), per
workload two panels for each primary or significant metric: its ratio
(samples over the baseline's mean, so a panel's scale is the change
itself) and its absolute values per kernel, in the metric's unit; and the
differential profile's bars. A panel is drawn only when it has something
to show: a metric zero in every sample, or a ratio with a baseline of 0,
gets a line of text instead (figure_notes, forest_notes), and constant
metrics none (the tables list them). A row without a CI (n < 3) or with no
spread (exact) is drawn as a point without whiskers, marked so.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from foliolab.analysis.analyse import Analysis
from foliolab.analysis.countanalysis import CountAnalysis
from foliolab.analysis.growth import GrowthTable
from foliolab.analysis.workloadstats import StatRow, WorkloadAnalysis
from foliolab.boot.derive import Sample
from foliolab.render import fmt
from foliolab.render.plotparts import (
    colour,
    drawn_ratio,
    kernel_colour,
    log_axis,
    log_limits,
    marker,
    png,
    pyplot,
    ratio_limits,
    ratio_text,
    short_label,
    wants_log,
    whiskers,
)
from foliolab.workloads.model import Workload

# Metrics per row of a workload's figure (each a ratio and an absolute
# panel).
METRICS_PER_ROW = 2


def _no_ratio(r: StatRow) -> str:
    """Why a row has no place on the overview's log axis, or ""."""
    if r.base.n == 0 or r.other.n == 0:
        return "no valid sample in one kernel"
    if r.base.mean == 0 and r.other.mean == 0:
        return "0 in both kernels"
    if r.base.mean == 0:
        return (
            f"from 0 to {fmt(r.other.mean)} {r.unit}: a change from 0 "
            "has no ratio"
        )
    if r.other.mean == 0:
        return (
            f"to 0 from {fmt(r.base.mean)} {r.unit}: a ratio of 0 has "
            "no place on a log axis"
        )
    if not math.isfinite(r.ratio) or r.ratio <= 0:
        return "no ratio"
    return ""


def overview_rows(a: Analysis) -> list[StatRow]:
    """The rows the overview draws: every primary metric with a ratio."""
    return [
        r
        for wa in a.workloads
        for r in wa.rows
        if r.primary and not _no_ratio(r)
    ]


def forest_notes(a: Analysis) -> list[str]:
    """The primary rows the overview cannot draw, each with why."""
    return [
        f"{r.workload} {r.kernel}: {r.metric}: {_no_ratio(r)}"
        for wa in a.workloads
        for r in wa.rows
        if r.primary and _no_ratio(r)
    ]


def forest(a: Analysis) -> bytes | None:
    """The overview as PNG (draw_forest), or None when no row has a
    ratio."""
    fig = draw_forest(a)
    return png(fig) if fig is not None else None


def draw_forest(a: Analysis) -> Any:
    """Every workload x kernel x primary metric: ratio to the baseline
    with its 95% CI, a vertical line at 1.0, on a log axis; the
    matplotlib figure."""
    rows = overview_rows(a)
    if not rows:
        return None
    values = [
        v
        for r in rows
        for v in (drawn_ratio(r) if r.ci_known else [drawn_ratio(r)[0]])
    ]
    lo, hi = log_limits(values)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(rows) + 1.5))
    for y, r in enumerate(reversed(rows)):
        m, word = marker(r)
        ratio, ci_low, ci_high = drawn_ratio(r)
        if r.ci_known and all(math.isfinite(v) for v in (ci_low, ci_high)):
            ax.errorbar(
                ratio,
                y,
                xerr=whiskers(r, lo),
                fmt=m,
                color=colour(r),
                capsize=3,
            )
        else:
            ax.plot(
                ratio,
                y,
                m,
                color=colour(r),
                fillstyle="full" if r.exact else "none",
            )
        note = f"  {word}" if word else ""
        ax.annotate(
            f"{ratio_text(ratio)}{note}",
            (1.0, y),
            xycoords=("axes fraction", "data"),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=7,
        )
    ax.set_yticks(
        range(len(rows)),
        [f"{r.workload} {r.kernel}: {r.metric}" for r in reversed(rows)],
        fontsize=7,
    )
    ax.axvline(1.0, color="black", linewidth=0.8)
    log_axis(ax, "x", lo, hi)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel(
        f"ratio to the baseline {a.names[0]}, log scale, with "
        "its 95% CI\ngreen better, red worse, blue changed (no "
        "better direction), gray not significant",
        fontsize=8,
    )
    ax.tick_params(axis="x", labelsize=7)
    ax.set_title(
        "Every workload's primary metrics against the baseline", fontsize=9
    )
    fig.tight_layout()
    return fig


def plotted(wa: WorkloadAnalysis) -> list[list[StatRow]]:
    """The metric groups a workload's figure is about: primary and
    significant ones, never a constant one."""
    out = []
    for group in wa.primary + wa.secondary:
        if all(r.exact and not r.significant for r in group):
            continue
        if group[0].primary or any(r.significant for r in group):
            out.append(group)
    return out


def _values(
    samples: list[Sample], workload: str, metric: str, kernel: str
) -> list[float]:
    return [
        float(s.values[metric])
        for s in samples
        if s.workload == workload
        and s.variant == kernel
        and s.valid
        and metric in s.values
    ]


def _plan(
    wa: WorkloadAnalysis, samples: list[Sample], names: list[str]
) -> tuple[list[tuple[list[StatRow], bool]], list[str]]:
    """(group, has a ratio panel) for each metric the figure draws, and a
    line for each it leaves out or draws in part, saying why."""
    drawn, notes = [], []
    base = names[0]
    for group in plotted(wa):
        first = group[0]
        vals = [
            v
            for k in names
            for v in _values(samples, wa.workload.name, first.metric, k)
        ]
        if not vals:
            notes.append(f"{first.metric}: no valid sample to draw")
            continue
        if all(v == 0 for v in vals):
            notes.append(f"{first.metric}: 0 in every sample, not drawn")
            continue
        mean = first.base.mean
        ratio = first.base.n > 0 and math.isfinite(mean) and mean != 0
        if not ratio:
            why = (
                "has no valid sample of it"
                if first.base.n == 0
                else "has a mean of 0 (a change from 0 has no ratio)"
            )
            notes.append(
                f"{first.metric}: no ratio panel, the baseline "
                f"{base} {why}; its values per kernel are drawn"
            )
        drawn.append((group, ratio))
    return drawn, notes


def figure_notes(
    wa: WorkloadAnalysis, samples: list[Sample], names: list[str]
) -> list[str]:
    """What the workload's figure leaves out, one line each, with why."""
    return _plan(wa, samples, names)[1]


def _jitter(i: int, n: int) -> list[float]:
    return [i + 0.06 * ((j % 5) - 2) for j in range(n)]


def _ratio_panel(
    ax: Any, group: list[StatRow], samples: list[Sample], names: list[str]
) -> None:
    """Each kernel's samples over the baseline's mean, and its ratio with
    the 95% CI; a line at 1.0."""
    first = group[0]
    base = first.base.mean
    per = {
        k: [
            v / base for v in _values(samples, first.workload, first.metric, k)
        ]
        for k in names
    }
    rows = {r.kernel: r for r in group}
    values = [v for vs in per.values() for v in vs] + [
        v
        for r in group
        for v in (drawn_ratio(r) if r.ci_known else [drawn_ratio(r)[0]])
    ]
    log = wants_log(values)
    lo, hi = log_limits(values) if log else ratio_limits(values)
    for i, name in enumerate(names):
        vals = per[name]
        ax.scatter(
            _jitter(i, len(vals)),
            vals,
            s=10,
            alpha=0.5,
            color=kernel_colour(i),
        )
        row = rows.get(name)
        if row is None or not math.isfinite(drawn_ratio(row)[0]):
            continue
        m, _ = marker(row)
        ratio, ci_low, ci_high = drawn_ratio(row)
        if row.ci_known and all(math.isfinite(v) for v in (ci_low, ci_high)):
            ax.errorbar(
                i + 0.25,
                ratio,
                yerr=whiskers(row, lo if log else -math.inf),
                fmt=m,
                color=colour(row),
                capsize=3,
            )
        else:
            ax.plot(
                i + 0.25,
                ratio,
                m,
                color=colour(row),
                fillstyle="full" if row.exact else "none",
            )
    ax.axhline(1.0, color="black", linewidth=0.8)
    if log:
        log_axis(ax, "y", lo, hi)
    else:
        ax.set_ylim(lo, hi)
    ax.set_xlim(-0.5, len(names) - 0.5)
    ax.set_xticks(range(len(names)), names, fontsize=7)
    better = (
        f"{first.better} is better"
        if first.directed
        else "no better direction"
    )
    ax.set_title(
        f"{first.metric}: ratio\n({better}; / {names[0]}'s mean"
        f"{', log' if log else ''})",
        fontsize=8,
    )
    ax.tick_params(labelsize=7)


def _absolute_panel(
    ax: Any, group: list[StatRow], samples: list[Sample], names: list[str]
) -> None:
    """Each kernel's samples in the metric's unit, with mean ± sd."""
    first = group[0]
    per = {k: _values(samples, first.workload, first.metric, k) for k in names}
    values = [v for vs in per.values() for v in vs]
    log = wants_log(values)
    tops = list(values)
    for i, name in enumerate(names):
        vals = per[name]
        ax.scatter(
            _jitter(i, len(vals)),
            vals,
            s=10,
            alpha=0.5,
            color=kernel_colour(i),
        )
        if vals:
            sd = float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0
            mean = float(np.mean(vals))
            low = min(sd, 0.9 * mean) if log else sd  # above 0 on log
            ax.errorbar(
                i + 0.25,
                mean,
                yerr=[[low], [sd]],
                fmt="_",
                color=kernel_colour(i),
                capsize=3,
                markersize=10,
            )
            tops.append(mean + sd)
    if log:
        log_axis(ax, "y", *log_limits(values, around_one=False))
    else:
        from matplotlib import ticker

        lo, hi = min(values), max(tops)
        if lo >= 0:
            ax.set_ylim(0, hi * 1.08 or 1)
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(short_label))
    ax.set_xlim(-0.5, len(names) - 0.5)
    ax.set_xticks(range(len(names)), names, fontsize=7)
    ax.set_title(
        f"{first.metric}: values\n({first.unit}; samples, mean ± "
        f"sd{', log' if log else ''})",
        fontsize=8,
    )
    ax.tick_params(labelsize=7)


def workload_figure(
    wa: WorkloadAnalysis, samples: list[Sample], names: list[str]
) -> bytes | None:
    """The workload's figure as PNG (draw_workload), or None when no
    metric has anything to draw (figure_notes says why)."""
    fig = draw_workload(wa, samples, names)
    return png(fig) if fig is not None else None


def draw_workload(
    wa: WorkloadAnalysis, samples: list[Sample], names: list[str]
) -> Any:
    """For each primary or significant metric, its ratio panel (samples
    over the baseline's mean, each kernel's ratio with its 95% CI) and
    beside it its absolute values per kernel; the matplotlib figure, no
    panel without data."""
    drawn, _ = _plan(wa, samples, names)
    if not drawn:
        return None
    plt = pyplot()
    per_row = min(METRICS_PER_ROW, len(drawn))
    cols = 2 * per_row
    nrows = -(-len(drawn) // per_row)
    fig, axes = plt.subplots(
        nrows, cols, figsize=(3.2 * cols, 2.9 * nrows + 0.7), squeeze=False
    )
    used = set()
    for i, (group, ratio) in enumerate(drawn):
        row, col = divmod(i, per_row)
        slots = axes[row][2 * col], axes[row][2 * col + 1]
        if ratio:
            _ratio_panel(slots[0], group, samples, names)
            _absolute_panel(slots[1], group, samples, names)
            used |= {id(slots[0]), id(slots[1])}
        else:
            _absolute_panel(slots[0], group, samples, names)
            used.add(id(slots[0]))
    for ax in axes.flat:
        if id(ax) not in used:
            ax.set_visible(False)
    fig.suptitle(
        f"{wa.workload.name}: {wa.workload.title}\n(ratio: dots "
        "samples, marker the ratio with its 95% CI, hollow = no CI,"
        " diamond = exact; values: dots samples, bar mean ± sd)",
        fontsize=8,
    )
    fig.tight_layout()
    return fig


def profile_figure(w: Workload, a: CountAnalysis) -> bytes | None:
    """Horizontal bars: the last kernel minus the baseline, self
    instructions per window for the profile's functions (negative = the
    kernel saves work)."""
    if not a.profile:
        return None
    plt = pyplot()
    base, other = a.names[0], a.names[-1]
    rows = a.profile[::-1]
    deltas = [r.delta(base, other) for r in rows]
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(rows) + 1.2))
    ax.barh(
        range(len(rows)),
        deltas,
        color=["tab:green" if d < 0 else "tab:red" for d in deltas],
    )
    ax.set_yticks(
        range(len(rows)),
        [("~" if r.nondeterministic else "") + r.function for r in rows],
        fontsize=7,
    )
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel(
        f"{other} - {base}, kernel instructions per window (self, exact)",
        fontsize=8,
    )
    ax.tick_params(axis="x", labelsize=7)
    ax.set_title(f"{w.name}: where the kernels' work differs", fontsize=9)
    fig.tight_layout()
    return png(fig)


def growth_figure(t: GrowthTable) -> bytes | None:
    """A growth table on log-log axes: each kernel's mean per point (a
    marker, joined), and its fitted power law (dashed) with the exponent
    in the legend. None when no kernel has two points above 0."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    drawn = 0
    for i, k in enumerate(t.kernels):
        pts = sorted(
            (p.at, m)
            for p in t.points
            if (m := p.means.get(k)) is not None and m > 0 and p.at > 0
        )
        if len(pts) < 2:
            continue
        drawn += 1
        xs, ys = zip(*pts)
        e = t.exponents[k]
        label = k if e.slope is None else f"{k}: exponent {e.slope:.2f}"
        ax.plot(xs, ys, "o-", color=kernel_colour(i), label=label)
        if e.slope is not None:
            # the fitted line through the points' geometric centre
            lx = np.log(np.array(xs, dtype=float))
            ly = np.log(np.array(ys, dtype=float))
            c = float(ly.mean() - e.slope * lx.mean())
            ax.plot(
                xs,
                np.exp(c + e.slope * lx),
                "--",
                color=kernel_colour(i),
                linewidth=0.8,
            )
    if not drawn:
        pyplot().close(fig)
        return None
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks([p.at for p in t.points if p.at > 0])
    ax.xaxis.set_minor_formatter("")
    # a parameter's values as given (1024, not 1.02K), but 60K VMAs short
    ax.xaxis.set_major_formatter(
        lambda v, _pos: (
            short_label(v)
            if v >= 10000
            else f"{v:.4g}"
            if t.against
            else f"{v:g}"
        )
    )
    # a log axis spanning less than a decade has no major label: the
    # minor ones say where the values are
    ax.yaxis.set_major_formatter(short_label)
    ax.yaxis.set_minor_formatter(short_label)
    ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.set_xlabel(t.axis if not t.against else f"{t.against} (measured)")
    ax.set_ylabel(t.label, fontsize=8)
    ax.set_title(f"{t.workload}: growth with {t.axis}", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return png(fig)
