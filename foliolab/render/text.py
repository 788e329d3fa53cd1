"""The terminal table (report.txt), in mmtests' compare-kernels style."""

from __future__ import annotations

import math

from foliolab.analysis import stats
from foliolab.analysis.analyse import Analysis
from foliolab.analysis.countanalysis import CountAnalysis
from foliolab.analysis.kernelsummary import WorkloadCost
from foliolab.analysis.workloadstats import StatRow, StepRow
from foliolab.manifest import RunManifest
from foliolab.render import (
    PAIRED_MARK,
    Column,
    Table,
    change_cell,
    ci_cell,
    executor_note,
    fmt,
    fmt_ratio,
    fmt_small,
    growth,
    headline,
    legend,
    modes_text,
    p_cell,
    profile_table,
    q_cell,
    title,
    wrap_prose,
)


def guest(m: RunManifest) -> str:
    return (
        f"{m.arch} {m.accel_label} -cpu {m.cpu} {m.vcpus} vCPUs; config "
        f"{m.config} sha {m.kernels[0].config_sha or '?'}"
    )


def diff_cell(base: float, value: float, significant: bool) -> str:
    """A %change (+ = larger) in mmtests' parentheses, or in stars when
    significant; from and to 0 said as such."""
    text = change_cell(base, value)
    if text.endswith("%"):
        text = f"{float(text[:-1]):+7.2f}%"
    return f"*{text}*" if significant else f"({text})"


def better_words(better: str) -> str:
    return (
        f"{better} is better"
        if better in ("lower", "higher")
        else "no better direction"
    )


def metric_lines(rows: list[StatRow], width: int = 28) -> list[str]:
    """mmtests-style rows for one metric (compare-kernels): the baseline
    first, then each kernel with its %change; one Ratio line per kernel.
    ``width``: of the metric column (the workload's longest name)."""
    first = rows[0]
    key, better = first.metric, first.better
    mean_name = "Hmean" if first.mean_kind == "hmean" else "Amean"
    lines = []
    for label, field in (
        ("Min", "min"),
        (mean_name, "mean"),
        ("Median", "median"),
        ("Stddev", "stddev"),
        ("CoeffVar", "coeffvar"),
        ("Max", "max"),
    ):
        v = getattr(first.base, field)
        # exact counts repeat to a few parts per million: show them
        f = fmt_small if field == "coeffvar" else fmt
        line = f"{label:<9} {key:<{width}} {f(v):>12} ({0:7.2f}%)"
        for row in rows:
            p = getattr(row.other, field)
            sig = row.significant and field == "mean"
            line += f" {f(p):>12} {diff_cell(v, p, sig)}"
        lines.append(line)
    for row in rows:
        who = f"{row.kernel:<12} " if len(rows) > 1 else ""
        # the CI that decides (StatRow.decisive), said in words here
        kind = "paired CI" if row.decisive == "paired" else "CI"
        rest = (
            f"{who}{fmt_ratio(row.decisive_ratio)} "
            f"{kind} {ci_cell(row, mark=False)} p={p_cell(row)} "
            f"n={row.base.n}/{row.other.n} {better_words(better)}"
            f"{'  SIGNIFICANT, ' + row.verdict if row.significant else ''}"
        )
        line = f"{'Ratio':<9} {key:<{width}} {rest}"
        if len(line) > REPORT_WIDTH:  # the name's padding given up first
            line = f"{'Ratio':<9} {key} {rest}"
        lines.append(line)
    if any(r.two_modes for r in rows):
        # a lead metric is a pre-declared test: its verdict stands, and
        # its modes are said beside it
        lines.append(
            f"{'Modes':<9} {key} {modes_text(rows)} (a lead metric: its "
            "verdict stands; read it with its modes)"
        )
    return lines


# A counter line's metric column: a longer name gets a line of its own,
# so a two-kernel report stays within REPORT_WIDTH.
COUNTER_NAME_W = 26
# report.txt's width: a terminal's, and what a reply on a list can take
# quoted (LKP's reports are about 100 columns).
REPORT_WIDTH = 100


def counter_line(rows: list[StatRow], width: int = 28) -> str:
    """A secondary metric: the means, each kernel's %change, the 95% CI
    of the ratio that decides significance (with p) and the verdict."""
    first = rows[0]
    name_w = min(width, COUNTER_NAME_W)
    name = first.metric
    head, label = "", "Mean"
    if len(name) > name_w:
        head, name, label = f"{'Mean':<9} {name}\n", "", ""
    if any(r.two_modes for r in rows):
        return modes_line(rows, name_w)
    line = f"{label:<9} {name:<{name_w}} {fmt(first.base.mean):>12}"
    for row in rows:
        line += " " + _counter_cells(row)
    return head + line.rstrip()


