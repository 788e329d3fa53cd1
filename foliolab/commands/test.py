"""`test`: the correctness suite on the debug kernel."""

from __future__ import annotations

import argparse
import datetime as dt
import re
from pathlib import Path

from foliolab import counting, executors, rundir
from foliolab.arch import Arch, get_arch
from foliolab.commands import Command, options
from foliolab.coverage import run as coveragerun
from foliolab.errors import FoliolabError, UsageError
from foliolab.kernel import kconfig, sources, specs, trees, upstream_selftests
from foliolab.paths import PROJECT_ROOT
from foliolab.rundir import RunKind
from foliolab.suite import plan as suiteplan
from foliolab.suite import run as suite
from foliolab.suite.mmci import run as mmci_run
from foliolab.suite.request import SuiteRequest


def _test_options(s: argparse.ArgumentParser) -> None:
    options.common(s)
    options.one_kernel(s, several=True)
    s.add_argument(
        "--mm-ci",
        action="store_true",
        help="the mm CI's tests (linux-mm/mm-ci) for every --kernel, "
        "the first the reference: each tree's host tests (radix "
        "tree, XArray, maple tree, VMA, memblock) built and run on "
        "the host, and its ksft_*.sh wrappers (--wrappers), each in "
        "its own boot of the kernel built with the mm CI's options; "
        "compared k of n (--repeat)",
    )
    s.add_argument(
        "--wrappers",
        metavar="all|none|NAME,...",
        help="with --mm-ci: the wrappers to boot, by name (mmap for "
        "ksft_mmap.sh; --dry-run lists a tree's); none runs the host "
        "tests alone (default: all)",
    )
    s.add_argument(
        "--no-host-tests",
        action="store_true",
        help="with --mm-ci: the wrappers alone, not the trees' host tests",
    )
    s.add_argument(
        "--wrapper-limit",
        type=options.positive_int,
        metavar="SECONDS",
        help="with --mm-ci: each wrapper's boot's time limit (default: "
        "the mm CI's 300 s scaled for TCG, see --dry-run)",
    )
    s.add_argument(
        "--xtrace",
        action="store_true",
        help="with --mm-ci: trace every bash command the wrappers run "
        "(bash's xtrace, to a file in the guest) and list its last "
        "lines with the guest's tasks before a wrapper's time limit, to "
        "find where one waits (not the mm CI's guest: tracing takes time)",
    )
    s.add_argument(
        "--resume",
        action="store_true",
        help="with --mm-ci: go on with the stopped run in --out DIR: "
        "the host-test runs and boots it recorded are kept, the rest "
        "run (the same kernels and options)",
    )
    s.add_argument(
        "--dry-run",
        action="store_true",
        help="with --mm-ci: per kernel, the host tests and the "
        "wrappers it would run and the guest layout; runs nothing",
    )
    s.add_argument("--accel", default="tcg", choices=("tcg", "kvm"))
    s.add_argument(
        "--mglru",
        choices=("both", "on", "off"),
        help="run with MGLRU on, off, or both (default both; with "
        "--mm-ci on or off, default off as its kernel boots)",
    )
    s.add_argument(
        "--no-kselftests",
        action="store_true",
        help="only foliolab's own guest tests (--kselftests none)",
    )
    s.add_argument(
        "--kselftests",
        metavar="all|quick|none|NAME,...",
        help="the base tree's mm kselftests to run in the first boot: "
        "all (default), quick (those under a minute each, CI's share), "
        "none, or some by name (cow, gup_longterm, khugepaged, ...)",
    )
    s.add_argument(
        "--upstream-selftests",
        metavar="all|none|NAME,...",
        help="upstream 7.3's mm selftests (built from Debian's "
        "linux-source-7.3) to run in every boot: all, none "
        "or some of rmap, ksm_functional_tests, khugepaged, "
        "khugepaged-mthp, droppable, uffd-wp-mremap, cow "
        "(default: all when the 7.3 source can be had, none "
        "with --only, --no-kselftests or --kselftests none)",
    )
    s.add_argument(
        "--count",
        action="store_true",
        help="count each guest test's kernel work exactly (TCG "
        "plugin; the boots take about twice as long)",
    )
    s.add_argument(
        "--append",
        type=options.kernel_arg,
        action="append",
        default=[],
        metavar="ARG",
        help="extra kernel argument (repeatable), e.g. a boot "
        "parameter of a test-only kernel change; with --mm-ci, every "
        "wrapper's boot takes it (to show what a failure depends on)",
    )
    s.add_argument(
        "--config",
        choices=("debug", "kasan"),
        default="debug",
        help="debug (default) or kasan: debug plus generic KASAN",
    )
    s.add_argument(
        "--coverage",
        action="store_true",
        help="changed-line coverage: the debug kernel with gcov "
        "in the directories the series touches; reports "
        "which of the series' added lines the suite ran "
        "(coverage.txt, .json, .html in the output "
        "directory)",
    )
    s.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="PROGRAM[.CASE]",
        help="run only this guest test program or case "
        "(repeatable; e.g. anon_swap.pageout_64k); no "
        "kselftests",
    )
    s.add_argument(
        "--repeat",
        type=options.positive_int,
        default=1,
        metavar="N",
        help="run each selected guest test program N times "
        "in the boot (to chase a flaky case)",
    )
    s.add_argument(
        "--stress",
        type=options.positive_int,
        metavar="SECONDS",
        help="besides the fixed seeds, run the randomized stress "
        "test with new random seeds for about SECONDS",
    )
    s.add_argument(
        "--stress-seeds",
        type=options.seed_list,
        metavar="N,N,...",
        help="run the stress test with exactly these seeds "
        "(to reproduce a failure: its name has the seed)",
    )
    s.add_argument(
        "--record-baseline",
        action="store_true",
        help="write the kselftest results to "
        "tests/kselftest-vanilla.json (other arches: "
        "kselftest-vanilla-ARCH.json) and upstream's to "
        "tests/upstream-selftests-vanilla.json (use with "
        "--variant vanilla)",
    )
    s.add_argument(
        "--out",
        type=options.directory,
        help="output directory (default results/test-<time>)",
    )
    options.executor(s)


