"""`bisect`: the first commit of a range where a counted metric crosses
a threshold."""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path

from foliolab import executors, workloads
from foliolab.bisect import record as bisectrecord
from foliolab.bisect import search as bisect
from foliolab.commands import Command, options
from foliolab.commands.measure import check_user_workloads
from foliolab.errors import UsageError
from foliolab.kernel import kconfig
from foliolab.paths import PROJECT_ROOT


def _bisect_options(s: argparse.ArgumentParser) -> None:
    options.arch(s)
    s.add_argument(
        "--repo",
        type=Path,
        required=True,
        metavar="PATH",
        help="the kernel clone whose commits are bisected",
    )
    s.add_argument(
        "--good",
        required=True,
        metavar="REF",
        help="a commit that has not crossed the threshold",
    )
    s.add_argument(
        "--bad",
        required=True,
        metavar="REF",
        help="a later commit that has (good must be on its first-parent line)",
    )
    s.add_argument(
        "--workload",
        required=True,
        metavar="NAME",
        help="the workload counted at each step, e.g. pageout",
    )
    s.add_argument(
        "--metric",
        required=True,
        metavar="KEY",
        help="one of its counted metrics, e.g. try_to_unmap_insns_per_folio",
    )
    s.add_argument(
        "--below",
        metavar="VALUE",
        help="bad means the count is below VALUE: a number, or "
        "Nx for N times good's count (e.g. 0.5x)",
    )
    s.add_argument(
        "--above",
        metavar="VALUE",
        help="bad means the count is above VALUE (a number, "
        "or Nx as for --below)",
    )
    s.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a workload parameter (repeatable)",
    )
    s.add_argument("--config", choices=kconfig.PURPOSES, default="perf")
    s.add_argument(
        "--out",
        type=options.directory,
        help="run directory (default results/bisect-<time>)",
    )
    s.add_argument(
        "--resume",
        action="store_true",
        help="go on with the stopped bisect in --out DIR, "
        "reusing its counted steps",
    )
    options.executor(s)


def cmd_bisect(args: argparse.Namespace) -> int:
    threshold = bisectrecord.parse_threshold(args.below, args.above)
    if "," in args.workload:
        raise UsageError(
            f"--workload {args.workload}: bisect counts one workload",
            hint="give one name",
        )
    (w,) = workloads.get_workloads(args.workload)
    check_user_workloads([w], args.arch, "bisect")  # it counts
    params = workloads.parse_params(args.param, [w]).get(w.name, {})
    if args.resume and args.out is None:
        raise UsageError(
            "--resume goes on with the bisect in --out DIR",
            hint="give the --out of the stopped bisect",
        )
    out = args.out or PROJECT_ROOT / "results" / dt.datetime.now().strftime(
        "bisect-%Y%m%d-%H%M%S"
    )
    req = bisectrecord.BisectRequest(
        args.repo.expanduser(),
        args.good,
        args.bad,
        w,
        w.resolve(params),
        args.metric,
        threshold,
        args.arch,
        args.config,
        out,
        args.resume,
        ["foliolab", *args.argv],
        executors.options(args, args.argv),
    )
    bisect.bisect(req)
    print(f"results: {out}/bisect.txt, {out}/bisect.json")
    return 0


COMMANDS = (
    Command(
        "bisect",
        "the first commit of a range where a counted metric "
        "crosses a threshold (one counting boot per step)",
        _bisect_options,
        cmd_bisect,
        example="foliolab bisect --repo ~/linux --good v7.2 --bad v7.3 "
        "--workload pageout --metric try_to_unmap_insns_per_folio "
        "--above 5000",
    ),
)
