"""Why an added line never ran: the series' ``coverage-reasons`` file.

A series directory may hold, beside its ``series`` file, a file named
``coverage-reasons`` that gives, for added lines the suite never runs, the
reason why. The series' digest covers only the patches the ``series`` file
lists, ``foliolab check`` and ``git am`` read only those, and
``foliolab export`` rewrites only ``*.patch`` and ``series``: the file
changes no kernel's identity and survives an export.

An entry names its lines the way ``coverage.txt`` lists a never-ran line,
without the line number (which moves whenever a patch above it changes),
then gives one reason::

    # comment
    mm/vmscan.c folio_free | folio_unlock(folio);
    mm/vmscan.c folio_free | if (folio_put_testzero(folio))
        environment: a folio with buffers and no mapping, which only a
        truncate that could not drop its buffers leaves behind.

A selector line starts in the first column: the file, the function (``?``
where the report has none), optionally ``#N`` after the function for the
N-th added line of that text in that function (counted in the file's
order over every added line, whatever its state), `` | `` and the line's
text (blanks inside it are compared collapsed). The reason line is
indented: a class from REASON_CLASSES, a colon, a sentence; further
indented lines continue the sentence. A blank line or the next selector
after a reason ends the entry.

Only never-ran lines take a reason, and a reason never makes a line count
as run. A selector that matches no never-ran line of the report is stale
(its line ran, changed, or went away) and the report names it, so a reason
cannot outlive its line unnoticed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NoReturn

from foliolab.coverage.lines import (
    REASON_CLASSES,
    LineResult,
    LineState,
    Stale,
)
from foliolab.errors import UsageError

FILE_NAME = "coverage-reasons"

_SELECTOR = re.compile(r"^(\S+)\s+(\S+?)(?:#(\d+))?\s+\|\s?(.*)$")
_REASON = re.compile(r"^\s+([a-z-]+):\s*(.*)$")
_LINE_NUMBER = re.compile(r":\d+$")


class ReasonsError(UsageError):
    """A coverage-reasons file that cannot be read: one line, naming the
    file and the line."""


def normal(text: str) -> str:
    """A line's text as selectors compare it: blanks collapsed."""
    return " ".join(text.split())


@dataclass(frozen=True)
class Selector:
    path: str
    function: str  # "?": the report names none
    text: str  # normal()
    ordinal: int | None  # the N-th of that text in that function
    where: str  # "FILE:LINE" of the selector

    def key(self) -> tuple[str, str, str]:
        return (self.path, self.function, self.text)

    def shown(self) -> str:
        n = f"#{self.ordinal}" if self.ordinal else ""
        return f"{self.path} {self.function}{n} | {self.text}"


@dataclass(frozen=True)
class Entry:
    selectors: tuple[Selector, ...]
    klass: str
    reason: str
    where: str  # "FILE:LINE" of its reason line


@dataclass
class Reasons:
    path: Path  # the file, as the reports name it
    entries: list[Entry] = field(default_factory=list)


