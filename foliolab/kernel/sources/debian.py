"""``debian:VERSION``: Debian's linux-source package (kernel/debian.py),
unpacked as a commit of a repository of its own; ``debian:VERSION@orig``:
the upstream release that package carries, its orig tarball without
Debian's patches (kernel/debian_orig.py)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from foliolab.errors import UsageError
from foliolab.kernel import build, debian, debian_orig, kconfig, source
from foliolab.kernel.sources.base import (
    Source,
    SourceRecord,
    kept_commit,
    written,
)

log = logging.getLogger("foliolab")


@dataclass(frozen=True)
class DebianSource(Source):
    """A package version (X.Y: the archive's newest): which one is known
    only by asking the archive, so nothing of it is known to a dry run
    but its build directory. With ``@orig``, the package's orig tarball:
    upstream's release, less what Debian's repack removes, without
    Debian's patches; how the package's tree differs from it is written
    beside it (debian_orig.measured_differences)."""

    kind = "debian"
    form = "debian:VERSION"
    prefix = "debian:"
    plus_in_its_form = True

    text: str
    version: str  # X.Y or a package version
    orig: bool = False

    @classmethod
    def parse(cls, name: str, text: str) -> DebianSource:
        version, at, part = text[len(cls.prefix) :].partition("@")
        if at and part != debian_orig.ORIG_SUFFIX[1:]:
            raise UsageError(
                f"kernel {name}: {text!r}: @{part} is not a part of a "
                "Debian package",
                hint="give debian:VERSION (Debian's tree) or "
                "debian:VERSION@orig (its orig tarball, without "
                "Debian's patches)",
            )
        debian.package_of(version)  # the form only; the archive later
        return cls(text, version, bool(at))

    @classmethod
    def is_form(cls, text: str) -> bool:
        # any @PART reads as this form, so that parse() names a wrong
        # part in its own words, not as a '+' with no series after it
        version = text[len(cls.prefix) :].partition("@")[0]
        return super().is_form(cls.prefix + version)

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

    def known_commit(self) -> tuple[Path, str] | None:
        """Debian's tree, when the version resolves against the package
        lists fetched before (young enough that the run would not fetch
        them again) and an earlier command unpacked it (the orig: not
        read here)."""
        if self.orig:
            return None
        if not debian.lists_fresh():
            # the run fetches the lists again first, and may resolve the
            # version to a newer package than these name
            return None
        pkg = debian.resolve_known(self.version)
        found = None if pkg is None else debian.unpacked_before(pkg)
        return None if found is None else (found.tree, found.commit)

    def known_series_commit(
        self, series: source.Series
    ) -> tuple[Path, str] | None:
        """``series`` on that tree, if an earlier command applied it
        (prepare_series keeps it by the series' content and the tree)."""
        known = self.known_commit()
        if known is None or not series.patches:
            return known
        repo, commit = known
        return kept_commit(repo, source.series_ref(series.digest, commit))

    def check_tree(self, name: str) -> None:
        kconfig.check_served(f"kernel {name}: {self.text}", self._series())

    def _series(self) -> tuple[int, int]:
        """X.Y of the package (linux-source-X.Y) the version is of."""
        package, _ = debian.package_of(self.version)
        major, minor = package[len("linux-source-") :].split(".")
        return int(major), int(minor)

    def start(self, name: str) -> tuple[source.Tree, source.Onto]:
        pkg = debian.resolve(self.version)
        if self.orig:
            return self._orig_tree(name, self.prepare_orig(pkg)[0])
        src = debian.prepare(pkg)
        return (
            source.Tree(name, src.tree, src.commit, "", src.describe()),
            source.Onto(self.text, f"{pkg.name} {pkg.version}", src.commit),
        )

    def _orig_tree(
        self, name: str, orig: debian_orig.Orig
    ) -> tuple[source.Tree, source.Onto]:
        # the kernel's record (its build's origin) names the file that
        # says how Debian's tree differs
        origin = (
            f"{orig.describe()}; Debian's tree differs as "
            f"{debian_orig.differences_file(orig)} says"
        )
        return (
            source.Tree(name, orig.tree, orig.commit, "", origin),
            source.Onto(self.text, orig.tarball, orig.commit),
        )

    def prepare_orig(
        self, pkg: debian.Package
    ) -> tuple[debian_orig.Orig, debian_orig.Differences]:
        """The orig of ``pkg`` unpacked, and how Debian's tree of it
        differs (written beside it)."""
        orig = debian_orig.prepare(pkg)
        return orig, debian_orig.measured_differences(orig)[0]

    def series_tree(self, name: str, series: source.Series) -> source.Tree:
        if not self.orig:
            return super().series_tree(name, series)
        # the series applies to the orig (git am), and the files it
        # touches are the same on the tree it was measured on, or named
        orig, diff = self.prepare_orig(debian.resolve(self.version))
        under, onto = self._orig_tree(name, orig)
        tree = source.prepare_series(under, onto, series, name)
        if series.patches:
            debian_orig.say_series_on_both(
                diff, series.patches, f"kernel {name}'s series"
            )
        return tree

    def slot(self) -> str:
        # a package's tree is its own checkout, never the base's
        return build.slot_name(False, self._series())

    def record(self) -> SourceRecord:
        own: dict[str, str | int | None] = {"debian_version": self.version}
        if self.orig:
            own["debian_part"] = "orig"
        return SourceRecord(self.kind, self.text, written(**own))
