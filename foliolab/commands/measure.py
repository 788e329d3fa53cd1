"""`compare`, `jobs export|collect` and `attribute`: measured runs, as
stages.Request."""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import sys
from pathlib import Path

from foliolab import executors, workloads
from foliolab.analysis import stats
from foliolab.arch import get_arch
from foliolab.commands import Command, options
from foliolab.errors import UsageError
from foliolab.kernel import image
from foliolab.kernel import specs as kernels
from foliolab.kernel.specs import KernelSpec
from foliolab.paths import DEFAULT_PATCHES, PROJECT_ROOT
from foliolab.run import orchestrate
from foliolab.run.stages import Request
from foliolab.workloads import sweep
from foliolab.workloads.model import MACHINE_VCPUS, Workload, with_roots

log = logging.getLogger("foliolab")


def _compare_options(s: argparse.ArgumentParser) -> None:
    options.common(s)
    s.add_argument(
        "--kernel",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="a kernel to compare (repeatable, two or more; the "
        "first is the baseline). SPEC: base, git:PATH@REF, "
        "debian:VERSION, any of them +DIR (the series in "
        "DIR on it) or +DIR:N (its first N patches), or "
        "image:PATH. Replaces --patches",
    )
    options.measure(s)
    executors.add_flags(s)


def _jobs_options(s: argparse.ArgumentParser) -> None:
    jobs = s.add_subparsers(
        dest="jobs_command", required=True, parser_class=type(s)
    )
    s = jobs.add_parser(
        "export",
        help="write the LAVA jobs, artifacts and "
        "run directory of a comparison, and "
        "run nothing",
    )
    options.common(s)
    s.add_argument(
        "--kernel",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="as for compare",
    )
    options.measure(s)
    executors.add_flags(s, only=executors.EXPORTER)
    s = jobs.add_parser(
        "collect",
        help="read LAVA logs of exported jobs "
        "into their run directory, report",
    )
    s.add_argument(
        "dir",
        type=Path,
        metavar="OUT",
        help="the directory the jobs were exported to",
    )
    s.add_argument(
        "logs",
        nargs="+",
        type=Path,
        metavar="LOG",
        help="a job's log: lava-run's output, or the YAML or "
        "plain log downloaded from a lab",
    )


def _attribute_options(s: argparse.ArgumentParser) -> None:
    options.arch(s)
    s.add_argument(
        "--series",
        type=Path,
        default=DEFAULT_PATCHES,
        metavar="DIR",
        help="the series (default patches/6.12)",
    )
    options.base(s, "the tree the series goes on, the baseline `base`")
    s.add_argument(
        "--at",
        type=options.prefix_list,
        required=True,
        metavar="N,...",
        help="the prefixes to build, e.g. 4,10,18,25 (each the "
        "series' first N patches)",
    )
    options.measure(s)
    executors.add_flags(s)


def _kernel_args(args: argparse.Namespace) -> list[KernelSpec]:
    specs = [kernels.parse_kernel(k) for k in args.kernel]
    if specs and args.patches != DEFAULT_PATCHES:
        raise UsageError(
            "--kernel and --patches both name the kernels",
            hint="give --kernel only (--patches DIR is "
            "--kernel vanilla=base --kernel "
            "patched=base+DIR)",
        )
    return specs


def cmd_compare(args: argparse.Namespace) -> int:
    return _compare(args, _kernel_args(args), args.patches, {})


def cmd_jobs(args: argparse.Namespace) -> int:
    if args.jobs_command == "collect":
        collected = orchestrate.collect(args.dir, args.logs)
        print(
            collected.written.text
            + "".join(f"note: {n}\n" for n in collected.notes),
            end="",
        )
        return 0
    if args.dry_run or args.resume:
        raise UsageError(
            "jobs export runs nothing; --dry-run and --resume are for compare",
            hint="drop them",
        )
    if args.out is None:
        raise UsageError(
            "jobs export needs --out DIR",
            hint="the run directory the jobs' logs are collected into later",
        )
    req = _request(args, _kernel_args(args), args.patches, {})
    print(orchestrate.export(req), end="")
    return 0


def cmd_attribute(args: argparse.Namespace) -> int:
    return _compare(
        args, attribute_specs(args), args.series, {f"p{n}": n for n in args.at}
    )


def attribute_specs(args: argparse.Namespace) -> list[KernelSpec]:
    """``attribute``'s kernels: ``base`` (the --base tree) and ``pN``, the
    tree with the series' first N patches, for each N of --at."""
    onto = kernels.parse_base(args.base)
    series = kernels.with_series(onto, "all", args.series).series()
    if args.at[-1] > len(series.patches):
        raise UsageError(
            f"--at {args.at[-1]}: {args.series} has "
            f"{len(series.patches)} patches",
            hint=f"give counts from 1 to {len(series.patches)}",
        )
    return [onto] + [
        kernels.with_series(onto, f"p{n}", args.series, n) for n in args.at
    ]


def _warn_small_runs(runs: int) -> None:
    """Before anything is built: --runs too small for the statistics."""
    if runs < stats.runs_needed():
        log.warning(
            "WARNING: with --runs %d no row can be significant (a "
            "two-sided Mann-Whitney test cannot give p below %.3g at "
            "%d against %d); use --runs %d or more (counts that "
            "repeat exactly are still reported as exact)",
            runs,
            stats.min_p_value(runs, runs),
            runs,
            runs,
            stats.runs_needed(),
        )
    if runs < stats.MIN_N_FOR_CI:
        log.warning(
            "WARNING: with --runs %d the report prints no "
            "confidence interval (it needs %d samples per kernel)",
            runs,
            stats.MIN_N_FOR_CI,
        )


