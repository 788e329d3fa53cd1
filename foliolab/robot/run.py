"""The robot's run: every cell of the matrix on the prefixes it compiles,
each result cached, and the diagnostics each patch adds.

The series' commits come from the tree foliolab applied it to (applied
once; prefix i is the i-th commit). The robot checks them out in a git
worktree of its own in the cache, so the lab's build checkout, which
other commands build from at the same time, is never moved. Every cell
keeps its build directory (its .config and ``make prepare`` output) and
visits its prefixes in order: from one prefix to the next, make compiles
again only the objects whose sources the checkout rewrote.

Cells run one after the other: a run stopped halfway leaves whole
cells in the cache. A cell's result on a tree (its diagnostics, with
the text of each line they point at) is kept in the cache under the
hash of the tree's content, the cell's config, the compiler's and
sparse's versions and what it compiled: a run that stops is resumed by
running it again, and a second series that shares a prefix with the
first compiles it once.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from foliolab import hostsetup, locks, proc
from foliolab.errors import BuildError, ConfigError, SourceError, UsageError
from foliolab.kernel import build, source
from foliolab.paths import cache_root
from foliolab.robot import diagnostics as dg
from foliolab.robot import objects
from foliolab.series import check as series_check
from foliolab.robot.matrix import CLANG, CLANG_VERSION, Cell, cell_config

log = logging.getLogger("foliolab")

# Bumped when what a cached result holds, or how it is made, changes.
SCHEMA = 1
# sparse 0.6.4 (Debian's) predates __typeof_unqual__, which 7.3's
# checker-valid.sh asks for (it would turn C= off), and stops at its
# limit on token expansion in the trace events' macros, after which it
# prints no warning for the file. It checks with typeof for
# typeof_unqual (qualifiers it would drop stay: noise the base has too)
# and without the trace points' bodies (their calls are still checked).
SPARSE_FLAGS = "-DNOTRACE -D__typeof_unqual__=__typeof__"
KERNEL_DOC_CELL = "all/kernel-doc"
CHECKPATCH_CELL = "all/checkpatch"


def robot_root() -> Path:
    return cache_root() / "robot"


@dataclass(frozen=True)
class Prefix:
    """The base (index 0) and the series' first ``index`` patches."""

    index: int
    commit: str
    tree: str  # the git tree's hash: the content
    patch: Path | None  # the patch that made it from the one before

    @property
    def label(self) -> str:
        return f"{self.index:04d}"


def _patch(p: Prefix) -> Path:
    """The patch that made prefix ``p`` (every prefix but the base's)."""
    assert p.patch is not None, "the base has no patch"
    return p.patch


@dataclass(frozen=True)
class SeriesTrees:
    """A series applied: its repository and every prefix's commit."""

    repo: Path
    prefixes: tuple[Prefix, ...]
    version: tuple[int, int]
    onto: str  # the base, as a message names it

    @property
    def patches(self) -> int:
        return len(self.prefixes) - 1

    @property
    def tip(self) -> Prefix:
        return self.prefixes[-1]


def series_trees(
    tree: source.Tree, onto: source.Onto, patches: tuple[Path, ...]
) -> SeriesTrees:
    """The prefixes of a series applied on ``onto`` (``tree``: the whole
    series' commit): git am made one commit per patch, so prefix i is
    the tip's ancestor len-i generations up."""
    repo, n = tree.path, len(patches)
    commits = []
    for i in range(n + 1):
        commits.append(
            _git(repo, "rev-parse", f"{tree.commit}~{n - i}").strip()
        )
    if commits[0] != onto.commit:
        raise SourceError(
            f"the series' {n} commits do not start at {onto.describe()}",
            hint="remove the series' ref and run again",
        )
    prefixes = tuple(
        Prefix(
            i,
            c,
            _git(repo, "rev-parse", f"{c}^{{tree}}").strip(),
            patches[i - 1] if i else None,
        )
        for i, c in enumerate(commits)
    )
    return SeriesTrees(repo, prefixes, tree.version(), onto.describe())


