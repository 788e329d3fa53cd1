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
from foliolab.export import kcidb
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
        metavar="NAME|./DIR,...",
        help="only these workloads (default: all); a folder of your "
        "own by its path, ./DIR",
    )


def _report_options(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "dir",
        type=Path,
        help="the run directory (compare's --out; with --kcidb also "
        "test's, check's or bisect's)",
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
    s.add_argument(
        "--kcidb",
        type=Path,
        metavar="FILE",
        help="write the run (a compare, test, check, check --robot or "
        "bisect) as a KCIDB v5.3 document to FILE, validated first, and "
        "nothing into the run (with --out: a compare's report written "
        "there first, the document made from it); needs --origin",
    )
    s.add_argument(
        "--origin",
        metavar="NAME",
        help="with --kcidb: the CI system's name in KCIDB (lower-case "
        "letters, digits, _), the start of every id",
    )
    s.add_argument(
        "--run-name",
        metavar="NAME",
        help="with --kcidb: the run's name in the ids (default: DIR's name)",
    )
    s.add_argument(
        "--force",
        action="store_true",
        help="with --kcidb: replace FILE if it is there",
    )


def _report_set(run: Path, dest: Path) -> str:
    """The report set of ``run`` written into ``dest`` (the run itself,
    or a directory claimed for it first); report.txt's text."""
    of = str(run.resolve())
    elsewhere = dest.resolve() != Path(of)
    if elsewhere:
        # a report set goes only where there is none, or the same run's
        rundir.claim(dest, RunKind.REPORT, of=of)
    else:
        # into the run itself: not while its own command writes it
        rundir.hold(dest)
    with rundir.removed_if_it_fails(dest):
        if elsewhere:
            # marked first, so that a set cut short is still known as one
            rundir.mark(dest, RunKind.REPORT, finished=False, of=of)
        if (run / bisectrecord.RECORD).exists():
            record = bisectrecord.Record.read(run)
            text = bisectrecord.render(record)
            with rundir.staged(dest) as stage:
                (stage / bisectrecord.TEXT).write_text(text)
        else:
            text = report.write_report(run, dest=dest).text + "\n"
        if elsewhere:
            rundir.mark(dest, RunKind.REPORT, finished=True, of=of)
    return text


def _kcidb_report(args: argparse.Namespace) -> int:
    """report DIR --kcidb FILE: the run as KernelCI reads it, written to
    FILE only (DIR is read; with --out the report is written into DIR2
    first and the document made from there)."""
    if args.mail:
        raise UsageError(
            "--mail prints the report, --kcidb writes a file",
            hint="give one of them",
        )
    if args.origin is None:
        raise UsageError(
            "--kcidb needs --origin NAME (the CI system's name in KCIDB)",
            hint="e.g. --origin foliolab",
        )
    kcidb.check_origin(args.origin)
    target = args.kcidb.resolve()
    run = args.dir.resolve()
    own = args.out.resolve() if args.out is not None else None
    if target.is_relative_to(run) and not (
        own is not None and target.is_relative_to(own)
    ):
        raise UsageError(
            f"{args.kcidb} is inside the run {args.dir}, which this "
            "command only reads",
            hint="give a FILE outside the run",
        )
    if own is None or not target.is_relative_to(own):
        kcidb.refused_file(args.kcidb, args.force)  # before any report
    records = args.dir
    if args.out is not None:
        if not (args.dir / "environment.json").is_file():
            raise UsageError(
                "--out with --kcidb derives a compare run's results, "
                f"and {args.dir} is not one (no environment.json)",
                hint="export it without --out",
            )
        _report_set(args.dir, args.out)  # claimed, as report --out is
        records = args.out
    done = kcidb.export(
        records,
        args.kcidb,
        args.origin,
        args.run_name or run.name,
        args.force,
    )
    for line in done.left_out:
        print(f"left out: {line}")
    print(done.line())
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    if not args.dir.is_dir():
        raise UsageError(
            f"{args.dir}: no such directory",
            hint="give the --out directory of a compare run",
        )
    if args.kcidb is not None:
        return _kcidb_report(args)
    for given, name in (
        (args.origin, "--origin"),
        (args.run_name, "--run-name"),
        (args.force or None, "--force"),
    ):
        if given is not None:
            raise UsageError(
                f"{name} is an option of --kcidb", hint="give --kcidb FILE"
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
    text = _report_set(args.dir, dest)
    print(text, end="")
    return 0


def cmd_workloads(args: argparse.Namespace) -> int:
    # without names: every workload, the general set too
    names = args.names or workloads.ALL
    print(workloads.listing(workloads.get_workloads(names)), end="")
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
