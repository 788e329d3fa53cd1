"""The report for a mail (`foliolab report RUN --mail`): plain text within
80 columns, to paste in a reply on a kernel list or a cover letter.

It says which kernels ran (spec, commit, config hash) and on what guest,
then for each kernel against the baseline a table: every workload's lead
metrics and its exact counts, each kernel's mean, the ratio with the
95% CI that decides its significance (with p) at a precision that
shows the interval's width, and the verdict; last, the command that
reproduces the run, wrapped with backslashes. Nothing in it depends on
the clone it was made in or on the time it was made: the same run gives
the same text.
"""

from __future__ import annotations

import math
from pathlib import Path

from foliolab.analysis import stats
from foliolab.analysis.analyse import Analysis
from foliolab.analysis.reproduce import command, without_options
from foliolab.analysis.workloadstats import StatRow
from foliolab.render import (
    PAIRED_MARK,
    fmt,
    for_reader,
    growth,
    wrap_prose,
    wrapped_command,
)

WIDTH = 80


def _digits_apart(values: list[float], least: int = 3) -> int:
    """Significant digits enough that ``values`` print apart (a ratio of
    0.00213 with CI [0.00211, 0.00215] is not '0.002 [0.002, 0.002]')."""
    finite = [v for v in values if math.isfinite(v) and v != 0]
    for d in range(least, 7):
        shown = {f"{v:.{d}g}" for v in finite}
        if len(shown) == len(set(finite)):
            return d
    return 7


def _g(x: float, digits: int) -> str:
    """``x`` to ``digits`` significant digits, never in exponent form."""
    if not math.isfinite(x):
        return "-"
    if x == 0:
        return "0"
    decimals = digits - 1 - math.floor(math.log10(abs(x)))
    return f"{x:.{max(0, decimals)}f}"


def decisive_ci(r: StatRow) -> tuple[float, float] | None:
    """The interval that decides the row's significance (with p < 0.05),
    as analysis decided it (StatRow.decisive): the paired CI where the
    rounds pair, else the bootstrap CI of the ratio of means; None where
    there is none. The other is in results.json and the HTML report."""
    if r.exact or not r.ci_known:
        return None
    return r.decisive_ci


def ratio_cell(r: StatRow) -> str:
    """The ratio and its deciding CI, as precise as the CI's width needs."""
    if r.two_modes and not r.primary:  # no mean ratio: no kernel's value
        return "two modes"
    if not math.isfinite(r.ratio):
        return "from 0" if r.base.mean == 0 else "-"
    if r.exact:
        return f"{_g(r.ratio, _digits_apart([r.ratio, 1.0]))} exact"
    ci = decisive_ci(r)
    if ci is None:
        return f"{_g(r.ratio, 3)} (n<{stats.MIN_N_FOR_CI})"
    d = _digits_apart([ci[0], ci[1]])
    mark = PAIRED_MARK if r.decisive == "paired" else ""
    return f"{_g(r.decisive_ratio, d)} {mark}[{_g(ci[0], d)}, {_g(ci[1], d)}]"


def verdict_cell(r: StatRow) -> str:
    if r.two_modes and not r.primary:
        return "none"
    if r.exact and not r.significant:
        return "same"
    return r.verdict or "n.s."


def _shown_rows(a: Analysis, kernel: str) -> list[tuple[str, list[StatRow]]]:
    """Per workload, the rows a mail shows for ``kernel``: the lead
    metrics that are not counts, then the exact counts per unit of work
    (``*_per_folio``, ``*_per_walk``, ...) that are not zero on both."""
    out = []
    for wa in a.workloads:
        counted = {m.key for m in wa.workload.metrics if m.counted}
        rows = [
            r
            for r in wa.rows
            if r.kernel == kernel
            and (
                (r.primary and r.metric not in counted)
                or ((r.metric in counted or r.exact) and "_per_" in r.metric)
            )
            and not (r.base.mean == 0 and r.other.mean == 0)
        ]
        rows.sort(key=lambda r: r.metric in counted or r.exact)
        if rows:
            out.append((wa.workload.name, rows))
    return out


