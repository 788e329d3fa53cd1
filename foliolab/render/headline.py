"""The headline (headline.Headline, chosen in headline.py), read at a
glance: what every report and `compare`'s printout open with, in text,
markdown and HTML.

A title naming the kernels as they are, one row per shown metric (each
kernel's mean ± sd, %change + = larger, the verdict, the ratio's 95% CI,
p), one line counting the other significant changes, and the command
that reproduces the run with its kernels as built.
"""

from __future__ import annotations

import shlex
from html import escape

from foliolab.analysis import stats
from foliolab.analysis.headline import Headline, HeadlineRow, OtherChanges
from foliolab.render import (
    PAIRED_MARK,
    Column,
    Table,
    change_cell,
    fdr_line,
    fmt,
    fmt_p,
    verdict_class,
    wrap_prose,
    wrapped_command,
)

HOW = (
    "mean ± sd; %change: + = larger; n.s. = not significant; 95% CI "
    "of the ratio; Mann-Whitney p"
)


# The narrow table's columns (headline.table(narrow=True)).
HOW_NARROW = "means; 95% CI of the ratio; Mann-Whitney p"
# Where a row's paired CI decides (analysis.workloadstats.decides()):
# its p is then Wilcoxon's signed-rank test's (docs/manual.md).
HOW_PLAIN = "95% CI of the ratio; Mann-Whitney p"
HOW_PAIRED = f"95% CI of the ratio, {PAIRED_MARK}[...] paired; rank-test p"


def paired(h: Headline) -> bool:
    return any(r.decisive == "paired" and r.ci_low is not None for r in h.rows)


def title(h: Headline, narrow: bool = False) -> str:
    """The headline's first line: who against whom, and how to read it."""
    kernels = h.names or ["?"]
    if h.same_kernel:
        who = (
            f"A/A run, {' and '.join(kernels)} are the same kernel "
            f"({h.specs[0]}): a significant change is noise or the host"
        )
    elif len(kernels) == 2:
        who = f"{kernels[1]} against {kernels[0]}"
    else:
        who = f"each kernel against the baseline {kernels[0]}"
    how = HOW_NARROW if narrow else HOW
    if paired(h):
        how = how.replace(HOW_PLAIN, HOW_PAIRED)
    return f"Headline: {who} ({how})"


def _spread(mean: float, sd: float, n: int) -> str:
    if n == 0:
        return "-"
    return f"{fmt(mean)} ± {fmt(sd)}"


def _verdict(r: HeadlineRow) -> str:
    if r.verdict:
        return r.verdict + (" (exact)" if r.exact else "")
    if min(r.n_base, r.n) < stats.runs_needed():
        return f"n.s. (n={r.n_base}/{r.n}, too few)"
    return "n.s."


def _ci(r: HeadlineRow) -> str:
    if r.exact:
        return "exact"
    if r.ratio is None:
        return "-"
    if r.ci_low is None:
        return f"none (n<{stats.MIN_N_FOR_CI})"
    assert r.ci_high is not None  # a CI has both its ends
    mark = PAIRED_MARK if r.decisive == "paired" else ""
    if r.ci_high < 0.1:  # a cut to a few per cent or less
        return f"{mark}[{fmt(r.ci_low)}, {fmt(r.ci_high)}]"
    return f"{mark}[{r.ci_low:.3f}, {r.ci_high:.3f}]"


def _p(r: HeadlineRow) -> str:
    return "exact" if r.exact else fmt_p(r.p_value)