def _git(repo: Path, *args: str) -> str:
    return source.git(repo, *args).stdout


@dataclass(frozen=True)
class CellResult:
    """What one cell said of one tree."""

    cell: str
    tree: str
    diagnostics: tuple[dg.Diagnostic, ...]
    elapsed: float  # seconds it took when it was made
    objects: int  # objects compiled then
    log: str  # the make log
    cached: bool = False  # found in the cache by this run
    cpu_s: float = 0.0  # make's and the compilers' CPU time then

    def to_json(self) -> dict[str, Any]:
        return {
            "cell": self.cell,
            "tree": self.tree,
            "elapsed": round(self.elapsed, 1),
            "objects": self.objects,
            "cpu_s": round(self.cpu_s, 1),
            "log": self.log,
            "diagnostics": [d.to_json() for d in self.diagnostics],
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> CellResult:
        return CellResult(
            d["cell"],
            d["tree"],
            tuple(dg.Diagnostic.from_json(x) for x in d["diagnostics"]),
            float(d["elapsed"]),
            int(d["objects"]),
            d["log"],
            True,
            float(d.get("cpu_s", 0.0)),
        )


def cache_key(
    tree: str,
    cell: str,
    config: str,
    compilers: str,
    targets: list[str],
    checks: str,
) -> str:
    """The name a result is kept under: the tree's content, the cell,
    its config, the compilers' versions, what it compiled and checked."""
    h = hashlib.sha256(
        json.dumps(
            [SCHEMA, tree, cell, config, compilers, targets, checks]
        ).encode()
    )
    return h.hexdigest()[:24]


class ResultCache:
    """Results kept as one JSON file each under the robot's cache."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def get(self, key: str) -> CellResult | None:
        try:
            return CellResult.from_json(
                json.loads(self._path(key).read_text())
            )
        except (OSError, ValueError, KeyError):
            return None

    def put(self, key: str, result: CellResult) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self._path(key).with_suffix(".tmp")
        tmp.write_text(json.dumps(result.to_json(), indent=1))
        tmp.replace(self._path(key))


@dataclass(frozen=True)
class Finding:
    """A diagnostic a patch adds on a cell."""

    patch: str  # 0003
    cell: str  # arm/mm, all/kernel-doc
    diagnostic: dg.Diagnostic
    whole: bool = False  # seen on the whole series, laid to the patch

    def line(self) -> str:
        return (
            f"{self.patch}: {self.cell}: {self.diagnostic.where()}: "
            f"{self.diagnostic.text()}"
        )


@dataclass
class CellTime:
    """How long a cell took in this run, and on which prefixes."""

    cell: str
    prepare_s: float = 0.0
    compile_s: dict[int, float] = field(default_factory=dict)
    cached: list[int] = field(default_factory=list)
    objects: int = 0
    cpu_s: float = 0.0  # its compilers' and make's CPU time
    cached_s: float = 0.0  # what the cached results took when made
    cached_cpu_s: float = 0.0

    @property
    def total(self) -> float:
        return self.prepare_s + sum(self.compile_s.values())

    def row(self) -> str:
        done = sorted(self.compile_s)
        parts = f"compiled {_ranges(done) or '-'}"
        if self.cached:
            parts += (
                f"; cached {_ranges(sorted(self.cached))} "
                f"({self.cached_s:.0f} s, CPU "
                f"{self.cached_cpu_s:.0f} s when made)"
            )
        return (
            f"{self.cell:20s} {self.total:5.0f} s, CPU "
            f"{self.cpu_s:5.0f} s (prepare {self.prepare_s:.0f} s; "
            f"{self.objects} objects; {parts})"
        )


def _ranges(nums: list[int]) -> str:
    """[0, 1, 2, 3, 12] -> 0-3,12"""
    runs: list[list[int]] = []
    for n in nums:
        if runs and runs[-1][1] == n - 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ",".join(f"{a}-{b}" if b > a else str(a) for a, b in runs)


@dataclass
class Report:
    findings: list[Finding]
    times: list[CellTime]
    notes: list[str]
    elapsed: float
    broken: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        return [f.line() for f in self.findings]


class Toolchain:
    """The compilers and checkers a run uses, with their versions (part
    of every cache key)."""

    def __init__(self) -> None:
        self._versions: dict[str, str] = {}

    def version(self, program: str) -> str:
        if program not in self._versions:
            cp = proc.run([program, "--version"], check=False)
            self._versions[program] = (
                (cp.stdout or cp.stderr or "?").splitlines()[0].strip()
            )
        return self._versions[program]

    def compilers(self, cell: Cell) -> str:
        cc = self.version(cc_of(cell))
        return cc + (" / " + self.version("sparse") if cell.sparse else "")


def cc_of(cell: Cell) -> str:
    if cell.compiler == CLANG:
        return f"clang-{CLANG_VERSION}"
    return f"{cell.arch.cross_compile}gcc"


def make_argv(
    cell: Cell, srctree: Path, out: Path, jobs: int, *args: str
) -> list[str]:
    argv = [
        "make",
        "-C",
        str(srctree),
        f"O={out}",
        f"ARCH={cell.arch.linux_arch}",
        f"-j{jobs}",
    ]
    if cell.compiler == CLANG:
        # LLVM= makes the host's tools clang's and links with lld
        argv += [f"LLVM=-{CLANG_VERSION}", f"CC=ccache {cc_of(cell)}"]
    else:
        argv += [
            f"HOSTCC={build.HOSTCC}",
            f"CROSS_COMPILE={cell.arch.cross_compile}",
            f"CC=ccache {cc_of(cell)}",
        ]
    # W=1 has kbuild run kernel-doc on every .c file it compiles: 0.15 s
    # of CPU a file, 13 s of the 72 s of compiling 7.3's mm/ for x86_64
    # (2026-11-28), for warnings that depend on the file's own text
    # alone, so only the changed files can have new ones, and the robot
    # runs kernel-doc -Wall on those itself.
    argv.append("cmd_checkdoc=")
    return argv + list(args)


def make_env() -> dict[str, str]:
    env = build.make_env()
    # ASCII quotes in gcc's messages: kbuild unexports LC_ALL, so LANG
    # and the categories themselves must say C
    env.update(LC_ALL="C", LANG="C", LC_MESSAGES="C", LC_CTYPE="C")
    return env


def min_llvm(repo: Path, commit: str, srcarch: str) -> tuple[int, ...]:
    """The tree's minimum LLVM version for ``srcarch`` (its
    scripts/min-tool-version.sh)."""
    text = source.git(
        repo, "show", f"{commit}:scripts/min-tool-version.sh"
    ).stdout
    script = robot_root() / "min-tool-version.sh"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(text)
    cp = proc.run(
        ["sh", script, "llvm"],
        env={"SRCARCH": srcarch, "ARCH": srcarch},
        check=False,
    )
    try:
        return tuple(int(x) for x in cp.stdout.strip().split("."))
    except ValueError:
        return (999,)


class Robot:
    """One run of the matrix over one series."""

    def __init__(
        self,
        series: SeriesTrees,
        cells: tuple[Cell, ...],
        out: Path,
        jobs: int = 2,
    ) -> None:
        self.series = series
        self.cells = cells
        self.out = out
        self.jobs = jobs
        self.tools = Toolchain()
        self.cache = ResultCache(robot_root() / "results")
        self.worktree = robot_root() / "src" / _slug(series.repo)
        self._at: str | None = None
        self._selections: dict[str, objects.Selection] = {}
        self._enabled: dict[str, set[str]] = {}
        self._prepared: set[str] = set()
        self._files: dict[tuple[str, str], list[str] | None] = {}
        self._names: dict[str, set[str]] = {}
        self.times = {c.name: CellTime(c.name) for c in cells}
        self.notes: list[str] = []
        # cells that could not be configured or prepared: why
        self.broken: dict[str, str] = {}

    # ---- the worktree -------------------------------------------------

    def _checkout(self, prefix: Prefix) -> None:
        if self._at == prefix.commit:
            return
        wt = self.worktree
        if not (wt / ".git").exists():
            log.info(
                "robot: a worktree of %s for the robot in %s",
                self.series.repo,
                wt,
            )
            shutil.rmtree(wt, ignore_errors=True)
            source.git(self.series.repo, "worktree", "prune")
            wt.parent.mkdir(parents=True, exist_ok=True)
            source.git(
                self.series.repo,
                "worktree",
                "add",
                "-q",
                "--detach",
                str(wt),
                prefix.commit,
            )
        else:
            source.git(wt, "checkout", "-q", "-f", "--detach", prefix.commit)
        self._at = prefix.commit

    def _lines(self, commit: str, path: str) -> list[str] | None:
        key = (commit, path)
        if key not in self._files:
            cp = source.git(
                self.series.repo, "show", f"{commit}:{path}", check=False
            )
            self._files[key] = (
                cp.stdout.splitlines() if cp.returncode == 0 else None
            )
        return self._files[key]

    def _line_reader(self, commit: str) -> Callable[[str, int], str]:
        def read(path: str, line: int) -> str:
            lines = self._lines(commit, path)
            return lines[line - 1] if lines and 0 < line <= len(lines) else ""

        return read

    def _exists(self, commit: str) -> Callable[[str], bool]:
        if commit not in self._names:
            self._names[commit] = set(
                _git(
                    self.series.repo,
                    "ls-tree",
                    "-r",
                    "--name-only",
                    commit,
                    "--",
                    *objects.SEARCH_DIRS,
                    "arch",
                ).split()
            )
        names = self._names[commit]
        return lambda path: path in names

    # ---- what a series makes a cell compile ---------------------------

    def changed(self) -> list[str]:
        s = self.series
        return _git(
            s.repo, "diff", "--name-only", s.prefixes[0].commit, s.tip.commit
        ).split()

    def selection(self, srcarch: str) -> objects.Selection:
        if srcarch not in self._selections:
            tip = self.series.tip.commit

            def grep(word: str, dirs: tuple[str, ...]) -> list[str]:
                cp = source.git(
                    self.series.repo,
                    "grep",
                    "-l",
                    "-F",
                    word,
                    tip,
                    "--",
                    *(f"{d}/*.c" for d in dirs),
                    check=False,
                )
                return [ln.split(":", 1)[1] for ln in cp.stdout.split()]

            def read(path: str) -> str:
                return "\n".join(self._lines(tip, path) or [])

            self._selections[srcarch] = objects.select(
                self.changed(), srcarch, grep, read
            )
        return self._selections[srcarch]

    # ---- a cell's build directory ------------------------------------

    def build_dir(self, cell: Cell) -> Path:
        v = self.series.version
        return (
            robot_root()
            / "build"
            / (f"{cell.name.replace('/', '-')}-linux-{v[0]}.{v[1]}")
        )

    def _prepare(self, cell: Cell) -> None:
        """The cell's .config (made again when its options change, in a
        clean directory) and make prepare; the objects its config
        compiles, from make's dry run."""
        if cell.name in self._prepared:
            return
        t0 = time.monotonic()
        out = self.build_dir(cell)
        cfg = cell_config(cell, self.series.version)
        stamp_text = cfg.text() + f"# base {self.series.prefixes[0].tree}\n"
        stamp = out / "robot.fragment"
        if not (
            stamp.exists()
            and stamp.read_text() == stamp_text
            and (out / ".config").exists()
        ):
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            stamp.write_text(stamp_text)
            self._make(
                cell,
                out / "config.log",
                "config",
                f"KCONFIG_ALLCONFIG={stamp}",
                "allnoconfig",
            )
        config_text = (out / ".config").read_text()
        miss, lack = cfg.dropped(config_text)
        if miss:
            stamp.unlink()
            raise ConfigError(
                f"robot cell {cell.name}: kconfig dropped "
                f"{len(miss)} option(s) the cell needs, "
                f"first {miss[0]}",
                hint="fix the cell in foliolab/robot/matrix.py",
                log_path=out / ".config",
            )
        lacks = (
            (
                f"{cell.name}: {self._version_text()} has no "
                + ", ".join(k[len("CONFIG_") :] for k in lack)
            )
            if lack
            else ""
        )
        if lacks:
            self._note(lacks)
        self._make(cell, out / "prepare.log", "make prepare", "prepare")
        enabled = self._enabled_objects(cell, out)
        self._enabled[cell.name] = enabled
        (out / "robot-enabled.json").write_text(
            json.dumps(
                {
                    "key": self._enabled_key(cell),
                    "objects": sorted(enabled),
                    "note": lacks,
                }
            )
        )
        self._prepared.add(cell.name)
        self.times[cell.name].prepare_s += time.monotonic() - t0

    def _enabled_key(self, cell: Cell) -> str:
        cfg = cell_config(cell, self.series.version)
        tops = self.selection(cell.arch.srcarch).top_dirs()
        return (
            cfg.text()
            + f"# base {self.series.prefixes[0].tree}\n"
            + f"# tops {' '.join(tops)}\n"
        )

    def _known_enabled(self, cell: Cell) -> set[str] | None:
        """The objects the cell's config compiles as its last preparation
        found them, when config, base and directories are the same: a
        rerun whose results are all cached runs no make."""
        try:
            d = json.loads(
                (self.build_dir(cell) / "robot-enabled.json").read_text()
            )
        except (OSError, ValueError):
            return None
        if d.get("key") != self._enabled_key(cell):
            return None
        if d.get("note"):
            self._note(d["note"])
        return set(d.get("objects", []))

    def _version_text(self) -> str:
        return f"{self.series.version[0]}.{self.series.version[1]}"

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)
            log.info("robot: note: %s", text)

    def _enabled_objects(self, cell: Cell, out: Path) -> set[str]:
        """What the cell's config compiles under the selection's top
        directories: make's dry run lists what is still to be compiled,
        the build directory holds what was (this config's alone: a new
        config starts in a clean directory)."""
        sel = self.selection(cell.arch.srcarch)
        tops = sel.top_dirs()
        if not tops:
            return set()
        cp = proc.run(
            make_argv(
                cell,
                self.worktree,
                out,
                1,
                "-n",
                "-k",
                *(t + "/" for t in tops),
            ),
            env=make_env(),
            check=False,
        )
        found = objects.dry_run_objects(cp.stdout, tops)
        for t in tops:
            for o in (out / t).rglob("*.o") if (out / t).is_dir() else ():
                found.add(str(o.relative_to(out)))
        return found

    def _make(
        self, cell: Cell, logp: Path, what: str, *args: str, check: bool = True
    ) -> int:
        argv = make_argv(
            cell, self.worktree, self.build_dir(cell), self.jobs, *args
        )
        cpu0 = proc.children_cpu_s()
        rc = proc.run(
            argv, env=make_env(), log_path=logp, check=False, error=BuildError
        ).returncode
        self.times[cell.name].cpu_s += proc.children_cpu_s() - cpu0
        if rc != 0 and check:
            raise BuildError(
                f"robot cell {cell.name}: {what} failed (exit {rc})",
                log_path=logp,
            )
        return rc

    # ---- one cell on one prefix ---------------------------------------

    def _plan(self, cell: Cell, prefix: Prefix) -> tuple[str, list[str]]:
        sel = self.selection(cell.arch.srcarch)
        enabled = self._enabled.get(cell.name) or self._known_enabled(cell)
        if enabled is None:
            # not prepared yet: the cache key needs the targets, which
            # need the config's objects
            self._checkout(prefix)
            self._prepare(cell)
            enabled = self._enabled[cell.name]
        targets = objects.targets(sel, enabled, self._exists(prefix.commit))
        cfg = cell_config(cell, self.series.version)
        key = cache_key(
            prefix.tree,
            cell.name,
            cfg.text(),
            self.tools.compilers(cell),
            targets,
            SPARSE_FLAGS if cell.sparse else "",
        )
        return key, targets

    def cell_on(self, cell: Cell, prefix: Prefix) -> CellResult:
        key, targets = self._plan(cell, prefix)
        got = self.cache.get(key)
        ct = self.times[cell.name]
        if got is not None:
            ct.cached.append(prefix.index)
            ct.cached_s += got.elapsed
            ct.cached_cpu_s += got.cpu_s
            return got
        self._checkout(prefix)
        self._prepare(cell)
        out = self.build_dir(cell)
        logs = out / "robot-logs"
        logs.mkdir(exist_ok=True)
        t0 = time.monotonic()
        cpu0 = ct.cpu_s
        logp = logs / f"{prefix.tree[:12]}-W1.log"
        self._make(cell, logp, "compile", "-k", "W=1", *targets, check=False)
        text = logp.read_text(errors="replace")
        paths = dg.PathMap(str(self.worktree), str(out))
        tool = "clang" if cell.compiler == CLANG else "gcc"
        diags = dg.parse_compiler(text, tool, paths)
        count = len(re.findall(r"^\s+CC\s", text, re.M))
        if cell.sparse:
            sel = self.selection(cell.arch.srcarch)
            files = objects.sparse_sources(
                sel, lambda f: (out / (f[:-2] + ".o")).exists()
            )
            if files:
                sp = logs / f"{prefix.tree[:12]}-sparse.log"
                # W=1 as the compile had it: other flags would make
                # kbuild compile the objects again, twice
                self._make(
                    cell,
                    sp,
                    "sparse",
                    "-k",
                    "W=1",
                    "C=2",
                    f"CF={SPARSE_FLAGS}",
                    *(f[:-2] + ".o" for f in files),
                    check=False,
                )
                diags += dg.parse_compiler(
                    sp.read_text(errors="replace"), "sparse", paths
                )
        diags = dg.with_sources(
            dg.unique(diags), self._line_reader(prefix.commit)
        )
        elapsed = time.monotonic() - t0
        result = CellResult(
            cell.name,
            prefix.tree,
            tuple(diags),
            elapsed,
            count,
            str(logp),
            cpu_s=ct.cpu_s - cpu0,
        )
        self.cache.put(key, result)
        ct.compile_s[prefix.index] = elapsed
        ct.objects = max(ct.objects, count)
        log.info(
            "robot: %s on %s: %d objects, %d diagnostics, %.0f s (CPU %.0f s)",
            cell.name,
            prefix.label,
            count,
            len(diags),
            elapsed,
            result.cpu_s,
        )
        return result

    # ---- the tree's own checks ----------------------------------------

    def kernel_doc(self, prefix: Prefix) -> list[dg.Diagnostic]:
        """kernel-doc -none -Wall on the series' changed .c and .h files
        as they are in ``prefix``."""
        files = [
            f
            for f in self.changed()
            if f.endswith((".c", ".h"))
            and self._lines(prefix.commit, f) is not None
        ]
        key = cache_key(prefix.tree, KERNEL_DOC_CELL, "", "", files, "")
        got = self.cache.get(key)
        if got is not None:
            return list(got.diagnostics)
        self._checkout(prefix)
        t0 = time.monotonic()
        cp = proc.run(
            [
                self.worktree / "scripts" / "kernel-doc",
                "-none",
                "-Wall",
                *files,
            ],
            cwd=self.worktree,
            check=False,
        )
        diags = dg.with_sources(
            dg.parse_kernel_doc(cp.stdout + cp.stderr),
            self._line_reader(prefix.commit),
        )
        self.cache.put(
            key,
            CellResult(
                KERNEL_DOC_CELL,
                prefix.tree,
                tuple(diags),
                time.monotonic() - t0,
                0,
                "",
            ),
        )
        return diags

    def checkpatch(self, patch: Path) -> list[dg.Diagnostic]:
        """checkpatch.pl --strict on one patch, from the tree at hand (the
        series' last prefix unless this run checked out none): moving the
        worktree back to the base would make every cell compile the
        series' files again in the next run."""
        if self._at is None:
            self._checkout(self.series.tip)
        cp = series_check.checkpatch(self.worktree, patch)
        return dg.parse_checkpatch(cp.stdout, patch.name)

    # ---- the whole run ------------------------------------------------

    def run(self) -> Report:
        t0 = time.monotonic()
        s = self.series
        n = s.patches
        results: dict[tuple[str, int], CellResult] = {}
        kdoc: dict[int, list[dg.Diagnostic]] = {}
        lock = locks.held(self.worktree)
        with lock:
            for prefix in s.prefixes:
                kdoc[prefix.index] = self.kernel_doc(prefix)
            # a cell at a time, its prefixes in order: a run stopped
            # halfway has whole cells in the cache, which a run of those
            # cells reports at once
            for cell in self.cells:
                for i in cell.prefixes(n):
                    try:
                        results[(cell.name, i)] = self.cell_on(
                            cell, s.prefixes[i]
                        )
                    except (ConfigError, BuildError) as e:
                        # the others still run; the run fails at the end
                        self.broken[cell.name] = e.one_line()
                        log.info("robot: %s: %s", cell.name, e.one_line())
                        break
            checkpatch = {
                p.index: self.checkpatch(_patch(p)) for p in s.prefixes[1:]
            }
        findings = self._findings(results, kdoc, checkpatch)
        self._write(findings, time.monotonic() - t0)
        return Report(
            findings,
            list(self.times.values()),
            self.notes,
            time.monotonic() - t0,
            dict(self.broken),
        )

    def _findings(
        self,
        results: dict[tuple[str, int], CellResult],
        kdoc: dict[int, list[dg.Diagnostic]],
        checkpatch: dict[int, list[dg.Diagnostic]],
    ) -> list[Finding]:
        s = self.series
        n = s.patches
        added = [
            objects.added_lines(_patch(p).read_text(errors="replace"))
            for p in s.prefixes[1:]
        ]
        found: list[Finding] = []
        for i in range(1, n + 1):
            label = s.prefixes[i].label
            for d in checkpatch[i]:
                found.append(Finding(label, CHECKPATCH_CELL, d))
            for d in dg.added(kdoc[i - 1], kdoc[i]):
                found.append(Finding(label, KERNEL_DOC_CELL, d))
        for cell in self.cells:
            if cell.name in self.broken:
                continue
            if cell.per_prefix:
                # A prefix's compile is incremental: it says only what the
                # objects it recompiled say. An object a header change
                # recompiles at prefix i (lib/vsprintf.o, say) repeats its
                # old warnings, which prefix i-1, not recompiling it, did
                # not print: so prefix i is held against everything the
                # base and the prefixes before it said, not against i-1's
                # log alone.
                earlier: list[dg.Diagnostic] = []
                for i in range(1, n + 1):
                    earlier += results[(cell.name, i - 1)].diagnostics
                    for d in dg.added(
                        earlier,
                        results[(cell.name, i)].diagnostics,
                    ):
                        found.append(
                            Finding(s.prefixes[i].label, cell.name, d)
                        )
            elif n:
                for d in dg.added(
                    results[(cell.name, 0)].diagnostics,
                    results[(cell.name, n)].diagnostics,
                ):
                    i = objects.blame(d.file, d.source, added)
                    found.append(
                        Finding(s.prefixes[i].label, cell.name, d, whole=True)
                    )
        order = {c.name: k for k, c in enumerate(self.cells)}
        found.sort(
            key=lambda f: (
                f.patch,
                order.get(f.cell, -1),
                f.diagnostic.file,
                f.diagnostic.line,
            )
        )
        return found

    def _write(self, findings: list[Finding], elapsed: float) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "robot.txt").write_text(
            "".join(f.line() + "\n" for f in findings)
        )
        (self.out / "robot.json").write_text(
            json.dumps(
                {
                    "onto": self.series.onto,
                    "patches": [
                        _patch(p).name for p in self.series.prefixes[1:]
                    ],
                    "cells": [c.name for c in self.cells],
                    "findings": [
                        {
                            "patch": f.patch,
                            "cell": f.cell,
                            "whole_series": f.whole,
                            **f.diagnostic.to_json(),
                        }
                        for f in findings
                    ],
                    "times": [
                        {
                            "cell": t.cell,
                            "total_s": round(t.total, 1),
                            "prepare_s": round(t.prepare_s, 1),
                            "compile_s": {
                                str(k): round(v, 1)
                                for k, v in t.compile_s.items()
                            },
                            "cpu_s": round(t.cpu_s, 1),
                            "cached_s": round(t.cached_s, 1),
                            "cached_cpu_s": round(t.cached_cpu_s, 1),
                            "cached": t.cached,
                            "objects": t.objects,
                        }
                        for t in self.times.values()
                    ],
                    "notes": self.notes,
                    "broken": self.broken,
                    "elapsed_s": round(elapsed, 1),
                },
                indent=1,
            )
            + "\n"
        )


