"""Changed-line coverage: which of a series' added lines the suite ran.

Each line a patch added (series/lines.py: as it stands with the whole series
applied) is put in exactly one state, by these rules, in this order:

1. under ``arch/X/`` for another architecture than the guest's: not
   built ("not built for x86_64: arch/arm64/mm/contpte.c");
2. gcov counted the line: ran (count > 0, with the count summed over
   the boots) or never ran (count 0);
3. inside a ``#if``/``#ifdef`` branch the build's .config leaves out
   (ifdefs: conditions of config options only; any other condition is
   never taken as false): not built, naming the condition;
4. in a file gcov has data for: not executable (a declaration, a brace,
   a comment, a macro's body: no code on that line);
5. in a file gcov has no data for: a C source whose object was built
   with profiling but whose data is missing or damaged: no data (never
   "never ran" on the word of data that is not there); a C source with
   no object in a profiled directory: not built (this config does not
   compile it); a C source outside the profiled directories: not
   profiled; a header while some objects' data is missing: no data; a
   header no profiled object has code from: not profiled.

Not built, not profiled and no data are counted apart, by file and
reason, never hidden. Executable = ran + never ran; % = ran / executable.
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from foliolab.coverage import ifdefs
from foliolab.coverage.gcovdata import FileCoverage, GcovData
from foliolab.series import csource
from foliolab.series.lines import PatchInfo, SeriesGroup, SeriesLines, group_of

# class -> what it means (the reports' legend)
REASON_CLASSES = {
    "mglru-off": "runs only with MGLRU off; this run's boots had it on",
    "fault-injection": "an error path: only a failed allocation or "
    "operation reaches it (named: the knob, and whether "
    "the debug config has it)",
    "race": "needs another task to change the folio or its page table in "
    "a window the suite cannot hold open",
    "environment": "needs a kind of memory, file system or device the "
    "guest does not have",
    "config": "needs a kernel config or architecture the coverage kernel "
    "is not",
    "unreachable": "no caller or state reaches it in this tree (a "
    "defensive check, a branch no caller takes)",
    "needs-test": "a guest test can reach it; the suite has none yet (or "
    "one written and not yet run, named)",
}


@dataclass(frozen=True)
class Stale:
    """A selector that gives no never-ran line its reason."""

    where: str  # the selector's FILE:LINE
    selector: str
    why: str

    def line(self) -> str:
        return f"{self.where}: {self.selector}: {self.why}"


class LineState(str, enum.Enum):
    RAN = "ran"
    NEVER_RAN = "never-ran"
    NOT_EXECUTABLE = "not-executable"
    NOT_BUILT = "not-built"
    NOT_PROFILED = "not-profiled"
    NO_DATA = "no-data"


# What each state means, for the reports' legends.
LEGEND = {
    LineState.RAN: "an executable line the suite ran (count: times run, "
    "summed over the boots)",
    LineState.NEVER_RAN: "an executable line the suite never ran (listed "
    "with file:line and its function)",
    LineState.NOT_EXECUTABLE: "gcov has no code on the line (a declaration, "
    "a brace, a comment, a macro's body)",
    LineState.NOT_BUILT: "not compiled for this guest: another "
    "architecture's file, a #if the config leaves out, "
    "or a file the config does not build",
    LineState.NOT_PROFILED: "built, but in no object compiled with "
    "profiling, so not measured",
    LineState.NO_DATA: "its object's coverage data was missing or damaged "
    "(never counted as not run)",
}


@dataclass(frozen=True)
class LineResult:
    patch: int
    path: str
    line: int
    text: str
    state: LineState
    count: int | None = None  # ran / never ran
    function: str | None = None
    why: str = ""  # the states counted apart
    # never ran: the series' coverage-reasons entry for it, if any
    reason_class: str = ""
    reason: str = ""

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class BuildFacts:
    """What the coverage build was: what decides "not built"."""

    arch: str  # foliolab's name, "x86_64"
    linux_arch: str  # its arch/ directory, "x86"
    config: dict[str, str]  # the .config ({}: decide no #if)
    notes: frozenset[str]  # sources built with profiling (.gcno)
    profiled_dirs: tuple[str, ...]


def other_arch(path: str, linux_arch: str) -> bool:
    parts = path.split("/")
    return len(parts) > 2 and parts[0] == "arch" and parts[1] != linux_arch


def classify(
    series: SeriesLines, data: GcovData | None, facts: BuildFacts
) -> list[LineResult]:
    """Every added line of ``series`` in its state (the rules above);
    ``data`` None: no boot sent usable data."""
    out = []
    excluded: dict[str, dict[int, str]] = {}
    functions: dict[str, csource.FunctionMap] = {}
    for a in series.lines:
        final = series.final.get(a.path, [])
        if a.path not in excluded:
            excluded[a.path] = (
                ifdefs.excluded_lines(final, facts.config)
                if facts.config
                else {}
            )
        fc = data.files.get(a.path) if data else None
        function = fc.function_at(a.line) if fc is not None else None
        if function is None:
            # gcov names no function for a line of a static function it
            # inlined everywhere: the source's own says where it stands
            if a.path not in functions:
                functions[a.path] = csource.FunctionMap(final)
            function = functions[a.path].name_at(a.line)
        state, count, why = _state(
            a.path, a.line, fc, data, facts, excluded[a.path]
        )
        out.append(
            LineResult(
                a.patch, a.path, a.line, a.text, state, count, function, why
            )
        )
    return out


def _state(
    path: str,
    line: int,
    fc: FileCoverage | None,
    data: GcovData | None,
    facts: BuildFacts,
    excluded: dict[int, str],
) -> tuple[LineState, int | None, str]:
    if other_arch(path, facts.linux_arch):
        return LineState.NOT_BUILT, None, f"not built for {facts.arch}: {path}"
    if fc is not None and line in fc.counts:
        n = fc.counts[line]
        return (LineState.RAN if n > 0 else LineState.NEVER_RAN), n, ""
    if line in excluded:
        return (
            LineState.NOT_BUILT,
            None,
            f"not built for {facts.arch}: {excluded[line]} in {path}",
        )
    if fc is not None:
        return LineState.NOT_EXECUTABLE, None, ""
    return _file_without_data(path, data, facts)


def _file_without_data(
    path: str, data: GcovData | None, facts: BuildFacts
) -> tuple[LineState, int | None, str]:
    """A line of a file gcov has no counts for (rule 5): what the build
    says first (it holds whatever the boots sent), then the data."""
    if path.endswith(".c"):
        if path in facts.notes:
            why = (
                "no boot sent usable coverage data"
                if data is None
                else data.bad.get(path, "no data file from the guest")
            )
            return LineState.NO_DATA, None, f"no data: {path} ({why})"
        directory = path.rpartition("/")[0]
        if directory in facts.profiled_dirs:
            return (
                LineState.NOT_BUILT,
                None,
                f"not built for {facts.arch}: {path} (this config "
                "compiles no object from it)",
            )
        return (
            LineState.NOT_PROFILED,
            None,
            f"not profiled: {path} (its directory is not profiled)",
        )
    if data is None:
        return (
            LineState.NO_DATA,
            None,
            f"no data: {path} (no boot sent usable coverage data)",
        )
    if data.bad:
        return (
            LineState.NO_DATA,
            None,
            f"no data: {path} (no counts, and the data of "
            f"{len(data.bad)} object(s) is missing or damaged)",
        )
    return (
        LineState.NOT_PROFILED,
        None,
        f"not profiled: {path} (no profiled object has code from it)",
    )


@dataclass
class Tally:
    """The counts of a set of added lines."""

    states: Counter[LineState] = field(
        default_factory=Counter
    )  # LineState -> n
    apart: Counter[str] = field(default_factory=Counter)  # why -> n
    reasons: Counter[str] = field(
        default_factory=Counter
    )  # never ran: class -> n

    @classmethod
    def of(cls, results: list[LineResult]) -> Tally:
        t = cls()
        for r in results:
            t.states[r.state] += 1
            if r.why:
                t.apart[r.why] += 1
            if r.state is LineState.NEVER_RAN and r.reason_class:
                t.reasons[r.reason_class] += 1
        return t

    @property
    def reason_given(self) -> int:
        """Never ran, with a reason (a reason never counts as ran)."""
        return sum(self.reasons.values())

    @property
    def no_reason(self) -> int:
        return self.states[LineState.NEVER_RAN] - self.reason_given

    @property
    def added(self) -> int:
        return sum(self.states.values())

    @property
    def executable(self) -> int:
        return self.states[LineState.RAN] + self.states[LineState.NEVER_RAN]

    @property
    def ran(self) -> int:
        return self.states[LineState.RAN]

    @property
    def percent(self) -> float | None:
        return 100.0 * self.ran / self.executable if self.executable else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "executable": self.executable,
            "ran": self.ran,
            "percent": (
                round(self.percent, 1) if self.percent is not None else None
            ),
            **{
                s.value: self.states[s]
                for s in LineState
                if s is not LineState.RAN
            },
            "never-ran-reason-given": self.reason_given,
            "never-ran-no-reason": self.no_reason,
            "never-ran-by-reason": dict(sorted(self.reasons.items())),
            "apart": dict(sorted(self.apart.items())),
        }


@dataclass
class CoverageReport:
    """The classified lines of a series, and what the run was."""

    patches: list[PatchInfo]
    results: list[LineResult]
    facts: BuildFacts
    groups: list[SeriesGroup] = field(default_factory=list)
    superseded: dict[int, int] = field(default_factory=dict)
    boots: list[str] = field(default_factory=list)  # whose data is in it
    problems: list[str] = field(default_factory=list)  # one line each
    # the series' coverage-reasons file as reports name it ("" none), and
    # its selectors that gave no never-ran line a reason
    reasons_file: str = ""
    stale: list[Stale] = field(default_factory=list)

    def of_patch(self, number: int) -> list[LineResult]:
        return [r for r in self.results if r.patch == number]

    def group_lines(self) -> list[tuple[str, list[int], list[LineResult]]]:
        """(label, patch numbers, lines) per group of the series map, in
        the series' order; a patch in no entry is its own group."""
        order: list[str] = []
        members: dict[str, list[int]] = {}
        for p in self.patches:
            label = group_of(self.groups, p.number) or f"{p.number:04d}"
            if label not in members:
                order.append(label)
                members[label] = []
            members[label].append(p.number)
        return [
            (
                label,
                members[label],
                [r for r in self.results if r.patch in members[label]],
            )
            for label in order
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "arch": self.facts.arch,
            "profiled_dirs": list(self.facts.profiled_dirs),
            "boots": self.boots,
            "problems": self.problems,
            "legend": {s.value: LEGEND[s] for s in LineState},
            "reasons_file": self.reasons_file or None,
            "reason_classes": REASON_CLASSES,
            "stale_reasons": [
                {"where": s.where, "selector": s.selector, "why": s.why}
                for s in self.stale
            ],
            "totals": Tally.of(self.results).as_dict(),
            "groups": [
                {
                    "label": label,
                    "patches": numbers,
                    "totals": Tally.of(lines).as_dict(),
                }
                for label, numbers, lines in self.group_lines()
            ]
            if self.groups
            else [],
            "patches": [
                {
                    "number": p.number,
                    "name": p.name,
                    "subject": p.subject,
                    "group": group_of(self.groups, p.number),
                    "superseded": self.superseded.get(p.number, 0),
                    "totals": Tally.of(self.of_patch(p.number)).as_dict(),
                    "lines": [
                        {
                            "path": r.path,
                            "line": r.line,
                            "state": r.state.value,
                            "count": r.count,
                            "function": r.function,
                            "why": r.why,
                            "text": r.text,
                            **(
                                {
                                    "reason_class": r.reason_class,
                                    "reason": r.reason,
                                }
                                if r.reason_class
                                else {}
                            ),
                        }
                        for r in self.of_patch(p.number)
                    ],
                }
                for p in self.patches
            ],
        }

    def text(self) -> str:
        return "\n".join(_text_lines(self)) + "\n"