def cmd_test(args: argparse.Namespace) -> int:
    options.check_one_kernel(args)
    if args.mm_ci:
        return _cmd_mmci(args)
    mmci_only = [
        o
        for o, v in (
            ("--wrappers", args.wrappers),
            ("--wrapper-limit", args.wrapper_limit),
            ("--no-host-tests", args.no_host_tests or None),
            ("--resume", args.resume or None),
            ("--xtrace", args.xtrace or None),
        )
        if v is not None
    ]
    if mmci_only:
        raise UsageError(
            f"{mmci_only[0]} is --mm-ci's",
            hint="add --mm-ci, or leave it out",
        )
    if args.dry_run:
        raise UsageError(
            "--dry-run is --mm-ci's", hint="add --mm-ci, or leave it out"
        )
    if args.kernel and len(args.kernel) > 1:
        raise UsageError(
            f"the suite runs one kernel, not {len(args.kernel)}",
            hint="one --kernel, or several with --mm-ci",
        )
    args.kernel = args.kernel[0] if args.kernel else None
    if args.out is not None:  # before the request's checks ask apt
        rundir.claim(args.out, RunKind.SUITE)
    req = _request(args)
    out = req.out
    result = suite.run_suite(req)
    coveragerun.with_coverage(result.outcomes(), out, req.coverage).write(out)
    rundir.mark(out, RunKind.SUITE, finished=True)
    passed = result.passed
    print(result.summary, end="")
    print(f"# results: {out}/suite.json, console logs in {out}/mglru-*/")
    if req.coverage:
        print(
            f"# coverage report: {out}/coverage.txt, coverage.json, "
            "coverage.html"
        )
    if not passed:
        raise FoliolabError(
            f"correctness suite failed on the {req.tree.variant} "
            f"{req.purpose} kernel",
            log_path=out / "suite.ktap",
        )
    return 0


