"""Kernel source: the pinned Debian base as a git repository, plus the series.

Layout under the cache directory::

    linux/                 git repo; tag foliolab-base = Debian's
                           linux-source-6.12, branch `patched` = base +
                           series. Its checkout is what gets built and is
                           owned by foliolab (switched per variant).
    worktrees/dev/         branch `dev` for developers (`foliolab tree`)

The base commit is made with a fixed identity and date so that it has the
same hash on every machine, and its message records the Debian version.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import subprocess
import tarfile
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from foliolab import hostsetup, locks, proc
from foliolab.errors import PatchApplyError, SourceError, UsageError
from foliolab.paths import cache_root

log = logging.getLogger("foliolab")

BASE_TAG = "foliolab-base"
DEV_BRANCH = "dev"
IDENTITY = {
    "GIT_AUTHOR_NAME": "foliolab",
    "GIT_AUTHOR_EMAIL": "foliolab@example.org",
    "GIT_COMMITTER_NAME": "foliolab",
    "GIT_COMMITTER_EMAIL": "foliolab@example.org",
}
FIXED_DATE = "2026-01-01T00:00:00+00:00"
# Scratch-repo overrides: no signing prompts, no hooks, no auto-gc while
# builds read the tree.
GIT_OPTS = [
    "-c",
    "commit.gpgsign=false",
    "-c",
    "gc.auto=0",
    "-c",
    "core.hooksPath=/dev/null",
]


def git(
    tree: Path,
    *args: str,
    check: bool = True,
    log_path: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    full_env = dict(IDENTITY)
    full_env.update(env or {})
    return proc.run(
        ["git", *GIT_OPTS, "-C", str(tree), *args],
        env=full_env,
        check=check,
        log_path=log_path,
        error=SourceError,
        what=f"git {args[0]}",
    )


@dataclass(frozen=True)
class Series:
    """An ordered patch series, as a series input (kernel/sources/) reads
    it: its patch files, and the directory they are in."""

    directory: Path
    patches: tuple[Path, ...]

    @property
    def digest(self) -> str:
        h = hashlib.sha256()
        for p in self.patches:
            h.update(p.name.encode() + b"\0" + p.read_bytes())
        return h.hexdigest()[:16]


def base_repo() -> Path:
    return cache_root() / "linux"


def _base_version_recorded(repo: Path) -> str | None:
    cp = git(repo, "log", "-1", "--format=%B", BASE_TAG, check=False)
    if cp.returncode != 0:
        return None
    for line in cp.stdout.splitlines():
        if line.startswith("Debian-Version: "):
            return line.split(": ", 1)[1].strip()
    return None


def prepare_base() -> Path:
    """Make sure the cache holds the pinned base as a git repo; return it."""
    # two commands preparing it at once would delete each other's
    # linux.unpack and commit a base with files missing
    with locks.held(base_repo().with_name("linux.unpack")):
        return _prepare_base_locked()


def checkout_lock(tree: Path) -> AbstractContextManager[None]:
    """Held while a checkout of ``tree`` is built: its files must stay the
    commit make was started for. Another command building from the same
    checkout waits."""
    return locks.held(tree)


def _prepare_base_locked() -> Path:
    repo = base_repo()
    want = hostsetup.BASE_VERSION
    if (repo / ".git").exists():
        have = _base_version_recorded(repo)
        if have == want:
            return repo
        log.info("Cached kernel base is %s, pin is %s: recreating", have, want)
        shutil.rmtree(cache_root() / "worktrees", ignore_errors=True)
        shutil.rmtree(repo)
    have = hostsetup.installed_version(hostsetup.BASE_PACKAGE)
    if have != want:
        raise SourceError(
            f"{hostsetup.BASE_PACKAGE} {want} is not installed "
            f"(found {have or 'none'})",
            hint="run `make setup`",
        )
    tarball = Path("/usr/src/linux-source-6.12.tar.xz")
    log.info("Unpacking %s %s into %s", hostsetup.BASE_PACKAGE, want, repo)
    tmp = repo.with_name("linux.unpack")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    with tarfile.open(tarball) as tf:
        tf.extractall(tmp, filter="tar")
    (top,) = list(tmp.iterdir())
    top.rename(repo)
    tmp.rmdir()
    date = {"GIT_AUTHOR_DATE": FIXED_DATE, "GIT_COMMITTER_DATE": FIXED_DATE}
    git(repo, "init", "-q", "-b", "base")
    git(repo, "add", "-A", "-f")
    git(
        repo,
        "commit",
        "-q",
        "-m",
        f"Linux {want} (Debian {hostsetup.BASE_PACKAGE})\n\n"
        f"Unpacked from /usr/src/linux-source-6.12.tar.xz.\n\n"
        f"Debian-Version: {want}\n",
        env=date,
    )
    git(repo, "tag", BASE_TAG)
    return repo


def base_commit(repo: Path) -> str:
    return git(repo, "rev-parse", BASE_TAG + "^{commit}").stdout.strip()


@dataclass(frozen=True)
class Onto:
    """The tree a series is applied to, as messages and the run's record
    name it."""

    spec: str  # as given: base, debian:7.3, git:PATH@REF
    tree: str  # a package and its version, or a clone and commit
    commit: str

    def describe(self) -> str:
        return f"{self.spec} ({self.tree})"


def base_onto(repo: Path) -> Onto:
    """The pinned base as a series' tree."""
    return Onto(
        "base",
        f"{hostsetup.BASE_PACKAGE} {hostsetup.BASE_VERSION}",
        base_commit(repo),
    )


