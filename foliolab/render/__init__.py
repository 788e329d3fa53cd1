"""Rendering an analysed run (analyse.Analysis): the terminal table
(text.py), report.md (markdown.py) and the plots (plots.py). A table is
one model, Table, that the text and the markdown renderers both draw."""

from __future__ import annotations

import math
import shlex
import textwrap
from dataclasses import dataclass, field
from html import escape

from foliolab import executors
from foliolab.analysis import stats
from foliolab.analysis.countanalysis import CountAnalysis
from foliolab.analysis.fdr import FdrFamily
from foliolab.analysis.reproduce import same_kernel
from foliolab.analysis.workloadstats import StatRow
from foliolab.manifest import VARIANTS, RunManifest
from foliolab.paths import PROJECT_ROOT


@dataclass(frozen=True)
class Column:
    head: str
    width: int = 12  # in text; markdown sizes itself
    left: bool = False  # aligned left (names), else right
    cut: bool = False  # cut to its width in text


@dataclass
class Table:
    """Columns and rows of cells, drawn as aligned text or markdown."""

    columns: list[Column]
    rows: list[list[str]] = field(default_factory=list)
    # HTML only: a class per row (its verdict: better, worse, changed)
    # and per cell; the text and markdown drawings ignore them
    classes: list[str] = field(default_factory=list)
    cell_classes: list[list[str]] = field(default_factory=list)

    def add(
        self, *cells: str, cls: str = "", cell_cls: list[str] | None = None
    ) -> None:
        self.rows.append([str(c) for c in cells])
        self.classes.append(cls)
        self.cell_classes.append(list(cell_cls or []))

    def text(self) -> list[str]:
        def line(cells: list[str]) -> str:
            return " ".join(
                f"{c[: col.width] if col.cut else c:<{col.width}}"
                if col.left
                else f"{c:>{col.width}}"
                for c, col in zip(cells, self.columns)
            ).rstrip()

        return [
            line([c.head for c in self.columns]),
            *(line(r) for r in self.rows),
        ]

    def html(self, cls: str = "") -> str:
        """The table as HTML (cells escaped here), each row and cell with
        the class it was added with."""
        head = "".join(f"<th>{escape(c.head)}</th>" for c in self.columns)

        def row(i: int, r: list[str]) -> str:
            rc = self.classes[i] if i < len(self.classes) else ""
            cc = self.cell_classes[i] if i < len(self.cell_classes) else []
            cells = "".join(
                f'<td class="{"l" if col.left else "r"}'
                f'{" " + cc[j] if j < len(cc) and cc[j] else ""}">'
                f"{escape(c)}</td>"
                for j, (c, col) in enumerate(zip(r, self.columns))
            )
            return (f'<tr class="{rc}">' if rc else "<tr>") + cells + "</tr>\n"

        body = "".join(row(i, r) for i, r in enumerate(self.rows))
        return (
            f'<table class="{cls}"><thead><tr>{head}</tr></thead>'
            f"<tbody>\n{body}</tbody></table>"
        )

    def markdown(self) -> list[str]:
        return [
            "| " + " | ".join(c.head for c in self.columns) + " |",
            "|" + "---|" * len(self.columns),
            *("| " + " | ".join(r) + " |" for r in self.rows),
        ]


# One sign everywhere (the headline, the tables, results.json's
# pct_change): + = larger than the baseline, as LKP's %change; whether
# larger is better is the metric's own (lower, higher, or none).
SIGN = (
    "%change: + = larger than the baseline, whatever is better;\neach "
    "metric's better direction is given (lower, higher, or none: a "
    "change, neither better nor worse)"
)
# How a secondary metric is decided (analysis/fdr.py), under the rule
# of one test that a lead metric keeps.
SECONDARY_RULE = (
    ";\na secondary metric (not its workload's lead) is one of many: "
    "significant when that CI excludes 1 and q < 0.05, its "
    "Benjamini-Hochberg adjusted p over the run's secondary metrics; "
    "one whose samples on a kernel fall in two modes gets no verdict"
)
LEGEND = (
    SIGN + ";\n*x%* = significant: the 95% bootstrap CI of "
    "patched/vanilla excludes 1 and Mann-Whitney p < 0.05" + SECONDARY_RULE
)


def legend(names: list[str]) -> str:
    """The table legend, in the kernels' own names."""
    if list(names) == list(VARIANTS):
        return LEGEND
    return (
        SIGN + ";\n*x%* = significant: the 95% bootstrap CI of "
        f"kernel/{names[0]} excludes 1 and Mann-Whitney p < 0.05"
        + SECONDARY_RULE
    )