def _request(args: argparse.Namespace) -> SuiteRequest:
    """The suite's request, every option checked before anything is
    built (the executor first among them, as compare's)."""
    if args.count:
        counting.check_accel(args.accel)
    executor = executors.options(args, args.argv)
    executors.check_executor(executor, args.count)
    suiteplan.check_only(tuple(args.only))
    if args.record_baseline and (args.variant != "vanilla" or args.kernel):
        raise UsageError(
            "--record-baseline records vanilla's results",
            hint="add --variant vanilla",
        )
    if args.coverage:
        coveragerun.check_request(args.count, args.config, get_arch(args.arch))
    if args.kernel:  # its form and series, before the plan may ask apt
        specs.check_spec(specs.parse_kernel(args.kernel), offline=True)
    arch = get_arch(args.arch)
    if not args.kernel and args.variant == "patched" and args.patches:
        # the series read (and refused) before the upstream tests' plan,
        # which may ask Debian's archive for their source
        sources.read_patches(args.patches)
    kselftests = _kselftests(args, arch)
    if args.record_baseline and kselftests not in (
        (),  # upstream's baseline alone (--only, --no-kselftests)
        tuple(suiteplan.KSELFTESTS),
    ):
        raise UsageError(
            f"--record-baseline --kselftests {args.kselftests}: the "
            "baseline holds every kselftest's result",
            hint="leave --kselftests out (all), or give none to record "
            "upstream's selftests alone",
        )
    upstream = _upstream_plan(args, kselftests)
    tree = trees.variant_tree(args.variant, args.patches, args.kernel or "")
    coverage = None
    if args.coverage:
        coverage = coveragerun.plan_for(
            tree,
            coveragerun.suite_series(args.kernel, args.variant, args.patches),
            arch,
        )
    out = args.out or PROJECT_ROOT / "results" / dt.datetime.now().strftime(
        "test-%Y%m%d-%H%M%S"
    )
    return SuiteRequest(
        tree=tree,
        arch=arch,
        out=out,
        lru_gens={"both": ("y", "n"), "on": ("y",), "off": ("n",)}[
            args.mglru or "both"
        ],
        kselftests=kselftests,
        record_baseline=args.record_baseline,
        accel=args.accel,
        count=args.count,
        append=tuple(args.append),
        purpose=kconfig.COVERAGE if coverage else args.config,
        stress=suiteplan.stress_plan(args.stress, args.stress_seeds),
        only=tuple(args.only),
        repeat=args.repeat,
        upstream=upstream,
        coverage=coverage,
        executor=executor,
        kernel=_kernel_spec(args),
    )


def _kernel_spec(args: argparse.Namespace) -> specs.KernelSpec:
    """The suite's kernel as a spec, for its record: --kernel's, or
    --variant's (vanilla=base, patched=base+DIR)."""
    if args.kernel:
        return specs.parse_kernel(args.kernel)
    vanilla, patched = specs.from_patches(args.patches)
    return vanilla if args.variant == "vanilla" else patched


def _kselftests(args: argparse.Namespace, arch: Arch) -> tuple[str, ...]:
    """The kselftests the suite runs: --kselftests, --no-kselftests (none)
    or all; none with --only, which runs its programs alone. A selection
    of only kselftests ``arch``'s build lacks is refused: it would boot
    to run nothing of what was asked."""
    if args.kselftests is None:
        none = args.no_kselftests or args.only
        return () if none else tuple(suiteplan.KSELFTESTS)
    names = suiteplan.parse_kselftests(args.kselftests)
    if names and args.no_kselftests:
        raise UsageError(
            f"--kselftests {args.kselftests} with --no-kselftests",
            hint="give one of them",
        )
    if names and args.only:
        raise UsageError(
            f"--kselftests {args.kselftests} with --only: --only runs "
            "its programs without the kselftests",
            hint="leave one of them out",
        )
    unbuilt = suiteplan.NOT_BUILT.get(arch.name, ())
    if names and all(n in unbuilt for n in names):
        raise UsageError(
            f"--kselftests {args.kselftests}: not built for {arch.name} "
            "by the mm Makefile",
            hint="name others, or none",
        )
    return names


