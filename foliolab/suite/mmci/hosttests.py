"""The userland tests of the mm data structures, built and run on the host
from a kernel's own tree, as the mm CI runs them before any kernel is
built: tools/testing/radix-tree (radix tree and IDA, IDR, multi-order
XArray, XArray, maple tree), tools/testing/vma and
tools/testing/memblock.

Their Makefiles build in their own directory (symlinks and generated
headers beside the sources, no O=), and include sources by relative
paths from include/, lib/, mm/, arch/x86/include/ and tools/. So the
parts they need are copied out of the tree's commit with ``git archive``
into a scratch directory of our own and built there: the tree (a shared
checkout, maybe another kernel's) is only read. The programs each
directory builds are its Makefile's TARGETS, read from the tree.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from foliolab import hostsetup, proc
from foliolab.errors import SetupError
from foliolab.kernel import source as ksource
from foliolab.suite.mmci import mmci
from foliolab.suite.mmci.discover import path_part
from foliolab.testrecord import TestOutcome, TestStatus

PREFIX = "hosttest"
TESTING = "tools/testing"
DIRECTORIES = ("radix-tree", "vma", "memblock")
# Found by building 7.3.4's three directories from a copy: shared.mk's
# -I paths and relative #includes (lib/, include/, mm/, tools/include,
# tools/arch), tools/scripts/Makefile.arch, memblock's symlinks into
# arch/x86/include (on every host) and its ../selftests/kselftest.h.
ARCHIVE_PATHS = (
    *(f"{TESTING}/{d}" for d in DIRECTORIES),
    f"{TESTING}/shared",
    f"{TESTING}/selftests/kselftest.h",
    "tools/include",
    "tools/arch",
    "tools/scripts",
    "tools/lib",
    "include",
    "lib",
    "mm",
    "arch/x86/include",
)
# liburcu for radix-tree and vma (shared.mk's -lurcu); libasan and
# libubsan come with gcc (-fsanitize=address,undefined)
PACKAGES = ["liburcu-dev"]
# run-memblock-tests.sh runs `main -v`; the others without arguments
ARGS = {"memblock/main": ("-v",)}
# Each program's (and each build's) time limit, seconds. The longest
# here, 7.3.4's radix-tree main, took 320 s wall (70 s CPU) under nice at
# load 13-36 on 2 cores, the maple tree tests 214 s wall and 273 s CPU
# (threads) (2026-11-29; docs/manual.md, "The mm CI's tests"): 1800
# leaves room for a busier host.
TIME_LIMIT_S = 1800
_TARGETS = re.compile(r"^TARGETS\s*[:+]?=\s*(.*)$", re.M)


@dataclass(frozen=True)
class HostProgram:
    directory: str  # under tools/testing
    program: str  # a TARGETS entry
    args: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.directory}/{self.program}"

    @property
    def path(self) -> str:
        return (
            f"{PREFIX}.{path_part(self.directory)}.{path_part(self.program)}"
        )


def targets(makefile: str) -> list[str]:
    """The programs a host test Makefile builds (its TARGETS)."""
    found: list[str] = []
    for m in _TARGETS.finditer(makefile):
        found += [t for t in m.group(1).split() if t not in found]
    return found


def programs(repo: Path, commit: str) -> dict[str, list[HostProgram]]:
    """Each host test directory the tree has -> its programs; a directory
    the tree lacks maps to []."""
    out: dict[str, list[HostProgram]] = {}
    for d in DIRECTORIES:
        cp = ksource.git(
            repo, "show", f"{commit}:{TESTING}/{d}/Makefile", check=False
        )
        out[d] = [
            HostProgram(d, t, ARGS.get(f"{d}/{t}", ()))
            for t in (targets(cp.stdout) if cp.returncode == 0 else [])
        ]
    return out


def check_host() -> None:
    """What the build needs of the host, said before anything is
    copied or built."""
    missing = hostsetup.missing_packages(PACKAGES)
    if missing:
        raise SetupError(
            f"the mm host tests need {' '.join(missing)}",
            hint=f"apt-get install {' '.join(missing)}",
        )


def _existing(repo: Path, commit: str, paths: Sequence[str]) -> list[str]:
    cp = ksource.git(repo, "ls-tree", "--name-only", commit, "--", *paths)
    return cp.stdout.split()


def copy_tree(
    repo: Path,
    commit: str,
    dest: Path,
    paths: Sequence[str] = ARCHIVE_PATHS,
) -> None:
    """``paths`` of ``commit`` into ``dest`` (those it has), from git's
    objects: the tree's checkout is only read."""
    tar = dest / "parts.tar"
    ksource.git(
        repo,
        "archive",
        "-o",
        str(tar),
        commit,
        "--",
        *_existing(repo, commit, paths),
    )
    proc.run(["tar", "-xf", str(tar), "-C", str(dest)], what="tar -x")
    tar.unlink()


