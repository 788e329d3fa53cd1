"""The headline (headline.Headline, chosen in headline.py), read at a
glance: what every report and `compare`'s printout open with, in text,
markdown and HTML.

A title naming the kernels as they are, one row per shown metric (each
kernel's mean ± sd, %change + = larger, the verdict, the ratio's 95% CI,
p), one line counting the other significant changes, and the command
that reproduces the run with its kernels as built.
"""

from __future__ import annotations

from html import escape

from foliolab.analysis import stats
from foliolab.analysis.headline import Headline, HeadlineRow, OtherChanges
from foliolab.render import (
    Column,
    Table,
    change_cell,
    fmt,
    fmt_p,
    verdict_class,
)

HOW = (
    "mean ± sd; %change: + = larger; n.s. = not significant; 95% CI "
    "of the ratio; Mann-Whitney p"
)


def title(h: Headline) -> str:
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
    return f"Headline: {who} ({HOW})"


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
    if r.ci_high < 0.1:  # a cut to a few per cent or less
        return f"[{fmt(r.ci_low)}, {fmt(r.ci_high)}]"
    return f"[{r.ci_low:.3f}, {r.ci_high:.3f}]"


def _p(r: HeadlineRow) -> str:
    return "exact" if r.exact else fmt_p(r.p_value)


def table(h: Headline) -> Table:
    """The rows as a table; with three kernels or more a row per kernel
    and metric, named in a column of its own."""
    kernels = h.names or ["baseline"]
    two = len(kernels) == 2
    heads = [
        "workload",
        "metric",
        *([] if two else ["kernel"]),
        kernels[0],
        kernels[1] if two else "kernel's",
        "%change",
        "verdict",
        "95% CI",
        "p",
    ]
    cells = [
        [
            r.workload,
            f"{r.metric} ({r.unit})",
            *([] if two else [r.kernel]),
            _spread(r.base_mean, r.base_sd, r.n_base),
            _spread(r.mean, r.sd, r.n),
            change_cell(r.base_mean, r.mean),
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
            (o.changed, "changed, with no better direction"),
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
    return text + "; every metric is in its workload's table below"


def reproduce_line(h: Headline) -> str:
    """The command, then each kernel as built, as a shell comment."""
    built = f"  # {'; '.join(h.kernels)}" if h.kernels else ""
    return f"reproduce: {h.reproduce}{built}"


def lines(h: Headline) -> list[str]:
    """The headline as text, its title first."""
    rows = table(h).text() if h.rows else []
    out = [title(h), *(f"  {x}" for x in rows)]
    if h.no_samples:
        out.append(f"  no valid samples: {', '.join(h.no_samples)}")
    return out + [f"  {others_line(h)}", f"  {reproduce_line(h)}"]


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
    return md + [
        others_line(h)[0].upper() + others_line(h)[1:] + ".",
        "",
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
        f"<p>{escape(others_line(h))}</p><p>Reproduce:</p><pre>",
        escape("\n".join([h.reproduce, *(f"# {k}" for k in h.kernels)])),
        "</pre></section>",
    ]
    return "".join(parts)
