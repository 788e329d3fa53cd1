"""``git:PATH@REF``: a commit of the user's own kernel clone, fetched into
the cache's repository (the clone is only read)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from foliolab import proc
from foliolab.errors import UsageError
from foliolab.kernel import build, source
from foliolab.kernel.sources.base import (
    NamesAt,
    Source,
    SourceRecord,
    kept_commit,
    written,
)
from foliolab.paths import user_path


@dataclass(frozen=True)
class GitSource(Source):
    """A commit of a clone; a series on it is kept in the cache's
    repository per commit and content."""

    kind = "git"
    form = "git:PATH@REF"
    prefix = "git:"

    text: str
    repo: Path
    ref: str

    @classmethod
    def parse(cls, name: str, text: str) -> GitSource:
        path, at, ref = text[len(cls.prefix) :].rpartition("@")
        if not at or not path or not ref:
            raise UsageError(
                f"kernel {name}: {text!r} is not git:PATH@REF",
                hint="e.g. git:~/linux@mm-unstable",
            )
        return cls(text, user_path(path, f"kernel {name}: git"), ref)

    def check(self, name: str, count: bool, offline: bool) -> None:
        source.resolve_ref(self.repo, self.ref)

    def check_tree(self, name: str) -> None:
        # a repository and a commit first, said as such
        commit = source.resolve_ref(self.repo, self.ref)
        cp = proc.run(
            [
                *("git", "-C", self.repo, "cat-file", "-e"),
                f"{commit}:mm/rmap.c",
            ],
            check=False,
        )
        if cp.returncode != 0:
            raise UsageError(
                f"kernel {name}: {self.text} is not a Linux "
                "kernel tree (no mm/rmap.c at that commit)",
                hint="give git:PATH@REF of a kernel clone",
            )
        # its version names its build directory (slot()), which a dry
        # run prints: a tree without one is refused here, by both
        found = source.makefile_numbers(self.repo, commit, check=False)
        if "VERSION" not in found or "PATCHLEVEL" not in found:
            raise UsageError(
                f"kernel {name}: {self.text} is not a Linux kernel tree "
                "(its Makefile names no VERSION and PATCHLEVEL)",
                hint="give git:PATH@REF of a kernel clone",
            )

    def start(self, name: str) -> tuple[source.Tree, source.Onto]:
        tree = source.prepare_git(name, self.repo, self.ref)
        return tree, source.Onto(
            self.text,
            f"{self.repo.resolve()} {tree.commit[:12]}",
            tree.commit,
        )

    def slot(self) -> str:
        commit = source.resolve_ref(self.repo, self.ref)
        return build.slot_name(
            True, source.makefile_version(self.repo, commit)
        )

    def known_commit(self) -> tuple[Path, str] | None:
        return self.repo, source.resolve_ref(self.repo, self.ref)

    def known_series_commit(
        self, series: source.Series
    ) -> tuple[Path, str] | None:
        # applied before: in the cache's repository, where the commit is
        # fetched
        under = source.resolve_ref(self.repo, self.ref)
        if not series.patches:
            return self.repo, under
        repo = source.base_repo()
        if not (repo / ".git").exists():
            return None
        return kept_commit(repo, source.series_ref(series.digest, under))

    def names_at(self) -> NamesAt | None:
        return NamesAt(self.repo, self.ref)

    def record(self) -> SourceRecord:
        return SourceRecord(
            self.kind, self.text, written(repo=str(self.repo), ref=self.ref)
        )
