"""``base``: the pinned Debian 6.12 source, the cache's repository."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from foliolab.errors import UsageError
from foliolab.kernel import build, kconfig, source
from foliolab.kernel.sources.base import (
    NamesAt,
    Source,
    SourceRecord,
    kept_commit,
    written,
)


@dataclass(frozen=True)
class PinnedBase(Source):
    """The pinned base: its series are applied once per content and kept
    under refs/foliolab/series/DIGEST, as they always were."""

    kind = "base"
    form = "base"
    prefix = "base"
    plus_starts_series = True

    text: str = "base"

    @classmethod
    def names(cls, text: str) -> bool:
        return text == "base" or text.startswith("base+")

    @classmethod
    def parse(cls, name: str, text: str) -> PinnedBase:
        if text != "base":
            raise UsageError(f"kernel {name}: {text!r} is not base")
        return cls()

    def start(self, name: str) -> tuple[source.Tree, source.Onto]:
        repo = source.prepare_base()
        onto = source.base_onto(repo)
        return source.Tree(name, repo, onto.commit, ""), onto

    def series_tree(self, name: str, series: source.Series) -> source.Tree:
        if series.patches:
            return source.prepare_patched(series, name)
        return super().series_tree(name, series)

    def slot(self) -> str:
        return build.slot_name(True, kconfig.BASE_VERSION)

    def known_commit(self) -> tuple[Path, str] | None:
        repo = source.base_repo()
        if not (repo / ".git").exists():
            return None
        return repo, source.base_commit(repo)

    def known_series_commit(
        self, series: source.Series
    ) -> tuple[Path, str] | None:
        repo = source.base_repo()
        if not (repo / ".git").exists():
            return None
        if not series.patches:
            return repo, source.base_commit(repo)
        return kept_commit(repo, source.series_ref(series.digest))

    def names_at(self) -> NamesAt | None:
        repo = source.base_repo()
        if not source.is_repository(repo):
            return None
        return NamesAt(repo, source.BASE_TAG)

    def record(self) -> SourceRecord:
        return SourceRecord(self.kind, self.text, written())

    def record_under_series(self) -> SourceRecord | None:
        # base+DIR was recorded without a source under it
        return None
