"""Debian's kernel source packages as kernels: ``debian:VERSION``.

Debian ships mainline kernels newer than the pinned 6.12 base as
``linux-source-X.Y`` packages in other suites (trixie-backports, sid).
foliolab reads those suites through an apt configuration of its own in
the cache (its own sources list, package lists and download cache), so the
host's sources and lists stay as they are, and apt verifies every index
and .deb against the host's Debian archive keyring as it would for the
host.

A source is unpacked once per package version into a git repository of
its own (``debian/src/VERSION``), committed with a fixed identity and date
so that the same .deb gives the same commit on every machine; the commit
message records the package, version and the .deb's sha256. Kernels are
built from that checkout out of tree, like every other kernel.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from foliolab import locks, proc
from foliolab.errors import SourceError, UsageError
from foliolab.kernel import source
from foliolab.paths import cache_root

log = logging.getLogger("foliolab")

KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
MIRROR = "http://deb.debian.org/debian"
SECURITY_MIRROR = "http://deb.debian.org/debian-security"
# The suites that carry linux-source packages: the base's own (bookworm's
# security updates), trixie's, and the newer mainline kernels Debian ships
# in trixie-backports and sid.
SUITES = (
    (SECURITY_MIRROR, "bookworm-security"),
    (MIRROR, "trixie"),
    (SECURITY_MIRROR, "trixie-security"),
    (MIRROR, "trixie-backports"),
    (MIRROR, "sid"),
)
# Package lists older than this are fetched again before a version is
# looked up; a version not found in them fetches them once more.
LISTS_MAX_AGE_S = 24 * 3600
# ... unless they were fetched this recently.
LISTS_RETRY_S = 600
# ASCII digits only: "７.３" (full-width) matched \d and went as far as
# the archive's lists before anything said no
_SERIES = re.compile(r"^(\d+)\.(\d+)$", re.ASCII)
# The branch of an unpacked source's one commit: a series applied to it
# (debian:X.Y+DIR) is checked out on top, so HEAD is not always that commit.
UNPACKED = "debian"
# Linux's second number has never passed 20 (4.20) before the first moved
# on: a series beyond this is no kernel, known without asking the archive.
MAX_MINOR = 30
_VERSION = re.compile(
    r"^(\d+)\.(\d+)(?:\.\d+)?(?:-[0-9A-Za-z.+~]+)?$", re.ASCII
)


@dataclass(frozen=True)
class Package:
    """One linux-source package version, as the archive lists it."""

    name: str  # linux-source-7.3
    version: str  # 7.3.4-1~bpo13+1


@dataclass(frozen=True)
class Source:
    """A fetched and unpacked linux-source package: the tree to build."""

    package: Package
    deb_sha256: str
    tree: Path  # a git repository with the unpacked source
    commit: str

    def describe(self) -> str:
        return (
            f"{self.package.name} {self.package.version} "
            f"(.deb sha256 {self.deb_sha256})"
        )


def package_of(spec: str) -> tuple[str, str | None]:
    """``7.3`` -> (linux-source-7.3, None: the newest);
    ``7.3.4-1~bpo13+1`` -> (linux-source-7.3, that exact version)."""
    m = _SERIES.match(spec)
    if m:
        return f"linux-source-{m.group(1)}.{m.group(2)}", None
    m = _VERSION.match(spec)
    if not m:
        raise UsageError(
            f"debian:{spec} is not a kernel version",
            hint="give debian:X.Y (the newest X.Y in Debian's "
            "archive) or an exact package version, e.g. "
            "debian:7.3.4-1~bpo13+1",
        )
    return f"linux-source-{m.group(1)}.{m.group(2)}", spec


def apt_dir() -> Path:
    return cache_root() / "debian" / "apt"


def _apt_options(d: Path | None = None) -> list[str]:
    """apt's options for foliolab's own configuration in ``d`` (the
    package lists' apt_dir() unless given)."""
    d = d or apt_dir()
    return [
        "-o",
        f"Dir::Etc::SourceList={d / 'sources.list'}",
        "-o",
        "Dir::Etc::SourceParts=/dev/null",
        "-o",
        f"Dir::State::Lists={d / 'lists'}",
        "-o",
        f"Dir::Cache={d / 'cache'}",
        "-o",
        "Dir::State::status=/dev/null",
        "-o",
        "APT::Architectures::=amd64",
        "-o",
        "Acquire::Languages=none",
        # only the Packages indices: no DEP-11 or Contents downloads
        "-o",
        "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false",
        "-o",
        "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false",
        "-o",
        "Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false",
        "-o",
        "Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled=false",
    ]


def sources_list() -> str:
    return "".join(
        f"deb [signed-by={KEYRING}] {url} {suite} main\n"
        for url, suite in SUITES
    )


def _lists_age() -> float | None:
    stamp = apt_dir() / "updated"
    if not stamp.exists():
        return None
    return time.time() - stamp.stat().st_mtime


def _fresh(age: float | None) -> bool:
    return age is not None and age < LISTS_MAX_AGE_S


def lists_fresh() -> bool:
    """Whether the package lists were fetched less than LISTS_MAX_AGE_S
    ago: what update_lists() leaves as they are."""
    return _fresh(_lists_age())


def update_lists(force: bool = False, looking_for: str = "") -> None:
    """Fetch the suites' package lists into the cache (apt verifies them);
    skipped while the last fetch is younger than LISTS_MAX_AGE_S.
    ``looking_for``: the package the lists are fetched to find, said in
    the line that says apt is at work."""
    age = _lists_age()
    if not force and _fresh(age):
        return
    d = apt_dir()
    for sub in ("lists/partial", "cache/archives/partial"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    (d / "sources.list").write_text(sources_list())
    if looking_for:
        log.info("looking up %s in Debian's archive (apt update)", looking_for)
    else:
        log.info(
            "Reading Debian's package lists (%s)",
            ", ".join(s for _, s in SUITES),
        )
    proc.run(
        ["apt-get", *_apt_options(), "-q", "update"],
        log_path=d / "update.log",
        error=SourceError,
        what="apt-get update of foliolab's Debian suites",
    )
    failed, some = unreached(d / "update.log")
    if failed and not some and age is None:
        raise SourceError(
            f"Debian's archive could not be read ({failed})",
            hint="check this machine's network and proxy, "
            "then run the command again",
            log_path=d / "update.log",
        )
    if failed:
        log.warning(
            "WARNING: %s of Debian's package lists could not be "
            "fetched (%s); %s",
            "some" if some else "none",
            failed,
            "the others are used"
            if some
            else f"those of {cast(float, age) / 3600:.0f} hours ago are used",
        )
        return  # the stamp stays: the next lookup tries again
    (d / "updated").touch()


def unreached(update_log: Path) -> tuple[str, bool]:
    """What apt-get update could not fetch, from its log: its first
    reason ("" if it fetched every list), and whether it fetched some.
    apt exits 0 when it cannot reach the archive ("W: Failed to fetch"),
    so its status cannot tell."""
    text = (
        update_log.read_text(errors="replace") if update_log.exists() else ""
    )
    some = re.search(r"^(Hit|Get):", text, re.M) is not None
    m = re.search(r"^(?:W: Failed to fetch \S+|E:)\s+(.+)$", text, re.M)
    return (m.group(1).strip() if m else ""), some


def versions(name: str) -> list[str]:
    """The versions of package ``name`` the suites carry, newest first."""
    found = []
    for version, _ in _madison(name):
        if version not in found:
            found.append(version)
    return _newest_first(found)


def suites_of(pkg: Package) -> list[tuple[str, str]]:
    """The (mirror, suite) pairs whose package lists carry ``pkg``'s
    version, as the cached lists say (nothing is fetched)."""
    out = []
    for version, where in _madison(pkg.name):
        # "http://deb.debian.org/debian trixie-backports/main amd64 ..."
        parts = where.split()
        if version == pkg.version and len(parts) >= 2:
            pair = (parts[0], parts[1].split("/", 1)[0])
            if pair not in out:
                out.append(pair)
    return out


def _madison(name: str) -> list[tuple[str, str]]:
    """(version, where) of each line `apt-cache madison` gives for
    ``name``."""
    cp = proc.run(
        ["apt-cache", *_apt_options(), "madison", name],
        check=False,
        error=SourceError,
    )
    out = []
    for line in cp.stdout.splitlines():
        fields = [f.strip() for f in line.split("|")]
        if len(fields) >= 3 and fields[0] == name:
            out.append((fields[1], fields[2]))
    return out


def _newest_first(found: list[str]) -> list[str]:
    """Sort Debian versions with dpkg's own comparison."""
    out: list[str] = []
    for v in found:
        i = 0
        while i < len(out) and not _newer(v, out[i]):
            i += 1
        out.insert(i, v)
    return out


def _newer(a: str, b: str) -> bool:
    return (
        proc.run(
            ["dpkg", "--compare-versions", a, "gt", b], check=False
        ).returncode
        == 0
    )


def series_available() -> list[str]:
    """The linux-source-X.Y packages the suites carry, as X.Y."""
    cp = proc.run(
        ["apt-cache", *_apt_options(), "pkgnames", "linux-source-"],
        check=False,
        error=SourceError,
    )
    names = {n.strip()[len("linux-source-") :] for n in cp.stdout.split()}
    return sorted(
        (n for n in names if _SERIES.match(n)),
        key=lambda s: tuple(int(x) for x in s.split(".")),
    )


def _known_series() -> list[str]:
    """The X.Y the cached package lists carry; none if never fetched
    (nothing is fetched or written to know)."""
    if _lists_age() is None:
        return []
    return series_available()


def _kernels_there() -> str:
    known = _known_series()
    if not known:
        return "give debian:X.Y of a kernel Debian ships, e.g. debian:7.3"
    return "kernels there: " + ", ".join(f"debian:{s}" for s in known)


def impossible(name: str) -> str | None:
    """Why linux-source-X.Y cannot be in the archive, known without asking
    it: no such Linux version, or a major version two or more past the
    newest the cached lists carry."""
    major, minor = (int(x) for x in name[len("linux-source-") :].split("."))
    if minor > MAX_MINOR:
        return (
            f"Linux has no {major}.{minor} (its second number has never "
            "passed 20 before the first moved on)"
        )
    known = _known_series()
    newest = max((int(s.split(".")[0]) for s in known), default=None)
    if newest is not None and major > newest + 1:
        return (
            f"Linux {major}.x is not out: the newest kernel in Debian's "
            f"archive is {known[-1]}"
        )
    return None


def resolve(spec: str) -> Package:
    """``debian:SPEC`` -> the package version it names, checked against the
    archive; a UsageError lists the versions that are there."""
    name, exact = _possible(spec)
    update_lists(looking_for=name)
    have = versions(name)
    age = _lists_age() or 0.0
    if pick_version(exact, have) is None and age > LISTS_RETRY_S:
        # the lists may predate an upload
        update_lists(force=True, looking_for=name)
        have = versions(name)
    return _picked(spec, name, exact, have)


def resolve_known(spec: str) -> Package | None:
    """resolve() against the package lists fetched before, fetching
    nothing (what a dry run checks): None when there are none yet."""
    name, exact = _possible(spec)
    if _lists_age() is None:
        return None
    return _picked(spec, name, exact, versions(name))


def _possible(spec: str) -> tuple[str, str | None]:
    """The package and exact version ``spec`` names, refused in one line
    when no Debian package could be it."""
    name, exact = package_of(spec)
    why = impossible(name)
    if why:
        raise UsageError(f"debian:{spec}: {why}", hint=_kernels_there())
    return name, exact


def _picked(
    spec: str, name: str, exact: str | None, have: list[str]
) -> Package:
    """The version of ``have`` that ``spec`` names, or one line saying
    what the archive has instead."""
    if not have:
        raise UsageError(
            f"debian:{spec}: Debian's archive has no {name}",
            hint=_kernels_there(),
        )
    version = pick_version(exact, have)
    if version is None:
        raise UsageError(
            f"debian:{spec}: {name} {exact} is not in Debian's archive",
            hint="versions there: " + ", ".join(have),
        )
    return Package(name, version)


def pick_version(exact: str | None, have: list[str]) -> str | None:
    """Which of ``have`` (newest first) a spec names: the newest for None,
    else the exact package version, or for an upstream release alone
    (``6.12.107``) the newest Debian revision of it; None if none is."""
    if exact is None:
        return have[0] if have else None
    if exact in have:
        return exact
    if "-" not in exact:
        same = [v for v in have if upstream_of(v) == exact]
        return same[0] if same else None
    return None


def upstream_of(version: str) -> str:
    """``6.12.117-1~deb12u1`` -> ``6.12.117``."""
    return version.split(":", 1)[-1].split("-", 1)[0]


def _source_dir(pkg: Package) -> Path:
    # '~' and '+' are fine in paths; ':' (an epoch) is not used by these
    return cache_root() / "debian" / "src" / pkg.version


def fetch_deb(pkg: Package) -> Path:
    """Download the package's .deb into the cache (apt checks its hash
    against the signed index); kept for the next run."""
    debs = cache_root() / "debian" / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    have = sorted(debs.glob(f"{pkg.name}_{_deb_version(pkg.version)}_*.deb"))
    if have:
        return have[0]
    log.info("Downloading %s %s from Debian's archive", pkg.name, pkg.version)
    proc.run(
        [
            "apt-get",
            *_apt_options(),
            "-q",
            "download",
            f"{pkg.name}={pkg.version}",
        ],
        cwd=debs,
        log_path=apt_dir() / "download.log",
        error=SourceError,
        what=f"apt-get download {pkg.name}={pkg.version}",
    )
    have = sorted(debs.glob(f"{pkg.name}_{_deb_version(pkg.version)}_*.deb"))
    if not have:
        raise SourceError(
            f"apt-get download left no .deb of {pkg.name} "
            f"{pkg.version} in {debs}",
            log_path=apt_dir() / "download.log",
        )
    return have[0]


def _deb_version(version: str) -> str:
    """A version as apt spells it in a .deb's file name (no epoch)."""
    return version.split(":", 1)[-1]


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _git(
    tree: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return source.git(tree, *args, env=env)


def unpack(pkg: Package, deb: Path, digest: str) -> Path:
    """The .deb's kernel tarball as a git repository with one commit."""
    tree = _source_dir(pkg)
    tmp = tree.with_name(tree.name + ".unpack")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    log.info("Unpacking %s %s into %s", pkg.name, pkg.version, tree)
    debdir = tmp / "deb"
    proc.run(
        ["dpkg-deb", "-x", deb, debdir],
        error=SourceError,
        what=f"dpkg-deb -x {deb.name}",
    )
    tarball = debdir / "usr" / "src" / f"{pkg.name}.tar.xz"
    if not tarball.is_file():
        raise SourceError(f"{deb.name} holds no usr/src/{tarball.name}")
    proc.run(
        ["tar", "-xJf", tarball, "-C", tmp],
        error=SourceError,
        what=f"tar -x {tarball.name}",
    )
    shutil.rmtree(debdir)
    (top,) = [p for p in tmp.iterdir() if p.is_dir()]
    date = "2026-01-01T00:00:00+00:00"
    _git(top, "init", "-q", "-b", UNPACKED)
    # Debian's top-level .gitignore ignores everything at the top level
    _git(top, "add", "-A", "-f")
    _git(
        top,
        "commit",
        "-q",
        "-m",
        f"{pkg.name} {pkg.version} (Debian)\n\n"
        f"Unpacked from {deb.name}.\n\n"
        f"Debian-Version: {pkg.version}\nDeb-SHA256: {digest}\n",
        env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date},
    )
    shutil.rmtree(tree, ignore_errors=True)
    top.rename(tree)
    shutil.rmtree(tmp)
    return tree


def _recorded(tree: Path) -> dict[str, str]:
    cp = _git(tree, "log", "-1", "--format=%B", UNPACKED)
    out = {}
    for line in cp.stdout.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key in ("Debian-Version", "Deb-SHA256"):
            out[key] = value.strip()
    return out


def prepare(pkg: Package) -> Source:
    """The package's source tree in the cache: fetched and unpacked on
    first use, found again (by the version and .deb hash its commit
    records) after that."""
    # two commands unpacking one package into one .unpack directory would
    # delete each other's files (as the base once did): one at a time
    src = _source_dir(pkg)
    with locks.held(src.with_name(src.name + ".unpack")):
        return _prepare_locked(pkg)


def unpacked_before(pkg: Package) -> Source | None:
    """The package's tree if an earlier command unpacked it (its commit
    records the version and the .deb's hash); None if not. Fetches and
    unpacks nothing: what prepare() finds, and a dry run reads."""
    tree = _source_dir(pkg)
    if not (tree / ".git").exists():
        return None
    rec = _recorded(tree)
    if rec.get("Debian-Version") != pkg.version or not rec.get("Deb-SHA256"):
        return None
    commit = _git(tree, "rev-parse", UNPACKED).stdout.strip()
    return Source(pkg, rec["Deb-SHA256"], tree, commit)


def _prepare_locked(pkg: Package) -> Source:
    found = unpacked_before(pkg)
    if found is not None:
        return found
    deb = fetch_deb(pkg)
    digest = sha256_of(deb)
    tree = unpack(pkg, deb, digest)
    commit = _git(tree, "rev-parse", "HEAD").stdout.strip()
    return Source(pkg, digest, tree, commit)
