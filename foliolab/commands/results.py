"""`diff`, `workloads` and `report`: what finished runs and the workloads
say, nothing booted."""

from __future__ import annotations

import argparse
from pathlib import Path

from foliolab import rundir, workloads
from foliolab.analysis import diff
from foliolab.bisect import record as bisectrecord
from foliolab.commands import Command
from foliolab.errors import UsageError
from foliolab.paths import unwritable
from foliolab.render import report
from foliolab.rundir import RunKind


def _diff_options(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "outs",
        nargs="+",
        type=Path,
        metavar="OUT",
        help="run directories (two or more)",
    )
    s.add_argument(
        "--all",
        action="store_true",
        help="secondary metrics too, not only the primary ones",
    )


def _workloads_options(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "names",
        nargs="?",
        metavar="NAME,...",
        help="only these workloads (default: all)",
    )


def _report_options(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "dir", type=Path, help="the run directory (compare's --out)"
    )
    s.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="write samples.jsonl, results.json, the reports and plots "
        "into DIR and only read the run (a read-only or shared run); "
        "default: into the run itself",
    )
    s.add_argument(
        "--mail",
        action="store_true",
        help="print the report for a mail (plain text within 80 "
        "columns: kernels, lead metrics and exact counts with the CI "
        "that decides, the command that reproduces the run) and write "
        "nothing",
    )


def cmd_report(args: argparse.Namespace) -> int:
    if not args.dir.is_dir():
        raise UsageError(
            f"{args.dir}: no such directory",
            hint="give the --out directory of a compare run",
        )
    if args.mail:
        if args.out is not None:
            raise UsageError(
                "--mail writes nothing, --out says where to write",
                hint="give one of them",
            )
        print(report.mail_text(args.dir), end="")
        return 0
    dest = args.out or args.dir
    why = unwritable(args.dir) if args.out is None else None
    if why:
        raise UsageError(
            f"{args.dir}: the run cannot be written "
            f"({why}), and its report is written into it",
            hint="give --out DIR to write the report elsewhere",
        )
    of = str(args.dir.resolve())
    elsewhere = args.out is not None and args.out.resolve() != Path(of)
    if elsewhere:
        # a report set goes only where there is none, or the same run's;
        # marked first, so that a set cut short is still known as one
        rundir.claim(dest, RunKind.REPORT, of=of)
        rundir.mark(dest, RunKind.REPORT, finished=False, of=of)
    if (args.dir / bisectrecord.RECORD).exists():
        record = bisectrecord.Record.read(args.dir)
        text = bisectrecord.render(record)
        with rundir.staged(dest) as stage:
            (stage / bisectrecord.TEXT).write_text(text)
        print(text, end="")
    else:
        print(report.write_report(args.dir, dest=dest).text)
    if elsewhere:
        rundir.mark(dest, RunKind.REPORT, finished=True, of=of)
    return 0


def cmd_workloads(args: argparse.Namespace) -> int:
    print(workloads.listing(workloads.get_workloads(args.names)), end="")
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    print(diff.diff(args.outs, args.all), end="")
    return 0


COMMANDS = (
    Command(
        "diff",
        "compare the ratios of finished runs (e.g. series v1 vs v2)",
        _diff_options,
        cmd_diff,
        example="foliolab diff results/v1 results/v2",
    ),
    Command(
        "workloads",
        "list every workload with its parameters and metrics",
        _workloads_options,
        cmd_workloads,
        example="foliolab workloads pageout",
    ),
    Command(
        "report",
        "rewrite the report of a results DIR",
        _report_options,
        cmd_report,
        example="foliolab report results/20261128-101500 --mail",
    ),
)
