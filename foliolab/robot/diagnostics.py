"""What the compilers say, read into diagnostics, and the ones a patch
adds (the tree-wide checks read their own output: checks.py).

A diagnostic is a file, a line, a severity and a message (gcc and clang
with W=1, sparse, objtool, kernel-doc, checkpatch). The robot reports a
diagnostic only when the patch adds it: it is compared with what the
same cell said of the tree before the patch, and a warning that was
there already is not new when an earlier hunk moved it down the file.
So two diagnostics are the same when their file, severity, message and
the text of the source line they point at are the same: the line's
number is left out. A message that names a line of its own (gcc's "at
mm/rmap.c:1203") has the number masked for the same reason. The same
warning on two different lines of the same text counts twice: a patch
that adds a second such line adds one diagnostic.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

ERROR = "error"
WARNING = "warning"
CHECK = "check"  # checkpatch's CHECK (--strict)


@dataclass(frozen=True)
class Diagnostic:
    """One thing a tool said of a place in the tree."""

    tool: str  # gcc, clang, sparse, objtool, kernel-doc, ...
    file: str  # relative to the source tree
    line: int  # 0: the file as a whole
    severity: str  # error, warning, check
    message: str
    source: str = ""  # the text of that line, stripped
    detail: str = ""  # continuation lines (sparse's expected/got)

    def key(self) -> tuple[str, str, str, str, str]:
        """What makes two diagnostics the same, whatever their line
        numbers (see the module's docstring)."""
        return (
            self.tool,
            self.file,
            self.severity,
            normal(self.message),
            self.source,
        )

    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def text(self) -> str:
        extra = f" ({self.detail})" if self.detail else ""
        return f"{self.severity}: {self.message.translate(_QUOTES)}{extra}"

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "file": self.file,
            "line": self.line,
            "severity": self.severity,
            "message": self.message,
            "source": self.source,
            "detail": self.detail,
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> Diagnostic:
        return Diagnostic(
            d["tool"],
            d["file"],
            int(d["line"]),
            d["severity"],
            d["message"],
            d.get("source", ""),
            d.get("detail", ""),
        )


_LINE_REF = re.compile(r"(\S+\.[chS]):\d+(?::\d+)?")


_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'"})


def normal(message: str) -> str:
    """A message as it is compared: gcc's quotes as in the C locale (a
    UTF-8 one gives typographic quotes, and kbuild unexports LC_ALL), and
    line numbers of other places masked."""
    return _LINE_REF.sub(r"\1:#", message.translate(_QUOTES))


# file:line[:col]: severity: message  (gcc, clang, sparse)
_COMPILER = re.compile(
    r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)?\s*"
    r"(?P<sev>fatal error|error|warning|note):\s*(?P<msg>.*)$"
)
# sparse's continuation: file:line:col:    text (no severity)
_SPARSE_MORE = re.compile(
    r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:\d+:)?\s{2,}(?P<msg>\S.*)$"
)
# objtool and the assembler's file-level ones: mm/rmap.o: warning: ...
_FILE_LEVEL = re.compile(
    r"^(?P<file>[^\s:][^:]*\.o): (?P<sev>error|warning): (?P<msg>.*)$"
)
# make's own words for a target it cannot make
_NO_RULE = re.compile(r"No rule to make target '([^']+)'")


class PathMap:
    """Compiler paths as paths relative to the source tree: absolute ones
    under it, and relative ones from the build directory (ccache's base
    directory makes gcc see ``../../src/mm/rmap.c``)."""

    def __init__(self, srctree: str, objtree: str) -> None:
        self.src = os.path.normpath(srctree)
        self.obj = os.path.normpath(objtree)

    def __call__(self, path: str) -> str:
        p = path if os.path.isabs(path) else os.path.join(self.obj, path)
        p = os.path.normpath(p)
        for top in (self.src, self.obj):
            if p == top or p.startswith(top + os.sep):
                return os.path.relpath(p, top)
        return path


def parse_compiler(
    text: str, tool: str, paths: Callable[[str], str] = lambda p: p
) -> list[Diagnostic]:
    """gcc's, clang's, sparse's or objtool's output (a make log) as
    diagnostics; notes, the source excerpts under a message and make's
    own lines are not diagnostics. ``paths`` maps a path as the tool
    printed it to one relative to the source tree."""
    out: list[Diagnostic] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        m = _COMPILER.match(line)
        if m:
            sev = m.group("sev")
            if sev == "note":
                continue
            out.append(
                Diagnostic(
                    tool,
                    paths(m.group("file")),
                    int(m.group("line")),
                    ERROR if sev.endswith("error") else WARNING,
                    m.group("msg").strip().translate(_QUOTES),
                )
            )
            continue
        m = _SPARSE_MORE.match(line)
        if m and out and tool == "sparse":
            last = out[-1]
            if (last.file, last.line) == (
                paths(m.group("file")),
                int(m.group("line")),
            ):
                more = m.group("msg").strip()
                out[-1] = replace(
                    last, detail=(last.detail + "; " + more).lstrip("; ")
                )
            continue
        m = _FILE_LEVEL.match(line)
        if m:
            out.append(
                Diagnostic(
                    "objtool" if "objtool" in line else tool,
                    paths(m.group("file")),
                    0,
                    m.group("sev"),
                    m.group("msg").strip(),
                )
            )
            continue
        m = _NO_RULE.search(line)
        if m:
            out.append(
                Diagnostic(
                    "make",
                    paths(m.group(1)),
                    0,
                    ERROR,
                    "no rule to make this target",
                )
            )
    return out


def with_sources(
    diags: list[Diagnostic], read_line: Callable[[str, int], str]
) -> list[Diagnostic]:
    """Each diagnostic with the text of its line (``read_line(file,
    line)``, "" when it cannot say), the key of the comparison."""
    return [
        replace(d, source=(read_line(d.file, d.line) or "").strip())
        if d.line
        else d
        for d in diags
    ]


def unique(diags: Sequence[Diagnostic]) -> list[Diagnostic]:
    """One of each (file, line, message): a header's warning is printed
    once per object that includes it."""
    seen: dict[tuple[object, ...], Diagnostic] = {}
    for d in diags:
        seen.setdefault((d.tool, d.file, d.line, d.severity, d.message), d)
    return list(seen.values())


def added(
    before: Sequence[Diagnostic], after: Sequence[Diagnostic]
) -> list[Diagnostic]:
    """The diagnostics of ``after`` that ``before`` does not have, compared
    by key (file, severity, message, the line's text), counted per
    distinct line: when ``after`` has a key on more lines than ``before``
    the extra ones are new (the last lines of the file, which an added
    line is no likelier to be than any other, but one must be named)."""
    had = Counter(d.key() for d in unique(before))
    new = []
    for d in sorted(unique(after), key=lambda d: (d.file, d.line)):
        k = d.key()
        if had[k] > 0:
            had[k] -= 1
        else:
            new.append(d)
    return new
