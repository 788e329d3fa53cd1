"""report.html: the whole report in one file a browser opens offline.

A table of contents, the headline, the run, the overview plot, then per
workload its summary table (each kernel against the baseline, rows
coloured by verdict), the full statistics as in report.txt (Min, mean,
Median, Stddev, CoeffVar, Max per kernel), caveats, profile and figures,
with a line of text for whatever a figure leaves out; every image inline
(base64 PNG), no script, no fetch, no font or style from the network.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from html import escape

from foliolab.analysis import stats
from foliolab.analysis.analyse import Analysis
from foliolab.analysis.workloadstats import StatRow, WorkloadAnalysis
from foliolab.render import (
    Column,
    Table,
    better_cell,
    change_cell,
    ci_cell,
    fmt,
    fmt_ratio,
    headline,
    legend,
    p_cell,
    profile_table,
    q_cell,
    title,
    verdict_class,
)
from foliolab.render.markdown import modes_lines, run_lines, verdict_change

# (caption, PNG bytes): what every figure section is made of.
Figure = tuple[str, bytes]


@dataclass
class Figures:
    """The run's plots as PNG bytes (render.plots), by where they go, and
    per place the lines saying what a plot leaves out and why."""

    overview: bytes | None = None
    overview_notes: list[str] = field(default_factory=list)
    workloads: dict[str, list[Figure]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Section:
    """A block after the workloads (the monitors'), with its place in the
    table of contents."""

    sid: str
    heading: str
    html: str


STYLE = """
body { font-family: sans-serif; margin: 1.5em; max-width: 90em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #bbb; padding: 2px 6px; }
th { background: #f0f0f0; }
td.r { text-align: right; font-variant-numeric: tabular-nums; }
tr.better td { background: #dff3dc; }
tr.worse td { background: #f9dcdc; }
tr.changed td { background: #dde8fa; }
td.better { background: #dff3dc; font-weight: bold; }
td.worse { background: #f9dcdc; font-weight: bold; }
td.changed { background: #dde8fa; font-weight: bold; }
tr.first td { border-top: 2px solid #888; }
span.better, span.worse, span.changed { padding: 0 0.3em; }
span.better { background: #dff3dc; }
span.worse { background: #f9dcdc; }
span.changed { background: #dde8fa; }
nav.toc { background: #f7f7f7; padding: 0.3em 1em; }
nav.toc ol { margin: 0.2em 0; }
.headline { background: #eef4ff; padding: 0.5em 1em; }
.caveat { color: #a40000; }
.note { color: #444; font-style: italic; }
pre { background: #f4f4f4; padding: 0.5em; overflow-x: auto; }
img { max-width: 100%; }
details > summary { cursor: pointer; font-weight: bold; margin: 0.4em 0; }
"""

COLOURS = (
    'Row colours: <span class="better">better</span> and '
    '<span class="worse">worse</span> are significant changes in '
    "the metric's better direction or against it; "
    '<span class="changed">changed</span> is a significant change '
    "of a metric with no better direction; an uncoloured row is not "
    "significant."
)


def html_figures(
    caption_title: str,
    figures: list[Figure],
    sid: str = "",
    notes: list[str] | None = None,
    intro: str = "",
    level: int = 3,
) -> str:
    """A section of (caption, PNG bytes) images, inline, and after them a
    line for each thing the figures leave out: the generic block every
    figure of the report (and the monitors') goes through. Nothing at all
    when there is neither a figure nor a note."""
    if not figures and not notes:
        return ""
    ident = f' id="{escape(sid)}"' if sid else ""
    parts = [f"<section{ident}><h{level}>{escape(caption_title)}</h{level}>"]
    if intro:
        parts.append(f"<p>{escape(intro)}</p>")
    for caption, data in figures:
        b64 = base64.b64encode(data).decode("ascii")
        parts.append(
            f'<figure><img alt="{escape(caption)}" '
            f'src="data:image/png;base64,{b64}">'
            f"<figcaption>{escape(caption)}</figcaption></figure>"
        )
    if notes:
        parts.append(
            '<p class="note">Not drawn, and why:</p><ul class="note">'
            + "".join(f"<li>{escape(n)}</li>" for n in notes)
            + "</ul>"
        )
    return "\n".join(parts + ["</section>"])


def metrics_table(wa: WorkloadAnalysis, names: list[str]) -> Table:
    """Each metric of the workload, each kernel against the baseline: the
    means, %change and verdict, ratio, CI, p; the row coloured by its
    verdict."""
    t = Table(
        [
            Column("metric", left=True),
            Column("unit", left=True),
            Column("better", left=True),
            Column("kernel", left=True),
            Column(names[0]),
            Column("kernel's"),
            Column("%change"),
            Column("ratio"),
            Column("95% CI"),
            Column("p"),
            Column("q"),
            Column("decides"),
            Column("CoeffVar"),
            Column("n"),
        ]
    )
    zero = set(wa.zero)
    for r in wa.rows:
        if r.metric not in zero:
            t.add(*_cells(r), cls=verdict_class(r.verdict))
    return t


def _cells(r: StatRow) -> list[str]:
    return [
        r.metric + (" *" if r.significant else ""),
        r.unit,
        better_cell(r.better),
        r.kernel,
        fmt(r.base.mean),
        fmt(r.other.mean),
        verdict_change(r),
        fmt_ratio(r.ratio),
        # the ratio of means' CI and p here; the paired ones are in the
        # full table, and "decides" says which of the two did
        ci_cell(r, plain=True),
        p_cell(r, plain=True),
        # the adjusted p is of the deciding test's p (fdr.py)
        q_cell(r),
        r.decisive if r.ci_known else "-",
        f"{fmt(r.base.coeffvar)}% / {fmt(r.other.coeffvar)}%",
        f"{r.base.n}/{r.other.n}",
    ]


# The full statistics' rows, as report.txt's (mmtests' compare-kernels).
STATS = (
    ("Min", "min"),
    ("Mean", "mean"),
    ("Median", "median"),
    ("Stddev", "stddev"),
    ("CoeffVar", "coeffvar"),
    ("Max", "max"),
)


def full_table(groups: list[list[StatRow]], names: list[str]) -> Table:
    """Every statistic of each metric in ``groups`` (one group per metric,
    a row per kernel): the baseline's value, then each kernel's and its
    %change (+ = larger); the mean's %change coloured by its verdict when
    significant; the paired ratio over rounds where there is one."""
    others = names[1:]
    t = Table(
        [
            Column("metric", left=True),
            Column("statistic", left=True),
            Column(names[0]),
            *(
                c
                for k in others
                for c in (
                    Column(k),
                    Column(f"%change {k}" if len(others) > 1 else "%change"),
                )
            ),
        ]
    )
    for group in groups:
        first = group[0]
        rows = {r.kernel: r for r in group}
        for i, (label, key) in enumerate(STATS):
            if key == "mean":
                label = "Hmean" if first.mean_kind == "hmean" else "Amean"
            unit = "%" if key == "coeffvar" else ""
            base = getattr(first.base, key)
            cells = [
                f"{first.metric} ({first.unit})" if i == 0 else "",
                label,
                fmt(base) + unit,
            ]
            classes = ["", "", ""]
            for k in others:
                r = rows.get(k)
                if r is None:
                    cells += ["-", "-"]
                    classes += ["", ""]
                    continue
                value = getattr(r.other, key)
                cells += [fmt(value) + unit, change_cell(base, value)]
                sig = key == "mean" and r.significant
                classes += ["", verdict_class(r.verdict) if sig else ""]
            t.add(*cells, cls="first" if i == 0 else "", cell_cls=classes)
        paired = [rows.get(k) for k in others]
        if any(
            r is not None and not r.exact and r.paired.n >= stats.MIN_N_FOR_CI
            for r in paired
        ):
            cells, classes = ["", "Paired ratio", ""], ["", "", ""]
            for r in paired:
                ok = (
                    r is not None
                    and not r.exact
                    and r.paired.n >= stats.MIN_N_FOR_CI
                )
                if ok:
                    assert r is not None  # ok: a row
                    cells += [
                        f"{r.paired.ratio:.3f} [{r.paired.ci_low:.3f}, "
                        f"{r.paired.ci_high:.3f}]",
                        f"{r.paired.n} rounds",
                    ]
                else:
                    cells += ["-", ""]
                classes += ["", ""]
            t.add(*cells, cell_cls=classes)
    return t


def _verdicts(rows: list[StatRow]) -> str:
    """``2 better, 1 worse`` (coloured) or ``no significant change``."""
    counts = [
        (sum(r.verdict == v for r in rows), v)
        for v in ("better", "worse", "changed")
    ]
    parts = [f'<span class="{v}">{n} {v}</span>' for n, v in counts if n]
    return ", ".join(parts) if parts else "no significant change"


def _full_stats(wa: WorkloadAnalysis, names: list[str]) -> str:
    w = wa.workload.name
    parts = [
        f'<h3 id="workload-{escape(w)}-stats">Full statistics</h3>',
        "<p>Per metric and kernel, as in report.txt: Min, the mean "
        "(Hmean for rates, else Amean), Median, Stddev, CoeffVar and "
        "Max, each with its %change against the baseline "
        f"{escape(names[0])} (+ = larger); the mean's %change is "
        "coloured when the change is significant.</p>",
    ]
    if wa.primary:
        parts.append(
            "<details open><summary>Primary metrics "
            f"({len(wa.primary)})</summary>"
            + full_table(wa.primary, names).html(f"full primary workload-{w}")
            + "</details>"
        )
    if wa.secondary:
        parts.append(
            "<details><summary>Counters and secondary metrics "
            f"({len(wa.secondary)})</summary>"
            + full_table(wa.secondary, names).html(
                f"full secondary workload-{w}"
            )
            + "</details>"
        )
    return "\n".join(parts)


def workload_html(
    wa: WorkloadAnalysis,
    names: list[str],
    figures: list[Figure],
    notes: list[str] | None = None,
) -> str:
    w = wa.workload
    parts = [
        f'<section id="workload-{escape(w.name)}" class="workload">',
        f"<h2>{escape(w.name)}</h2><p>{escape(w.title)}</p>",
        f"<p>Significant changes: {_verdicts(wa.rows)}.</p>",
        f'<h3 id="workload-{escape(w.name)}-summary">Each kernel against '
        f"the baseline</h3>",
        metrics_table(wa, names).html(f"metrics workload-{w.name}"),
    ]
    modes = modes_lines(wa)
    if modes:
        parts.append(
            "<p>Two modes (a kernel's samples in two groups):</p><ul>"
            # markdown's list items, without their dash and backquotes
            + "".join(
                f"<li>{escape(x[2:].replace('`', ''))}</li>" for x in modes
            )
            + "</ul>"
        )
    if wa.zero:
        parts.append(
            f"<p>Zero in every sample: {escape(', '.join(wa.zero))}</p>"
        )
    if wa.constant:
        parts.append(
            "<p>Constant in every sample (not plotted): "
            f"{escape(', '.join(wa.constant))}</p>"
        )
    parts += [f'<p class="caveat">{escape(c)}</p>' for c in wa.caveats]
    if wa.rows:
        parts.append(_full_stats(wa, names))
    else:
        parts.append("<p>No valid samples.</p>")
    if wa.counts:
        parts.append(f"<p>{escape(wa.counts.summary_line())}</p>")
        base = wa.counts.names[0] if wa.counts.names else ""
        for other in wa.counts.names[1:]:
            if wa.counts.profiles.get(other):
                parts.append(
                    f"<p>Differential profile of {escape(other)} "
                    f"against {escape(base)} (exact counts; ~ = "
                    "varies between repeats):</p>"
                )
                t = profile_table(wa.counts, base, other, md=True)
                t.rows = [[c.replace("`", "") for c in r] for r in t.rows]
                parts.append(t.html("profile"))
        if wa.boot_cost:
            parts.append(f"<p>{escape(wa.boot_cost)}</p>")
    if wa.invalid:
        parts.append(
            "<p>Invalid samples:</p><pre>"
            f"{escape(chr(10).join(wa.invalid))}</pre>"
        )
    if w.not_measurable:
        parts.append(f"<p>Not measurable here: {escape(w.not_measurable)}</p>")
    parts.append(
        html_figures(
            f"{w.name}: figures",
            figures,
            f"workload-{w.name}-figures",
            notes,
            "Each primary or significant metric: its ratio to the baseline's "
            "mean, then its values per kernel in its unit. The other metrics "
            "are in the tables above."
            if figures
            else "",
        )
    )
    return "\n".join(parts + ["</section>"])


def toc(a: Analysis, figures: Figures, extra: list[Section]) -> str:
    """The table of contents: the report's parts, and per workload its
    title, its verdicts and its tables and figures."""
    items = [
        '<li><a href="#headline">Headline</a></li>',
        '<li><a href="#run">The run</a></li>',
    ]
    if figures.overview or figures.overview_notes:
        items.append(
            '<li><a href="#overview">Overview: every primary '
            "metric's ratio</a></li>"
        )
    for wa in a.workloads:
        n = escape(wa.workload.name)
        subs = [f'<a href="#workload-{n}-summary">table</a>']
        if wa.rows:
            subs.append(f'<a href="#workload-{n}-stats">full statistics</a>')
        if figures.workloads.get(wa.workload.name) or figures.notes.get(
            wa.workload.name
        ):
            subs.append(f'<a href="#workload-{n}-figures">figures</a>')
        items.append(
            f'<li><a href="#workload-{n}">{n}</a>: '
            f"{escape(wa.workload.title)}; {_verdicts(wa.rows)} "
            f"({', '.join(subs)})</li>"
        )
    items += [
        f'<li><a href="#{escape(s.sid)}">{escape(s.heading)}</a></li>'
        for s in extra
    ]
    if a.m.failures:
        items.append('<li><a href="#failures">Failed boots</a></li>')
    return (
        '<nav id="contents" class="toc"><h2>Contents</h2><ol>'
        + "".join(items)
        + "</ol></nav>"
    )


def html_report(
    a: Analysis, figures: Figures, extra_sections: list[Section] | None = None
) -> str:
    """The page. ``extra_sections``: blocks put after the workloads, such
    as the monitors' time series, each in the table of contents."""
    extra = [s for s in (extra_sections or []) if s.html]
    run = [line[2:] for line in run_lines(a)]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title(a.m))}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>{escape(title(a.m))}</h1>",
        toc(a, figures, extra),
        headline.html(a.headline),
        '<section id="run"><h2>The run</h2><ul>',
        *(f"<li>{escape(x.replace('`', ''))}</li>" for x in run),
        f"</ul><p>{escape(legend(a.names).replace(chr(10), ' '))}"
        f"</p><p>{COLOURS}</p></section>",
    ]
    parts += [f'<p class="caveat">ERROR: {escape(e)}</p>' for e in a.m.errors]
    parts.append(
        html_figures(
            "Overview",
            [
                (
                    "Each workload's primary metrics: ratio to the "
                    "baseline with its 95% CI on a log axis; the line at "
                    "1.0 is no change",
                    figures.overview,
                )
            ]
            if figures.overview
            else [],
            "overview",
            figures.overview_notes,
            level=2,
        )
    )
    parts += [
        workload_html(
            wa,
            a.names,
            figures.workloads.get(wa.workload.name, []),
            figures.notes.get(wa.workload.name),
        )
        for wa in a.workloads
    ]
    parts += [s.html for s in extra]
    if a.m.failures:
        parts.append(
            '<section id="failures"><h2>Failed boots</h2>'
            + "".join(
                f'<p class="caveat">FAILED BOOT: {escape(f)}</p>'
                for f in a.m.failures
            )
            + "</section>"
        )
    return "\n".join(parts + ["</body></html>"]) + "\n"