def _pct(t: Tally) -> str:
    return f"{t.percent:.1f}%" if t.percent is not None else "-"


def _never(t: Tally, reasons: bool) -> str:
    """ "never ran N", and with a reasons file how many of them have a
    reason."""
    n = t.states[LineState.NEVER_RAN]
    if not n or not reasons:
        return f"never ran {n}"
    return (
        f"never ran {n} (reason given {t.reason_given}, no reason "
        f"{t.no_reason})"
    )


def _row(t: Tally, reasons: bool) -> str:
    s = t.states
    return (
        f"added {t.added}, executable {t.executable}, ran {t.ran} "
        f"({_pct(t)}), {_never(t, reasons)}, not "
        f"executable {s[LineState.NOT_EXECUTABLE]}, not built "
        f"{s[LineState.NOT_BUILT]}, not profiled "
        f"{s[LineState.NOT_PROFILED]}, no data {s[LineState.NO_DATA]}"
    )


def _text_lines(rep: CoverageReport) -> list[str]:
    f = rep.facts
    out = [
        f"Changed-line coverage: {len(rep.patches)} patch(es) on the "
        f"{f.arch} coverage kernel",
        f"boots: {', '.join(rep.boots) or 'none with usable data'}"
        + (" (counts summed)" if len(rep.boots) > 1 else ""),
        f"profiled directories: {', '.join(f.profiled_dirs) or 'none'}",
    ]
    out.append(
        f"reasons: {rep.reasons_file}"
        if rep.reasons_file
        else "reasons: none (the series has no coverage-reasons file)"
    )
    out += [f"problem: {p}" for p in rep.problems]
    out += ["", "Legend"]
    out += [f"  {s.value:<15} {LEGEND[s]}" for s in LineState]
    out += [
        "  %               ran / executable (executable = ran + never "
        "ran; a reason never counts as ran)"
    ]
    total = Tally.of(rep.results)
    if total.reasons or rep.reasons_file:
        out += ["", "Reasons a never-ran line is given (coverage-reasons)"]
        out += [f"  {k:<15} {v}" for k, v in REASON_CLASSES.items()]
    out += ["", f"Totals: {_row(total, bool(rep.reasons_file))}"]
    if total.reasons:
        out.append(
            "  never ran, by reason: "
            + ", ".join(
                f"{k} {total.reasons[k]}"
                for k in REASON_CLASSES
                if total.reasons[k]
            )
            + f"; no reason {total.no_reason}"
        )
    if rep.stale:
        out += [
            "",
            f"Stale reasons: {len(rep.stale)} selector(s) of "
            f"{rep.reasons_file} give no never-ran line a reason",
        ]
        out += [f"  {s.line()}" for s in rep.stale]
    if rep.groups:
        out += ["", "By change (the cover letter's series map)"]
        for label, numbers, lines in rep.group_lines():
            t = Tally.of(lines)
            span = f"{numbers[0]:04d}" + (
                f"-{numbers[-1]:04d}" if len(numbers) > 1 else ""
            )
            out.append(
                f"  {span:<10} {label}: {t.added} added, "
                f"{t.executable} executable, {t.ran} ran "
                f"({_pct(t)})"
                + (
                    f"; {_never(t, True)}"
                    if rep.reasons_file and t.states[LineState.NEVER_RAN]
                    else ""
                )
            )
    out += ["", "By patch"]
    for p in rep.patches:
        lines = rep.of_patch(p.number)
        t = Tally.of(lines)
        out.append(f"{p.number:04d} {p.subject or p.name}")
        out.append(f"     {_row(t, bool(rep.reasons_file))}")
        gone = rep.superseded.get(p.number, 0)
        if gone:
            out.append(
                f"     ({gone} of its added line(s) a later patch "
                "changed or removed: not counted here)"
            )
        never = [r for r in lines if r.state is LineState.NEVER_RAN]
        if never:
            out.append("     never ran:")
            last = None
            for r in never:
                out.append(
                    f"       {r.where}  {r.function or '?'}  | "
                    f"{r.text.strip()}"
                )
                if r.reason_class:
                    same = (r.reason_class, r.reason) == last
                    out.append(
                        f"           {r.reason_class}: "
                        + ("(as above)" if same else r.reason)
                    )
                    last = (r.reason_class, r.reason)
                else:
                    last = None
                    if rep.reasons_file:
                        out.append("           (no reason given)")
        for why, n in sorted(t.apart.items()):
            out.append(f"     {why} ({n} line{'s' if n != 1 else ''})")
    return out
