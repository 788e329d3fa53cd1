"""The bisect's lab: the range of commits in the user's tree, and what
builds and counts one of them. QemuLab builds each commit's kernel (or
finds it in the kernel store) and counts it in one boot under QEMU TCG
with the counting plugin, on the executor the request names (one that
can count: QEMU here, or LAVA's dispatcher here); a test passes a
stand-in Lab.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from foliolab import counting
from foliolab.arch import get_arch
from foliolab.bisect.record import BisectRequest, Measurement, StepStatus
from foliolab.boot.derive import samples_from_boot
from foliolab.boot.measure import boot_once, boot_spec
from foliolab.errors import UsageError
from foliolab.executors import make_executor
from foliolab.executors.base import BootRequest, BootSpec
from foliolab.kernel import image, source, store
from foliolab.kernel.build import Kernel
from foliolab.kernel.kconfig import debug_cmdline

# ---- the range --------------------------------------------------------------


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str


def commit_range(repo: Path, good: str, bad: str) -> list[Commit]:
    """good, then the first-parent line from good to bad, oldest first
    (bad last); a UsageError if good is not on that line."""
    check_repo(repo)
    g, b = source.resolve_ref(repo, good), source.resolve_ref(repo, bad)
    if g == b:
        raise UsageError(
            f"--good {good} and --bad {bad} are the same commit",
            hint="give a good commit older than bad",
        )
    if (
        source.git(
            repo, "merge-base", "--is-ancestor", g, b, check=False
        ).returncode
        != 0
    ):
        raise UsageError(
            f"--good {good} is not an ancestor of --bad {bad}",
            hint="give a good commit that bad descends from "
            "(git merge-base --is-ancestor GOOD BAD)",
        )
    lines = source.git(
        repo,
        "log",
        "--first-parent",
        "--reverse",
        "--format=%H %P%x00%s",
        f"{g}..{b}",
    ).stdout
    commits = [Commit(g, _subject(repo, g))]
    for line in lines.splitlines():
        shas, _, subject = line.partition("\0")
        sha, *parents = shas.split()
        if parents[:1] != [commits[-1].sha]:
            raise UsageError(
                f"--good {good} is not on the first-parent line "
                f"of --bad {bad}",
                hint="give a good commit on bad's first-parent "
                "line (git log --first-parent BAD)",
            )
        commits.append(Commit(sha, subject))
    return commits


def check_repo(repo: Path) -> None:
    """--repo must be a git clone (of a kernel: check_kernel_tree)."""
    what = (
        "does not exist"
        if not repo.exists()
        else "is not a directory"
        if not repo.is_dir()
        else "is not a git repository"
        if not source.is_repository(repo)
        else ""
    )
    if what:
        raise UsageError(
            f"--repo {repo} {what}",
            hint="give --repo PATH of a Linux kernel clone "
            "holding --good and --bad",
        )


def _subject(repo: Path, sha: str) -> str:
    return source.git(repo, "log", "-1", "--format=%s", sha).stdout.strip()


def check_kernel_tree(repo: Path, commits: list[Commit]) -> None:
    """good and bad must be Linux trees (a Makefile with a version, and
    mm/rmap.c), said before anything is built."""
    for c in (commits[0], commits[-1]):
        if (
            source.git(
                repo, "cat-file", "-e", f"{c.sha}:mm/rmap.c", check=False
            ).returncode
            != 0
        ):
            raise UsageError(
                f"{repo} at {c.sha[:12]} is not a Linux kernel "
                "tree (no mm/rmap.c)",
                hint="give --repo PATH of a kernel clone",
            )


# ---- the lab ----------------------------------------------------------------


class Lab(Protocol):
    """Builds and counts a commit; a test passes a stand-in."""

    def build(self, commit: Commit) -> Kernel:
        """The commit's kernel, built or found in the store (BuildError
        if it does not build)."""

    def count(self, kernel: Kernel, rundir: Path) -> Measurement:
        """One counting boot of ``kernel``, its files in ``rundir``."""


def fetch_range(user_repo: Path, commits: list[Commit]) -> None:
    """The range's commits into the cache's repository in one fetch
    (prepare_git would fetch each commit alone). When the cache has good
    already (a range on the base), the fetch sends only the range's new
    objects; otherwise it goes as deep as the range, no further into a
    user's history."""
    repo = source.prepare_base()
    bad = commits[-1].sha
    if _has_commit(repo, bad):
        return
    # A depth when good is there would only mark good shallow, and a clone
    # of a shallow repository copies every object instead of sharing them.
    depth = (
        []
        if _has_commit(repo, commits[0].sha)
        else [f"--depth={len(commits)}"]
    )
    source.git(
        repo, "fetch", "-q", "--no-tags", *depth, str(user_repo.resolve()), bad
    )
    source.git(repo, "update-ref", f"refs/foliolab/git/{bad}", bad)


def _has_commit(repo: Path, sha: str) -> bool:
    return (
        source.git(
            repo, "cat-file", "-e", f"{sha}^{{commit}}", check=False
        ).returncode
        == 0
    )


class QemuLab:
    """The lab itself: each commit's kernel built (or found) in the kernel
    store, counted in one boot under QEMU TCG with the counting plugin, on
    the request's executor."""

    def __init__(self, req: BisectRequest, commits: list[Commit]):
        self.req = req
        # every step counts with foliolab's plugin
        self.executor = make_executor(req.executor, req.out, count=True)
        self.arch = get_arch(req.arch)
        fetch_range(req.repo, commits)
        self.image = image.build_image(self.arch).path
        self.base = BootSpec(
            self.arch, Path(), accel="tcg", cmdline=debug_cmdline(req.config)
        )

    def build(self, commit: Commit) -> Kernel:
        tree = source.prepare_git("bisect", self.req.repo, commit.sha)
        return store.build_and_keep(tree, self.arch, self.req.config)

    def count(self, kernel: Kernel, rundir: Path) -> Measurement:
        w, params = self.req.workload, self.req.params
        counter = counting.counter_for(self.arch, kernel.build_dir)
        roots = w.count_roots + ((w.count_unit.root,) if w.count_unit else ())
        missing = counting.missing_functions(counter.symbols, roots)
        if missing:
            return Measurement(
                StepStatus.INVALID,
                detail=f"no function {missing[0]} to count in this kernel",
            )
        spec = boot_spec(self.base, w, kernel.image, 1)
        spec = replace(
            spec,
            timeout=spec.timeout * counting.TIMEOUT_FACTOR,
            counter=counter.with_roots(w.count_roots),
        )
        res = boot_once(
            self.executor,
            BootRequest(
                f"{w.name}/{rundir.name}",
                spec,
                w.job(params, 1, "", True),
                rundir,
            ),
            self.image,
        )
        if not res.clean:
            return Measurement(
                StepStatus.BOOT_FAILED,
                detail=f"boot {res.describe()}, console {res.console}",
            )
        [sample] = samples_from_boot(
            w, params, "bisect", 0, res, 1, self.arch.name, self.req.out
        )
        value = sample.values.get(self.req.metric)
        if not sample.valid or value is None:
            why = "; ".join(sample.reasons) or f"no {self.req.metric}"
            return Measurement(StepStatus.INVALID, detail=why)
        return Measurement(StepStatus.COUNTED, float(value))