def _upstream_plan(
    args: argparse.Namespace, kselftests: tuple[str, ...]
) -> upstream_selftests.Plan | None:
    """``foliolab test``'s upstream selftests, checked before any build."""
    selection: tuple[str, ...] | None
    if args.upstream_selftests is not None:
        selection = upstream_selftests.parse_selection(args.upstream_selftests)
    else:
        # none by default when the 6.12 kselftests are none (--only,
        # --no-kselftests, --kselftests none)
        selection = None if kselftests else ()
    return upstream_selftests.plan(selection, get_arch(args.arch))


def _cmd_mmci(args: argparse.Namespace) -> int:
    """``test --mm-ci``: the host tests of every kernel's tree and its
    wrappers, each on its own boot, compared with the first's."""
    req = _mmci_request(args)  # the plan: the dry run runs it and no more
    if req.dry_run:
        print(mmci_run.dry_run(req), end="")
        return 0
    rundir.mark(req.out, RunKind.MMCI)
    result = mmci_run.run(req)
    rundir.mark(req.out, RunKind.MMCI, finished=True)
    print(result.summary, end="")
    print(
        f"# results: {req.out}/outcomes.json, mmci-summary.txt and "
        f".json, logs in {req.out}/KERNEL/host/ and KERNEL/guest/"
    )
    if not result.passed:
        raise FoliolabError(
            "the mm CI's tests: a new failure on "
            + ", ".join(k.name for k in req.kernels[1:])
            if len(req.kernels) > 1
            else f"the mm CI's tests: a case failed on {req.kernels[0].name}",
            log_path=req.out / "mmci-summary.txt",
        )
    return 0


# options of the suite that mean nothing to --mm-ci
_NOT_MMCI = (
    "only",
    "coverage",
    "count",
    "stress",
    "stress_seeds",
    "record_baseline",
    "upstream_selftests",
    "kselftests",
)


def _mmci_request(args: argparse.Namespace) -> mmci_run.MmciRequest:
    """--mm-ci's request, every option, kernel spec and series checked
    and its --out claimed before any tree is made: its one planning
    step, all its --dry-run runs besides printing the plan."""
    given = [
        "--" + o.replace("_", "-")
        for o in _NOT_MMCI
        if getattr(args, o) not in (None, False, [], ())
    ]
    if given:
        raise UsageError(
            f"--mm-ci runs the mm CI's tests, not {', '.join(given)}",
            hint="leave them out, or run the suite without --mm-ci",
        )
    if not args.kernel:
        raise UsageError(
            "--mm-ci needs the kernels by --kernel NAME=SPEC",
            hint="e.g. --kernel up=debian:7.3 "
            "--kernel next=debian:7.3+patches/7.3",
        )
    kernels = tuple(specs.parse_kernel(k) for k in args.kernel)
    names = [k.name for k in kernels]
    if len(set(names)) != len(names):
        raise UsageError(
            f"--kernel names repeat: {' '.join(names)}",
            hint="give each kernel its own name",
        )
    for k in kernels:
        if k.source.prebuilt:
            raise UsageError(
                f"--kernel {k.name}={k.text}: --mm-ci builds its host "
                "tests from each kernel's tree, and a prebuilt image has "
                "none",
                hint="give a source spec: base, git:PATH@REF or "
                "debian:VERSION, each with +DIR[:N] or without",
            )
    arch = get_arch(args.arch)
    wrappers = _wrapper_names(args.wrappers)
    if wrappers == () and args.no_host_tests:
        raise UsageError(
            "--wrappers none with --no-host-tests: nothing to run",
            hint="name the wrappers to boot, or leave one of them out",
        )
    if not arch.native and not args.no_host_tests:
        # the mm CI runs them on an arm64 host; here they would be built
        # for and run on this x86_64 host, which is x86_64's result
        raise UsageError(
            f"--mm-ci --arch {arch.name}: the host tests run on the "
            f"host, which is not {arch.name}",
            hint="add --no-host-tests (an x86_64 run has them)",
        )
    if args.mglru == "both":
        raise UsageError(
            "--mm-ci --mglru both: one MGLRU setting a run",
            hint="run it with --mglru on and with --mglru off (the "
            "default), each with its own --out",
        )
    for given, option in (
        (args.append, "--append"),
        (args.xtrace, "--xtrace"),
        (args.mglru == "on", "--mglru on"),
    ):
        if given and wrappers == ():
            raise UsageError(
                f"{option} with --wrappers none: no guest boots to take it",
                hint=f"name the wrappers to boot, or leave {option} out",
            )
    if args.resume and args.out is None:
        raise UsageError(
            "--resume goes on with the run in --out DIR",
            hint="give the --out of the stopped run",
        )
    executor = executors.options(args, args.argv)
    out = args.out or PROJECT_ROOT / "results" / dt.datetime.now().strftime(
        "mmci-%Y%m%d-%H%M%S"
    )
    # its dry run's too: only checked
    held = rundir.claim(
        out,
        RunKind.MMCI,
        resume=args.resume,
        resumable=True,
        dry_run=args.dry_run,
    )
    if args.resume and held is not None and held.finished:
        raise UsageError(
            f"--resume: the run in {out} is finished",
            hint=f"its summary is {out}/mmci-summary.txt",
        )
    # every kernel's spec, series and tree as compare checks them, and
    # the trees at hand (a git: commit) as the dry run reads them; last
    # the checks that may ask Debian's archive (not in a dry run, as
    # compare's does not)
    for k in kernels:
        specs.check_local(k)
    mmci_run.check_trees_at_hand(kernels)
    specs.check_specs(list(kernels), offline=args.dry_run, at_least=1)
    req = mmci_run.MmciRequest(
        kernels,
        arch,
        out,
        repeat=args.repeat,
        dry_run=args.dry_run,
        wrappers=wrappers,
        accel=args.accel,
        executor=executor,
        wrapper_limit_s=args.wrapper_limit,
        host_tests=not args.no_host_tests,
        append=tuple(args.append),
        resume=args.resume,
        xtrace=args.xtrace,
        mglru=args.mglru == "on",
    )
    if req.resume:
        # the stopped run's records, before the directory is marked as
        # this run's: a refused --resume leaves them as they were
        mmci_run.resumed(req)
    return req