def fdr_line(families: list[FdrFamily]) -> str:
    """One line: how many secondary metrics were tested together, at
    what false discovery rate, how many hold (and how many the rule of
    one test would have called), how many are in two modes."""
    if not families:
        return ""
    q = families[0].q

    def one(f: FdrFamily) -> str:
        text = (
            f"{f.tested} tested, {f.held} hold "
            f"({f.raw} at p < {stats.ALPHA:g} alone)"
        )
        if f.two_modes:
            text += f", {f.two_modes} in two modes (no verdict)"
        if not f.alone_can_hold:
            # BH's first step asks one p for q/m: say when none can give
            # it, so "0 hold" reads as too few runs, not as no change
            text += (
                f"; the smallest p these samples allow, {fmt_p(f.min_p)}, "
                f"is above {q:g}/{f.tested}: more runs"
            )
        return text

    head = f"secondary metrics (Benjamini-Hochberg, FDR {100 * q:g}%"
    if len(families) == 1:
        return f"{head}): {one(families[0])}"
    return f"{head}, per kernel): " + "; ".join(
        f"{f.kernel} {one(f)}" for f in families
    )


def modes_cell(kernel: str, modes: stats.Modes | None, mean: float) -> str:
    """A kernel's samples of a metric: in two modes, how many near each
    (the medians of the two sides); else its mean."""
    if modes is None:
        return f"{kernel} {fmt(mean)}"
    return (
        f"{kernel} two modes: {modes.low_n} of {modes.n} near "
        f"{fmt(modes.low)}, {modes.high_n} near {fmt(modes.high)}"
    )


def modes_text(rows: list[StatRow]) -> str:
    """One metric's kernels, as modes_cell() says each: the baseline,
    then every kernel."""
    first = rows[0]
    return "; ".join(
        [
            modes_cell(first.baseline, first.base_modes, first.base.mean),
            *(modes_cell(r.kernel, r.other_modes, r.other.mean) for r in rows),
        ]
    )


def q_cell(r: StatRow) -> str:
    """A secondary row's adjusted p; "-" for a lead metric and a row with
    no test."""
    return "-" if r.q_value is None else fmt_p(r.q_value)


def uses_base(m: RunManifest) -> bool:
    """Whether a kernel of the run is the base or built on it: the
    manifest records the default --base's version in any run, and a run
    of debian: or git: kernels has no base of its own."""
    return bool(m.base_version) and any(
        k.spec.split("+", 1)[0] == "base" for k in m.kernels
    )


def title(m: RunManifest) -> str:
    """The report's first line: the kernels as given; the base's version
    only when a kernel uses it."""
    base = f"base {m.base_version}" if uses_base(m) else ""
    if same_kernel(m):
        return (
            "foliolab A/A comparison: "
            + " and ".join(f"{k.name}={k.spec}" for k in m.kernels)
            + ", the same kernel"
            + (f" ({base})" if base else "")
        )
    if m.names == list(VARIANTS):
        return (
            f"foliolab comparison: {m.patches_label} vs "
            f"vanilla {m.base_version}"
        )
    return (
        "foliolab comparison of "
        + ", ".join(f"{k.name}={k.spec}" for k in m.kernels)
        + f" ({base + '; ' if base else ''}baseline {m.names[0]})"
    )


def executor_note(m: RunManifest) -> str:
    """How the boots ran, when not by foliolab's QEMU here: in the words
    of the executor class that ran them (the registry's)."""
    return executors.report_note(m.executor)


def fmt_count(x: float) -> str:
    """An exact count, or a mean of exact counts, in full."""
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.1f}"


# Significant digits of a value below 1000 (larger ones are shown whole,
# with thousands separators: counts are exact to the last digit).
DIGITS = 4