def _request(
    args: argparse.Namespace,
    specs: list[KernelSpec],
    patches: Path | None,
    attribution: dict[str, int],
) -> Request:
    wl = workloads.get_workloads(args.workloads)
    # a user's folder marks no counting window: under --count it is timed
    # only (measure.plan), and --count of nothing else is refused
    # (orchestrate.check_counted)
    check_user_workloads(wl, args.arch, "")
    params = workloads.parse_params(args.param, wl)
    sweeps = sweep.parse_sweeps(
        args.sweep, wl, params, args.numa_nodes, options.MAX_VCPUS
    )
    swept_vcpus = [s for s in sweeps if s.param == MACHINE_VCPUS]
    if swept_vcpus and getattr(args, "vcpus_given", False):
        # the sweep's values would replace --vcpus without a word
        raise UsageError(
            f"--vcpus {args.vcpus} beside --sweep "
            f"{swept_vcpus[0].workload}.vcpus: the sweep sets the vCPUs",
            hint="leave --vcpus out, or the vCPUs out of --sweep",
        )
    wl, params = sweep.expand(wl, params, sweeps)
    roots = tuple(args.root)  # their --count: orchestrate.check
    wl = [with_roots(w, roots) for w in wl]
    if args.resume and args.out is None:
        raise UsageError(
            "--resume finishes the run in --out DIR",
            hint="give the --out of the interrupted run",
        )
    if args.resume and args.force:
        raise UsageError(
            "--resume keeps the run in --out, --force deletes it",
            hint="give one of them",
        )
    _warn_small_runs(args.runs)
    out = args.out or PROJECT_ROOT / "results" / dt.datetime.now().strftime(
        "%Y%m%d-%H%M%S"
    )
    return Request(
        workloads=wl,
        params=params,
        runs=args.runs,
        patches=patches,
        arch=args.arch,
        out=out,
        config=args.config,
        accel=args.accel,
        vcpus=args.vcpus,
        numa_nodes=args.numa_nodes,
        cpu=args.cpu,
        samples_per_boot=args.samples_per_boot,
        fault=args.fault or "",
        timeout=args.timeout,
        count=args.count,
        roots=roots,
        kernels=specs,
        attribution=attribution,
        dry_run=args.dry_run,
        records_on=args.records_on,
        executor=executors.options(args, args.argv),
        resume=args.resume,
        force=args.force,
        command=["foliolab", *args.argv],
        monitors=args.monitors,
    )


def check_user_workloads(
    wl: list[Workload], arch_name: str, counting: str
) -> None:
    """What a user's workload folder (workloads/user.py) cannot be asked
    for, refused before anything is built: exact counts where they are
    all a command measures (``counting``: what asks for them, "" for
    nothing; it marks no counting window), and a binary that is not
    static or not for the guest."""
    for w in wl:
        uw = workloads.user.loaded(w.name)
        if uw is None:
            continue
        if counting:
            raise UsageError(
                f"{counting}: the workload {w.name} (from {uw.folder}) "
                "marks no counting window to count in",
                hint="bisect a built-in workload's counted metric",
            )
        if not uw.is_elf:
            continue
        arch = get_arch(arch_name)
        info = image.elf_info(uw.script)
        what = f"workload folder {uw.folder}: script {uw.script_name}"
        if info is None or info.interp or info.needed:
            raise UsageError(
                f"{what} is not a static 64-bit binary",
                hint=f"build it with {arch.guest_cc} -static: the guest "
                "has no shared libraries for it",
            )
        if info.machine != arch.elf_machine:
            raise UsageError(
                f"{what} is a binary for machine {info.machine}, not for "
                f"the {arch.name} guest",
                hint=f"build it for {arch.name} ({arch.guest_cc} -static)",
            )


def _compare(
    args: argparse.Namespace,
    specs: list[KernelSpec],
    patches: Path | None,
    attribution: dict[str, int],
) -> int:
    req = _request(args, specs, patches, attribution)
    out = req.out
    done = orchestrate.compare(req, say=sys.stderr.write)
    if isinstance(done, orchestrate.Planned):
        print(done.text, end="")
        return 0
    if done.error is not None:
        # the report of what finished, then why the run did not
        print(done.written.text)
        raise done.error
    # the headline ends the run's output, not a report that scrolls it
    # away: the whole report is a file
    print(*done.written.headline, sep="\n", end="\n\n")
    print(
        f"full report: {out}/report.txt (also report.html, report.md, "
        f"results.json, plots/; `foliolab report {out} --mail` for a mail)"
    )
    return 0


COMMANDS = (
    Command(
        "compare",
        "full A/B (or N-kernel) comparison",
        _compare_options,
        cmd_compare,
        example="foliolab compare --workloads pageout,dirty-tlb --runs 5 "
        "--count",
    ),
    Command(
        "jobs",
        "a run's boots as LAVA jobs: export them, collect their logs",
        _jobs_options,
        cmd_jobs,
        example="foliolab jobs export --out jobs --workloads pageout --runs 4",
    ),
    Command(
        "attribute",
        "what each step of a series adds: its prefixes "
        "against the base in one interleaved run",
        _attribute_options,
        cmd_attribute,
        example="foliolab attribute --at 4,10 --workloads pageout --runs 5",
    ),
)
