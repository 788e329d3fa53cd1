"""A series as the robot sees it: the base and each prefix's commit and
tree in the repository foliolab applied the series in (applied once;
prefix i is the i-th commit), and where the robot keeps its things.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from foliolab.errors import SourceError
from foliolab.kernel import source
from foliolab.paths import cache_root


def robot_root() -> Path:
    """The robot's part of the cache: its worktrees, build directories
    and results."""
    return cache_root() / "robot"


@dataclass(frozen=True)
class Prefix:
    """The base (index 0) and the series' first ``index`` patches."""

    index: int
    commit: str
    tree: str  # the git tree's hash: the content
    patch: Path | None  # the patch that made it from the one before

    @property
    def label(self) -> str:
        return f"{self.index:04d}"

    def made_by(self) -> Path:
        """The patch that made this prefix (every prefix but the
        base's)."""
        assert self.patch is not None, "the base has no patch"
        return self.patch


@dataclass(frozen=True)
class SeriesTrees:
    """A series applied: its repository and every prefix's commit."""

    repo: Path
    prefixes: tuple[Prefix, ...]
    version: tuple[int, int]
    onto: str  # the base, as a message names it

    @property
    def patches(self) -> int:
        return len(self.prefixes) - 1

    @property
    def tip(self) -> Prefix:
        return self.prefixes[-1]


def series_trees(
    tree: source.Tree, onto: source.Onto, patches: tuple[Path, ...]
) -> SeriesTrees:
    """The prefixes of a series applied on ``onto`` (``tree``: the whole
    series' commit): git am made one commit per patch, so prefix i is
    the tip's ancestor len-i generations up."""
    repo, n = tree.path, len(patches)
    commits = []
    for i in range(n + 1):
        commits.append(
            git_out(repo, "rev-parse", f"{tree.commit}~{n - i}").strip()
        )
    if commits[0] != onto.commit:
        raise SourceError(
            f"the series' {n} commits do not start at {onto.describe()}",
            hint="remove the series' ref and run again",
        )
    prefixes = tuple(
        Prefix(
            i,
            c,
            git_out(repo, "rev-parse", f"{c}^{{tree}}").strip(),
            patches[i - 1] if i else None,
        )
        for i, c in enumerate(commits)
    )
    return SeriesTrees(repo, prefixes, tree.version(), onto.describe())


def git_out(repo: Path, *args: str) -> str:
    """What ``git args`` prints in ``repo``."""
    return source.git(repo, *args).stdout


def worktree_name(repo: Path) -> str:
    """The name of the robot's worktree of ``repo``: its name and a hash
    of its path, so two repositories of one name have two."""
    h = hashlib.sha256(str(repo.resolve()).encode()).hexdigest()[:8]
    return f"{repo.name}-{h}"
