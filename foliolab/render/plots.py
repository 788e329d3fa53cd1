"""The plots of a run, as PNG bytes (report.py writes them to plots/ and
report.html carries them inline).

One overview (a forest plot: every workload's primary metrics, each
kernel's ratio to the baseline with its 95% CI, a line at 1.0), per
workload panels only for the primary and the significant metrics on a
ratio axis (samples over the baseline's mean, so a panel's scale is the
change itself), and the differential profile's bars. Constant metrics
get no panel (the tables list them); a row without a CI (n < 3) or with
no spread (exact) is drawn as a point without whiskers, marked so.
"""

from __future__ import annotations

import io
import math

from foliolab.analyse import Analysis, CountAnalysis, StatRow, \
    WorkloadAnalysis
from foliolab.derive import Sample
from foliolab.workloads import Workload

# The least a ratio axis shows either side of 1.0: an A/A run's scatter
# of a few parts in a thousand must not fill a panel as if it mattered.
MIN_SPAN = 0.05
COLUMNS = 3


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    _plt().close(fig)
    return buf.getvalue()


def colour(r: StatRow) -> str:
    if not r.significant:
        return "tab:gray"
    if not r.directed:
        return "tab:blue"           # a change, neither better nor worse
    return "tab:green" if r.improved else "tab:red"


def _ratio_limits(values: list[float]) -> tuple[float, float]:
    finite = [v for v in values if v == v and abs(v) != float("inf")]
    lo = min(finite + [1 - MIN_SPAN])
    hi = max(finite + [1 + MIN_SPAN])
    pad = 0.05 * (hi - lo)
    return lo - pad, hi + pad


def _marker(r: StatRow) -> tuple[str, str]:
    """Marker and its legend word: exact rows a diamond, rows without a
    CI a hollow circle."""
    if r.exact:
        return "D", "exact"
    if not r.ci_known:
        return "o", "no CI (n<3)"
    return "o", ""


def forest(a: Analysis) -> bytes | None:
    """Every workload x kernel x primary metric: ratio to the baseline
    with its 95% CI, a vertical line at 1.0."""
    rows = [r for wa in a.workloads for r in wa.rows
            if r.primary and math.isfinite(r.ratio)]
    if not rows:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(rows) + 1.4))
    values = []
    for y, r in enumerate(reversed(rows)):
        m, word = _marker(r)
        if r.ci_known:
            ax.errorbar(r.ratio, y, xerr=[[r.ratio - r.ci_low],
                                          [r.ci_high - r.ratio]],
                        fmt=m, color=colour(r), capsize=3)
            values += [r.ci_low, r.ci_high]
        else:
            ax.plot(r.ratio, y, m, color=colour(r),
                    fillstyle="full" if r.exact else "none")
        values.append(r.ratio)
        note = f"  {word}" if word else ""
        ax.annotate(f"{r.ratio:.3f}{note}", (1.0, y), xycoords=(
            "axes fraction", "data"), xytext=(4, 0),
            textcoords="offset points", va="center", fontsize=7)
    ax.set_yticks(range(len(rows)), [f"{r.workload} {r.kernel}: {r.metric}"
                                     for r in reversed(rows)], fontsize=7)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlim(*_ratio_limits(values))
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel(f"ratio to the baseline {a.names[0]} (95% CI; green "
                  "better, red worse, blue changed with no better "
                  "direction, gray not significant)", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_title("Every workload's primary metrics against the baseline",
                 fontsize=9)
    fig.tight_layout()
    return png(fig)


def plotted(wa: WorkloadAnalysis) -> list[list[StatRow]]:
    """The metric groups a workload's figure has a panel for: primary and
    significant ones, never a constant one."""
    out = []
    for group in wa.primary + wa.secondary:
        if all(r.exact and not r.significant for r in group):
            continue
        if group[0].primary or any(r.significant for r in group):
            out.append(group)
    return out


def _panel(ax, group: list[StatRow], samples: list[Sample],
           names: list[str]) -> None:
    first = group[0]
    base = first.base.mean
    values = []
    for i, name in enumerate(names):
        vals = [s.values[first.metric] / base for s in samples
                if s.workload == first.workload and s.variant == name
                and s.valid and first.metric in s.values] if base else []
        xs = [i + 0.06 * ((j % 5) - 2) for j in range(len(vals))]
        ax.scatter(xs, vals, s=10, alpha=0.5, color="tab:blue")
        values += vals
        row = next((r for r in group if r.kernel == name), None)
        if row is None:
            continue
        m, _ = _marker(row)
        if row.ci_known:
            ax.errorbar(i + 0.25, row.ratio, yerr=[[row.ratio - row.ci_low],
                                                   [row.ci_high - row.ratio]],
                        fmt=m, color=colour(row), capsize=3)
            values += [row.ci_low, row.ci_high]
        else:
            ax.plot(i + 0.25, row.ratio, m, color=colour(row),
                    fillstyle="full" if row.exact else "none")
    ax.axhline(1.0, color="black", linewidth=0.8)
    lo, hi = _ratio_limits(values)
    ax.set_ylim(lo, hi)
    ax.set_xticks(range(len(names)), names, fontsize=7)
    better = (f"{first.better} is better" if first.directed
              else "no better direction")
    ax.set_title(f"{first.metric}\n({first.unit}, {better}; / baseline "
                 "mean)", fontsize=8)
    ax.tick_params(labelsize=7)


def workload_figure(wa: WorkloadAnalysis, samples: list[Sample],
                    names: list[str]) -> bytes | None:
    """Panels for the primary and significant metrics: samples over the
    baseline's mean, each kernel's ratio with its 95% CI."""
    groups = plotted(wa)
    if not groups or not any(g[0].base.mean for g in groups):
        return None
    plt = _plt()
    cols = min(COLUMNS, len(groups))
    nrows = -(-len(groups) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(3.4 * cols,
                                                   2.9 * nrows + 0.5),
                             squeeze=False)
    for ax, group in zip(axes.flat, groups):
        _panel(ax, group, samples, names)
    for ax in list(axes.flat)[len(groups):]:
        ax.axis("off")
    fig.suptitle(f"{wa.workload.name}: {wa.workload.title}\n(dots: samples;"
                 " marker: ratio with 95% CI; hollow = no CI, diamond = "
                 "exact)", fontsize=8)
    fig.tight_layout()
    return png(fig)


def profile_figure(w: Workload, a: CountAnalysis) -> bytes | None:
    """Horizontal bars: the last kernel minus the baseline, self
    instructions per window for the profile's functions (negative = the
    kernel saves work)."""
    if not a.profile:
        return None
    plt = _plt()
    base, other = a.names[0], a.names[-1]
    rows = a.profile[::-1]
    deltas = [r.delta(base, other) for r in rows]
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(rows) + 1.2))
    ax.barh(range(len(rows)), deltas,
            color=["tab:green" if d < 0 else "tab:red" for d in deltas])
    ax.set_yticks(range(len(rows)),
                  [("~" if r.nondeterministic else "") + r.function
                   for r in rows], fontsize=7)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel(f"{other} - {base}, kernel instructions per window "
                  "(self, exact)", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_title(f"{w.name}: where the kernels' work differs", fontsize=9)
    fig.tight_layout()
    return png(fig)