def fmt(x: float | None) -> str:
    """Every number of a table in one style: whole with thousands
    separators from 1000 on, else four significant digits, never an
    exponent in the range a metric has."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if abs(x) >= 1000 or float(x).is_integer():
        return f"{x:,.0f}"
    if abs(x) < 1e-4:
        return f"{x:.1e}"
    decimals = DIGITS - 1 - math.floor(math.log10(abs(x)))
    return f"{x:.{max(0, decimals)}f}"


fmt_small = fmt


def fmt_p(p: float | None) -> str:
    return "-" if p is None or math.isnan(p) else f"{p:.2g}"


def fmt_ratio(x: float | None) -> str:
    """A ratio to the baseline: never inf (a change from 0 has no ratio)
    or nan."""
    if x is None or math.isnan(x):
        return "-"
    if math.isinf(x):
        return "from 0"
    return f"{x:.3f}"


def change_cell(base_mean: float, mean: float, digits: int = 2) -> str:
    """%change of ``mean`` against ``base_mean`` (+ = larger), with a
    change from or to 0 said as such, never as nan or inf."""
    pct = stats.pct_change(base_mean, mean)
    if pct is None:
        return (
            "-"
            if math.isnan(base_mean) or math.isnan(mean)
            else (f"{0:.{digits}f}%" if mean == 0 else "from 0")
        )
    text = f"{pct:+.{digits}f}%"
    return f"{text} (to 0)" if mean == 0 else text


# Before a CI in a compact cell: the paired CI (per-round ratios), which
# decides that row (StatRow.decisive); a plain one has no mark.
PAIRED_MARK = "p"


def ci_cell(r: StatRow, plain: bool = False, mark: bool = True) -> str:
    """A StatRow's 95% CI as a table shows it: the one that decides its
    significance (marked PAIRED_MARK where paired, if ``mark``), or with
    ``plain`` the bootstrap CI of the ratio of means; none for exact rows
    (no spread), below MIN_N_FOR_CI samples (saying why) and from 0 (no
    ratio)."""
    if r.exact:
        return "exact"
    if not r.ci_known:
        return f"none (n<{stats.MIN_N_FOR_CI})"
    low, high = (r.ci_low, r.ci_high) if plain else r.decisive_ci
    if not (math.isfinite(low) and math.isfinite(high)):
        return "-"
    paired = not plain and mark and r.decisive == "paired"
    return f"{PAIRED_MARK if paired else ''}[{low:.3f}, {high:.3f}]"


def p_cell(r: StatRow, plain: bool = False) -> str:
    """The p that decides with ci_cell()'s CI (or, ``plain``, the
    Mann-Whitney p of the ratio of means)."""
    if r.exact:
        return "exact"
    return fmt_p(r.p_value if plain else r.decisive_p)


def verdict_class(verdict: str) -> str:
    """The HTML class of a row or cell by its verdict: better, worse,
    changed (significant, no better direction) or ns."""
    return verdict if verdict in ("better", "worse", "changed") else "ns"


def better_cell(better: str) -> str:
    """A metric's better direction, in a table's "better" column."""
    return better if better in ("lower", "higher") else "none"


def profile_table(
    a: CountAnalysis, base: str, other: str, md: bool = False
) -> Table:
    """A differential profile (countanalysis.CountAnalysis) as a table: each
    function's self instructions per window in both kernels."""
    two = [base, other] == list(VARIANTS)
    t = Table(
        [
            Column("function", 36, left=True, cut=True),
            Column(base if md else base[:12]),
            Column(other if md else other[:12]),
            Column("delta"),
            Column("calls v/p" if two and not md else "calls", 17),
        ]
    )
    for r in a.profiles.get(other, []):
        flag = "~" if r.nondeterministic else ("" if md else " ")
        name = f"{flag}`{r.function}`" if md else flag + r.function
        t.add(
            name,
            fmt_count(r.insns[base]),
            fmt_count(r.insns[other]),
            fmt_count(r.delta(base, other)),
            f"{r.calls[base]:.0f}/{r.calls[other]:.0f}",
        )
    return t


def for_reader(arg: str) -> str:
    """A path in the clone said relative to it, so a reader of the report
    can use it: ``base+/abs/clone/patches/7.3`` is ``base+patches/7.3``."""
    return arg.replace(str(PROJECT_ROOT) + "/", "")


def wrapped_command(cmd: list[str], width: int) -> list[str]:
    """``cmd`` as shell lines within ``width`` joined by backslashes, an
    option and its value on one line, paths in the clone relative to it."""
    words: list[str] = []
    i = 0
    while i < len(cmd):
        word = shlex.quote(for_reader(cmd[i]))
        nxt = cmd[i + 1] if i + 1 < len(cmd) else ""
        if word.startswith("--") and "=" not in word and nxt:
            if not nxt.startswith("--"):
                word += " " + shlex.quote(for_reader(nxt))
                i += 1
        words.append(word)
        i += 1
    lines, line = [], ""
    for word in words:
        if line and len(line) + 1 + len(word) + 2 > width:
            lines.append(line + " \\")
            line = "    " + word
        else:
            line = f"{line} {word}" if line else word
    return lines + [line]


def wrap_prose(line: str, width: int) -> list[str]:
    """A line of words within ``width``: its continuation lines indented
    two more than it; a line that fits, or one word too long, as it is."""
    if len(line) <= width:
        return [line]
    indent = line[: len(line) - len(line.lstrip())]
    return textwrap.wrap(
        line,
        width,
        initial_indent="",
        subsequent_indent=indent + "  ",
        break_long_words=False,
        break_on_hyphens=False,
    ) or [line]
