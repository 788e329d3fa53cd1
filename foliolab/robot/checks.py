"""The robot's tree-wide checks, the ones run once per prefix or patch,
not once per cell: kernel-doc and checkpatch, and CHECKS, the registry
the robot runs (what a check is: treecheck.py).

A new check is a TreeCheck subclass and its parser, here or in a module
of its own, and a line in CHECKS; the robot runs and reports every check
in CHECKS alike.
"""

from __future__ import annotations

import re
from dataclasses import replace

from foliolab import proc
from foliolab.robot import diagnostics as dg
from foliolab.robot.prefixes import Prefix
from foliolab.robot.treecheck import Checkout, Reads, TreeCheck
from foliolab.series import check as series_check

# ---- kernel-doc ------------------------------------------------------

# kernel-doc: "Warning: mm/vmscan.c:240 No description found for ..."
# (7.3's Python kernel-doc), "mm/vmscan.c:240: warning: ..." (6.12's Perl)
_KDOC = (
    re.compile(
        r"^(?P<sev>Warning|Error): (?P<file>[^\s:]+):(?P<line>\d+)"
        r":? (?P<msg>.*)$"
    ),
    re.compile(
        r"^(?P<file>[^\s:]+):(?P<line>\d+): (?P<sev>warning|error)"
        r": (?P<msg>.*)$"
    ),
)


def parse_kernel_doc(text: str) -> list[dg.Diagnostic]:
    """``scripts/kernel-doc -none -Wall`` output as diagnostics (each
    once: 7.3's kernel-doc repeats a header's warnings per file)."""
    out: dict[tuple[object, ...], dg.Diagnostic] = {}
    for line in text.splitlines():
        for pat in _KDOC:
            m = pat.match(line.strip())
            if m:
                d = dg.Diagnostic(
                    "kernel-doc",
                    m.group("file"),
                    int(m.group("line")),
                    m.group("sev").lower(),
                    m.group("msg").strip(),
                )
                out.setdefault((d.file, d.line, d.message), d)
                break
    return list(out.values())


class KernelDoc(TreeCheck):
    """kernel-doc -none -Wall on the series' changed .c and .h files as
    they are in each prefix (W=1's own kernel-doc run is turned off: see
    toolchain.make_argv)."""

    cell = "all/kernel-doc"
    reads = Reads.TREES

    def inputs(self, tree: Checkout, prefix: Prefix) -> list[str]:
        return [
            f
            for f in tree.changed()
            if f.endswith((".c", ".h"))
            and tree.lines(prefix.commit, f) is not None
        ]

    def run(self, tree: Checkout, prefix: Prefix, inputs: list[str]) -> str:
        cp = proc.run(
            [
                tree.worktree / "scripts" / "kernel-doc",
                "-none",
                "-Wall",
                *inputs,
            ],
            cwd=tree.worktree,
            check=False,
        )
        return cp.stdout + cp.stderr

    def parse(self, output: str, prefix: Prefix) -> list[dg.Diagnostic]:
        return parse_kernel_doc(output)


# ---- checkpatch ------------------------------------------------------

_CP_HEAD = re.compile(r"^(ERROR|WARNING|CHECK): (.*)$")
_CP_FILE = re.compile(r"^#\d+: FILE: (\S+):(\d+):\s*$")


def parse_checkpatch(text: str, patch: str) -> list[dg.Diagnostic]:
    """``checkpatch.pl --strict`` output as diagnostics: each on the file
    and line its ``FILE:`` names, or on the patch itself (the commit
    message)."""
    out: list[dg.Diagnostic] = []
    head = None
    for line in text.splitlines():
        m = _CP_HEAD.match(line)
        if m:
            if head:
                out.append(head)
            head = dg.Diagnostic(
                "checkpatch", patch, 0, m.group(1).lower(), m.group(2).strip()
            )
            continue
        m = _CP_FILE.match(line)
        if m and head and head.file == patch:
            head = replace(head, file=m.group(1), line=int(m.group(2)))
    if head:
        out.append(head)
    return out


class Checkpatch(TreeCheck):
    """checkpatch.pl --strict on each patch, from the tree at hand (the
    series' last prefix unless the run checked out none): moving the
    worktree back to the base would make every cell compile the series'
    files again in the next run."""

    cell = "all/checkpatch"
    reads = Reads.PATCHES

    def run(self, tree: Checkout, prefix: Prefix, inputs: list[str]) -> str:
        return series_check.checkpatch(tree.worktree, prefix.made_by()).stdout

    def parse(self, output: str, prefix: Prefix) -> list[dg.Diagnostic]:
        return parse_checkpatch(output, prefix.made_by().name)


KERNEL_DOC = KernelDoc()
CHECKPATCH = Checkpatch()

# Every tree-wide check the robot runs, in the order of their findings
# on one patch and line (checkpatch's first, as the report always had
# them).
CHECKS: tuple[TreeCheck, ...] = (CHECKPATCH, KERNEL_DOC)