def table(h: Headline, narrow: bool = False) -> Table:
    """The rows as a table; with three kernels or more a row per kernel
    and metric, named in a column of its own. ``narrow``: for a terminal
    the full table does not fit, each kernel's mean alone (no sd, no
    %change, no unit: the workload's table has them)."""
    kernels = h.names or ["baseline"]
    two = len(kernels) == 2
    heads = [
        "workload",
        "metric",
        *([] if two else ["kernel"]),
        kernels[0],
        kernels[1] if two else "kernel's",
        *([] if narrow else ["%change"]),
        "verdict",
        "95% CI",
        "p",
    ]
    cells = [
        [
            r.workload,
            r.metric if narrow else f"{r.metric} ({r.unit})",
            *([] if two else [r.kernel]),
            *(
                [
                    fmt(r.base_mean) if r.n_base else "-",
                    fmt(r.mean) if r.n else "-",
                ]
                if narrow
                else [
                    _spread(r.base_mean, r.base_sd, r.n_base),
                    _spread(r.mean, r.sd, r.n),
                    change_cell(r.base_mean, r.mean),
                ]
            ),
            _verdict(r),
            _ci(r),
            _p(r),
        ]
        for r in h.rows
    ]
    left = 2 if two else 3
    widths = [max(len(c) for c in col) for col in zip(heads, *cells)]
    t = Table(
        [
            Column(head, w, left=i < left)
            for i, (head, w) in enumerate(zip(heads, widths))
        ]
    )
    for r, c in zip(h.rows, cells):
        t.add(*c, cls=verdict_class(r.verdict))
    return t


def _counts(o: OtherChanges) -> str:
    parts = [
        f"{n} {word}"
        for n, word in (
            (o.better, "better"),
            (o.worse, "worse"),
            (o.changed, "changed"),
        )
        if n
    ]
    return f"{o.total} ({', '.join(parts)})"


def others_line(h: Headline) -> str:
    """One line: the significant changes the rows leave to the tables."""
    if not any(o.total for o in h.others):
        text = "no other significant change"
    elif len(h.others) == 1:
        text = f"other significant changes: {_counts(h.others[0])}"
    else:
        text = "other significant changes: " + ", ".join(
            f"{o.kernel} {_counts(o)}" for o in h.others
        )
    return text + "; every metric is in its table below"


def reproduce_lines(h: Headline, width: int) -> list[str]:
    """The command wrapped within ``width`` with backslashes, then each
    kernel as built on a shell comment line of its own."""
    cmd = wrapped_command(shlex.split(h.reproduce), width - 4)
    return [
        "reproduce:",
        *(f"  {x}" for x in cmd),
        *(f"  # {k}" for k in h.kernels),
    ]


def lines(h: Headline, width: int = 100) -> list[str]:
    """The headline as text within ``width`` (but for a table row wider
    than it), its title first."""
    rows = table(h).text() if h.rows else []
    narrow = bool(rows) and max(len(x) for x in rows) + 2 > width
    if narrow:
        rows = table(h, narrow=True).text()
    out = [*wrap_prose(title(h, narrow), width), *(f"  {x}" for x in rows)]
    if h.no_samples:
        out.append(f"  no valid samples: {', '.join(h.no_samples)}")
    out += wrap_prose(f"  {others_line(h)}", width)
    if h.fdr:
        out += wrap_prose(f"  {fdr_line(h.fdr)}", width)
    if h.reproduce:  # a paragraph of its own after the results
        out += ["", *reproduce_lines(h, width)]
    return out


def markdown(h: Headline) -> list[str]:
    md = [
        "## Headline",
        "",
        title(h).removeprefix("Headline: ") + ":",
        "",
        *(table(h).markdown() + [""] if h.rows else []),
    ]
    if h.no_samples:
        md += [f"No valid samples: {', '.join(h.no_samples)}.", ""]
    fdr = fdr_line(h.fdr)
    return md + [
        others_line(h)[0].upper() + others_line(h)[1:] + ".",
        "",
        *([fdr[0].upper() + fdr[1:] + ".", ""] if fdr else []),
        "Reproduce:",
        "",
        "```",
        h.reproduce,
        *(f"# {k}" for k in h.kernels),
        "```",
        "",
    ]


def html(h: Headline) -> str:
    parts = [
        '<section id="headline" class="headline"><h2>Headline</h2>',
        f"<p>{escape(title(h).removeprefix('Headline: '))}</p>",
        table(h).html("headline") if h.rows else "",
    ]
    if h.no_samples:
        parts.append(
            f"<p>No valid samples: {escape(', '.join(h.no_samples))}</p>"
        )
    parts += [
        f"<p>{escape(others_line(h))}</p>",
        f"<p>{escape(fdr_line(h.fdr))}</p>" if h.fdr else "",
        "<p>Reproduce:</p><pre>",
        escape("\n".join([h.reproduce, *(f"# {k}" for k in h.kernels)])),
        "</pre></section>",
    ]
    return "".join(parts)
