"""Kernel functions the lab names, and what newer kernels call them.

Workloads, counting roots and metric keys use the 6.12 base's function
names. A kernel of another version may have renamed one, or folded it into
another; this table says so per version (read from the kernel's source,
never guessed at run time), and both sides follow it: the counting pass
names a kernel's functions by the lab's names (its symbol file is written
with them), and the guest's profiler asks the kernel for its own name and
reports the lab's (the table travels in the image as ``foliolab/ksyms``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rename:
    """From kernel ``since`` on, the lab's ``name`` is the kernel's ``new``."""

    name: str
    since: tuple[int, int]
    new: str
    why: str


RENAMES = (
    # 7.3 calls it collapse_scan_pmd() and inlines it (with the collapse)
    # into collapse_single_pmd(), its caller for khugepaged, which has a
    # symbol: that root holds the same scan-and-collapse of one PMD range,
    # plus a branch for file ranges that the anonymous workload never takes.
    Rename(
        "hpage_collapse_scan_pmd",
        (7, 3),
        "collapse_single_pmd",
        "collapse_scan_pmd() in 7.3, inlined into collapse_single_pmd() "
        "(7.3.4's System.map; 7.0-7.2 not checked)",
    ),
    Rename(
        "add_to_swap",
        (7, 3),
        "folio_alloc_swap",
        "shrink_folio_list() allocates the swap slot and adds the folio "
        "to the swap cache in one call, folio_alloc_swap() (7.3.4 read)",
    ),
)


def lab_names(version: tuple[int, int]) -> dict[str, str]:
    """{kernel's name: lab's name} for the functions ``version`` renamed."""
    return {r.new: r.name for r in RENAMES if version >= r.since}


def guest_table() -> str:
    """The table as the guest's lib.sh reads it: ``MAJOR.MINOR lab new``."""
    return "".join(
        f"{r.since[0]}.{r.since[1]} {r.name} {r.new}\n" for r in RENAMES
    )
