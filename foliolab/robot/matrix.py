"""The robot's matrix: which architectures, configs and compilers a series
is compiled with, and which of its prefixes each cell compiles.

A cell is an architecture, a config and a compiler. Every cell compiles
the series' base and the whole series (what the series adds on that
cell); x86_64/perf and i386/mm also compile every prefix in between, so
each patch is seen alone, as the robot bisects (a series whose patch 3
breaks i386 and patch 4 mends it is still sent back).

Configs are small: ``allnoconfig`` (where tinyconfig starts) plus what mm
and the cell need. On x86_64 and arm64 that is the lab's own perf
fragment (configs/), and the same with one of SWAP, TRANSPARENT_HUGEPAGE,
KSM, MEMCG, NUMA or MIGRATION turned off, or with the mm debug options
on. The other architectures take one mm config each: every mm feature
the architecture can have. arm64 batches its unmap TLB flushes
(ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH) like x86, and arm, riscv64,
powerpc64le, s390x and i386 differ among themselves in it, in THP, NUMA
and the width of a long: the architectures cover those choices.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from foliolab.errors import UsageError
from foliolab.kernel import kconfig
from foliolab.paths import CONFIGS_DIR

GCC = "gcc"
CLANG = "clang"
# Debian bookworm's clang is 14 (below 7.3's minimum of 17.0.1); it also
# ships clang-19, which meets 6.12's (13.0.1) and 7.3's minimum alike.
CLANG_VERSION = 19
CLANG_PACKAGES = (
    f"clang-{CLANG_VERSION}",
    f"lld-{CLANG_VERSION}",
    f"llvm-{CLANG_VERSION}",
)
SPARSE_PACKAGES = ("sparse",)


@dataclass(frozen=True)
class RobotArch:
    """An architecture as the robot compiles it (no guest, no boot)."""

    name: str
    linux_arch: str  # ARCH=
    srcarch: str  # its directory under arch/
    cross_compile: str  # CROSS_COMPILE=, "" for the host's gcc
    packages: tuple[str, ...]  # Debian packages of its compiler
    # The lab's configs/ fragments exist for it (arch-<name>.config)
    lab_fragment: bool = False
    # What its mm config needs on this architecture (each required)
    options: tuple[str, ...] = ()
    # What it may have, taken where the architecture offers it
    wants: tuple[str, ...] = ()


ARCHES: dict[str, RobotArch] = {
    a.name: a
    for a in (
        RobotArch("x86_64", "x86_64", "x86", "", (), lab_fragment=True),
        # i386 is the host's gcc with -m32 (kbuild's ARCH=i386); PAE gives it
        # 64-bit PTEs in 32-bit longs, the case 64-bit assumptions break on.
        RobotArch(
            "i386",
            "i386",
            "x86",
            "",
            (),
            options=("CONFIG_HIGHMEM4G=y",),
            wants=("CONFIG_X86_PAE=y",),
        ),
        RobotArch(
            "arm64",
            "arm64",
            "arm64",
            "aarch64-linux-gnu-",
            ("gcc-aarch64-linux-gnu",),
            lab_fragment=True,
        ),
        # ARMv7 with LPAE: the 32-bit ARM that has THP (3-level tables).
        RobotArch(
            "arm",
            "arm",
            "arm",
            "arm-linux-gnueabihf-",
            ("gcc-arm-linux-gnueabihf",),
            options=(
                "CONFIG_ARCH_MULTI_V7=y",
                "CONFIG_ARCH_VIRT=y",
                "CONFIG_ARM_LPAE=y",
                "CONFIG_HIGHMEM=y",
            ),
        ),
        RobotArch(
            "riscv64",
            "riscv",
            "riscv",
            "riscv64-linux-gnu-",
            ("gcc-riscv64-linux-gnu",),
            options=("CONFIG_64BIT=y",),
        ),
        RobotArch(
            "powerpc64le",
            "powerpc",
            "powerpc",
            "powerpc64le-linux-gnu-",
            ("gcc-powerpc64le-linux-gnu",),
            options=(
                "CONFIG_PPC64=y",
                "CONFIG_PPC_BOOK3S_64=y",
                "CONFIG_CPU_LITTLE_ENDIAN=y",
                "CONFIG_PPC_POWERNV=y",
                "CONFIG_PPC_RADIX_MMU=y",
            ),
        ),
        RobotArch(
            "s390x",
            "s390",
            "s390",
            "s390x-linux-gnu-",
            ("gcc-s390x-linux-gnu",),
        ),
    )
}

# Every mm feature a series may touch: the config of the architectures
# without a lab fragment, each taken where the architecture has it.
MM_WANTS = (
    "CONFIG_SMP=y",
    "CONFIG_PROC_FS=y",
    "CONFIG_SYSFS=y",
    "CONFIG_BLOCK=y",
    "CONFIG_SHMEM=y",
    "CONFIG_TMPFS=y",
    "CONFIG_MULTIUSER=y",
    "CONFIG_CGROUPS=y",
    "CONFIG_MEMCG=y",
    "CONFIG_TRANSPARENT_HUGEPAGE=y",
    "CONFIG_THP_SWAP=y",
    "CONFIG_KSM=y",
    "CONFIG_NUMA=y",
    "CONFIG_NUMA_MIGRATION=y",
    "CONFIG_COMPACTION=y",
    "CONFIG_MIGRATION=y",
    "CONFIG_LRU_GEN=y",
    "CONFIG_USERFAULTFD=y",
    "CONFIG_HUGETLBFS=y",
    "CONFIG_ADVISE_SYSCALLS=y",
)
# ... and what it must have.
MM_OPTIONS = ("CONFIG_MMU=y", "CONFIG_SWAP=y")


@dataclass(frozen=True)
class Variant:
    """A config of a cell: the architecture's mm config, with options
    turned off (and those that need them dropped), or more turned on."""

    name: str
    off: tuple[str, ...] = ()
    # options of the lab's fragment that cannot stay without ``off``
    drop: tuple[str, ...] = ()
    on: tuple[str, ...] = ()
    wants: tuple[str, ...] = ()
    help: str = ""


MM_DEBUG_ON = (
    "CONFIG_DEBUG_KERNEL",
    "CONFIG_DEBUG_VM",
    "CONFIG_DEBUG_VM_PGFLAGS",
    "CONFIG_DEBUG_VM_RB",
    "CONFIG_DEBUG_VM_MAPLE_TREE",
    "CONFIG_DEBUG_VM_PGTABLE",
    "CONFIG_DEBUG_VM_IRQSOFF",
    "CONFIG_PAGE_TABLE_CHECK",
    "CONFIG_PAGE_TABLE_CHECK_ENFORCED",
    "CONFIG_DEBUG_PAGEALLOC",
    "CONFIG_PAGE_OWNER",
    "CONFIG_PAGE_POISONING",
    "CONFIG_DEBUG_PAGE_REF",
    "CONFIG_DEBUG_VIRTUAL",
    "CONFIG_PER_VMA_LOCK_STATS",
    "CONFIG_PROVE_LOCKING",
    "CONFIG_DEBUG_LIST",
)
# on where the architecture or version has them
MM_DEBUG_WANTS = (
    "CONFIG_DEBUG_VM_SHOOT_LAZIES",
    "CONFIG_DEBUG_KMEMLEAK",
    "CONFIG_SLUB_DEBUG",
)

VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("perf", help="the lab's perf config"),
        Variant(
            "no-swap",
            off=("CONFIG_SWAP",),
            drop=("CONFIG_THP_SWAP",),
            help="!SWAP",
        ),
        Variant(
            "no-thp",
            off=("CONFIG_TRANSPARENT_HUGEPAGE",),
            drop=(
                "CONFIG_TRANSPARENT_HUGEPAGE_MADVISE",
                "CONFIG_THP_SWAP",
                "CONFIG_ARM64_CONTPTE",
            ),
            help="!TRANSPARENT_HUGEPAGE",
        ),
        Variant("no-ksm", off=("CONFIG_KSM",), help="!KSM"),
        Variant("no-memcg", off=("CONFIG_MEMCG",), help="!MEMCG"),
        Variant(
            "no-numa",
            off=("CONFIG_NUMA",),
            drop=(
                "CONFIG_ACPI_NUMA",
                "CONFIG_X86_64_ACPI_NUMA",
                "CONFIG_NUMA_MIGRATION",
                "CONFIG_NUMA_BALANCING",
            ),
            help="!NUMA",
        ),
        # COMPACTION selects MIGRATION, and TRANSPARENT_HUGEPAGE selects
        # COMPACTION (6.12 and 7.3): a kernel without migration has neither
        Variant(
            "no-migration",
            off=(
                "CONFIG_MIGRATION",
                "CONFIG_COMPACTION",
                "CONFIG_TRANSPARENT_HUGEPAGE",
            ),
            drop=(
                "CONFIG_NUMA_MIGRATION",
                "CONFIG_NUMA_BALANCING",
                "CONFIG_CMA",
                "CONFIG_MEMORY_FAILURE",
                "CONFIG_TRANSPARENT_HUGEPAGE_MADVISE",
                "CONFIG_THP_SWAP",
                "CONFIG_ARM64_CONTPTE",
            ),
            help="!MIGRATION (and !COMPACTION and !THP, which select it)",
        ),
        Variant(
            "mm-debug",
            on=MM_DEBUG_ON,
            wants=MM_DEBUG_WANTS,
            help="DEBUG_VM and every other mm debug option",
        ),
        Variant("mm", help="every mm feature the architecture has"),
    )
}
LAB_VARIANTS = (
    "perf",
    "no-swap",
    "no-thp",
    "no-ksm",
    "no-memcg",
    "no-numa",
    "no-migration",
    "mm-debug",
)


@dataclass(frozen=True)
class Cell:
    """One column of the robot's table: an architecture, a config and a
    compiler; whether it compiles every prefix, and runs sparse."""

    arch: RobotArch
    variant: Variant
    compiler: str = GCC
    per_prefix: bool = False
    sparse: bool = False

    @property
    def name(self) -> str:
        suffix = "-clang" if self.compiler == CLANG else ""
        return f"{self.arch.name}/{self.variant.name}{suffix}"

    def prefixes(self, patches: int) -> tuple[int, ...]:
        """The prefixes of a series of ``patches`` patches it compiles:
        0 is the base; every one for a per-prefix cell, else the base and
        the whole series."""
        if self.per_prefix:
            return tuple(range(patches + 1))
        return (0, patches) if patches else (0,)

    def packages(self) -> tuple[str, ...]:
        """The Debian packages it needs."""
        pkgs = CLANG_PACKAGES if self.compiler == CLANG else self.arch.packages
        return pkgs + (SPARSE_PACKAGES if self.sparse else ())


def full_matrix() -> tuple[Cell, ...]:
    """Every cell, in the order they are reported."""
    cells = []
    for arch in ("x86_64", "arm64"):
        for v in LAB_VARIANTS:
            cells.append(
                Cell(
                    ARCHES[arch],
                    VARIANTS[v],
                    per_prefix=(arch, v) == ("x86_64", "perf"),
                    sparse=v == "perf",
                )
            )
    for arch in ("i386", "arm", "riscv64", "powerpc64le", "s390x"):
        cells.append(
            Cell(
                ARCHES[arch],
                VARIANTS["mm"],
                per_prefix=arch == "i386",
                sparse=True,
            )
        )
    cells.append(Cell(ARCHES["x86_64"], VARIANTS["perf"], CLANG))
    return tuple(cells)


def select(
    patterns: Sequence[str] | None, cells: tuple[Cell, ...] | None = None
) -> tuple[Cell, ...]:
    """The cells ``patterns`` name (``x86_64/no-thp``, ``arm``,
    ``*/mm-debug``, ``x86_64/*``), in the matrix's order; all with none.
    A pattern that names no cell is refused, listing the names."""
    cells = full_matrix() if cells is None else cells
    if not patterns:
        return cells
    chosen: set[str] = set()
    for pat in patterns:
        hit = [
            c
            for c in cells
            if fnmatch.fnmatchcase(c.name, pat) or c.arch.name == pat
        ]
        if not hit:
            raise UsageError(
                f"--robot-cells: no cell {pat!r}",
                hint="cells: "
                + ", ".join(c.name for c in cells)
                + " (an architecture alone names all of its "
                "cells; * matches)",
            )
        chosen.update(c.name for c in hit)
    return tuple(c for c in cells if c.name in chosen)


@dataclass(frozen=True)
class CellConfig:
    """What a cell asks kconfig for, on top of allnoconfig: ``musts`` must
    come out as asked; ``wants`` are taken where the architecture has
    them."""

    musts: dict[str, str]
    wants: dict[str, str] = field(default_factory=dict)

    def text(self) -> str:
        lines = []
        for k, v in {**self.wants, **self.musts}.items():
            lines.append(f"# {k} is not set" if v == "n" else f"{k}={v}")
        return "\n".join(lines) + "\n"

    def dropped(self, config_text: str) -> tuple[list[str], list[str]]:
        """(musts, wants) the final .config does not have as asked."""
        final = kconfig.parse(config_text, ".config")
        miss = [
            f"{k}={v} (got {final.get(k, 'n')})"
            for k, v in self.musts.items()
            if final.get(k, "n") != v
        ]
        lack = [k for k, v in self.wants.items() if final.get(k, "n") != v]
        return miss, lack


def _options(lines: Sequence[str]) -> dict[str, str]:
    return kconfig.parse("\n".join(lines), "robot matrix")


def cell_config(
    cell: Cell, version: tuple[int, int], configs_dir: Path = CONFIGS_DIR
) -> CellConfig:
    """The options a cell asks for on a kernel of ``version``."""
    v = cell.variant
    if cell.arch.lab_fragment:
        musts = dict(
            kconfig.merge(
                "perf", cell.arch.name, configs_dir, version=version
            ).options
        )
        wants: dict[str, str] = {}
    else:
        musts = _options(MM_OPTIONS + cell.arch.options)
        wants = _options(MM_WANTS + cell.arch.wants)
    for k in v.drop + v.off:
        musts.pop(k, None)
        wants.pop(k, None)
    for k in v.off:
        musts[k] = "n"
    for k in v.on:
        musts[k] = "y"
    for k in v.wants:
        wants[k] = "y"
    return CellConfig(musts, wants)
