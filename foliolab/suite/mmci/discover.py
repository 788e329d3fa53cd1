"""The mm selftest wrappers of a kernel tree, found in the tree.

Since 6.15 or so tools/testing/selftests/mm has one ``ksft_NAME.sh`` per
category of run_vmtests.sh (most are ``./run_vmtests.sh -t NAME``; a few
are tests of their own, 7.3.4's kmemleak ones); the mm CI runs each on
its own. A tree is run as it is: every wrapper it has, not a list typed
here. A tree from before the wrappers (6.12) is run the same way through
``run_vmtests.sh -t CATEGORY``, its categories read from the usage text
of its run_vmtests.sh. Everything is read from git's objects at the
tree's commit: no checkout is touched, so a shared tree stays as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from foliolab.errors import SourceError
from foliolab.kernel import source as ksource
from foliolab.suite.mmci import mmci

MM = "tools/testing/selftests/mm"
WRAPPER_FILE = re.compile(r"^ksft_([A-Za-z0-9_-]+)\.sh$")
# a wrapper's own line that runs a category of run_vmtests.sh
_RUNS_CATEGORY = re.compile(r"^\s*\./run_vmtests\.sh\s+-t\s+(\S+)\s*$", re.M)
# run_vmtests.sh's usage: "- NAME" lines after the one that introduces
# them, up to its "example:" line
_CATEGORY_LIST_START = re.compile(r"following categories", re.I)
_CATEGORY_ITEM = re.compile(r"^- ([A-Za-z0-9_-]+)\s*$")
# the category a test of run_vmtests.sh belongs to: CATEGORY="cow" run_test
_CATEGORY_USED = re.compile(r'^CATEGORY="([A-Za-z0-9_-]+)"', re.M)
# WRAPPERS: the wrappers a tree has; CATEGORIES: a tree before them
WRAPPERS = "wrappers"
CATEGORIES = "categories"


def path_part(text: str) -> str:
    """``text`` as one part of a dotted test path: runs of anything but
    letters, digits, ``_`` and ``-`` made one ``_`` (``memory-failure``
    stays, ``Basic COW (4 KiB)`` becomes ``Basic_COW_4_KiB``)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_") or "_"


@dataclass(frozen=True)
class Wrapper:
    """One thing to run on its own in a guest: a ``ksft_*.sh`` wrapper,
    or, in a tree without them, one category of run_vmtests.sh."""

    name: str  # its part of the path: kselftest.mm.NAME
    command: str  # in the tree's selftests/mm directory
    category: str  # the run_vmtests.sh category it runs, "" if its own
    script: str  # the wrapper's file name ("ksft_cow.sh") or ""
    in_mmci: bool  # the mm CI's list runs it (mmci.WRAPPERS)
    flaky: str = ""  # the mm CI's reason for not counting its failures

    def describe(self) -> str:
        notes = []
        if not self.in_mmci:
            notes.append("not in the mm CI's list")
        if self.flaky:
            notes.append(self.flaky)
        return self.command + (f"  ({'; '.join(notes)})" if notes else "")


@dataclass(frozen=True)
class Discovery:
    """What a tree runs: its wrappers (or categories), and those found
    but left out, each with why."""

    kind: str  # WRAPPERS or CATEGORIES
    wrappers: tuple[Wrapper, ...]
    left_out: dict[str, str]  # script or category -> why


def _mmci_script(name: str) -> str:
    """The wrapper file the mm CI would name for ``name``."""
    return f"ksft_{name.replace('-', '_')}.sh"


def wrapper_of(script: str, body: str) -> Wrapper:
    """The Wrapper of a ``ksft_*.sh`` file with text ``body``."""
    m = WRAPPER_FILE.match(script)
    if not m:
        raise ValueError(f"{script} is not a ksft_*.sh wrapper")
    cat = _RUNS_CATEGORY.search(body)
    return Wrapper(
        name=path_part(m.group(1)),
        command=f"./{script}",
        category=cat.group(1) if cat else "",
        script=script,
        in_mmci=script in mmci.WRAPPERS,
        flaky=mmci.FLAKY.get(script, ""),
    )


def categories_of(run_vmtests: str) -> list[str]:
    """The ``-t`` categories run_vmtests.sh's usage text lists, in its
    order, then any its ``CATEGORY="..." run_test`` lines use that the
    text does not list."""
    found: list[str] = []
    listing = False
    for line in run_vmtests.splitlines():
        if not listing:
            listing = bool(_CATEGORY_LIST_START.search(line))
            continue
        if line.startswith("example:") or line.strip() == "EOF":
            break
        m = _CATEGORY_ITEM.match(line)
        if m and m.group(1) not in found:
            found.append(m.group(1))
    # a category its tests use that the usage text forgot still runs
    for name in _CATEGORY_USED.findall(run_vmtests):
        if found and name not in found:
            found.append(name)
    return found


def category_wrapper(category: str) -> Wrapper:
    script = _mmci_script(category)
    return Wrapper(
        name=path_part(category),
        command=f"./run_vmtests.sh -t {category}",
        category=category,
        script="",
        in_mmci=script in mmci.WRAPPERS,
        flaky=mmci.FLAKY.get(script, ""),
    )


def _show(repo: Path, commit: str, path: str) -> str:
    return ksource.git(repo, "show", f"{commit}:{path}").stdout


def discover(repo: Path, commit: str) -> Discovery:
    """The wrappers of the tree ``commit`` of ``repo`` (or its
    run_vmtests.sh categories), less the mm CI's left-out ones; a
    SourceError naming the tree when it has neither."""
    cp = ksource.git(
        repo, "ls-tree", "--name-only", commit, f"{MM}/", check=False
    )
    names = [Path(p).name for p in cp.stdout.split()]
    if cp.returncode != 0 or "run_vmtests.sh" not in names:
        raise SourceError(
            f"{commit[:12]} in {repo} has no {MM}/run_vmtests.sh",
            hint="is it a Linux tree of 5.17 or later?",
        )
    scripts = sorted(n for n in names if WRAPPER_FILE.match(n))
    left_out: dict[str, str] = {}
    if scripts:
        kept = []
        for s in scripts:
            if s in mmci.LEFT_OUT:
                left_out[s] = mmci.LEFT_OUT[s]
            else:
                kept.append(wrapper_of(s, _show(repo, commit, f"{MM}/{s}")))
        return Discovery(WRAPPERS, tuple(kept), left_out)
    cats = categories_of(_show(repo, commit, f"{MM}/run_vmtests.sh"))
    if not cats:
        raise SourceError(
            f"{commit[:12]}: {MM}/run_vmtests.sh lists no categories "
            "and the tree has no ksft_*.sh wrappers",
            hint="its usage text is not the one this reads: see "
            "foliolab/suite/mmci/discover.py",
        )
    kept = []
    for c in cats:
        script = _mmci_script(c)
        if script in mmci.LEFT_OUT:
            left_out[c] = mmci.LEFT_OUT[script]
        else:
            kept.append(category_wrapper(c))
    return Discovery(CATEGORIES, tuple(kept), left_out)
