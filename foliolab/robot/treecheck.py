"""What a tree-wide check is: one object that says the name of its cell
in the report, what it reads (each prefix's tree, or each patch), how it
runs and how its output is read into diagnostics. What it reads says the
rest: a check of the trees runs on the base and every prefix, each
checked out for it, its result kept under the tree's hash; patch i's
findings are what prefix i says that prefix i-1 does not. A check of the
patches runs on each patch with the scripts of whatever tree is checked
out, and all it says of patch i is patch i's.

The checks themselves, and the registry the robot runs, are in
checks.py; this module is apart so that a check in a module of its own
can import it and checks.py import that module.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

from foliolab.robot import diagnostics as dg
from foliolab.robot.prefixes import Prefix, SeriesTrees


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
