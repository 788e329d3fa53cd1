"""coverage.html: a series' added lines marked ran / never ran / not built,
grouped by patch, in one file a browser opens offline (no script, no
fetch). Each patch's lines are shown file by file in the order they
stand in the tree, a gap between runs of lines that are not adjacent.
"""

from __future__ import annotations

from html import escape

from foliolab.coverage.lines import (
    LEGEND,
    REASON_CLASSES,
    CoverageReport,
    LineResult,
    LineState,
    Tally,
)

STYLE = """
body { font-family: sans-serif; margin: 1.5em; max-width: 90em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #bbb; padding: 2px 6px; vertical-align: top; }
td.r { text-align: right; font-variant-numeric: tabular-nums; }
table.src td { border: none; padding: 0 6px; font-family: monospace;
               white-space: pre; }
table.src tr.gap td { height: 0.6em; }
.ran { background: #d7f5d3; }
.never-ran { background: #ffd4d1; }
.not-executable { background: #ffffff; color: #555; }
.not-built { background: #e4e4e4; color: #666; }
.not-profiled { background: #e9e4f7; color: #555; }
.no-data { background: #fff0b3; }
.problem { color: #a40000; }
.reason { font-family: sans-serif; white-space: normal; }
"""


def _cell(t: Tally) -> str:
    pct = f"{t.percent:.1f}%" if t.percent is not None else "-"
    s = t.states
    return "".join(
        f'<td class="r">{v}</td>'
        for v in (
            t.added,
            t.executable,
            t.ran,
            pct,
            s[LineState.NEVER_RAN],
            t.reason_given,
            t.no_reason,
            s[LineState.NOT_EXECUTABLE],
            s[LineState.NOT_BUILT],
            s[LineState.NOT_PROFILED],
            s[LineState.NO_DATA],
        )
    )


_HEAD = (
    "<tr><th>{}</th><th>added</th><th>executable</th><th>ran</th>"
    "<th>%</th><th>never ran</th><th>never ran, reason given</th>"
    "<th>never ran, no reason</th><th>not executable</th>"
    "<th>not built</th><th>not profiled</th><th>no data</th></tr>"
)


def _legend() -> str:
    rows = "".join(
        f'<tr><td class="{s.value}">{escape(s.value)}</td>'
        f"<td>{escape(LEGEND[s])}</td></tr>"
        for s in LineState
    )
    reasons = "".join(
        f"<tr><td>{escape(k)}</td><td>{escape(v)}</td></tr>"
        for k, v in REASON_CLASSES.items()
    )
    return (
        "<h2>Legend</h2><table>"
        + rows
        + "<tr><td>%</td><td>ran / executable (executable = ran + never "
        "ran; a reason never counts as ran)</td></tr></table>"
        "<p>Reasons a never-ran line is given (the series' "
        "coverage-reasons file):</p><table>" + reasons + "</table>"
    )


def _source(lines: list[LineResult]) -> str:
    """A patch's lines, file by file, each marked by its state."""
    rows: list[str] = []
    last: tuple[str, int] | None = None
    for r in sorted(lines, key=lambda r: (r.path, r.line)):
        if last is None or last[0] != r.path:
            rows.append(
                f'<tr><td colspan="4"><b>{escape(r.path)}</b></td></tr>'
            )
        elif r.line != last[1] + 1:
            rows.append('<tr class="gap"><td colspan="4"></td></tr>')
        last = (r.path, r.line)
        count = "" if r.count is None else str(r.count)
        note = escape(r.function or "")
        if r.why:
            note = escape(r.why)
        if r.reason_class:
            note += (
                f'<br><span class="reason"><b>'
                f"{escape(r.reason_class)}</b>: {escape(r.reason)}"
                "</span>"
            )
        rows.append(
            f'<tr class="{r.state.value}" title="'
            f'{escape(r.state.value)}"><td class="r">{r.line}</td>'
            f'<td class="r">{count}</td>'
            f"<td>{escape(r.text)}</td><td>{note}</td></tr>"
        )
    return '<table class="src">' + "".join(rows) + "</table>"


def render(rep: CoverageReport) -> str:
    f = rep.facts
    parts = [
        '<!DOCTYPE html><html><head><meta charset="utf-8">',
        "<title>Changed-line coverage</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>Changed-line coverage</h1>",
        f"<p>{len(rep.patches)} patch(es) on the {escape(f.arch)} "
        f"coverage kernel; boots: "
        f"{escape(', '.join(rep.boots) or 'none with usable data')}"
        f"{' (counts summed)' if len(rep.boots) > 1 else ''}; "
        f"profiled directories: "
        f"{escape(', '.join(f.profiled_dirs) or 'none')}</p>",
    ]
    parts.append(
        f"<p>reasons: {escape(rep.reasons_file)}</p>"
        if rep.reasons_file
        else "<p>reasons: none (the series has no coverage-reasons file)</p>"
    )
    parts += [f'<p class="problem">{escape(p)}</p>' for p in rep.problems]
    if rep.stale:
        parts.append(
            f'<h2 class="problem">Stale reasons: '
            f"{len(rep.stale)}</h2><ul>"
            + "".join(
                f'<li class="problem">{escape(s.line())}</li>'
                for s in rep.stale
            )
            + "</ul>"
        )
    parts.append(_legend())
    parts.append(
        "<h2>Totals</h2><table>"
        + _HEAD.format("")
        + f"<tr><td>all</td>{_cell(Tally.of(rep.results))}</tr>"
        "</table>"
    )
    if rep.groups:
        rows = "".join(
            f"<tr><td>{escape(label)} ({numbers[0]:04d}"
            f"{f'-{numbers[-1]:04d}' if len(numbers) > 1 else ''})</td>"
            f"{_cell(Tally.of(lines))}</tr>"
            for label, numbers, lines in rep.group_lines()
        )
        parts.append(
            "<h2>By change (the cover letter's series map)</h2>"
            "<table>" + _HEAD.format("change") + rows + "</table>"
        )
    rows = "".join(
        f'<tr><td><a href="#p{p.number}">{p.number:04d}</a> '
        f"{escape(p.subject or p.name)}</td>"
        f"{_cell(Tally.of(rep.of_patch(p.number)))}</tr>"
        for p in rep.patches
    )
    parts.append(
        "<h2>By patch</h2><table>" + _HEAD.format("patch") + rows + "</table>"
    )
    for p in rep.patches:
        lines = rep.of_patch(p.number)
        parts.append(
            f'<h3 id="p{p.number}">{p.number:04d} '
            f"{escape(p.subject or p.name)}</h3>"
        )
        gone = rep.superseded.get(p.number, 0)
        if gone:
            parts.append(
                f"<p>{gone} of its added line(s) a later patch "
                "changed or removed: not counted here.</p>"
            )
        parts.append(
            _source(lines)
            if lines
            else "<p>No added line of it stands in the tree.</p>"
        )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
