"""The upstream release a Debian kernel package carries, without Debian's
patches: ``debian:VERSION@orig``.

Debian's source package ``linux`` is upstream's release as its orig
tarball (``linux_7.3.4.orig.tar.xz``, less the files debian/copyright's
Files-Excluded names) and Debian's own changes kept apart in
``debian/patches``. The lab measures on the patched tree (the
``linux-source-X.Y`` .deb, debian.py); the list knows the release. This
module fetches the source package through foliolab's own apt
configuration (deb-src lists of the suites that carry the version; apt
checks every file against the signed index), unpacks the orig tarball as
a git repository with one commit (``debian/orig/UPSTREAM``, fixed
identity and date, like debian.py's), and says how Debian's tree differs
from it, file by file, with the patches that make each difference.

A tarball made by ``git archive`` records the commit it was made from
(a pax comment, what ``git get-tar-commit-id`` reads); Debian's orig is
made again by its own script, so it usually holds none. The commit is
kept when it is there and never guessed when it is not.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import tarfile
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from foliolab import locks, proc, records
from foliolab.errors import SourceError
from foliolab.kernel import debian, source
from foliolab.paths import cache_root

log = logging.getLogger("foliolab")

# The source package every linux-source-X.Y is built from
SOURCE_PACKAGE = "linux"
# The branch of an unpacked orig's one commit
ORIG_BRANCH = "orig"
# What a Debian spec adds to be its orig: debian:VERSION@orig
ORIG_SUFFIX = "@orig"
_HEX40 = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class SourceFiles:
    """A source package's files as fetched: its .dsc, the orig tarball
    and Debian's part (debian/, with its patches)."""

    dsc: Path
    orig: Path
    debian_tar: Path
    orig_sha256: str


@dataclass(frozen=True)
class Orig:
    """An orig tarball unpacked: the tree the list knows."""

    package: debian.Package  # the Debian package whose orig it is
    upstream: str  # 7.3.4
    tarball: str  # linux_7.3.4.orig.tar.xz
    sha256: str
    tree: Path
    commit: str
    # upstream's commit as the tarball records it (git archive's
    # comment); "" when it records none
    release_commit: str

    def describe(self) -> str:
        return (
            f"{self.tarball} of Debian's linux {self.package.version}, "
            f"without Debian's patches (sha256 {self.sha256})"
        )


@dataclass(frozen=True)
class FileChange:
    """A file in which Debian's tree differs from the orig's."""

    path: str
    status: str  # "modified", "added" (only Debian's) or "removed"
    patches: tuple[str, ...]  # the patches of debian/patches touching it


@dataclass(frozen=True)
class Differences:
    """How the tree the lab measured on (the linux-source .deb) differs
    from the orig's, file by file."""

    debian_version: str
    debian_commit: str
    orig_commit: str
    files: tuple[FileChange, ...]
    # debian/patches/series' length
    patches: int
    # debian/copyright's Files-Excluded: upstream's, in neither tree
    excluded: tuple[str, ...]

    def paths(self) -> set[str]:
        return {f.path for f in self.files}

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def _src_dir() -> Path:
    """foliolab's apt configuration for source packages (deb-src lists),
    apart from the binary lists of debian.apt_dir()."""
    return cache_root() / "debian" / "apt-src"


def _orig_dir(upstream: str) -> Path:
    return cache_root() / "debian" / "orig" / upstream


def differences_file(orig: Orig) -> Path:
    """Where the differences from Debian's tree are written: beside the
    orig's tree, one file per Debian version."""
    return (
        orig.tree.parent
        / f"{orig.upstream}.debian-{orig.package.version}.json"
    )


def sources_list(suites: Iterable[tuple[str, str]]) -> str:
    return "".join(
        f"deb-src [signed-by={debian.KEYRING}] {url} {suite} main\n"
        for url, suite in suites
    )