def _counter_cells(row: StatRow) -> str:
    """A kernel's cells of a counter line: its mean, %change, the
    deciding CI, the verdict and q (the adjusted p that decides with the
    CI, where tested). The raw p is in report.md, report.html and results.json:
    with it a line would not fit REPORT_WIDTH."""
    diff = diff_cell(row.base.mean, row.other.mean, row.significant)
    ci = ci_cell(row)
    # q last: where a line passes REPORT_WIDTH, within() moves it to the
    # next line and the verdict stays beside its CI
    q = f" q={q_cell(row)}" if row.q_value is not None else ""
    return (
        f"{fmt(row.other.mean):>12} {diff}  {ci:<15} {row.verdict}".rstrip()
        + q
    )


def modes_line(rows: list[StatRow], name_w: int = COUNTER_NAME_W) -> str:
    """A secondary metric whose samples on some kernel fall in two
    modes: each kernel's modes (or its mean), no ratio and no verdict;
    a kernel whose row is in one mode on both sides (a run of three
    kernels or more) keeps its cells."""
    first = rows[0]
    rest = [
        f"; {r.kernel}: " + _counter_cells(r) for r in rows if not r.two_modes
    ]
    return (
        f"{'Modes':<9} {first.metric:<{name_w}} {modes_text(rows)}"
        " (no verdict)" + "".join(rest)
    )


def attribution_lines(rows: list[StepRow], steps: dict[str, int]) -> list[str]:
    """The steps as a table: one line per metric, one column per step."""
    if not rows:
        return []
    order = list(dict.fromkeys((r.before, r.after) for r in rows))
    t = Table(
        [
            Column("", 9, left=True),
            Column("", 28, left=True),
            *(Column(f"{a}->{b}", 24) for a, b in order),
        ]
    )
    groups: dict[str, dict[tuple[str, str], StepRow]] = {}
    for r in rows:
        groups.setdefault(r.metric, {})[r.before, r.after] = r
    for metric, cells in groups.items():
        out = []
        for step in order:
            cell = cells.get(step)
            c = cell.comparison if cell else None
            out.append(
                "-"
                if cell is None or c is None
                else f"{fmt_ratio(c.ratio)}{'*' if cell.significant else ' '}"
                + _step_ci(cell)
            )
        t.add("Step", metric, *out)
    return [
        "Attribution: each step against the one before (ratio, 95% CI; "
        "* significant); steps are the series' first N patches: "
        + ", ".join(f"{k}={n}" for k, n in steps.items()),
        *t.text(),
    ]


def _step_ci(r: StepRow) -> str:
    c = r.comparison
    if not r.ci_known:
        return f"(n<{stats.MIN_N_FOR_CI})"
    if not (math.isfinite(c.ci_low) and math.isfinite(c.ci_high)):
        return ""
    return f"[{c.ci_low:.3f},{c.ci_high:.3f}]"


def profile_lines(a: CountAnalysis) -> list[str]:
    """The differential profiles (each kernel against the baseline)."""
    lines = [a.summary_line()]
    base = a.names[0] if a.names else ""
    for other in a.names[1:]:
        rows = a.profiles.get(other, [])
        if not rows:
            continue
        against = "" if len(a.names) == 2 else f", {other} against {base}"
        lines.append(
            f"Differential profile: top {len(rows)} kernel "
            "functions by change in self instructions per window "
            f"(mean; ~ = varies between repeats{against})"
        )
        lines += profile_table(a, base, other).text()
    return lines


# The per-kernel summary's columns: its row names, then each kernel's.
COST_LABEL_W = 24
COST_VALUE_W = 13