def parse(text: str, name: str) -> list[Entry]:
    """The entries of a coverage-reasons file; ReasonsError, naming
    ``name`` and the line, for the first thing wrong in it."""
    entries: list[Entry] = []
    selectors: list[Selector] = []
    reason: list[str] = []
    klass, reason_at = "", ""
    seen: dict[tuple[object, ...], str] = {}

    def fail(n: int, message: str) -> NoReturn:
        raise ReasonsError(
            f"{name}:{n}: {message}",
            hint='see docs/manual.md, "Changed-line coverage"',
        )

    def close(n: int) -> None:
        nonlocal selectors, reason, klass, reason_at
        if selectors and not klass:
            fail(
                n,
                f"the entry of {selectors[0].shown()!r} has no "
                "reason line (indented CLASS: sentence)",
            )
        if klass:
            entries.append(
                Entry(
                    tuple(selectors),
                    klass,
                    " ".join(reason).strip(),
                    reason_at,
                )
            )
        selectors, reason, klass, reason_at = [], [], "", ""

    lines = text.split("\n")
    for n, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("#"):
            continue
        if not stripped:
            close(n)
            continue
        if not line[0].isspace():  # a selector
            if klass:
                close(n)
            m = _SELECTOR.match(line.rstrip())
            if not m:
                fail(
                    n,
                    "a selector is FILE FUNCTION | TEXT (the line as "
                    "coverage.txt lists it, without :LINE)",
                )
            path, function, ordinal, body = m.groups()
            if _LINE_NUMBER.search(path):
                fail(
                    n,
                    f"{path}: give the function and the line's text, "
                    "not a line number",
                )
            if not normal(body):
                fail(n, "a selector needs the line's text after '|'")
            sel = Selector(
                path,
                function,
                normal(body),
                int(ordinal) if ordinal else None,
                f"{name}:{n}",
            )
            ident = (sel.key(), sel.ordinal)
            if ident in seen:
                fail(n, f"{sel.shown()!r} is already given at {seen[ident]}")
            seen[ident] = sel.where
            if sel.ordinal == 0:
                fail(n, "#N counts from 1")
            selectors.append(sel)
            continue
        if klass:  # the sentence goes on
            reason.append(stripped)
            continue
        m = _REASON.match(line)
        if not selectors:
            fail(n, "an indented line with no selector above it")
        if not m:
            fail(
                n,
                "the reason line is CLASS: sentence, CLASS one of "
                + ", ".join(REASON_CLASSES),
            )
        if m.group(1) not in REASON_CLASSES:
            fail(
                n,
                f"unknown reason class {m.group(1)!r}: one of "
                + ", ".join(REASON_CLASSES),
            )
        if not m.group(2).strip():
            fail(n, "the reason needs a sentence after its class")
        klass, reason_at = m.group(1), f"{name}:{n}"
        reason = [m.group(2).strip()]
    close(len(lines))
    return entries


def read(directory: Path | None, shown: str | None = None) -> Reasons | None:
    """The reasons beside a series (None: the series has no such file);
    ReasonsError for a malformed one. ``shown`` is how reports name the
    file (default: its path)."""
    if directory is None:
        return None
    path = Path(directory) / FILE_NAME
    if not path.is_file():
        return None
    name = shown or str(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ReasonsError(f"{name}: unreadable ({e})") from None
    return Reasons(Path(name), parse(text, name))


_STATE_WORDS = {
    "ran": "ran",
    "not-executable": "is not executable",
    "not-built": "is not built",
    "not-profiled": "is not profiled",
    "no-data": "has no data",
}


def apply(
    results: list[LineResult], reasons: Reasons | None
) -> tuple[list[LineResult], list[Stale]]:
    """``results`` (coverage.LineResult, in the report's order) with each
    never-ran line that an entry names given its class and reason, and the
    selectors that named no never-ran line."""
    if reasons is None:
        return list(results), []
    # by file and text; the function is compared where the report names
    # one (a line it names none for matches the selector's function)
    index: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(results):
        index.setdefault((r.path, normal(r.text)), []).append(i)
    out = list(results)
    given: dict[int, str] = {}  # result index -> its entry's where
    stale: list[Stale] = []
    for entry in reasons.entries:
        for sel in entry.selectors:
            hits = [
                i
                for i in index.get((sel.path, sel.text), [])
                if (results[i].function or "?") == sel.function
                or results[i].function is None
            ]
            hits.sort(key=lambda i: results[i].line)
            if sel.ordinal is not None:
                hits = hits[sel.ordinal - 1 : sel.ordinal]
            never = [
                i for i in hits if results[i].state is LineState.NEVER_RAN
            ]
            if not hits:
                stale.append(
                    Stale(
                        sel.where,
                        sel.shown(),
                        "matches no added line of this series"
                        if sel.ordinal is None
                        else f"there is no added line #{sel.ordinal} "
                        "of that text in that function",
                    )
                )
                continue
            if not never:
                stale.append(
                    Stale(
                        sel.where,
                        sel.shown(),
                        "no never-ran line: "
                        + ", ".join(
                            f"{results[i].where} "
                            + _STATE_WORDS.get(
                                results[i].state.value, results[i].state.value
                            )
                            for i in hits
                        ),
                    )
                )
                continue
            for i in never:
                if i in given and given[i] != entry.where:
                    stale.append(
                        Stale(
                            sel.where,
                            sel.shown(),
                            f"{results[i].where} already has the reason at "
                            f"{given[i]}",
                        )
                    )
                    continue
                given[i] = entry.where
                out[i] = replace(
                    results[i], reason_class=entry.klass, reason=entry.reason
                )
    return out, stale
