"""``debian:VERSION``: Debian's linux-source package (kernel/debian.py),
unpacked as a commit of a repository of its own."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from foliolab.kernel import build, debian, kconfig, source
from foliolab.kernel.sources.base import Source, SourceRecord, written

log = logging.getLogger("foliolab")


@dataclass(frozen=True)
class DebianSource(Source):
    """A package version (X.Y: the archive's newest): which one is known
    only by asking the archive, so nothing of it is known to a dry run
    but its build directory."""

    kind = "debian"
    form = "debian:VERSION"
    prefix = "debian:"
    plus_in_its_form = True

    text: str
    version: str  # X.Y or a package version

    @classmethod
    def parse(cls, name: str, text: str) -> DebianSource:
        version = text[len(cls.prefix) :]
        debian.package_of(version)  # the form only; the archive later
        return cls(text, version)

    def check(self, name: str, count: bool, offline: bool) -> None:
        if not offline:
            debian.resolve(self.version)
        elif debian.resolve_known(self.version) is None:
            log.info(
                "# kernel %s: debian:%s is looked up in Debian's "
                "archive when the run starts (a dry run fetches "
                "nothing)",
                name,
                self.version,
            )

    def check_tree(self, name: str) -> None:
        kconfig.check_served(f"kernel {name}: {self.text}", self._series())

    def _series(self) -> tuple[int, int]:
        """X.Y of the package (linux-source-X.Y) the version is of."""
        package, _ = debian.package_of(self.version)
        major, minor = package[len("linux-source-") :].split(".")
        return int(major), int(minor)

    def start(self, name: str) -> tuple[source.Tree, source.Onto]:
        src = debian.prepare(debian.resolve(self.version))
        pkg = src.package
        return (
            source.Tree(name, src.tree, src.commit, "", src.describe()),
            source.Onto(self.text, f"{pkg.name} {pkg.version}", src.commit),
        )

    def slot(self) -> str:
        # a package's tree is its own checkout, never the base's
        return build.slot_name(False, self._series())

    def record(self) -> SourceRecord:
        return SourceRecord(
            self.kind, self.text, written(debian_version=self.version)
        )
