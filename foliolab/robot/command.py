"""``foliolab check --robot``: the options, their check before any work,
and what the command prints.

Kept here rather than in commands/ so that ``check`` itself only adds the
options and hands over: the robot's whole surface is this package.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from foliolab import rundir
from foliolab.errors import BuildError, DiagnosticsError, UsageError
from foliolab.kernel import source, sources
from foliolab.kernel import specs as kernels
from foliolab.kernelrecord import KernelRecord, kernel_record
from foliolab.robot import matrix, run, toolchain
from foliolab.robot.report import Report
from foliolab.rundir import RunKind
from foliolab.series.check import prefix_kernel
from foliolab.testrecord import Outcomes


def options(s: argparse.ArgumentParser) -> None:
    g = s.add_argument_group("the kernel test robot's checks (--robot)")
    g.add_argument(
        "--robot",
        action="store_true",
        help="instead of building and booting each prefix: "
        "compile the series on the robot's matrix of "
        "architectures and configs with W=1, sparse, "
        "kernel-doc and checkpatch --strict, and report "
        "what each patch adds (see docs/manual.md)",
    )
    g.add_argument(
        "--robot-cells",
        metavar="CELL,...",
        type=_cells,
        help="only these cells (ARCH/CONFIG, ARCH for all of "
        "its cells, * matches; default: the whole matrix)",
    )
    g.add_argument(
        "--robot-jobs",
        type=_jobs,
        default=toolchain.jobs(),
        metavar="N",
        help="make -jN for each compile (default: the cores, at most 2)",
    )


def _cells(value: str) -> list[str]:
    """--robot-cells: one cell at least (``--robot-cells ""`` was the
    whole matrix, hours of compiles)."""
    cells = [c.strip() for c in value.split(",") if c.strip()]
    if not cells:
        raise argparse.ArgumentTypeError(
            f"{value!r} names no cell; give ARCH/CONFIG,... or leave it out "
            "for the whole matrix"
        )
    return cells


def _jobs(value: str) -> int:
    """--robot-jobs: refused by the parser, so a wrong one is refused with
    or without --robot, before any work."""
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a number"
        ) from None
    if not 1 <= n <= 256:
        raise argparse.ArgumentTypeError(f"{value!r}: give 1 to 256")
    return n


@dataclass(frozen=True)
class RobotRequest:
    """What the command line asks of the robot, read from its options
    once, where the command hands over."""

    robot: bool  # --robot
    cells: tuple[str, ...] | None  # --robot-cells: patterns of cells
    jobs: int  # --robot-jobs
    history_only: bool  # --history-only, which --robot refuses
    patches: Path | None  # --patches: the series' directory

    @staticmethod
    def from_args(args: argparse.Namespace) -> RobotRequest:
        return RobotRequest(
            robot=args.robot,
            cells=(
                None if args.robot_cells is None else tuple(args.robot_cells)
            ),
            jobs=args.robot_jobs,
            history_only=args.history_only,
            patches=args.patches,
        )


def cells(args: argparse.Namespace) -> tuple[matrix.Cell, ...] | None:
    """The cells ``check``'s options ask for (see ``chosen_cells``)."""
    return chosen_cells(RobotRequest.from_args(args))


def chosen_cells(request: RobotRequest) -> tuple[matrix.Cell, ...] | None:
    """The cells asked for (None without --robot), checked before any
    work: an unknown cell, or --robot beside an option it has no use for,
    is one line."""
    if not request.robot:
        if request.cells:
            raise UsageError(
                "--robot-cells picks the robot's cells: it needs --robot",
                hint="add --robot",
            )
        return None
    if request.history_only:
        raise UsageError(
            "--robot and --history-only are two different checks",
            hint="give one of them",
        )
    if request.jobs < 1:
        raise UsageError(f"--robot-jobs {request.jobs}: give 1 or more")
    return matrix.select(request.cells)


def check(
    args: argparse.Namespace,
    spec: kernels.KernelSpec,
    tree: source.Tree,
    chosen: tuple[matrix.Cell, ...],
    out: Path,
) -> int:
    """``check --robot`` with its options (see ``run_request``)."""
    return run_request(RobotRequest.from_args(args), spec, tree, chosen, out)


def run_request(
    request: RobotRequest,
    spec: kernels.KernelSpec,
    tree: source.Tree,
    chosen: tuple[matrix.Cell, ...],
    out: Path,
) -> int:
    """Run the robot on ``spec``'s series (``tree``: its whole series
    applied), print each finding (``patch: cell: file:line: text``), the
    time of each cell and the notes; a finding is an error. The run's
    outcomes go beside robot.txt (see ``outcomes``)."""
    series = sources.read_patches(request.patches)
    report = run.check(tree, series.patches, chosen, out, request.jobs)
    outcomes(report, spec, tree, out).write(out)
    # its findings and broken cells are its results: the check finished
    rundir.mark(out, RunKind.ROBOT, finished=True)
    for line in report.lines():
        print(line)
    print(
        f"robot: {len(report.findings)} new diagnostic(s) on "
        f"{len(report.times)} cells in {report.elapsed:.0f} s; "
        f"per cell (this run):"
    )
    for t in report.times:
        print("  " + t.row())
    for note in report.notes:
        print(f"  note: {note}")
    for name, why in report.broken.items():
        print(f"  broken: {name}: {why}")
    print(f"robot: written to {out}")
    if report.broken:
        name = next(iter(report.broken))
        raise BuildError(
            f"the robot could not compile on "
            f"{len(report.broken)} cell(s), first {name}",
            hint=report.broken[name],
        )
    if report.findings:
        first = report.findings[0]
        raise DiagnosticsError(
            f"the robot found {len(report.findings)} diagnostic(s) the "
            f"series adds, first {first.patch} on {first.cell}",
            hint=f"see the lines above or {out / 'robot.txt'}",
        )
    return 0


def outcomes(
    report: Report, spec: kernels.KernelSpec, tree: source.Tree, out: Path
) -> Outcomes:
    """The robot's run as every command records one: a kernel per prefix
    a cell or check ran on, named by its label (0000: the base, 0003:
    the base and patches 1..3), with its spec and series (the robot
    builds per cell: no build of its own; a test's misc has the cell's
    arch and config); a test per cell and patch (``Report.tests``)."""
    records: list[KernelRecord] = [
        kernel_record(prefix_kernel(spec, p.index), tree if p.index else None)
        for p in report.built()
    ]
    return Outcomes("check", records, report.tests(out))
