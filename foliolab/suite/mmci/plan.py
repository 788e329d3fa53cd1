"""What ``foliolab test --mm-ci`` does per kernel, before it does it: the
host tests of its tree, and each wrapper in a guest laid out as the mm
CI's, scaled to this machine (guest.py runs it).

The scaling (mm CI: 4 CPUs, 16 GiB in two NUMA nodes of 8 GiB, 2 GiB
swap, four 1 GiB huge pages, ASLR off, KVM, 300 s per wrapper). This
machine kind has 2 cores and 24 GiB and runs guests under TCG, beside
other work:

- CPUs: 4, as the mm CI's (two per node). Under TCG four vCPU threads on
  two cores run slower, not differently; fewer would change what the
  tests see (per-CPU lists, two CPUs per node for the NUMA tests), which
  the suite's own 4-vCPU guests here already show to work.
- memory: 12 GiB in two nodes of 6 GiB instead of 16 GiB. A TCG guest's
  RAM becomes host memory once touched, and some wrappers touch nearly
  all of it: compaction's test maps and locks most free memory, and the
  four 1 GiB pages are 4 GiB. At 16 GiB a wrapper could take 16 of the
  host's 24 GiB from everything else running; at 12 GiB it leaves 12.
  After the huge pages the guest keeps 8 GiB (the mm CI's keeps 12): a
  case failing for memory is traced to this, and runs again with 16 GiB
  where the host is quiet (MEMORY_MIB_FULL).
- swap 2 GiB, four 1 GiB huge pages, ASLR off: as the mm CI's (a disk
  file, a reservation, a sysctl: nothing this machine lacks).
- time: 300 s per wrapper on KVM becomes WRAPPER_LIMIT_S under TCG:
  7.3.4's longest wrapper took 752 s here (userfaultfd; cow 633 s, thp
  414 s; 2026-11-29, load 2-15), so about three times that, times the
  architecture's TCG slowdown (arm64 is emulated on x86).
"""

from __future__ import annotations

from dataclasses import dataclass

from foliolab.arch import Arch
from foliolab.suite.mmci import mmci
from foliolab.suite.mmci.discover import Discovery, Wrapper

GUEST_HERE = mmci.GuestLayout(
    cpus=mmci.GUEST.cpus,
    memory_mib=12 * 1024,
    numa_nodes_mib=(6 * 1024, 6 * 1024),
    swap_mib=mmci.GUEST.swap_mib,
    huge_1g_pages=mmci.GUEST.huge_1g_pages,
    aslr=mmci.GUEST.aslr,
)
MEMORY_MIB_FULL = mmci.GUEST.memory_mib
WRAPPER_LIMIT_S = 2400


def wrapper_limit_s(arch: Arch) -> int:
    return round(WRAPPER_LIMIT_S * arch.tcg_slowdown)


@dataclass(frozen=True)
class KernelPlan:
    """One kernel of an --mm-ci run: where its tree is, what it has."""

    name: str
    spec: str
    repo: str
    commit: str
    discovery: Discovery | None  # None: the tree is not at hand yet
    host_programs: dict[str, list[str]]  # directory -> programs
    note: str = ""  # why the tree is not at hand
    kconfig: str = ""  # what the kernel's config would be made of
    kept: str = ""  # the kernel store's directory, "" if it is built first
    # the wrappers the run boots, in its order (None: every one found)
    chosen: tuple[Wrapper, ...] | None = None
    # the selftests' test modules built against the kernel (page_frag)
    test_modules: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunShape:
    """What the request asks of every kernel: how many boots of each
    wrapper, host tests or not (which wrappers: KernelPlan.chosen)."""

    repeat: int = 1
    host_tests: bool = True


def describe(
    plans: list[KernelPlan],
    arch: Arch,
    limit_s: int | None = None,
    shape: RunShape = RunShape(),
) -> str:
    """The dry run's text: per kernel, the host tests and the wrappers
    it would run, and the guest they run in, each wrapper's boot limited
    to ``limit_s`` (--wrapper-limit; None: wrapper_limit_s()), as
    ``shape`` chooses them."""
    lines = [
        f"mm CI's tests ({mmci.REPOSITORY} at {mmci.COMMIT[:12]}), "
        f"{arch.name}:",
        f"  guest: "
        f"{GUEST_HERE.describe()}, TCG, "
        f"{limit_s or wrapper_limit_s(arch)} s per wrapper",
        f"  the mm CI's guest: {mmci.GUEST.describe()}, KVM, "
        f"{mmci.TIMEOUT_S} s per wrapper",
    ]
    boots = f", {shape.repeat} boots of each" if shape.repeat > 1 else ""
    for p in plans:
        lines.append(f"{p.name} = {p.spec}")
        if p.discovery is None:
            lines.append(f"  tree not at hand: {p.note}")
            continue
        lines.append(f"  tree {p.repo} at {p.commit[:12]}")
        if p.kconfig:
            lines.append(f"  kconfig: {p.kconfig}")
        found = p.discovery
        run = list(found.wrappers if p.chosen is None else p.chosen)
        if run:
            lines.append(
                f"  kernel: kept in {p.kept}"
                if p.kept
                else "  kernel: built first (not in the kernel store)"
            )
        if run and p.test_modules:
            lines.append(
                "  test modules: "
                + ", ".join(p.test_modules)
                + " (the selftests', built against the kernel)"
            )
        if not shape.host_tests:
            lines.append("  host tests: not run (--no-host-tests)")
        elif shape.repeat > 1:
            lines.append(f"  host tests: {shape.repeat} runs of each")
        for d, progs in p.host_programs.items() if shape.host_tests else ():
            lines.append(
                f"  host tests {d}: "
                + (", ".join(progs) if progs else "none (not in the tree)")
            )
        if p.chosen is None:
            head = f"{len(found.wrappers)} {found.kind}"
        elif not run:
            head = f"none of its {len(found.wrappers)} {found.kind}"
        else:
            head = f"{len(run)} of its {len(found.wrappers)} {found.kind}"
        lines.append(
            f"  guest: {head}"
            + (f", each in its own boot{boots}" if run else " (--wrappers)")
        )
        for w in run:
            lines.append(f"    {w.name:<18} {w.describe()}")
        if len(run) < len(found.wrappers) and run:
            lines.append(
                "    not run: "
                + " ".join(w.name for w in found.wrappers if w not in run)
            )
        for name, why in found.left_out.items():
            lines.append(f"    left out: {name} ({why})")
    return "\n".join(lines) + "\n"