def apply_series(tree: Path, series: Series, onto: str) -> None:
    """``git am`` each patch onto the tree's HEAD; a PatchApplyError of one
    line names the patch, the file it fails on and ``onto`` (the tree it
    was tried on, Onto.describe())."""
    for patch in series.patches:
        logp = cache_root() / "logs" / f"am-{patch.name}.log"
        cp = git(
            tree,
            "am",
            "-q",
            "--no-3way",
            str(patch),
            check=False,
            log_path=logp,
        )
        if cp.returncode != 0:
            git(tree, "am", "--abort", check=False)
            raise PatchApplyError(
                _not_applied(patch, onto, logp), log_path=logp
            )


# git am's (git apply's) words for a patch that does not apply
_HUNK_FAILED = re.compile(r"^error: patch failed: (.+):(\d+)$", re.M)
_FILE_FAILED = re.compile(r"^error: ([^:\s][^:]*): (.+)$", re.M)


def _not_applied(patch: Path, onto: str, logp: Path) -> str:
    """``DIR/0003-foo.patch does not apply to mm/rmap.c on ONTO: why``."""
    text = logp.read_text(errors="replace") if logp.exists() else ""
    where, why = _failure(text)
    to = f" to {where}" if where else ""
    return f"{shown(patch)} does not apply{to} on {onto}: {why}"


def _failure(text: str) -> tuple[str, str]:
    """(the file, why) from git am's output; no file when it names none."""
    if m := _HUNK_FAILED.search(text):
        return m.group(1), f"its hunk at line {m.group(2)} does not match"
    if m := _FILE_FAILED.search(text):
        return m.group(1), m.group(2)
    return "", "see the log"


def shown(path: Path) -> str:
    """``path`` relative to the working directory when under it (as a
    user gives a series directory), else as it is."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def series_ref(digest: str, onto_commit: str | None = None) -> str:
    """Where the commit of a series is kept: per content on the pinned
    base (as it always was, so applied series and their built kernels are
    found again), per content and tree on any other."""
    if onto_commit is None:
        return f"refs/foliolab/series/{digest}"
    return f"refs/foliolab/series/{onto_commit}/{digest}"


def apply_onto(
    repo: Path, start: str, series: Series, ref: str, onto: Onto
) -> str:
    """The commit of ``series`` applied to ``start`` of ``repo``: kept
    under ``ref`` and found there again, else applied in a scratch
    worktree (so a patch that does not apply never leaves the build
    checkout half-patched)."""
    cp = git(
        repo, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False
    )
    if cp.returncode == 0:
        return cp.stdout.strip()
    scratch = cache_root() / "worktrees" / "apply"
    # one scratch worktree for every command: a second one waits
    with locks.held(scratch):
        _clear_scratch(repo, scratch)
        git(repo, "worktree", "add", "-q", "--detach", str(scratch), start)
        try:
            apply_series(scratch, series, onto.describe())
            commit = git(scratch, "rev-parse", "HEAD").stdout.strip()
        finally:
            git(
                repo,
                "worktree",
                "remove",
                "--force",
                str(scratch),
                check=False,
            )
    git(repo, "update-ref", ref, commit)
    return commit


def _clear_scratch(repo: Path, scratch: Path) -> None:
    """The scratch worktree gone, whichever repository it was left by."""
    if (scratch / ".git").exists():
        git(repo, "worktree", "remove", "--force", str(scratch), check=False)
    shutil.rmtree(scratch, ignore_errors=True)
    git(repo, "worktree", "prune")
    scratch.parent.mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True)
class Tree:
    """A commit to build, and the checkout it will be built from."""

    variant: str  # the kernel's name ("vanilla", "patched", ...)
    path: Path
    commit: str
    series_digest: str  # "" for vanilla
    origin: str = ""  # where the source came from, if not the base's repo
    onto: Onto | None = None  # a series': the tree it was applied to

    def version(self) -> tuple[int, int]:
        """VERSION and PATCHLEVEL of the checked-out tree's Makefile."""
        return makefile_version(self.path, self.commit)


