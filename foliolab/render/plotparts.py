"""What every plot of a run is drawn with: matplotlib, loaded headless
on first use; a figure as PNG bytes; the kernels' and the verdicts'
colours; ratio and log axes (their limits and plain-number labels); and
how a table row's ratio is marked, with the CI that decides it."""

from __future__ import annotations

import io
import math
from types import ModuleType
from typing import Any

from foliolab.analysis.workloadstats import StatRow

# The least a ratio axis shows either side of 1.0: an A/A run's scatter
# of a few parts in a thousand must not fill a panel as if it mattered.
MIN_SPAN = 0.05
# A workload's ratio or absolute axis turns logarithmic when its values
# (all above 0) span more than this factor: a cut to 1/1000 must not sit
# on the axis' 0 beside a baseline at 1.
LOG_SPAN = 20
# Each kernel's samples, in colours the verdicts (green, red, blue, gray)
# do not use.
KERNEL_COLOURS = (
    "tab:cyan",
    "tab:orange",
    "tab:purple",
    "tab:brown",
    "tab:pink",
    "tab:olive",
)


def kernel_colour(i: int) -> str:
    """The colour of the ``i``-th kernel in a run's order."""
    return KERNEL_COLOURS[i % len(KERNEL_COLOURS)]


def pyplot() -> ModuleType:
    """matplotlib's pyplot on the Agg backend (no display), imported when
    a plot is first drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def png(fig: Any) -> bytes:
    """The figure as PNG bytes; the figure is closed."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    pyplot().close(fig)
    return buf.getvalue()


def colour(r: StatRow) -> str:
    """A row's verdict as a colour: better, worse, changed, or not
    significant."""
    if not r.significant:
        return "tab:gray"
    if not r.directed:
        return "tab:blue"  # a change, neither better nor worse
    return "tab:green" if r.improved else "tab:red"


def _finite(values: list[float]) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v)]


def ratio_limits(values: list[float]) -> tuple[float, float]:
    finite = _finite(values)
    lo = min(finite + [1 - MIN_SPAN])
    hi = max(finite + [1 + MIN_SPAN])
    pad = 0.05 * (hi - lo)
    return lo - pad, hi + pad


def log_limits(
    values: list[float], around_one: bool = True
) -> tuple[float, float]:
    """A log axis' limits: every value above 0, and (for a ratio) never
    narrower than 1/1.05-1.05."""
    pos = [v for v in _finite(values) if v > 0] or [1.0]
    lo, hi = min(pos), max(pos)
    if around_one:
        lo, hi = min(lo, 1 / (1 + MIN_SPAN)), max(hi, 1 + MIN_SPAN)
    pad = max(hi / lo, 1.01) ** 0.05
    return lo / pad, hi * pad


def wants_log(values: list[float]) -> bool:
    """All above 0 and spanning more than LOG_SPAN."""
    finite = _finite(values)
    return (
        bool(finite)
        and min(finite) > 0
        and max(finite) / min(finite) > LOG_SPAN
    )


def short_label(v: float, _pos: object = None) -> str:
    """An axis label: 0.002, 0.5, 12, 1.38K, 522M."""
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(v) >= div:
            return f"{v / div:.3g}{suffix}"
    return f"{v:.3g}"


def log_axis(ax: Any, axis: str, lo: float, hi: float) -> None:
    """Log scale on ``axis`` ("x" or "y") from lo to hi, labelled in plain
    numbers (0.001, 0.01, 0.1, 1), never 10^-3."""
    from matplotlib import ticker

    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    (ax.set_xlim if axis == "x" else ax.set_ylim)(lo, hi)
    a = ax.xaxis if axis == "x" else ax.yaxis
    if hi / lo < 10:  # less than a decade: evenly spaced labels
        a.set_major_locator(ticker.MaxNLocator(5))
    else:
        a.set_major_locator(
            ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=12)
        )
    a.set_major_formatter(ticker.FuncFormatter(short_label))
    a.set_minor_formatter(ticker.NullFormatter())


def ratio_text(x: float) -> str:
    """A ratio as the overview labels it: 0.853, 0.062, 0.0015."""
    return f"{x:.3f}" if x >= 0.1 else f"{x:.3g}"


def marker(r: StatRow) -> tuple[str, str]:
    """Marker and its legend word: exact rows a diamond, rows without a
    CI a hollow circle."""
    if r.exact:
        return "D", "exact"
    if not r.ci_known:
        return "o", "no CI (n<3)"
    return "o", ""


def drawn_ratio(r: StatRow) -> tuple[float, float, float]:
    """The ratio and CI a plot draws: the ones that decide the row's
    verdict (paired or plain), as the tables show and the colour says."""
    low, high = r.decisive_ci
    return r.decisive_ratio, low, high


def whiskers(r: StatRow, floor: float) -> list[list[float]]:
    """The deciding CI as errorbar's distances from its ratio; on a log
    axis a CI's low end at or below 0 is drawn to the axis' floor."""
    ratio, ci_low, ci_high = drawn_ratio(r)
    low = ci_low if ci_low > floor else floor
    return [[max(ratio - low, 0.0)], [max(ci_high - ratio, 0.0)]]