def _wrapper_names(text: str | None) -> tuple[str, ...] | None:
    """--wrappers: None for all, () for none, else the names."""
    if text is None or text == "all":
        return None
    if text == "none":
        return ()
    names = tuple(n for n in text.split(",") if n)
    bad = [n for n in names if not re.fullmatch(r"[A-Za-z0-9_-]+", n)]
    if not names or bad:
        raise UsageError(
            f"--wrappers {text!r}: not all, none or a list of names",
            hint="e.g. --wrappers mmap,mremap",
        )
    return names


def _reasons_options(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "run", type=Path, help="the run directory (with coverage.json)"
    )
    s.add_argument(
        "series", type=Path, help="the series directory (patches/6.12)"
    )
    s.add_argument(
        "--out",
        type=Path,
        help="where to write coverage.txt, "
        ".json, .html (default: the run directory)",
    )


def cmd_coverage_reasons(args: argparse.Namespace) -> int:
    """A finished coverage run's report written again with the series'
    reasons as they are now (its counts read from its coverage.json)."""
    out = args.out or args.run
    elsewhere = out.resolve() != args.run.resolve()
    of = str(args.run.resolve())
    if elsewhere:
        rundir.claim(out, RunKind.COVERAGE, of=of)
    else:
        # into the run itself: not while its own command writes it
        rundir.hold(out)
    with rundir.removed_if_it_fails(out):
        if elsewhere:
            rundir.mark(out, RunKind.COVERAGE, of=of)
        rep = coveragerun.reason_again(args.run, args.series, out)
        if elsewhere:
            rundir.mark(out, RunKind.COVERAGE, finished=True, of=of)
    print(coveragerun.summary_line(rep))
    return 0


COMMANDS = (
    Command(
        "test",
        "correctness suite on the debug kernel",
        _test_options,
        cmd_test,
        example="foliolab test --config kasan --only ksm",
    ),
    Command(
        "coverage-reasons",
        "a coverage run's report again, with the "
        "series' coverage-reasons as they are now",
        _reasons_options,
        cmd_coverage_reasons,
        example="foliolab coverage-reasons results/cov patches/6.12",
    ),
)
