"""``foliolab check --since SPEC``: the older kernel tree whose stable
history up to the base is checked against the series.

SPEC is

- ``debian:VERSION``: Debian's linux-source package of that version
  (``6.12.107`` picks the newest Debian revision of that upstream
  release, ``6.12.107-1`` is exact), fetched and unpacked by debian.py;
- ``git:PATH@REF``: a commit of a git repository, e.g. a linux-stable
  clone at ``v6.12.107``. For a base that is itself a commit of a git
  repository, this is the same repository at an older ref.

Every spec is checked before anything else happens: its syntax, that it
exists, and that its release (the top Makefile's VERSION, PATCHLEVEL and
SUBLEVEL, or the Debian version's upstream part) is older than the base's.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from pathlib import Path

from foliolab import hostsetup
from foliolab.errors import SourceError, UsageError
from foliolab.kernel import debian, source
from foliolab.paths import user_path

FORMS = "debian:VERSION (e.g. debian:6.12.107) or git:PATH@REF"


@dataclass(frozen=True, order=True)
class Release:
    """An upstream release, e.g. 6.12.107 (SUBLEVEL 0 for X.Y)."""

    version: int
    patchlevel: int
    sublevel: int

    def __str__(self) -> str:
        return f"{self.version}.{self.patchlevel}.{self.sublevel}"


def release_of_debian(version: str) -> Release:
    """``6.12.117-1~deb12u1`` -> 6.12.117: the upstream part."""
    upstream = debian.upstream_of(version)
    m = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?", upstream)
    if not m:
        raise UsageError(f"{version!r} names no upstream kernel release")
    return Release(int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))


def release_of_makefile(repo: Path, commit: str) -> Release:
    found = source.makefile_numbers(repo, commit, check=False)
    if len(found) != 3:
        raise UsageError(
            f"{commit[:12]} in {repo} has no top Makefile with "
            "VERSION, PATCHLEVEL and SUBLEVEL",
            hint="is it a Linux tree?",
        )
    return Release(
        int(found["VERSION"]), int(found["PATCHLEVEL"]), int(found["SUBLEVEL"])
    )


@dataclass(frozen=True)
class Snapshot:
    """One commit of a kernel tree, read file by file."""

    label: str  # how findings name it: debian:6.12.107-1, v6.12.107
    repo: Path
    commit: str
    release: Release

    def read(self, path: str) -> list[str] | None:
        """The file's lines at this commit; None if it has no such file."""
        try:
            cp = source.git(
                self.repo, "show", f"{self.commit}:{path}", check=False
            )
        except UnicodeDecodeError:
            raise SourceError(
                f"{path} of {self.label} is not UTF-8 text",
                hint="the history check reads C source",
            ) from None
        if cp.returncode != 0:
            return None
        lines = cp.stdout.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return lines


class SinceKind(enum.Enum):
    DEBIAN = "debian"
    GIT = "git"


@dataclass(frozen=True)
class SinceSpec:
    text: str
    kind: SinceKind
    version: str = ""  # DEBIAN
    repo: Path | None = None  # GIT
    ref: str = ""  # GIT


def parse(text: str) -> SinceSpec:
    """The spec's syntax only; resolve() checks that it exists."""
    if text.startswith("debian:"):
        version = text[len("debian:") :]
        debian.package_of(version)  # a UsageError names a bad one
        return SinceSpec(text, SinceKind.DEBIAN, version=version)
    if text.startswith("git:"):
        path, at, ref = text[len("git:") :].rpartition("@")
        if not at or not path or not ref:
            raise UsageError(
                f"--since {text!r} is not git:PATH@REF",
                hint="e.g. git:~/linux-stable@v6.12.107",
            )
        return SinceSpec(
            text, SinceKind.GIT, repo=user_path(path, "--since git:"), ref=ref
        )
    raise UsageError(
        f"--since {text!r} is not a tree spec", hint=f"give {FORMS}"
    )


def resolve(spec: SinceSpec, base: Release) -> Snapshot:
    """The spec's tree, checked to be older than the base before a Debian
    source is fetched or unpacked."""
    if spec.kind is SinceKind.GIT:
        assert spec.repo is not None  # a git: spec names its repository
        commit = source.resolve_ref(spec.repo, spec.ref)
        snap = Snapshot(
            spec.ref, spec.repo, commit, release_of_makefile(spec.repo, commit)
        )
        _check_older(spec, snap.release, base)
        return snap
    pkg = debian.resolve(spec.version)
    release = release_of_debian(pkg.version)
    _check_older(spec, release, base)
    src = debian.prepare(pkg)
    return Snapshot(f"debian:{pkg.version}", src.tree, src.commit, release)


def _check_older(spec: SinceSpec, release: Release, base: Release) -> None:
    if release >= base:
        raise UsageError(
            f"--since {spec.text} is Linux {release}, not older "
            f"than the base's {base}",
            hint="give a release the base's stable updates "
            "came after, e.g. "
            f"debian:{base.version}.{base.patchlevel}."
            f"{max(base.sublevel - 10, 0)}",
        )


def pinned_release() -> Release:
    """The pinned base's release, known without unpacking it."""
    return release_of_debian(hostsetup.BASE_VERSION)


def pinned_base() -> Snapshot:
    """The pinned base, unpacked into the cache on first use (no build)."""
    repo = source.prepare_base()
    return Snapshot(
        f"base {hostsetup.BASE_VERSION}",
        repo,
        source.base_commit(repo),
        pinned_release(),
    )