def prepare_vanilla() -> Tree:
    repo = prepare_base()
    return Tree("vanilla", repo, base_commit(repo), "")


def prepare_patched(series: Series, variant: str = "patched") -> Tree:
    """Commit base + series, applied once per distinct series content.

    The series is applied in a scratch worktree (b4 style), see
    apply_onto(). The commit is kept under refs/foliolab/series/DIGEST,
    so every prefix of a series (``base+DIR:N``) is applied once and found
    again by its content; the kernel called ``patched`` also moves branch
    `patched`.
    """
    repo = prepare_base()
    onto = base_onto(repo)
    commit = apply_onto(
        repo, BASE_TAG, series, series_ref(series.digest), onto
    )
    if variant == "patched":
        git(repo, "branch", "-f", "patched", commit)
    return Tree(variant, repo, commit, series.digest, onto=onto)


def prepare_series(
    under: Tree, onto: Onto, series: Series, variant: str
) -> Tree:
    """``series`` on the tree of any source spec (a clone's commit, a
    Debian package), applied in that tree's repository and kept there per
    tree and content."""
    if not series.patches:
        return Tree(variant, under.path, under.commit, "", under.origin, onto)
    commit = apply_onto(
        under.path,
        under.commit,
        series,
        series_ref(series.digest, under.commit),
        onto,
    )
    return Tree(variant, under.path, commit, series.digest, under.origin, onto)


def prepare_git(variant: str, user_repo: Path, ref: str) -> Tree:
    """A commit of the user's own kernel clone, fetched (depth 1, by its
    object name) into the cache's repository and built from the same
    checkout as every other kernel: the user's worktree, index and refs
    are only read."""
    commit = resolve_ref(user_repo, ref)
    repo = prepare_base()
    have = (
        git(
            repo, "cat-file", "-e", f"{commit}^{{commit}}", check=False
        ).returncode
        == 0
    )
    if not have:
        git(
            repo,
            "fetch",
            "-q",
            "--no-tags",
            "--depth=1",
            str(user_repo.resolve()),
            commit,
        )
    # a ref keeps the fetched commit, whatever gc does later
    git(repo, "update-ref", f"refs/foliolab/git/{commit}", commit)
    return Tree(variant, repo, commit, "")


def is_repository(path: Path) -> bool:
    """Whether ``path`` is a git repository's top (a clone or a bare one)."""
    return (path / ".git").exists() or (path / "HEAD").exists()


def resolve_ref(user_repo: Path, ref: str) -> str:
    """REF of the git repository at ``user_repo`` as a commit id; a
    UsageError naming both if either is wrong."""
    if not is_repository(user_repo):
        raise UsageError(
            f"{user_repo} is not a git repository",
            hint="give git:PATH@REF with PATH a kernel clone",
        )
    cp = git(
        user_repo,
        "rev-parse",
        "--verify",
        "-q",
        f"{ref}^{{commit}}",
        check=False,
    )
    if cp.returncode != 0:
        raise UsageError(
            f"{ref!r} is not a commit in {user_repo}",
            hint="give a branch, tag or commit id after @",
        )
    return cp.stdout.strip()


def words_at(repo: Path, commit: str, words: Iterable[str]) -> set[str] | None:
    """Which of ``words`` the C and assembly sources of ``commit`` (in
    ``repo``) have as a whole word; None if git cannot say. Read from git's
    objects: nothing is fetched, checked out or written."""
    words = sorted(set(words))
    if not words:
        return set()
    cp = git(
        repo,
        "grep",
        "-h",
        "-o",
        "-w",
        "-I",
        *(a for w in words for a in ("-e", w)),
        commit,
        "--",
        "*.c",
        "*.h",
        "*.S",
        check=False,
    )
    if cp.returncode not in (0, 1):
        return None
    return set(cp.stdout.split()) & set(words)


def makefile_numbers(
    repo: Path, commit: str, check: bool = True
) -> dict[str, int]:
    """VERSION, PATCHLEVEL and SUBLEVEL of the top Makefile at ``commit``,
    those it names (none where it has no Makefile and not ``check``)."""
    text = git(repo, "show", f"{commit}:Makefile", check=check).stdout
    return makefile_numbers_in(text)


def makefile_numbers_in(text: str) -> dict[str, int]:
    """VERSION, PATCHLEVEL and SUBLEVEL a top Makefile's text names."""
    return {
        k: int(v)
        for k, v in re.findall(
            r"^(VERSION|PATCHLEVEL|SUBLEVEL) = (\d+)$", text, re.M
        )
    }


