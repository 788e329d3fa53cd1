"""A sweep's growth tables (analysis/growth.py) as the reports show them:
per table, a row per point with each kernel's mean and its ratio to the
baseline, then each kernel's growth exponent with its interval and where
a kernel crosses the baseline; the same Table in text, markdown and HTML,
and a log-log plot per table (render/plots.py draws it)."""

from __future__ import annotations

from foliolab.analysis.growth import Exponent, GrowthPoint, GrowthTable
from foliolab.render import Column, Table, fmt, fmt_ratio, wrap_prose

# What every growth section opens with, so the exponent is read right.
INTRO = (
    "Each point is a workload of its own (WORKLOAD@PARAM=VALUE, its "
    "section below); a row per point: each kernel's mean, its ratio to "
    "the baseline. Growth exponent: the slope of log(cost) on "
    "log(parameter) over every valid sample, with its 95% interval "
    "(0 = flat, 1 = linear); with exact counts the interval says how far "
    "the points are from one power law. Times are times under the "
    "run's accelerator (see guest:)."
)


# Units that are a time or a rate: under TCG, a time under TCG.
TIMES = ("ms", "s", "us", "ns")


def kind(t: GrowthTable) -> str:
    """What the table's figures are: an exact count, a time (under the
    run's accelerator), a rate, or a tally in the metric's unit."""
    if t.counted:
        return "exact count"
    if t.unit in TIMES:
        return f"time, {t.unit}"
    if t.unit.endswith("/s"):
        return f"rate, {t.unit}"
    return t.unit or "value"


# A mail has no sections below and no guest line to point to.
MAIL_INTRO = (
    "How the cost grows: each point ran as a workload of its own; a row "
    "per point gives each kernel's mean and its ratio to the baseline. "
    "Growth exponent: the slope of log(cost) on log(parameter) over every "
    "valid sample, with its 95% interval (0 = flat, 1 = linear)."
)


def heading(t: GrowthTable) -> str:
    """``pageout by folio_kb: try_to_unmap() instructions per page (exact
    count; lower is better)``."""
    at = ", ".join(f"{k}={v}" for k, v in t.fixed)
    better = (
        f"; {t.better} is better" if t.better in ("lower", "higher") else ""
    )
    against = f", against {t.against} as measured" if t.against else ""
    return (
        f"{t.workload} by {t.param}{f' at {at}' if at else ''}{against}: "
        f"{t.label} ({kind(t)}{better})"
    )


def table(t: GrowthTable) -> Table:
    """A row per point: the parameter, each kernel's mean, each other
    kernel's ratio to the baseline."""
    others = t.kernels[1:]
    # the measured axis: one column, or one per kernel where the kernels
    # measured different values at some point
    apart = bool(t.against) and not all(p.measured_alike() for p in t.points)
    if apart:
        axis = [f"{t.against}[{k}]" for k in t.kernels]
    else:
        axis = [t.against] if t.against else []

    def axis_cells(p: GrowthPoint) -> list[str]:
        if apart:
            return [fmt(p.measured.get(k)) for k in t.kernels]
        return [fmt(p.at)] if t.against else []  # fmt: NaN -> "-"

    out = Table(
        [Column(t.param, 10)]
        + [Column(a, 10) for a in axis]
        + [Column(k, 13) for k in t.kernels]
        + [Column(f"{k}/{t.baseline}", 11) for k in others]
    )
    for p in t.points:
        out.add(
            fmt(p.value),
            *axis_cells(p),
            *(fmt(p.means.get(k)) for k in t.kernels),
            *(fmt_ratio(p.ratio(k, t.baseline)) for k in others),
        )
    return out


def exponent_text(e: Exponent) -> str:
    """``-0.71 [-0.74, -0.68] (6 values, 12 samples)``, or why none."""
    if e.slope is None:
        return f"none ({e.why})"
    interval = (
        f" [{e.lo:.3f}, {e.hi:.3f}]"
        if e.lo is not None and e.hi is not None
        else ""
    )
    note = f"; {e.why}" if e.why else ""
    return (
        f"{e.slope:.3f}{interval} ({e.points} values, {e.samples} "
        f"samples{note})"
    )


def crossing_text(t: GrowthTable, kernel: str) -> str:
    x = t.crossings.get(kernel)
    ats = sorted(p.at for p in t.points if p.at > 0)
    if not ats:
        return f"{kernel}: no point on the {t.axis} axis"
    lo, hi = fmt(ats[0]), fmt(ats[-1])
    if x is None:
        return (
            f"{kernel} does not cross {t.baseline} between {t.axis} "
            f"{lo} and {hi}"
        )
    return f"{kernel} crosses {t.baseline} at {t.axis} ~ {fmt(x)}"


def summary_lines(t: GrowthTable) -> list[str]:
    """The exponents and crossings under a table."""
    width = max(len(k) for k in t.kernels)
    return [
        "growth exponent (95% interval):",
        *(
            f"  {k:<{width}}  {exponent_text(t.exponents[k])}"
            for k in t.kernels
        ),
        *(
            crossing_text(t, k)
            for k in t.kernels[1:]
            if sum(p.ratio(k, t.baseline) is not None for p in t.points) > 1
        ),
    ]


def short_exponent(e: Exponent) -> str:
    if e.slope is None:
        return "none"
    if e.lo is None or e.hi is None:
        return f"{e.slope:.2f}"
    return f"{e.slope:.2f} [{e.lo:.2f}, {e.hi:.2f}]"


def headline_lines(tables: list[GrowthTable]) -> list[str]:
    """The exponents alone, a line per table, for the headline (what a
    run prints at its end): the tables are further down."""
    if not tables:
        return []
    return [
        "",
        "Growth exponents (slope of log(cost) on log(parameter), 95% "
        "interval; tables under == Growth):",
        *(
            f"  {t.workload} by {t.param}, {t.label}: "
            + "; ".join(
                f"{k} {short_exponent(t.exponents[k])}" for k in t.kernels
            )
            for t in tables
        ),
    ]


def text_lines(tables: list[GrowthTable]) -> list[str]:
    if not tables:
        return []
    out = ["== Growth with the swept parameters (compare --sweep)", INTRO, ""]
    for t in tables:
        out += [heading(t), *table(t).text(), *summary_lines(t), ""]
    return out


def markdown_lines(tables: list[GrowthTable]) -> list[str]:
    if not tables:
        return []
    out = ["## Growth", "", INTRO, ""]
    for t in tables:
        out += [
            f"### {heading(t)}",
            "",
            *table(t).markdown(),
            "",
            *(f"- {line.strip()}" for line in summary_lines(t)[1:]),
            "",
            f"![{plot_name(t)}](plots/{plot_name(t)})",
            "",
        ]
    return out


def plot_name(t: GrowthTable) -> str:
    """The table's plot's file under plots/."""
    fixed = "".join(f"-{k}={v}" for k, v in t.fixed)
    return f"growth-{t.workload}-{t.param}{fixed}-{t.metric}.png"


def mail_lines(tables: list[GrowthTable], width: int) -> list[str]:
    """The growth tables for a mail: each heading wrapped to ``width``,
    its rows and its exponents (a row is narrower than a mail's line
    for up to three kernels)."""
    if not tables:
        return []
    out = wrap_prose(MAIL_INTRO, width)
    for t in tables:
        out += [
            "",
            *wrap_prose(heading(t), width),
            *table(t).text(),
            *(x for line in summary_lines(t) for x in wrap_prose(line, width)),
        ]
    return out
