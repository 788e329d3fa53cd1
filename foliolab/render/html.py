"""report.html: the whole report in one file a browser opens offline.

The headline first, then the run, the overview plot and per workload its
table, caveats, profile and figures; every image inline (base64 PNG), no
script, no fetch, no font or style from the network.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from html import escape

from foliolab.analyse import Analysis, StatRow, WorkloadAnalysis
from foliolab.render import (Column, Table, better_cell, ci_cell, fmt,
                             fmt_ratio, headline, legend, p_cell,
                             profile_table, title)
from foliolab.render.markdown import run_lines, verdict_change

# (caption, PNG bytes): what every figure section is made of.
Figure = tuple[str, bytes]


@dataclass
class Figures:
    """The run's plots as PNG bytes (render.plots), by where they go."""

    overview: bytes | None = None
    workloads: dict[str, list[Figure]] = field(default_factory=dict)


STYLE = """
body { font-family: sans-serif; margin: 1.5em; max-width: 80em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #bbb; padding: 2px 6px; }
td.r { text-align: right; font-variant-numeric: tabular-nums; }
tr.sig td { background: #fff3c4; }
.headline { background: #eef4ff; padding: 0.5em 1em; }
.caveat { color: #a40000; }
pre { background: #f4f4f4; padding: 0.5em; overflow-x: auto; }
img { max-width: 100%; }
"""


def html_figures(caption_title: str, figures: list[Figure]) -> str:
    """A section of (caption, PNG bytes) images, inline: the generic
    block every figure of the report (and the monitors') goes through."""
    if not figures:
        return ""
    parts = [f"<section><h3>{escape(caption_title)}</h3>"]
    for caption, data in figures:
        b64 = base64.b64encode(data).decode("ascii")
        parts.append(f'<figure><img alt="{escape(caption)}" '
                     f'src="data:image/png;base64,{b64}">'
                     f"<figcaption>{escape(caption)}</figcaption></figure>")
    return "\n".join(parts + ["</section>"])


def metrics_table(wa: WorkloadAnalysis, names: list[str]) -> Table:
    t = Table([Column("metric", left=True), Column("unit", left=True),
               Column("better", left=True), Column("kernel", left=True),
               Column(names[0]), Column("kernel's"), Column("%change"),
               Column("ratio"), Column("95% CI"), Column("p"),
               Column("CoeffVar"), Column("n")])
    zero = set(wa.zero)
    for r in wa.rows:
        if r.metric not in zero:
            t.add(*_cells(r))
    return t


def _cells(r: StatRow) -> list[str]:
    return [r.metric + (" *" if r.significant else ""), r.unit,
            better_cell(r.better), r.kernel, fmt(r.base.mean),
            fmt(r.other.mean), verdict_change(r), fmt_ratio(r.ratio),
            ci_cell(r), p_cell(r),
            f"{fmt(r.base.coeffvar)}% / {fmt(r.other.coeffvar)}%",
            f"{r.base.n}/{r.other.n}"]


def workload_html(wa: WorkloadAnalysis, names: list[str],
                  figures: list[Figure]) -> str:
    w = wa.workload
    parts = [f'<section id="workload-{escape(w.name)}" class="workload">',
             f"<h2>{escape(w.name)}</h2><p>{escape(w.title)}</p>",
             metrics_table(wa, names).html(f"metrics workload-{w.name}")]
    if wa.zero:
        parts.append(f"<p>Zero in every sample: {escape(', '.join(wa.zero))}"
                     "</p>")
    if wa.constant:
        parts.append("<p>Constant in every sample (not plotted): "
                     f"{escape(', '.join(wa.constant))}</p>")
    parts += [f'<p class="caveat">{escape(c)}</p>' for c in wa.caveats]
    if wa.counts:
        parts.append(f"<p>{escape(wa.counts.summary_line())}</p>")
        base = wa.counts.names[0] if wa.counts.names else ""
        for other in wa.counts.names[1:]:
            if wa.counts.profiles.get(other):
                parts.append(f"<p>Differential profile of {escape(other)} "
                             f"against {escape(base)} (exact counts; ~ = "
                             "varies between repeats):</p>")
                t = profile_table(wa.counts, base, other, md=True)
                t.rows = [[c.replace("`", "") for c in r] for r in t.rows]
                parts.append(t.html("profile"))
        if wa.boot_cost:
            parts.append(f"<p>{escape(wa.boot_cost)}</p>")
    if wa.invalid:
        parts.append("<p>Invalid samples:</p><pre>"
                     f"{escape(chr(10).join(wa.invalid))}</pre>")
    if w.not_measurable:
        parts.append(f"<p>Not measurable here: {escape(w.not_measurable)}"
                     "</p>")
    parts.append(html_figures(f"{w.name}: figures", figures))
    return "\n".join(parts + ["</section>"])


def html_report(a: Analysis, figures: Figures,
                extra_sections: list[str] | None = None) -> str:
    """The page. ``extra_sections``: HTML blocks (html_figures') put
    after the workloads, such as the monitors' time series."""
    run = [line[2:] for line in run_lines(a)]
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{escape(title(a.m))}</title>",
             f"<style>{STYLE}</style></head><body>",
             f"<h1>{escape(title(a.m))}</h1>", headline.html(a.headline),
             "<section id=\"run\"><h2>The run</h2><ul>",
             *(f"<li>{escape(x.replace('`', ''))}</li>" for x in run),
             f"</ul><p>{escape(legend(a.names).replace(chr(10), ' '))}"
             "</p></section>"]
    parts += [f'<p class="caveat">ERROR: {escape(e)}</p>' for e in a.m.errors]
    if figures.overview:
        parts.append(html_figures("Overview", [(
            "Each workload's primary metrics: ratio to the baseline with "
            "its 95% CI; the line at 1.0 is no change", figures.overview)]))
    parts += [workload_html(wa, a.names,
                            figures.workloads.get(wa.workload.name, []))
              for wa in a.workloads]
    parts += list(extra_sections or [])
    parts += [f'<p class="caveat">FAILED BOOT: {escape(f)}</p>'
              for f in a.m.failures]
    return "\n".join(parts + ["</body></html>"]) + "\n"
