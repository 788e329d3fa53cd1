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
cells in the cache (cache.py), and a rerun takes them from there. The
tree-wide checks (checks.py) run on each prefix or patch once, for all
the cells.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from foliolab import locks, proc, records
from foliolab.errors import BuildError, ConfigError, UsageError
from foliolab.kernel import source
from foliolab.robot import checks, objects, report
from foliolab.robot import diagnostics as dg
from foliolab.robot.cache import CellResult, ResultCache, cache_key
from foliolab.robot.matrix import CLANG, Cell, cell_config
from foliolab.robot.prefixes import (
    Prefix,
    SeriesTrees,
    git_out,
    robot_root,
    series_trees,
    worktree_name,
)
from foliolab.robot.report import CellTime, Report
from foliolab.robot.toolchain import (
    Toolchain,
    ensure_tools,
    make_argv,
    make_env,
    usable,
)
from foliolab.robot.treecheck import Reads, Said, TreeCheck

log = logging.getLogger("foliolab")

# sparse 0.6.4 (Debian's) predates __typeof_unqual__, which 7.3's
# checker-valid.sh asks for (it would turn C= off), and stops at its
# limit on token expansion in the trace events' macros, after which it
# prints no warning for the file. It checks with typeof for
# typeof_unqual (qualifiers it would drop stay: noise the base has too)
# and without the trace points' bodies (their calls are still checked).
SPARSE_FLAGS = "-DNOTRACE -D__typeof_unqual__=__typeof__"


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
        self.worktree = robot_root() / "src" / worktree_name(series.repo)
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
        # cells asked for that this tree cannot be compiled on: why
        self.skipped: dict[str, str] = {}

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

    def lines(self, commit: str, path: str) -> list[str] | None:
        """The file at ``path`` as ``commit`` has it (None: it has none)."""
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
            lines = self.lines(commit, path)
            return lines[line - 1] if lines and 0 < line <= len(lines) else ""

        return read

    def _exists(self, commit: str) -> Callable[[str], bool]:
        if commit not in self._names:
            self._names[commit] = set(
                git_out(
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
        return git_out(
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
                return "\n".join(self.lines(tip, path) or [])

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
        d = records.read_cache(self.build_dir(cell) / "robot-enabled.json")
        if d is None or d.get("key") != self._enabled_key(cell):
            return None
        objects = d.get("objects", [])
        if not isinstance(objects, list) or not all(
            isinstance(o, str) for o in objects
        ):
            return None
        if not isinstance(d.get("note", ""), str):
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

    # ---- the tree-wide checks ---------------------------------------

    def tree_check(
        self, check: TreeCheck, prefix: Prefix
    ) -> list[dg.Diagnostic]:
        """What ``check`` says of ``prefix``: a check of the trees on the
        prefix checked out (or from the cache), with the text of each
        line it points at; a check of the patches on the tree at hand
        (the series' last prefix unless this run checked out none)."""
        inputs = check.inputs(self, prefix)
        if check.reads is Reads.PATCHES:
            if self._at is None:
                self._checkout(self.series.tip)
            return check.parse(check.run(self, prefix, inputs), prefix)
        key = cache_key(prefix.tree, check.cell, "", "", inputs, "")
        got = self.cache.get(key)
        if got is not None:
            return list(got.diagnostics)
        self._checkout(prefix)
        t0 = time.monotonic()
        diags = dg.with_sources(
            check.parse(check.run(self, prefix, inputs), prefix),
            self._line_reader(prefix.commit),
        )
        self.cache.put(
            key,
            CellResult(
                check.cell,
                prefix.tree,
                tuple(diags),
                time.monotonic() - t0,
                0,
                "",
            ),
        )
        return diags

    def _said(self, check: TreeCheck) -> dict[int, list[dg.Diagnostic]]:
        return {
            p.index: self.tree_check(check, p)
            for p in check.prefixes(self.series)
        }

    # ---- the whole run ------------------------------------------------

    def run(self) -> Report:
        t0 = time.monotonic()
        s = self.series
        n = s.patches
        registry = checks.CHECKS
        results: dict[tuple[str, int], CellResult] = {}
        said: dict[TreeCheck, dict[int, list[dg.Diagnostic]]] = {}
        lock = locks.held(self.worktree)
        with lock:
            # the checks of the trees first (they check out each prefix),
            # the checks of the patches after the cells (treecheck.Reads)
            for check in registry:
                if check.reads is Reads.TREES:
                    said[check] = self._said(check)
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
            for check in registry:
                if check.reads is Reads.PATCHES:
                    said[check] = self._said(check)
        found = report.findings(
            s,
            [c for c in self.cells if c.name not in self.broken],
            results,
            [Said(c, said[c]) for c in registry],
        )
        ran = [
            report.CellRun(
                cell.name,
                i,
                cell.arch.name,
                cell.variant.name,
                not cell.per_prefix,
                results[(cell.name, i)].log,
                results[(cell.name, i)].cached,
            )
            for cell in self.cells
            for i in cell.prefixes(n)
            if (cell.name, i) in results
        ]
        ran += [report.CellRun(c.cell, i) for c in registry for i in said[c]]
        done = Report(
            found,
            list(self.times.values()),
            self.notes,
            time.monotonic() - t0,
            dict(self.broken),
            ran,
            dict(self.skipped),
            s.prefixes,
        )
        report.write(self.out, s, self.cells, done)
        return done


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
    kept, notes = usable(cells, series)
    ensure_tools(kept)
    robot = Robot(series, kept, out, jobs)
    for n in notes:
        robot._note(n)
    # usable() gives a note for each cell it leaves out, in their order
    left_out = [c for c in cells if c not in kept]
    robot.skipped = {c.name: n for c, n in zip(left_out, notes, strict=True)}
    return robot.run()