def makefile_version(repo: Path, commit: str) -> tuple[int, int]:
    """(VERSION, PATCHLEVEL) of the top Makefile at ``commit``."""
    found = makefile_numbers(repo, commit)
    if "VERSION" not in found or "PATCHLEVEL" not in found:
        raise SourceError(
            f"the Makefile of {commit[:12]} in {repo} names no "
            "VERSION and PATCHLEVEL",
            hint="is it a Linux tree?",
        )
    return int(found["VERSION"]), int(found["PATCHLEVEL"])


def checkout(tree: Tree) -> None:
    """Point the build checkout at ``tree.commit``.

    Both variants are built from this one path, so ccache sees identical
    paths and flags and the second build reuses the first one's objects;
    make's mtime check rebuilds exactly the files the checkout changed.
    """
    head = git(tree.path, "rev-parse", "HEAD").stdout.strip()
    dirty = git(tree.path, "status", "--porcelain", "-uno").stdout.strip()
    if head != tree.commit or dirty:
        git(tree.path, "checkout", "-q", "-f", "--detach", tree.commit)


def dev_tree(series: Series) -> Path:
    """The developer's worktree on branch `dev`: base + series, then theirs."""
    repo = prepare_base()
    wt = cache_root() / "worktrees" / "dev"
    if (wt / ".git").exists():
        return wt
    git(repo, "worktree", "prune")
    exists = (
        git(
            repo,
            "rev-parse",
            "--verify",
            "-q",
            f"refs/heads/{DEV_BRANCH}",
            check=False,
        ).returncode
        == 0
    )
    if exists:
        git(repo, "worktree", "add", "-q", str(wt), DEV_BRANCH)
    else:
        git(repo, "worktree", "add", "-q", "-b", DEV_BRANCH, str(wt), BASE_TAG)
        apply_series(wt, series, base_onto(repo).describe())
    return wt


def export_series(directory: Path) -> list[Path]:
    """Write dev's commits since the base to ``directory`` with
    format-patch."""
    directory = directory.resolve()  # git runs in the developer tree
    wt = cache_root() / "worktrees" / "dev"
    if not (wt / ".git").exists():
        raise UsageError(
            "there is no developer tree to export",
            hint="run `foliolab tree` first",
        )
    prepare_base()
    dirty = git(wt, "status", "--porcelain", "-uno").stdout.strip()
    if dirty:
        raise UsageError(
            f"{wt} has uncommitted changes",
            hint="commit them (git -C ... commit) and re-run",
        )
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / ".export"
    shutil.rmtree(tmp, ignore_errors=True)
    git(
        wt,
        "format-patch",
        "-q",
        "--no-signature",
        "--zero-commit",
        "--cover-letter",
        f"--base={BASE_TAG}",
        "-o",
        str(tmp),
        f"{BASE_TAG}..HEAD",
    )
    cover = tmp / COVER_LETTER
    old_cover = directory / COVER_LETTER
    if old_cover.exists():
        # The subject and blurb are written by hand; the shortlog,
        # diffstat and base-commit follow the commits.
        cover.write_text(
            carry_cover_letter(old_cover.read_text(), cover.read_text())
        )
    for old in directory.glob("*.patch"):
        old.unlink()
    written = []
    for p in sorted(tmp.glob("*.patch")):
        dst = directory / p.name
        p.rename(dst)
        if p.name != COVER_LETTER:
            written.append(dst)
    tmp.rmdir()
    (directory / "series").write_text("".join(p.name + "\n" for p in written))
    return written


COVER_LETTER = "0000-cover-letter.patch"
_SUBJECT_PLACEHOLDER = "*** SUBJECT HERE ***"
_BLURB_PLACEHOLDER = "*** BLURB HERE ***"


def carry_cover_letter(old: str, new: str) -> str:
    """``new`` (git format-patch's fresh cover letter) with the subject and
    blurb of ``old``: the blurb is everything from the first blank line
    after the headers up to the shortlog ("Author (N):")."""
    subject, blurb = cover_parts(old)
    return new.replace(_SUBJECT_PLACEHOLDER, subject, 1).replace(
        _BLURB_PLACEHOLDER, blurb, 1
    )


def cover_parts(cover: str) -> tuple[str, str]:
    """(the subject, the blurb) of a format-patch cover letter: the blurb
    is everything from the first blank line after the headers up to the
    shortlog ("Author (N):")."""
    m = re.search(r"^Subject: \[PATCH[^\]]*\] (.*(?:\n [^\n]*)*)", cover, re.M)
    head, _, rest = cover.partition("\n\n")
    b = re.search(r"^\S.* \(\d+\):$", rest, re.M)
    if not m or not b:
        raise UsageError(
            f"cannot read the subject and blurb of the {COVER_LETTER}",
            hint='keep its Subject: line and the "Author (N):" shortlog line',
        )
    subject = " ".join(line.strip() for line in m.group(1).splitlines())
    return subject, rest[: b.start()].rstrip("\n")