def run_host_tests(
    repo: Path,
    commit: str,
    kernel: str,
    out: Path,
    log_dir: str,
    scratch: Path | None = None,
    time_limit_s: float = TIME_LIMIT_S,
) -> list[TestOutcome]:
    """Build each directory of the tree's host tests and run each of its
    programs, one at a time under ``nice``; a row per directory's build
    (``hosttest.DIR.build``) and per program. Logs in ``out/log_dir``
    (``log_dir`` relative to ``out``, as the rows name them)."""
    logs = out / log_dir
    logs.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="foliolab-mmci-", dir=scratch))
    rows: list[TestOutcome] = []
    try:
        copy_tree(repo, commit, work)
        for d, progs in programs(repo, commit).items():
            rows += _directory(
                d, progs, work, kernel, logs, log_dir, time_limit_s
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


def _directory(
    d: str,
    progs: list[HostProgram],
    work: Path,
    kernel: str,
    logs: Path,
    log_dir: str,
    time_limit_s: float,
) -> list[TestOutcome]:
    base = f"{PREFIX}.{path_part(d)}"
    if not progs:
        return [
            TestOutcome(
                base,
                TestStatus.SKIP,
                kernel,
                misc={"reason": f"the tree has no {TESTING}/{d}"},
            )
        ]
    log_name = f"{path_part(d)}-build.log"
    built = proc.run_until(
        [
            "nice",
            "make",
            "-C",
            str(work / TESTING / d),
            f"-j{os.cpu_count() or 2}",
        ],
        output=logs / log_name,
        timeout=time_limit_s,
    )
    ok = built.returncode == 0 and not built.timed_out
    rows = [
        TestOutcome(
            f"{base}.build",
            TestStatus.PASS if ok else TestStatus.FAIL,
            kernel,
            round(built.elapsed, 3),
            f"{log_dir}/{log_name}",
            misc={"cpu_s": built.cpu_s}
            if ok
            else {"cpu_s": built.cpu_s, "detail": "make failed: see its log"},
        )
    ]
    for p in progs:
        if not ok:
            rows.append(
                TestOutcome(
                    p.path,
                    TestStatus.MISS,
                    kernel,
                    misc={"detail": f"{d} did not build"},
                )
            )
            continue
        rows.append(_run_program(p, work, kernel, logs, log_dir, time_limit_s))
    return rows


def _run_program(
    p: HostProgram,
    work: Path,
    kernel: str,
    logs: Path,
    log_dir: str,
    time_limit_s: float,
) -> TestOutcome:
    log_name = f"{path_part(p.directory)}-{path_part(p.program)}.log"
    exe = work / TESTING / p.directory / p.program
    done = proc.run_until(
        ["nice", str(exe), *p.args],
        output=logs / log_name,
        timeout=time_limit_s,
    )
    misc: dict[str, str | int | float | bool] = {
        "command": " ".join([p.program, *p.args]),
        "cpu_s": done.cpu_s,
    }
    if p.key in mmci.HOST_FLAKY:
        misc["mmci"] = mmci.HOST_FLAKY[p.key]
    if done.timed_out:
        status = TestStatus.ERROR
        misc["detail"] = f"timed out after {time_limit_s:g} s"
    elif done.returncode == 0:
        status = TestStatus.PASS
    else:
        status = TestStatus.FAIL
        # a negative code is a signal: the programs assert() (SIGABRT)
        misc["detail"] = f"exit status {done.returncode}"
    return TestOutcome(
        p.path,
        status,
        kernel,
        round(done.elapsed, 3),
        f"{log_dir}/{log_name}",
        misc=misc,
    )
