"""The robot's tree-wide checks: the ones run once per prefix or patch,
not once per cell (kernel-doc, checkpatch).

A check is one object: the name of its cell in the report, what it
reads (each prefix's tree, or each patch), how it runs, and how its
output is read into diagnostics. What it reads says the rest: a check
of the trees runs on the base and every prefix, each checked out for
it, its result kept under the tree's hash; patch i's findings are what
prefix i says that prefix i-1 does not. A check of the patches runs on
each patch with the scripts of whatever tree is checked out, and all it
says of patch i is patch i's.

A new check is a subclass here (or in a module of its own) and a line
in CHECKS; the robot runs and reports every check in CHECKS alike.
"""

from __future__ import annotations

import enum
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar, Protocol

from foliolab import proc
from foliolab.robot import diagnostics as dg
from foliolab.robot.prefixes import Prefix, SeriesTrees
from foliolab.series import check as series_check


class Reads(enum.Enum):
    """What a tree-wide check reads."""

    # each prefix's files, the base's too: run with the prefix checked
    # out, before the cells (which check out the prefixes again), its
    # diagnostics compared with the prefix before's
    TREES = "trees"
    # each patch, with the tree's scripts: run after the cells on the
    # tree they left, so the worktree does not move for it
    PATCHES = "patches"


class Checkout(Protocol):
    """What a tree-wide check may ask of the robot's run: its worktree,
    the files the series changes and a file as a commit has it."""

    @property
    def worktree(self) -> Path: ...

    def changed(self) -> list[str]: ...

    def lines(self, commit: str, path: str) -> list[str] | None: ...


class TreeCheck(ABC):
    """A check the robot runs on each prefix's tree or each patch."""

    cell: ClassVar[str]  # its name in the report: all/NAME
    reads: ClassVar[Reads]

    def inputs(self, tree: Checkout, prefix: Prefix) -> list[str]:
        """What it checks of ``prefix`` (for a check of the trees, part
        of the name its result is kept under)."""
        return []

    @abstractmethod
    def run(self, tree: Checkout, prefix: Prefix, inputs: list[str]) -> str:
        """Its output on ``prefix`` (for a check of the patches, on the
        patch that made it), in the worktree as the robot checked it
        out."""

    @abstractmethod
    def parse(self, output: str, prefix: Prefix) -> list[dg.Diagnostic]:
        """Its output as diagnostics (the robot adds the text of each
        line a check of the trees points at)."""

    def prefixes(self, series: SeriesTrees) -> tuple[Prefix, ...]:
        """The prefixes it runs on: the base too for a check of the
        trees, which the first patch is held against."""
        if self.reads is Reads.TREES:
            return series.prefixes
        return series.prefixes[1:]

    def of_patch(
        self, said: Mapping[int, Sequence[dg.Diagnostic]], index: int
    ) -> list[dg.Diagnostic]:
        """What patch ``index`` adds, from what it said of each prefix."""
        if self.reads is Reads.TREES:
            return dg.added(said[index - 1], said[index])
        return list(said[index])


@dataclass(frozen=True)
class Said:
    """What a tree-wide check said of each prefix it ran on."""

    check: TreeCheck
    by_prefix: Mapping[int, Sequence[dg.Diagnostic]]

    def of_patch(self, index: int) -> list[dg.Diagnostic]:
        return self.check.of_patch(self.by_prefix, index)


# ---- kernel-doc ------------------------------------------------------

# kernel-doc: "Warning: mm/vmscan.c:240 No description found for ..."
# (7.3's Python kernel-doc), "mm/vmscan.c:240: warning: ..." (6.12's Perl)
_KDOC = (
    re.compile(
        r"^(?P<sev>Warning|Error): (?P<file>[^\s:]+):(?P<line>\d+)"
        r":? (?P<msg>.*)$"
    ),
    re.compile(
        r"^(?P<file>[^\s:]+):(?P<line>\d+): (?P<sev>warning|error)"
        r": (?P<msg>.*)$"
    ),
)


def parse_kernel_doc(text: str) -> list[dg.Diagnostic]:
    """``scripts/kernel-doc -none -Wall`` output as diagnostics (each
    once: 7.3's kernel-doc repeats a header's warnings per file)."""
    out: dict[tuple[object, ...], dg.Diagnostic] = {}
    for line in text.splitlines():
        for pat in _KDOC:
            m = pat.match(line.strip())
            if m:
                d = dg.Diagnostic(
                    "kernel-doc",
                    m.group("file"),
                    int(m.group("line")),
                    m.group("sev").lower(),
                    m.group("msg").strip(),
                )
                out.setdefault((d.file, d.line, d.message), d)
                break
    return list(out.values())


class KernelDoc(TreeCheck):
    """kernel-doc -none -Wall on the series' changed .c and .h files as
    they are in each prefix (W=1's own kernel-doc run is turned off: see
    toolchain.make_argv)."""

    cell = "all/kernel-doc"
    reads = Reads.TREES

    def inputs(self, tree: Checkout, prefix: Prefix) -> list[str]:
        return [
            f
            for f in tree.changed()
            if f.endswith((".c", ".h"))
            and tree.lines(prefix.commit, f) is not None
        ]

    def run(self, tree: Checkout, prefix: Prefix, inputs: list[str]) -> str:
        cp = proc.run(
            [
                tree.worktree / "scripts" / "kernel-doc",
                "-none",
                "-Wall",
                *inputs,
            ],
            cwd=tree.worktree,
            check=False,
        )
        return cp.stdout + cp.stderr

    def parse(self, output: str, prefix: Prefix) -> list[dg.Diagnostic]:
        return parse_kernel_doc(output)


# ---- checkpatch ------------------------------------------------------

_CP_HEAD = re.compile(r"^(ERROR|WARNING|CHECK): (.*)$")
_CP_FILE = re.compile(r"^#\d+: FILE: (\S+):(\d+):\s*$")


def parse_checkpatch(text: str, patch: str) -> list[dg.Diagnostic]:
    """``checkpatch.pl --strict`` output as diagnostics: each on the file
    and line its ``FILE:`` names, or on the patch itself (the commit
    message)."""
    out: list[dg.Diagnostic] = []
    head = None
    for line in text.splitlines():
        m = _CP_HEAD.match(line)
        if m:
            if head:
                out.append(head)
            head = dg.Diagnostic(
                "checkpatch", patch, 0, m.group(1).lower(), m.group(2).strip()
            )
            continue
        m = _CP_FILE.match(line)
        if m and head and head.file == patch:
            head = replace(head, file=m.group(1), line=int(m.group(2)))
    if head:
        out.append(head)
    return out


class Checkpatch(TreeCheck):
    """checkpatch.pl --strict on each patch, from the tree at hand (the
    series' last prefix unless the run checked out none): moving the
    worktree back to the base would make every cell compile the series'
    files again in the next run."""

    cell = "all/checkpatch"
    reads = Reads.PATCHES

    def run(self, tree: Checkout, prefix: Prefix, inputs: list[str]) -> str:
        return series_check.checkpatch(tree.worktree, prefix.made_by()).stdout

    def parse(self, output: str, prefix: Prefix) -> list[dg.Diagnostic]:
        return parse_checkpatch(output, prefix.made_by().name)


KERNEL_DOC = KernelDoc()
CHECKPATCH = Checkpatch()

# Every tree-wide check the robot runs, in the order of their findings
# on one patch and line (checkpatch's first, as the report always had
# them).
CHECKS: tuple[TreeCheck, ...] = (CHECKPATCH, KERNEL_DOC)
