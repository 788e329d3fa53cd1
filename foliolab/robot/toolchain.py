"""The compilers a cell uses: their versions (part of every cache key),
the make command line and environment of a cell's compile, the Debian
packages the cells need, and which cells a tree can be compiled on.
"""

from __future__ import annotations

import os
from pathlib import Path

from foliolab import hostsetup, proc
from foliolab.kernel import build, source
from foliolab.robot.matrix import CLANG, CLANG_VERSION, Cell
from foliolab.robot.prefixes import SeriesTrees, robot_root


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