def cost_lines(c: WorkloadCost, accel_label: str) -> list[str]:
    """compare-kernels' per-kernel summary: the workload's User, System
    and Elapsed time and reclaim's vmstat counters, each the kernel's
    mean per sample, kernels side by side (in blocks that fit
    REPORT_WIDTH)."""
    tcg = accel_label.lower().startswith("tcg")
    clock = "times under TCG: emulated" if tcg else f"times on {accel_label}"
    rows: list[tuple[str, list[str]]] = []
    if c.has_times:
        for label, attr in (
            ("User (s)", "user_s"),
            ("System (s)", "sys_s"),
            ("Elapsed (s)", "elapsed_s"),
        ):
            rows.append((label, [fmt(getattr(k, attr)) for k in c.kernels]))
    for counter in c.counters:
        rows.append(
            (counter, [fmt(k.counters.get(counter)) for k in c.kernels])
        )
    if any(k.scanned for k in c.kernels):
        rows.append(
            (
                # mmtests' "Reclaim efficiency": stolen per scanned
                "pgsteal/pgscan %",
                [
                    "-" if e is None else f"{e:.2f}"
                    for e in (k.efficiency_pct for k in c.kernels)
                ],
            )
        )
    rows.append(("samples", [str(k.n) for k in c.kernels]))
    lines = [f"Per kernel, mean per sample of the timed window ({clock}):"]
    per_block = max(1, (REPORT_WIDTH - COST_LABEL_W) // COST_VALUE_W)
    names = [k.kernel for k in c.kernels]
    for start in range(0, len(names), per_block):
        cols = slice(start, start + per_block)
        lines.append(
            " " * COST_LABEL_W
            + "".join(
                f"{n[: COST_VALUE_W - 1]:>{COST_VALUE_W}}" for n in names[cols]
            )
        )
        for label, cells in rows:
            lines.append(
                f"{label:<{COST_LABEL_W}}"
                + "".join(f"{x:>{COST_VALUE_W}}" for x in cells[cols])
            )
    if not c.has_times:
        lines.append(
            "(no User/System/Elapsed: these samples predate the guest's "
            "times record)"
        )
    elif any(k.n_times < k.n for k in c.kernels):
        lines.append(
            "(User/System/Elapsed from "
            + ", ".join(f"{k.kernel} {k.n_times} of {k.n}" for k in c.kernels)
            + " samples; the others predate the times record)"
        )
    return lines


# Under the legend, where some row's paired CI decides (StatRow.decisive).
PAIRED_LEGEND = (
    f"where a row says paired CI (or {PAIRED_MARK}[...]): the rounds pair, "
    "and the paired CI of the per-round ratios with Wilcoxon's signed-rank "
    "p < 0.05 decide instead"
)


def head_lines(a: Analysis) -> list[str]:
    """The opening of report.txt: its title, the headline and the growth
    exponents, each line within REPORT_WIDTH (what `compare` prints at
    its end, before the path of the whole report)."""
    return within(
        [
            title(a.m),
            "",
            *headline.lines(a.headline, REPORT_WIDTH),
            *growth.headline_lines(a.growth),
        ]
    )


def text_report(a: Analysis) -> str:
    m, names = a.m, a.names
    lines = [
        "",
        "guest: " + guest(m) + executor_note(m),
        legend(names),
        *(
            [PAIRED_LEGEND]
            if any(
                r.decisive == "paired" for wa in a.workloads for r in wa.rows
            )
            else []
        ),
        "",
    ]
    lines += [f"ERROR: {e}" for e in m.errors]
    lines += [f"MISSING: {x}" for x in a.missing]
    lines += growth.text_lines(a.growth)
    for wa in a.workloads:
        w = wa.workload
        lines.append(f"== {w.name}: {w.title}")
        width = max([28] + [len(r.metric) for r in wa.rows])
        header = f"{'':<{width + 10}} {names[0]:>12}"
        for other in names[1:]:
            header += f" {'':10} {other:>12}"
        lines.append(header)
        for group in wa.primary:
            lines += metric_lines(group, width) + [""]
        if wa.secondary:
            lines.append(
                "Counters and secondary metrics (mean per sample; %change; "
                "95% CI of the ratio; q = the Benjamini-Hochberg "
                "adjusted p over the run's secondary metrics, their raw p "
                "in report.md"
                + (
                    f", {PAIRED_MARK}[...] paired over rounds"
                    if any(
                        r.decisive == "paired" for g in wa.secondary for r in g
                    )
                    else ""
                )
                + "):"
            )
            lines += [counter_line(g, width) for g in wa.secondary] + [""]
        cost = a.costs.get(w.name)
        if cost is not None:
            lines += cost_lines(cost, m.accel_label) + [""]
        if wa.zero:
            lines += [f"Zero in every sample: {', '.join(wa.zero)}", ""]
        if wa.constant:
            lines += [
                "Constant in every sample (exact, not plotted): "
                f"{', '.join(wa.constant)}",
                "",
            ]
        if not wa.rows:
            lines.append("(no valid samples)")
        if wa.caveats:
            lines += wa.caveats + [""]
        if wa.steps:
            lines += attribution_lines(wa.steps, m.attribution) + [""]
        if wa.counts:
            lines += profile_lines(wa.counts) + [wa.boot_cost, ""]
        lines += wa.invalid
        if w.not_measurable:
            lines.append(f"Not measurable here: {w.not_measurable}")
        lines.append("")
    lines += [f"FAILED BOOT: {f}" for f in m.failures]
    if a.host_line:
        lines.append(a.host_line)
    # within() wraps each line alone: the head wrapped apart is the same
    return "\n".join(head_lines(a) + within(lines)).rstrip() + "\n"


def within(lines: list[str], width: int = REPORT_WIDTH) -> list[str]:
    """Every line within ``width``: prose wrapped with its continuation
    indented (a legend's embedded line breaks kept); a table's row cut
    at a space, its tail on the next line under its first value."""
    out = []
    for line in "\n".join(lines).split("\n"):
        if "   " not in line.strip():
            out += wrap_prose(line, width)
            continue
        # a row: its tail past the width on a line of its own, under the
        # first column's values (a Ratio line's verdict, say)
        while len(line) > width:
            cut = line.rfind(" ", 0, width)
            if cut <= 10:
                break
            out.append(line[:cut].rstrip())
            line = " " * 10 + line[cut:].lstrip()
        out.append(line)
    return out