def _slug(repo: Path) -> str:
    h = hashlib.sha256(str(repo.resolve()).encode()).hexdigest()[:8]
    return f"{repo.name}-{h}"


def packages(cells: tuple[Cell, ...]) -> list[str]:
    """The Debian packages the cells need, each once."""
    return list(dict.fromkeys(p for c in cells for p in c.packages()))


def ensure_tools(cells: tuple[Cell, ...]) -> None:
    hostsetup.ensure_packages(packages(cells))


def jobs() -> int:
    return max(1, min(2, os.cpu_count() or 1))


def usable(
    cells: tuple[Cell, ...], series: SeriesTrees
) -> tuple[tuple[Cell, ...], list[str]]:
    """The cells this tree can be compiled on, and a note for each one it
    cannot: a clang cell needs Debian's clang to meet the tree's minimum
    LLVM version."""
    keep, notes = [], []
    base = series.prefixes[0].commit
    for c in cells:
        if c.compiler == CLANG:
            need = min_llvm(series.repo, base, c.arch.srcarch)
            if (CLANG_VERSION,) < need[:1]:
                notes.append(
                    f"{c.name}: not run: the tree needs LLVM "
                    f"{'.'.join(map(str, need))}, Debian has "
                    f"clang-{CLANG_VERSION}"
                )
                continue
        keep.append(c)
    return tuple(keep), notes


def check(
    tree: source.Tree,
    patches: tuple[Path, ...],
    cells: tuple[Cell, ...],
    out: Path,
    jobs: int = 2,
) -> Report:
    """The robot over the series whose whole commit is ``tree`` (applied
    on ``tree.onto``): the compilers installed on first use, then every
    cell on its prefixes."""
    if tree.onto is None:
        raise UsageError(
            "check --robot: the tree has no base it went on",
            hint="give a series on a base (--patches DIR --base SPEC)",
        )
    series = series_trees(tree, tree.onto, patches)
    cells, notes = usable(cells, series)
    ensure_tools(cells)
    robot = Robot(series, cells, out, jobs)
    for n in notes:
        robot._note(n)
    return robot.run()
