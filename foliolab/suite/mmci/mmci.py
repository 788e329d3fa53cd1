"""What the mm CI does, read once from its public configuration.

Source: https://github.com/linux-mm/mm-ci at COMMIT (2026-08-20), files
.github/scripts/run-mm-selftests.sh (wrappers, flaky ones, guest, time
limit, kernel log check), .github/scripts/run-datastructure-tests.sh,
run-vma-tests.sh, run-memblock-tests.sh (host tests) and
.github/kconfigs/mm-selftests.config (configs/mm-ci.config). Facts only:
nothing here runs anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REPOSITORY = "https://github.com/linux-mm/mm-ci"
COMMIT = "f4a4ab734b387636ad9095a2902b6a0e4fb3981a"
SELFTESTS_SCRIPT = ".github/scripts/run-mm-selftests.sh"

# The wrappers its TESTS list runs, each with the name it prints. A
# wrapper a tree has and this list lacks (7.3.4: kmemleak_confirm,
# kmemleak_dedup) is still run by foliolab (a tree is run as it is), and
# its rows say the mm CI does not run it.
WRAPPERS = {
    "ksft_compaction.sh": "compaction",
    "ksft_madv_guard.sh": "madvise(MADV_GUARD)",
    "ksft_madv_populate.sh": "madvise(MADV_POPULATE)",
    "ksft_mdwe.sh": "prctl(PR_SET_MDWE)",
    "ksft_mkdirty.sh": "PTE/PMD mkdirty",
    "ksft_pfnmap.sh": "VM_PFNMAP",
    "ksft_process_madv.sh": "process_madvise(2)",
    "ksft_process_mrelease.sh": "process_mrelease(2)",
    "ksft_rmap.sh": "rmap",
    "ksft_vma_merge.sh": "VMA merge",
    "ksft_mmap.sh": "mmap(2)",
    "ksft_mremap.sh": "mremap(2)",
    "ksft_page_frag.sh": "page fragment allocator",
    "ksft_ksm_numa.sh": "KSM NUMA",
    "ksft_soft_dirty.sh": "soft-dirty",
    "ksft_cow.sh": "CoW",
    "ksft_pagemap.sh": "pagemap_ioctl()",
    "ksft_migration.sh": "migration",
    "ksft_mlock.sh": "mlock(2)",
    "ksft_hugevm.sh": "very large virtual address space",
    "ksft_pkey.sh": "protection keyes",
    "ksft_gup_test.sh": "GUP",
    "ksft_memfd_secret.sh": "memfd_secret(2)",
    "ksft_ksm.sh": "KSM",
    "ksft_memory_failure.sh": "memory failure",
    "ksft_thp.sh": "THP",
    "ksft_userfaultfd.sh": "userfaultfd(2)",
    "ksft_hugetlb.sh": "hugetlb",
    "ksft_hmm.sh": "HMM",
    "ksft_vmalloc.sh": "vmalloc",
}

# FLAKY_TESTS: run, but a failure prints "? flaky" and does not fail the
# mm CI. ksm_numa was left out altogether ("# ksm_numa is flaky, disable
# it for now", a commented-out TESTS line) until d0af69d (2026-07-31,
# "scripts: mm-selftests: mark KSM tests as flaky") put it back with ksm
# as flaky. foliolab runs both and counts their failures k of n like any
# other case (compare.py); the reason goes with every row of theirs.
FLAKY = {
    "ksft_ksm_numa.sh": "flaky in the mm CI (d0af69d: run, failures not "
    "counted; left out before it as flaky)",
    "ksft_ksm.sh": "flaky in the mm CI (d0af69d: run, failures not counted)",
}
# Left out altogether (a commented-out TESTS line) at COMMIT: none.
LEFT_OUT: dict[str, str] = {}

# Each wrapper's time limit (TIMEOUT, seconds, the vng command's), on
# the mm CI's self-hosted KVM runner.
TIMEOUT_S = 300
# The exit status kselftest gives a skip; the mm CI counts it a pass.
KSFT_SKIP = 4


@dataclass(frozen=True)
class GuestLayout:
    """A guest for the wrappers: ``vng --cpus --memory --numa --numa``, a
    swap disk, 1 GiB huge pages reserved, ASLR off."""

    cpus: int
    memory_mib: int
    numa_nodes_mib: tuple[int, ...]
    swap_mib: int
    huge_1g_pages: int
    aslr: bool

    def describe(self) -> str:
        nodes = " + ".join(f"{m // 1024} GiB" for m in self.numa_nodes_mib)
        return (
            f"{self.cpus} CPUs, {self.memory_mib // 1024} GiB in "
            f"{len(self.numa_nodes_mib)} NUMA nodes ({nodes}), "
            f"{self.swap_mib // 1024} GiB swap, "
            f"{self.huge_1g_pages} x 1 GiB huge pages, "
            f"ASLR {'on' if self.aslr else 'off'}"
        )


# run-mm-selftests.sh: `vng --cpus 4 --memory 16G --numa 8G --numa 8G`,
# `qemu-img create -f qcow2 $guest_swap 2G` + mkswap/swapon, `echo 4 >
# .../hugepages-1048576kB/nr_hugepages`, `echo 0 >
# /proc/sys/kernel/randomize_va_space`; KVM on its self-hosted runner.
GUEST = GuestLayout(
    cpus=4,
    memory_mib=16 * 1024,
    numa_nodes_mib=(8 * 1024, 8 * 1024),
    swap_mib=2 * 1024,
    huge_1g_pages=4,
    aslr=False,
)
KERNEL_ARGS = ("console=hvc0", "loglevel=8", "panic=-1", "oops=panic")

# check_kernel_log(): any console line matching BAD and not OK fails the
# wrapper, whatever its output said; memory_failure's own messages are
# expected of it.
KERNEL_LOG_BAD = re.compile(
    r"WARNING:|BUG|Oops|UBSAN:|rcu:.*stall|INFO: task .* blocked"
    r"|watchdog:.*LOCKUP"
)
KERNEL_LOG_OK = re.compile(r"FAULT_INJECTION")
KERNEL_LOG_OK_OF = {
    "ksft_memory_failure.sh": re.compile(
        r"Memory failure:|MCE: Killing|Soft offline:|Unpoison:"
    ),
}


def kernel_log_problems(wrapper: str, console: str) -> list[str]:
    """The console lines that make the mm CI fail ``wrapper`` however
    its tests went (check_kernel_log's tripwire)."""
    ok = KERNEL_LOG_OK_OF.get(wrapper)
    return [
        line
        for line in console.splitlines()
        if KERNEL_LOG_BAD.search(line)
        and not KERNEL_LOG_OK.search(line)
        and not (ok and ok.search(line))
    ]


# The host tests (run-datastructure-tests.sh, run-vma-tests.sh,
# run-memblock-tests.sh): directory under tools/testing, the make
# target, and each program with its arguments. maple is flaky there
# (FLAKY_TESTS="maple": a failure is "? flaky", not a failure).
HOST_FLAKY = {"radix-tree/maple": "flaky in the mm CI (FLAKY_TESTS)"}


def changed_guest(append: tuple[str, ...], mglru: bool = False) -> str:
    """The lines that head whatever a run whose boots took kernel
    arguments of the user's (--append) or MGLRU on (--mglru on) writes
    (the dry run, the summary, a search's answer): its guest is not the
    mm CI's. "" without either."""
    lines = []
    if append:
        lines.append(
            "not the mm CI's guest: every boot adds the kernel arguments "
            + " ".join(append)
        )
    if mglru:
        lines.append(
            "not the mm CI's guest: MGLRU on in every boot "
            f"({MGLRU_SWITCH} set to y; the kernel boots with it off)"
        )
    return "".join(line + "\n" for line in lines)


def changed_guest_marks(
    append: tuple[str, ...], mglru: bool = False
) -> dict[str, str]:
    """What a row of such a run keeps of it (each wrapper's row, a
    search's answer), beside changed_guest()'s heading: {} for the mm
    CI's own guest."""
    marks = {}
    if append:
        marks["kernel_args_added"] = " ".join(append)
    if mglru:
        marks["mglru"] = "on"
    return marks


# where a wrapper's boot turns MGLRU on (--mglru on); the mm CI kernel
# here has LRU_GEN but not LRU_GEN_ENABLED, so it boots with MGLRU off
MGLRU_SWITCH = "/sys/kernel/mm/lru_gen/enabled"