def comparison_lines(a: Analysis, kernel: str) -> list[str]:
    """``kernel`` against the baseline as a table within WIDTH: a row per
    metric, or two (the name, then the numbers) where one does not fit."""
    base = a.names[0]
    shown = _shown_rows(a, kernel)
    rows = [r for _, rs in shown for r in rs]
    heads = ["metric", base, kernel, "ratio [95% CI]", "verdict"]
    cells = [
        [
            r.metric,
            fmt(r.base.mean),
            fmt(r.other.mean),
            ratio_cell(r),
            verdict_cell(r),
        ]
        for r in rows
    ]
    w = [max(len(c[i]) for c in [heads, *cells]) for i in range(5)]
    numbers_w = w[1] + w[2] + w[3] + w[4] + 4
    one_line = 2 + w[0] + 1 + numbers_w <= WIDTH
    label_w = w[0] if one_line else 2

    def line(c: list[str]) -> str:
        return (
            f"  {c[0]:<{label_w}} {c[1]:>{w[1]}} {c[2]:>{w[2]}} "
            f"{c[3]:<{w[3]}} {c[4]}"
        ).rstrip()

    lines = [f"{kernel} against {base} (ratio = {kernel} / {base}):"]
    lines.append(line(heads) if one_line else line(["", *heads[1:]]))
    i = 0
    for workload, rs in shown:
        lines.append(f" {workload}")
        for _ in rs:
            c = cells[i]
            i += 1
            if one_line:
                lines.append(line(c))
            else:
                lines += [f"  {c[0]}", line(["", *c[1:]])]
    return lines


def kernel_lines(a: Analysis) -> list[str]:
    lines = ["Kernels:"]
    for k in a.m.kernels:
        commit = k.commit[:12] if k.commit else "?"
        config = k.config_sha[:12] if k.config_sha else "?"
        lines.append(f"  {k.name}: {for_reader(k.spec)}")
        lines.append(f"    commit {commit}, config sha {config}")
    return lines


def guest_lines(a: Analysis) -> list[str]:
    m = a.m
    return [
        f"Guest: {m.arch}, {m.accel_label}, {m.vcpus} vCPUs, config {m.config}"
    ]


def guest_timing(a: Analysis) -> str:
    m = a.m
    if m.accel_label.lower().startswith("tcg"):
        return "times under TCG are emulated; counts are exact."
    return f"times are on {m.accel_label}."


def reader_command(cmd: list[str]) -> list[str]:
    """The run's command as a reader reruns it: without where this run
    was written (--out) and how it was finished (--resume, --force)."""
    return without_options(cmd, ("--out",), ("--resume", "--force"))


def mail_report(a: Analysis, run: Path) -> str:
    """The run's report for a mail, every line within WIDTH columns."""
    m = a.m
    runs = f"{m.runs} run{'s' if m.runs != 1 else ''} per kernel"
    lines = [
        *wrap_prose(
            f"foliolab run {run.name}: {', '.join(m.workloads)}", WIDTH
        ),
        *guest_lines(a),
        f"{runs}; " + guest_timing(a),
        *kernel_lines(a),
    ]
    for kernel in a.names[1:]:
        lines += ["", *comparison_lines(a, kernel)]
    if a.growth:
        lines += ["", *growth.mail_lines(a.growth, WIDTH)]
    lines += ["", *verdict_legend(a)]
    lines += [
        "",
        "Reproduce:",
        *(
            "  " + x
            for x in wrapped_command(reader_command(command(m)), WIDTH - 2)
        ),
    ]
    return "\n".join(_fit(line) for line in lines) + "\n"


VERDICT_PLAIN = [
    "verdict: better or worse where the 95% bootstrap CI of the ratio",
    "excludes 1 and Mann-Whitney p < 0.05; exact: every sample of both",
    "kernels gave the same count, so no test is needed.",
]
VERDICT_PAIRED = [
    f"{PAIRED_MARK}[...]: the rounds pair (each kernel booted once a round),",
    "so the CI is the bootstrap CI of the geometric mean of the per-round",
    "ratios, and it decides with Wilcoxon's signed-rank p < 0.05.",
]


VERDICT_SECONDARY = [
    "A row that is not its workload's lead metric is one of many: it also",
    "needs its Benjamini-Hochberg adjusted p (over the run's secondary",
    "metrics) below 0.05.",
]


def verdict_legend(a: Analysis) -> list[str]:
    """How a verdict was reached: the plain test's words, the paired
    one's where a row the mail shows was decided by it, and the false
    discovery rate's where it shows a secondary metric's test."""
    shown = [
        r for k in a.names[1:] for _, rows in _shown_rows(a, k) for r in rows
    ]
    paired = any(
        decisive_ci(r) is not None and r.decisive == "paired" for r in shown
    )
    secondary = any(r.q_value is not None for r in shown)
    return (
        VERDICT_PLAIN
        + (VERDICT_PAIRED if paired else [])
        + (VERDICT_SECONDARY if secondary else [])
    )


def _fit(line: str) -> str:
    """A line cut to WIDTH as a last resort (a spec or name too long for
    any column); the tests hold every real case within it uncut."""
    return line if len(line) <= WIDTH else line[: WIDTH - 1] + "~"