def update_source_lists(pkg: debian.Package) -> None:
    """The deb-src lists of the suites that carry ``pkg`` (as the binary
    lists say), fetched unless fetched for the same suites less than
    debian.LISTS_MAX_AGE_S ago."""
    suites = debian.suites_of(pkg)
    if not suites:
        raise SourceError(
            f"Debian's package lists name no suite with {pkg.name} "
            f"{pkg.version}",
            hint="run the command again to fetch the lists anew",
        )
    d = _src_dir()
    wanted = sources_list(suites)
    listed = d / "sources.list"
    stamp = d / "updated"
    fresh = (
        stamp.exists()
        and listed.exists()
        and listed.read_text() == wanted
        and time.time() - stamp.stat().st_mtime < debian.LISTS_MAX_AGE_S
    )
    if fresh:
        return
    for sub in ("lists/partial", "cache/archives/partial"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    listed.write_text(wanted)
    log.info(
        "Reading Debian's source lists (%s)",
        ", ".join(s for _, s in suites),
    )
    proc.run(
        ["apt-get", *debian._apt_options(d), "-q", "update"],
        log_path=d / "update.log",
        error=SourceError,
        what="apt-get update of foliolab's Debian source lists",
    )
    failed, _ = debian.unreached(d / "update.log")
    if failed:
        raise SourceError(
            f"Debian's source lists could not be read ({failed})",
            hint="check this machine's network and proxy, "
            "then run the command again",
            log_path=d / "update.log",
        )
    stamp.touch()


def index_files(pkg: debian.Package) -> dict[str, str]:
    """The files of source package ``linux`` at ``pkg``'s version and
    their sha256, as the signed Sources index lists them."""
    cp = proc.run(
        [
            "apt-cache",
            *debian._apt_options(_src_dir()),
            "showsrc",
            "--only-source",
            SOURCE_PACKAGE,
        ],
        check=False,
        error=SourceError,
    )
    return files_of(cp.stdout, pkg.version)


def files_of(showsrc: str, version: str) -> dict[str, str]:
    """From `apt-cache showsrc` output: file name -> sha256 of the
    stanza of ``version``."""
    for stanza in showsrc.split("\n\n"):
        fields: dict[str, list[str]] = {}
        key = ""
        for line in stanza.splitlines():
            if line.startswith(" ") and key:
                fields[key].append(line.strip())
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = [value.strip()] if value.strip() else []
        if fields.get("Version") != [version]:
            continue
        out = {}
        for entry in fields.get("Checksums-Sha256", []):
            parts = entry.split()
            if len(parts) == 3:
                out[parts[2]] = parts[0]
        return out
    return {}


def fetch_source(pkg: debian.Package) -> SourceFiles:
    """The source package's files in the cache (``debian/orig-src``),
    fetched with `apt-get source --download-only` (apt checks each
    against the signed index) unless already there with the index's
    sha256."""
    update_source_lists(pkg)
    want = index_files(pkg)
    upstream = debian.upstream_of(pkg.version)
    orig_name = next(
        (n for n in want if re.match(r"^linux_.*\.orig\.tar\.\w+$", n)), ""
    )
    if not orig_name:
        raise SourceError(
            f"Debian's source index lists no orig tarball for "
            f"{SOURCE_PACKAGE} {pkg.version}",
            hint="give debian:VERSION of a package in the archive",
        )
    where = cache_root() / "debian" / "orig-src"
    where.mkdir(parents=True, exist_ok=True)
    have = {
        n: (where / n).is_file() and debian.sha256_of(where / n) == sha
        for n, sha in want.items()
    }
    if not all(have.values()):
        log.info(
            "Downloading Debian's source package %s %s (the orig tarball "
            "of %s and Debian's patches)",
            SOURCE_PACKAGE,
            pkg.version,
            upstream,
        )
        logp = _src_dir() / "source.log"
        cp = proc.run(
            [
                "apt-get",
                *debian._apt_options(_src_dir()),
                "-q",
                "source",
                "--download-only",
                "--only-source",
                f"{SOURCE_PACKAGE}={pkg.version}",
            ],
            cwd=where,
            log_path=logp,
            check=False,
            error=SourceError,
        )
        if cp.returncode != 0:
            raise SourceError(
                f"apt-get source {SOURCE_PACKAGE}={pkg.version} failed: "
                + not_fetched(logp),
                hint="the orig tarball comes from Debian's archive "
                "(deb.debian.org or a mirror that carries source "
                "packages); no other source of it is taken",
                log_path=logp,
            )
    for n, sha in want.items():
        if debian.sha256_of(where / n) != sha:
            raise SourceError(
                f"{where / n} is not the file Debian's index lists "
                f"(sha256 {sha})",
                hint="remove it and run the command again",
            )
    dsc = next(n for n in want if n.endswith(".dsc"))
    part = next(n for n in want if n.endswith(".debian.tar.xz"))
    return SourceFiles(
        where / dsc, where / orig_name, where / part, want[orig_name]
    )


def not_fetched(source_log: Path) -> str:
    """Why apt-get source fetched nothing, from its log, in a few
    words: a mirror that answers 404 for the pool's source files (one
    that serves binary packages only) is named as such."""
    text = (
        source_log.read_text(errors="replace") if source_log.exists() else ""
    )
    missing = re.findall(r"^E: Failed to fetch (\S+)\s+404", text, re.M)
    if missing:
        return (
            f"the archive answers 404 Not Found for {len(missing)} "
            f"file(s) of it ({missing[0].rsplit('/', 1)[-1]}, ...): "
            "this mirror serves no source packages"
        )
    m = re.search(r"^E: (.+)$", text, re.M)
    return m.group(1).strip() if m else "see the log"


def release_commit(tarball: Path) -> str:
    """The commit ``git archive`` recorded in ``tarball`` (its pax global
    header's comment, as `git get-tar-commit-id` reads it); "" when it
    records none. Only the tarball's first header is read."""
    try:
        with tarfile.open(tarball, "r|*") as tf:
            tf.next()
            comment = tf.pax_headers.get("comment", "").strip()
    except (tarfile.TarError, OSError, EOFError):
        return ""
    return comment if _HEX40.match(comment) else ""


def unpack_orig(pkg: debian.Package, files: SourceFiles) -> Path:
    """The orig tarball as a git repository with one commit."""
    upstream = debian.upstream_of(pkg.version)
    tree = _orig_dir(upstream)
    tmp = tree.with_name(tree.name + ".unpack")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    log.info("Unpacking %s into %s", files.orig.name, tree)
    proc.run(
        ["tar", "-xf", files.orig, "-C", tmp],
        error=SourceError,
        what=f"tar -x {files.orig.name}",
    )
    tops = [p for p in tmp.iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise SourceError(f"{files.orig.name} has no one top directory")
    top = tops[0]
    found = release_commit(files.orig)
    source.git(top, "init", "-q", "-b", ORIG_BRANCH)
    source.git(top, "add", "-A", "-f")
    source.git(
        top,
        "commit",
        "-q",
        "-m",
        f"Linux {upstream} (Debian's orig tarball)\n\n"
        f"Unpacked from {files.orig.name}, without Debian's patches.\n\n"
        f"Upstream-Version: {upstream}\n"
        f"Orig-Tarball: {files.orig.name}\n"
        f"Orig-SHA256: {files.orig_sha256}\n"
        + (f"Release-Commit: {found}\n" if found else ""),
        env={
            "GIT_AUTHOR_DATE": source.FIXED_DATE,
            "GIT_COMMITTER_DATE": source.FIXED_DATE,
        },
    )
    shutil.rmtree(tree, ignore_errors=True)
    tree.parent.mkdir(parents=True, exist_ok=True)
    top.rename(tree)
    shutil.rmtree(tmp)
    return tree


def _recorded(tree: Path) -> dict[str, str]:
    cp = source.git(tree, "log", "-1", "--format=%B", ORIG_BRANCH, check=False)
    out = {}
    for line in cp.stdout.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key in (
            "Upstream-Version",
            "Orig-Tarball",
            "Orig-SHA256",
            "Release-Commit",
        ):
            out[key] = value.strip()
    return out


def known(pkg: debian.Package) -> Orig | None:
    """The orig of ``pkg`` if the cache holds it unpacked (nothing is
    fetched); None if not."""
    tree = _orig_dir(debian.upstream_of(pkg.version))
    if not (tree / ".git").exists():
        return None
    rec = _recorded(tree)
    if rec.get("Upstream-Version") != debian.upstream_of(pkg.version):
        return None
    if not rec.get("Orig-SHA256"):
        return None
    commit = source.git(tree, "rev-parse", ORIG_BRANCH).stdout.strip()
    return Orig(
        pkg,
        rec["Upstream-Version"],
        rec.get("Orig-Tarball", ""),
        rec["Orig-SHA256"],
        tree,
        commit,
        rec.get("Release-Commit", ""),
    )


def prepare(pkg: debian.Package) -> Orig:
    """The orig of ``pkg`` unpacked in the cache: fetched and unpacked on
    first use, found again by what its commit records after that (an
    orig is upstream's, the same for every Debian revision of it)."""
    tree = _orig_dir(debian.upstream_of(pkg.version))
    with locks.held(tree.with_name(tree.name + ".unpack")):
        have = known(pkg)
        if have is not None:
            return have
        files = fetch_source(pkg)
        unpack_orig(pkg, files)
        made = known(pkg)
        assert made is not None  # just unpacked and committed
        return made


def touched(patches: Iterable[Path | str]) -> set[str]:
    """The files the patches change (``-p1`` paths: a ``---`` line and
    the ``+++`` line after it, /dev/null aside), from the patch texts or
    files."""
    out: set[str] = set()
    for p in patches:
        text = p.read_text(errors="replace") if isinstance(p, Path) else p
        lines = text.splitlines()
        for old, new in zip(lines, lines[1:]):
            if not (old.startswith("--- ") and new.startswith("+++ ")):
                continue
            for name in (old[4:], new[4:]):
                name = name.split("\t", 1)[0].strip()
                if name == "/dev/null" or "/" not in name:
                    continue
                out.add(name.split("/", 1)[1])
    return out


def debian_patches(debian_tar: Path) -> dict[str, set[str]]:
    """Debian's patches, by the name debian/patches/series gives them,
    each with the files it touches (read from debian.tar.xz)."""
    texts: dict[str, str] = {}
    with tarfile.open(debian_tar) as tf:
        for member in tf.getmembers():
            if member.isfile() and member.name.startswith("debian/patches/"):
                f = tf.extractfile(member)
                if f is not None:
                    texts[member.name[len("debian/patches/") :]] = (
                        f.read().decode(errors="replace")
                    )
    order = []
    for line in texts.get("series", "").splitlines():
        name = line.split("#", 1)[0].strip()
        if name:
            order.append(name.split()[0])
    return {name: touched([texts.get(name, "")]) for name in order}


def excluded_files(debian_tar: Path) -> tuple[str, ...]:
    """debian/copyright's Files-Excluded: what Debian's repack removed
    from upstream's tarball."""
    with tarfile.open(debian_tar) as tf:
        try:
            f = tf.extractfile("debian/copyright")
        except KeyError:
            return ()
        text = f.read().decode(errors="replace") if f else ""
    m = re.search(r"^Files-Excluded:(.*(?:\n[ \t].*)*)", text, re.M)
    return tuple(m.group(1).split()) if m else ()


def differences(
    orig: Orig, measured: debian.Source, debian_tar: Path
) -> Differences:
    """How ``measured`` (Debian's tree of the same release) differs from
    ``orig``, file by file, with the patches of ``debian_tar`` that
    touch each file. Both repositories are only read: the diff runs in
    the orig's with the Debian tree's objects as alternates."""
    objects = source.git(
        measured.tree, "rev-parse", "--git-path", "objects"
    ).stdout.strip()
    path = Path(objects)
    if not path.is_absolute():
        path = (measured.tree / path).resolve()
    out = source.git(
        orig.tree,
        "diff-tree",
        "-r",
        "--no-renames",
        "--name-status",
        "-z",
        orig.commit,
        measured.commit,
        env={"GIT_ALTERNATE_OBJECT_DIRECTORIES": str(path)},
    ).stdout
    status = {"M": "modified", "A": "added", "D": "removed"}
    fields = out.split("\0")
    patches = debian_patches(debian_tar)
    changes = []
    for code, name in zip(fields[0::2], fields[1::2]):
        if not name:
            continue
        changes.append(
            FileChange(
                name,
                status.get(code[:1], code),
                tuple(p for p, files in patches.items() if name in files),
            )
        )
    return Differences(
        measured.package.version,
        measured.commit,
        orig.commit,
        tuple(changes),
        len(patches),
        excluded_files(debian_tar),
    )


def write_differences(orig: Orig, diff: Differences) -> Path:
    """The differences as JSON beside the orig's tree."""
    where = differences_file(orig)
    where.write_text(json.dumps(diff.to_json(), indent=1) + "\n")
    return where


def read_differences(orig: Orig) -> Differences | None:
    """The differences written beside the orig's tree before, if they are
    there and of this orig; None if not (a damaged file is one that is
    not there: they are made again)."""
    d = records.read_cache(differences_file(orig))
    if d is None or d.get("orig_commit") != orig.commit:
        return None
    try:
        return Differences(
            str(d["debian_version"]),
            str(d["debian_commit"]),
            str(d["orig_commit"]),
            tuple(
                FileChange(
                    str(f["path"]),
                    str(f["status"]),
                    tuple(str(p) for p in f["patches"]),
                )
                for f in d["files"]
            ),
            int(d["patches"]),
            tuple(str(x) for x in d["excluded"]),
        )
    except (KeyError, TypeError, ValueError):
        return None


def measured_differences(orig: Orig) -> tuple[Differences, Path]:
    """The differences between the orig and the Debian tree of the same
    package version (the one the lab measures on, fetched if it is not
    in the cache yet), written beside the orig's tree, and found there
    again after that (nothing fetched)."""
    where = differences_file(orig)
    diff = read_differences(orig)
    if diff is None:
        measured = debian.prepare(orig.package)
        files = fetch_source(orig.package)
        diff = differences(orig, measured, files.debian_tar)
        write_differences(orig, diff)
    by_patch = {p for f in diff.files for p in f.patches}
    log.info(
        "debian:%s differs from its orig in %d file(s), by %d of Debian's "
        "%d patches (and %d file(s) not from a patch): %s",
        orig.package.version,
        len(diff.files),
        len(by_patch),
        diff.patches,
        sum(1 for f in diff.files if not f.patches),
        where,
    )
    return diff, where


def series_on_both(diff: Differences, patches: Iterable[Path]) -> list[str]:
    """The files ``patches`` touch that differ between Debian's tree and
    the orig (none: the series sees the same files on both)."""
    return sorted(touched(patches) & diff.paths())


def say_series_on_both(
    diff: Differences, patches: Iterable[Path], what: str
) -> list[str]:
    """One line saying whether the files ``what`` touches are identical
    on Debian's tree and the orig; the differing files, if any."""
    patches = list(patches)
    differing = series_on_both(diff, patches)
    files = touched(patches)
    if differing:
        log.warning(
            "WARNING: %s touches %d file(s) that differ between "
            "debian:%s and its orig: %s",
            what,
            len(differing),
            diff.debian_version,
            ", ".join(differing),
        )
    else:
        log.info(
            "%s touches %d file(s), all identical on debian:%s and its orig",
            what,
            len(files),
            diff.debian_version,
        )
    return differing
