"""The plots of a run: every valid sample per kernel and metric, and the
differential profile's bars."""

from __future__ import annotations

from pathlib import Path

from foliolab import stats
from foliolab.analyse import CountAnalysis
from foliolab.derive import Sample
from foliolab.manifest import VARIANTS
from foliolab.workloads import Metric, Workload


def plot_profile(w: Workload, a: CountAnalysis, path: Path) -> bool:
    """Horizontal bars: patched minus vanilla self instructions per window
    for the profile's functions (negative = the series saves work)."""
    if not a.profile:
        return False
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def plot_workload(w: Workload, samples: list[Sample], path: Path,
                  names: list[str] | None = None) -> bool:
    """One panel per metric: every valid sample, per kernel, with the mean."""
    names = list(names or VARIANTS)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics: list[Metric] = [m for m in w.metrics if any(
        m.key in s.values for s in samples if s.workload == w.name)]
    if not metrics:
        return False
    width = 3 + 0.6 * max(0, len(names) - 2)
    fig, axes = plt.subplots(1, len(metrics),
                             figsize=(width * len(metrics), 3.2),
                             squeeze=False)
    for ax, m in zip(axes[0], metrics):
        for i, variant in enumerate(names):
            vals = [s.values[m.key] for s in samples
                    if s.workload == w.name and s.variant == variant
                    and s.valid and m.key in s.values]
            bad = [s.values[m.key] for s in samples
                   if s.workload == w.name and s.variant == variant
                   and not s.valid and m.key in s.values]
            xs = [i + 0.08 * ((j % 5) - 2) for j in range(len(vals))]
            ax.scatter(xs, vals, s=14, alpha=0.7)
            if bad:
                ax.scatter([i] * len(bad), bad, marker="x", c="red", s=14)
            if vals:
                ax.hlines(stats.mean(vals, m.is_rate), i - 0.3, i + 0.3,
                          colors="black")
        ax.set_xticks(range(len(names)), names,
                      fontsize=7 if len(names) > 3 else None)
        ax.set_title(f"{m.key}\n({m.unit}, {m.better} is better)",
                     fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle(w.title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True
