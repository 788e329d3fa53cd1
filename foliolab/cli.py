"""foliolab: an A/B lab for Linux memory management, in QEMU or on LAVA.

This module is the only one that prints errors and exits. Subcommands
follow the stages: setup, tree, export, build, run, compare,
test, report. Every library error is a FoliolabError whose one-line message
is printed as ``foliolab: error: ...``; its class picks the exit code.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from foliolab import __version__, kconfig
from foliolab.arch import ARCHES
from foliolab.errors import (BuildError, FoliolabError, Stop, StoppedError,
                             UsageError)
from foliolab import executors
from foliolab.executors.base import ExecutorKind
from foliolab.paths import DEFAULT_PATCHES, PROJECT_ROOT

if TYPE_CHECKING:
    from foliolab.kernels import KernelSpec

log = logging.getLogger("foliolab")

FAULTS = ("panic", "hang")


def patches_arg(value: str) -> Path | None:
    return None if value == "none" else Path(value)


def positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{value!r} must be at least 1")
    return n


def seed_list(value: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(v) for v in value.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a comma-separated list of numbers") from None
    if any(n < 0 for n in seeds):
        raise argparse.ArgumentTypeError(f"{value!r}: seeds are >= 0")
    return seeds


def with_default(action: argparse.Action) -> None:
    """An option's help ends with its default, unless it names it."""
    text, default = action.help or "", action.default
    if (default in (None, False, argparse.SUPPRESS, [])
            or "default" in text or not action.option_strings):
        return
    if isinstance(default, (list, tuple)):
        default = ",".join(str(d) for d in default)
    action.help = f"{text} (default: {default})".lstrip()


def defaults_in_help(p: argparse.ArgumentParser) -> None:
    """with_default on every option of ``p`` and its subcommands."""
    for action in p._actions:
        with_default(action)
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                defaults_in_help(sub)


class Parser(argparse.ArgumentParser):
    """argparse, but errors are our one-line UsageError."""

    def error(self, message: str):
        raise _usage(self.prog, message)

    def parse_args(self, args=None, namespace=None):
        """As argparse's, but unknown options are named with the
        subcommand they were given to (argparse names the top level)."""
        ns, extra = self.parse_known_args(args, namespace)
        if extra:
            words = (getattr(ns, "command", None),
                     getattr(ns, "jobs_command", None))
            prog = " ".join([self.prog, *(w for w in words if w)])
            raise _usage(prog, "unrecognized arguments: " + " ".join(extra))
        return ns


def _usage(prog: str, message: str) -> UsageError:
    """``compare: MESSAGE; see `foliolab compare --help```: main() prints
    the ``foliolab: error:`` before it, so the program is not named twice."""
    sub = prog.removeprefix("foliolab").strip()
    return UsageError(f"{sub}: {message}" if sub else message,
                      hint=f"see `{prog} --help`")


def _arch(p: argparse.ArgumentParser) -> None:
    # Checked by get_arch() after parsing, for its one-line error.
    p.add_argument("--arch", default="x86_64", metavar="|".join(ARCHES),
                   help="guest architecture (default x86_64; arm64 is "
                        "cross-built and runs under TCG only)")


def _common(p: argparse.ArgumentParser, patches: bool = True) -> None:
    _arch(p)
    if patches:
        p.add_argument("--patches", type=patches_arg, default=DEFAULT_PATCHES,
                       metavar="DIR|none",
                       help="series directory with a `series` file; `none` "
                            "compares vanilla with vanilla (default "
                            "patches/6.12)")


def _base(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--base", default="base", metavar="SPEC",
                   help=f"{what}: base (the pinned 6.12), git:PATH@REF or "
                        "debian:VERSION (default base)")


def prefix_list(value: str) -> tuple[int, ...]:
    """``4,10,19`` -> (4, 10, 19): increasing patch counts."""
    try:
        at = tuple(int(v) for v in value.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a comma-separated list of patch counts"
        ) from None
    if any(n < 1 for n in at) or list(at) != sorted(set(at)):
        raise argparse.ArgumentTypeError(
            f"{value!r}: give increasing patch counts from 1, e.g. 4,10,25")
    return at


def _measure(s: argparse.ArgumentParser) -> None:
    """What compare and attribute share: machine, workloads, repetitions."""
    _machine(s)
    s.add_argument("--workloads", metavar="NAME,...",
                   help="comma-separated workloads (default: all)")
    s.add_argument("--runs", type=positive_int, default=10,
                   help="samples per kernel and workload (default 10)")
    s.add_argument("--samples-per-boot", type=positive_int, default=1,
                   help="samples taken in one boot (default 1: a fresh "
                        "boot per sample, see docs/manual.md)")
    s.add_argument("--param", action="append", default=[],
                   metavar="[WORKLOAD.]NAME=VALUE",
                   help="override a workload parameter (repeatable)")
    s.add_argument("--config", choices=kconfig.PURPOSES, default="perf")
    s.add_argument("--out", type=Path,
                   help="output directory (default results/<timestamp>)")
    s.add_argument("--timeout", type=positive_int, metavar="SECONDS",
                   help="host-side limit per boot (default: per workload)")
    s.add_argument("--count", action="store_true",
                   help="add a counting boot per sample: exact guest-kernel "
                        "instruction, TLB-invalidation and IPI counts from "
                        "a QEMU TCG plugin (see docs/manual.md)")
    s.add_argument("--root", action="append", default=[], metavar="FUNCTION",
                   help="with --count: also count FUNCTION with everything "
                        "it calls, in every workload (repeatable; a workload "
                        "follows at most 8 roots, its own included)")
    s.add_argument("--fault", choices=FAULTS,
                   help="testing aid: make every sample of every kernel but "
                        "the baseline panic or hang, to exercise foliolab's "
                        "error paths")
    s.add_argument("--dry-run", action="store_true",
                   help="print the builds and QEMU command lines the run "
                        "would execute, and execute nothing")
    s.add_argument("--monitors", action=argparse.BooleanOptionalAction,
                   default=True,
                   help="sample /proc/vmstat and /proc/interrupts every "
                        "second of each timed window into the run "
                        "directory (default on; see docs/manual.md)")
    s.add_argument("--resume", action="store_true",
                   help="finish the interrupted run in --out DIR: its "
                        "finished boots are kept, the rest run (the same "
                        "kernels, workloads and parameters)")


def _machine(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("guest machine")
    g.add_argument("--accel", default="auto", choices=("auto", "tcg", "kvm"),
                   help="auto: KVM only if a short probe boot is fast, else "
                        "TCG (default auto)")
    g.add_argument("--vcpus", type=positive_int, default=2)
    g.add_argument("--numa-nodes", type=positive_int, default=1)
    g.add_argument("--cpu", default="", metavar="MODEL",
                   help="QEMU CPU model under TCG (default max); e.g. "
                        "neoverse-n1, an arm64 CPU without range TLBIs")
    g.add_argument("--records-on", choices=("port", "console"),
                   default="port",
                   help="where the guest sends its records: a virtio port "
                        "of their own (default), or framed on the console "
                        "as on a board or in a LAVA job")


def build_parser() -> argparse.ArgumentParser:
    """The whole CLI (pure: no side effects)."""
    p = Parser(prog="foliolab", description=__doc__.splitlines()[0])
    p.add_argument("-v", "--verbose", action="store_true",
                   help="log every command that is run")
    p.add_argument("--version", action="version",
                   version=f"foliolab {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)

    s = sub.add_parser("setup", help="install the host packages foliolab "
                                     "needs")
    _arch(s)

    s = sub.add_parser("tree", help="print the developer tree (base + series "
                                    "on branch dev) to work in")
    _common(s)

    s = sub.add_parser("export", help="write the developer tree's commits "
                                      "to the series directory")
    s.add_argument("--patches", type=Path, default=DEFAULT_PATCHES,
                   metavar="DIR")

    s = sub.add_parser("build", help="build kernels")
    _common(s)
    s.add_argument("--variant", choices=("vanilla", "patched", "both"),
                   default="both")
    s.add_argument("--config", choices=kconfig.PURPOSES, default="perf")

    s = sub.add_parser("check", help="checkpatch each patch; build and boot "
                                     "base + patches 1..i for every i")
    _common(s)
    _base(s, "the tree the series goes on")
    s.add_argument("--config", choices=kconfig.PURPOSES, default="perf")
    s.add_argument("--accel", default="tcg", choices=("tcg", "kvm"))
    s.add_argument("--out", type=Path, help="where the boot logs go "
                   "(default results/check-<time>)")
    s.add_argument("--since", metavar="SPEC",
                   help="first say which patches restore code that the "
                        "base's stable history since SPEC removed, and "
                        "which touch functions it changed. SPEC: "
                        "debian:VERSION (e.g. debian:6.12.107) or "
                        "git:PATH@REF (see docs/manual.md)")
    s.add_argument("--history-only", action="store_true",
                   help="with --since: only that check (no checkpatch, "
                        "build or boot)")

    s = sub.add_parser("compare", help="full A/B (or N-kernel) comparison")
    _common(s)
    s.add_argument("--kernel", action="append", default=[],
                   metavar="NAME=SPEC",
                   help="a kernel to compare (repeatable, two or more; the "
                        "first is the baseline). SPEC: base, git:PATH@REF, "
                        "debian:VERSION, any of them +DIR (the series in "
                        "DIR on it) or +DIR:N (its first N patches), or "
                        "image:PATH. Replaces --patches")
    _measure(s)
    executors.add_flags(s)

    s = sub.add_parser("jobs", help="a run's boots as LAVA jobs: export "
                                    "them, collect their logs")
    jobs = s.add_subparsers(dest="jobs_command", required=True,
                            parser_class=Parser)
    s = jobs.add_parser("export", help="write the LAVA jobs, artifacts and "
                                       "run directory of a comparison, and "
                                       "run nothing")
    _common(s)
    s.add_argument("--kernel", action="append", default=[],
                   metavar="NAME=SPEC", help="as for compare")
    _measure(s)
    executors.add_flags(s, (ExecutorKind.LAVA_EXPORT,))
    s = jobs.add_parser("collect", help="read LAVA logs of exported jobs "
                                        "into their run directory, report")
    s.add_argument("dir", type=Path, metavar="OUT",
                   help="the directory the jobs were exported to")
    s.add_argument("logs", nargs="+", type=Path, metavar="LOG",
                   help="a job's log: lava-run's output, or the YAML or "
                        "plain log downloaded from a lab")

    s = sub.add_parser("attribute", help="what each step of a series adds: "
                                         "its prefixes against the base in "
                                         "one interleaved run")
    _arch(s)
    s.add_argument("--series", type=Path, default=DEFAULT_PATCHES,
                   metavar="DIR", help="the series (default patches/6.12)")
    _base(s, "the tree the series goes on, the baseline `base`")
    s.add_argument("--at", type=prefix_list, required=True, metavar="N,...",
                   help="the prefixes to build, e.g. 4,10,18,25 (each the "
                        "series' first N patches)")
    _measure(s)
    executors.add_flags(s)

    s = sub.add_parser("run", help="boot a built kernel and run CMD in it")
    _common(s)
    _machine(s)
    s.add_argument("--variant", choices=("vanilla", "patched"),
                   default="patched")
    s.add_argument("--kernel", metavar="NAME=SPEC",
                   help="the kernel to build and boot, by any source spec "
                        "compare takes (base, git:PATH@REF, debian:VERSION, "
                        "each +DIR[:N] or not); replaces --variant")
    s.add_argument("--config", choices=kconfig.PURPOSES, default="perf")
    s.add_argument("--add", type=Path, action="append", default=[],
                   metavar="FILE", help="static binary to put in the "
                                        "guest's PATH (repeatable)")
    s.add_argument("--memory", type=positive_int, default=3072,
                   metavar="MIB")
    s.add_argument("--timeout", type=positive_int, default=600,
                   metavar="SECONDS")
    s.add_argument("--append", action="append", default=[], metavar="ARG",
                   help="extra kernel argument (repeatable)")
    s.add_argument("--count", action="store_true",
                   help="count the guest kernel's work while CMD runs, "
                        "exactly (TCG plugin), and print it like perf stat")
    s.add_argument("--root", action="append", default=[], metavar="FUNCTION",
                   help="with --count: also count FUNCTION with everything "
                        "it calls (repeatable, up to 8)")
    s.add_argument("--top", type=positive_int, default=25, metavar="N",
                   help="with --count: functions listed (default 25)")
    s.add_argument("cmd", nargs=argparse.REMAINDER,
                   help="-- CMD [ARGS...]")

    s = sub.add_parser("test", help="correctness suite on the debug kernel")
    _common(s)
    s.add_argument("--variant", choices=("vanilla", "patched"),
                   default="patched")
    s.add_argument("--kernel", metavar="NAME=SPEC",
                   help="the kernel to build and boot, by any source spec "
                        "compare takes (base, git:PATH@REF, debian:VERSION, "
                        "each +DIR[:N] or not); replaces --variant")
    s.add_argument("--accel", default="tcg", choices=("tcg", "kvm"))
    s.add_argument("--mglru", choices=("both", "on", "off"), default="both",
                   help="run with MGLRU on, off, or both (default both)")
    s.add_argument("--no-kselftests", action="store_true",
                   help="only foliolab's own guest tests")
    s.add_argument("--upstream-selftests", metavar="all|none|NAME,...",
                   help="upstream 7.3's mm selftests (built from Debian's "
                        "linux-source-7.3) to run in every boot: all, none "
                        "or some of rmap, ksm_functional_tests, khugepaged, "
                        "khugepaged-mthp, droppable, uffd-wp-mremap, cow "
                        "(default: all when the 7.3 source can be had, none "
                        "with --only or --no-kselftests)")
    s.add_argument("--count", action="store_true",
                   help="count each guest test's kernel work exactly (TCG "
                        "plugin; the boots take about twice as long)")
    s.add_argument("--append", action="append", default=[], metavar="ARG",
                   help="extra kernel argument (repeatable), e.g. a boot "
                        "parameter of a test-only kernel change")
    s.add_argument("--config", choices=("debug", "kasan"), default="debug",
                   help="debug (default) or kasan: debug plus generic KASAN")
    s.add_argument("--coverage", action="store_true",
                   help="changed-line coverage: the debug kernel with gcov "
                        "in the directories the series touches; reports "
                        "which of the series' added lines the suite ran "
                        "(coverage.txt, .json, .html in the output "
                        "directory)")
    s.add_argument("--only", action="append", default=[],
                   metavar="PROGRAM[.CASE]",
                   help="run only this guest test program or case "
                        "(repeatable; e.g. anon_swap.pageout_64k); no "
                        "kselftests")
    s.add_argument("--repeat", type=positive_int, default=1, metavar="N",
                   help="run each selected guest test program N times "
                        "in the boot (to chase a flaky case)")
    s.add_argument("--stress", type=positive_int, metavar="SECONDS",
                   help="besides the fixed seeds, run the randomized stress "
                        "test with new random seeds for about SECONDS")
    s.add_argument("--stress-seeds", type=seed_list, metavar="N,N,...",
                   help="run the stress test with exactly these seeds "
                        "(to reproduce a failure: its name has the seed)")
    s.add_argument("--record-baseline", action="store_true",
                   help="write the kselftest results to "
                        "tests/kselftest-vanilla.json (other arches: "
                        "kselftest-vanilla-ARCH.json) and upstream's to "
                        "tests/upstream-selftests-vanilla.json (use with "
                        "--variant vanilla)")
    s.add_argument("--out", type=Path,
                   help="output directory (default results/test-<time>)")

    s = sub.add_parser("diff", help="compare the ratios of finished runs "
                                    "(e.g. series v1 vs v2)")
    s.add_argument("outs", nargs="+", type=Path, metavar="OUT",
                   help="run directories (two or more)")
    s.add_argument("--all", action="store_true",
                   help="secondary metrics too, not only the primary ones")

    s = sub.add_parser("workloads", help="list every workload with its "
                                         "parameters and metrics")
    s.add_argument("names", nargs="?", metavar="NAME,...",
                   help="only these workloads (default: all)")

    s = sub.add_parser("bisect", help="the first commit of a range where a "
                                      "counted metric crosses a threshold "
                                      "(one counting boot per step)")
    _arch(s)
    s.add_argument("--repo", type=Path, required=True, metavar="PATH",
                   help="the kernel clone whose commits are bisected")
    s.add_argument("--good", required=True, metavar="REF",
                   help="a commit that has not crossed the threshold")
    s.add_argument("--bad", required=True, metavar="REF",
                   help="a later commit that has (good must be on its "
                        "first-parent line)")
    s.add_argument("--workload", required=True, metavar="NAME",
                   help="the workload counted at each step, e.g. pageout")
    s.add_argument("--metric", required=True, metavar="KEY",
                   help="one of its counted metrics, e.g. "
                        "try_to_unmap_insns_per_folio")
    s.add_argument("--below", metavar="VALUE",
                   help="bad means the count is below VALUE: a number, or "
                        "Nx for N times good's count (e.g. 0.5x)")
    s.add_argument("--above", metavar="VALUE",
                   help="bad means the count is above VALUE (a number, "
                        "or Nx as for --below)")
    s.add_argument("--param", action="append", default=[],
                   metavar="NAME=VALUE",
                   help="a workload parameter (repeatable)")
    s.add_argument("--config", choices=kconfig.PURPOSES, default="perf")
    s.add_argument("--out", type=Path,
                   help="run directory (default results/bisect-<time>)")
    s.add_argument("--resume", action="store_true",
                   help="go on with the stopped bisect in --out DIR, "
                        "reusing its counted steps")

    s = sub.add_parser("report", help="rewrite the report of a results DIR")
    s.add_argument("dir", type=Path)
    defaults_in_help(p)
    return p


def cmd_setup(args) -> int:
    from foliolab import hostsetup
    from foliolab.arch import get_arch
    hostsetup.ensure_packages(hostsetup.APT_PACKAGES +
                              hostsetup.REPORT_PACKAGES)
    arch = get_arch(args.arch)
    hostsetup.ensure_arch(arch)
    print("host packages: ok" + ("" if arch.native else
          f"; {arch.name} guest sysroot: {hostsetup.guest_sysroot(arch)}"))
    return 0


def cmd_tree(args) -> int:
    from foliolab import source
    path = source.dev_tree(source.read_series(args.patches))
    print(path)
    print("# commit your changes on branch `dev` there, then run "
          "`foliolab export`", file=sys.stderr)
    return 0


def cmd_export(args) -> int:
    from foliolab import source
    written = source.export_series(args.patches)
    for p in written:
        print(p)
    print(f"# {len(written)} patch(es) written to {args.patches}",
          file=sys.stderr)
    return 0


def _trees(args, variants):
    from foliolab.orchestrate import tree
    return [tree(v, args.patches) for v in variants]


def cmd_build(args) -> int:
    from foliolab import build
    from foliolab.arch import get_arch
    variants = ["vanilla", "patched"] if args.variant == "both" else [args.variant]
    for tree in _trees(args, variants):
        k = build.build_kernel(tree, get_arch(args.arch), args.config)
        print(f"{tree.variant}: {k.image} ({k.elapsed:.0f} s)")
    return 0


def cmd_check(args) -> int:
    from foliolab import kernels, seriescheck, source
    from foliolab.arch import get_arch
    if args.history_only and not args.since:
        raise UsageError("--history-only checks the series against the "
                         "stable history: it needs --since SPEC",
                         hint="e.g. --since debian:6.12.107")
    if args.since and args.base != "base":
        raise UsageError(f"--since compares with the pinned base's stable "
                         f"history; --base {args.base} is not that base",
                         hint="drop --base, or drop --since")
    since = _since_spec(args)
    if args.patches is None or not source.read_series(args.patches).patches:
        raise UsageError("the series is empty: nothing to check",
                         hint="give --patches DIR with patches in `series`")
    history = (_check_history(since, source.read_series(args.patches))
               if since else None)
    if args.history_only:
        history.raise_if_restored()
        return 0
    spec = kernels.with_series(kernels.parse_base(args.base), "patched",
                               args.patches)
    kernels.check_spec(spec)
    kernels.tree_of(spec)       # a series that does not apply: refused here
    out = args.out or PROJECT_ROOT / "results" / dt.datetime.now().strftime(
        "check-%Y%m%d-%H%M%S")
    checks = seriescheck.check_series(spec, get_arch(args.arch),
                                      args.config, args.accel, out)
    for c in checks:
        print(c.row())
    bad = [c for c in checks if not c.ok]
    if bad:
        raise BuildError(f"{len(bad)} of {len(checks)} patches fail the "
                         f"check, first {bad[0].name}",
                         hint="see the rows above")
    print(f"all {len(checks)} patches pass checkpatch --strict, build "
          f"({args.config}) and boot")
    if history:
        history.raise_if_restored()
    return 0


def _since_spec(args):
    """``--since SPEC`` parsed (its syntax only), or None."""
    from foliolab import sincespec
    return sincespec.parse(args.since) if args.since else None


def _check_history(since, series):
    """The stable-history check: the since-tree is found and checked
    (older than the base) before the base is unpacked; the findings are
    printed, one a line."""
    from foliolab import sincespec, stablehistory
    older = sincespec.resolve(since, sincespec.pinned_release())
    report = stablehistory.check_series(series, older,
                                        sincespec.pinned_base())
    for line in report.lines():
        print(line)
    return report


def _kernel_args(args) -> list:
    from foliolab import kernels
    specs = [kernels.parse_kernel(k) for k in args.kernel]
    if specs and args.patches != DEFAULT_PATCHES:
        raise UsageError("--kernel and --patches both name the kernels",
                         hint="give --kernel only (--patches DIR is "
                              "--kernel vanilla=base --kernel "
                              "patched=base+DIR)")
    return specs


def cmd_compare(args) -> int:
    return _compare(args, _kernel_args(args), args.patches, {})


def cmd_jobs(args) -> int:
    from foliolab import orchestrate
    if args.jobs_command == "collect":
        print(orchestrate.collect(args.dir, args.logs), end="")
        return 0
    if args.dry_run or args.resume:
        raise UsageError("jobs export runs nothing; --dry-run and --resume "
                         "are for compare", hint="drop them")
    if args.out is None:
        raise UsageError("jobs export needs --out DIR",
                         hint="the run directory the jobs' logs are "
                              "collected into later")
    req = _request(args, _kernel_args(args), args.patches, {})
    print(orchestrate.export(req), end="")
    return 0


def cmd_attribute(args) -> int:
    return _compare(args, attribute_specs(args), args.series,
                    {f"p{n}": n for n in args.at})


def attribute_specs(args) -> list[KernelSpec]:
    """``attribute``'s kernels: ``base`` (the --base tree) and ``pN``, the
    tree with the series' first N patches, for each N of --at."""
    from foliolab import kernels
    onto = kernels.parse_base(args.base)
    series = kernels.with_series(onto, "all", args.series).series()
    if args.at[-1] > len(series.patches):
        raise UsageError(f"--at {args.at[-1]}: {args.series} has "
                         f"{len(series.patches)} patches",
                         hint=f"give counts from 1 to {len(series.patches)}")
    return [onto] + [
        kernels.with_series(onto, f"p{n}", args.series, n) for n in args.at]


def _warn_small_runs(runs: int) -> None:
    """Before anything is built: --runs too small for the statistics."""
    from foliolab import stats
    if runs < stats.runs_needed():
        log.warning("WARNING: with --runs %d no row can be significant (a "
                    "two-sided Mann-Whitney test cannot give p below %.3g at "
                    "%d against %d); use --runs %d or more (counts that "
                    "repeat exactly are still reported as exact)", runs,
                    stats.min_p_value(runs, runs), runs, runs,
                    stats.runs_needed())
    if runs < stats.MIN_N_FOR_CI:
        log.warning("WARNING: with --runs %d the report prints no "
                    "confidence interval (it needs %d samples per kernel)",
                    runs, stats.MIN_N_FOR_CI)


def _request(args, specs, patches, attribution: dict[str, int]):
    from foliolab import orchestrate, workloads
    wl = workloads.get_workloads(args.workloads)
    params = workloads.parse_params(args.param, wl)
    roots = tuple(args.root)        # their --count: orchestrate.check
    wl = [workloads.with_roots(w, roots) for w in wl]
    if args.resume and args.out is None:
        raise UsageError("--resume finishes the run in --out DIR",
                         hint="give the --out of the interrupted run")
    _warn_small_runs(args.runs)
    out = args.out or PROJECT_ROOT / "results" / dt.datetime.now().strftime(
        "%Y%m%d-%H%M%S")
    return orchestrate.Request(
        workloads=wl, params=params, runs=args.runs, patches=patches,
        arch=args.arch, out=out, config=args.config, accel=args.accel,
        vcpus=args.vcpus, numa_nodes=args.numa_nodes, cpu=args.cpu,
        samples_per_boot=args.samples_per_boot, fault=args.fault or "",
        timeout=args.timeout, count=args.count, roots=roots, kernels=specs,
        attribution=attribution, dry_run=args.dry_run,
        records_on=args.records_on,
        executor=executors.options(args, args.argv), resume=args.resume,
        command=["foliolab", *args.argv], monitors=args.monitors)


def _compare(args, specs, patches, attribution: dict[str, int]) -> int:
    from foliolab import orchestrate
    req = _request(args, specs, patches, attribution)
    out = req.out
    text = orchestrate.compare(req)
    print(text, end="" if args.dry_run else "\n")
    if not args.dry_run:
        print(f"results: {out}/report.html, {out}/report.md, "
              f"{out}/results.json, {out}/plots/")
    return 0


def cmd_run(args) -> int:
    from foliolab import orchestrate, parse
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        raise UsageError("foliolab run: no command given",
                         hint="usage: foliolab run [options] -- CMD [ARGS]")
    req = orchestrate.CommandRequest(
        cmd, args.arch, args.variant, args.patches, args.config, args.accel,
        args.vcpus, args.memory, args.numa_nodes, args.timeout, args.cpu,
        tuple(args.append), args.records_on == "console", args.add,
        args.count, tuple(args.root), args.kernel or "")
    res, variant = orchestrate.boot_command(req)
    for line in parse.parse_records(res.records).output:
        print(line)
    if not res.clean:
        raise FoliolabError(f"guest {res.describe()}", log_path=res.console)
    if args.count:
        _print_counts(res.console.parent / "counts.txt", args.arch, cmd,
                      variant, args.top)
    return res.exit_code if res.exit_code is not None else 1


def _print_counts(path: Path, arch: str, cmd: list[str], variant: str,
                  top: int) -> None:
    from foliolab import counting
    counts = counting.read_counts(path)
    windows = counts.tagged(counting.RUN_WINDOW)
    if not windows:
        raise FoliolabError("the counting window of the command did not "
                            "close", log_path=path)
    print(f"\n Exact counts of the {variant} {arch} guest kernel while "
          f"'{' '.join(cmd)}' ran (QEMU TCG plugin, {path}):\n")
    for w in windows:
        print("\n".join(counting.stat_lines(w, arch, top,
                                            counts.switch_tracking)))


def cmd_test(args) -> int:
    from foliolab import counting, suite
    from foliolab.arch import get_arch
    if args.count:
        counting.check_accel(args.accel)
    suite.check_only(tuple(args.only))
    if args.record_baseline and (args.variant != "vanilla" or args.kernel):
        raise UsageError("--record-baseline records vanilla's results",
                         hint="add --variant vanilla")
    if args.coverage:
        from foliolab import coveragerun
        coveragerun.check_request(args.count, args.config,
                                  get_arch(args.arch))
    from foliolab.orchestrate import tree as source_tree
    upstream = _upstream_plan(args)
    tree = source_tree(args.variant, args.patches, args.kernel or "")
    coverage = None
    if args.coverage:
        coverage = coveragerun.plan_for(
            tree, coveragerun.suite_series(args.kernel, args.variant,
                                           args.patches), get_arch(args.arch))
    lru = {"both": ("y", "n"), "on": ("y",), "off": ("n",)}[args.mglru]
    out = args.out or PROJECT_ROOT / "results" / dt.datetime.now().strftime(
        "test-%Y%m%d-%H%M%S")
    purpose = kconfig.COVERAGE if coverage else args.config
    passed, summary = suite.run_suite(
        tree, get_arch(args.arch), out, lru,
        not (args.no_kselftests or args.only), args.record_baseline,
        args.accel, args.count, tuple(args.append), purpose,
        suite.stress_plan(args.stress, args.stress_seeds),
        tuple(args.only), args.repeat, upstream, coverage)
    print(summary, end="")
    print(f"# results: {out}/suite.json, console logs in {out}/mglru-*/")
    if coverage:
        print(f"# coverage report: {out}/coverage.txt, coverage.json, "
              "coverage.html")
    if not passed:
        raise FoliolabError(f"correctness suite failed on the {tree.variant} "
                            f"{purpose} kernel", log_path=out / "suite.ktap")
    return 0


def _upstream_plan(args):
    """``foliolab test``'s upstream selftests, checked before any build."""
    from foliolab import upstream_selftests
    from foliolab.arch import get_arch
    if args.upstream_selftests is not None:
        selection = upstream_selftests.parse_selection(args.upstream_selftests)
    else:
        selection = () if args.only or args.no_kselftests else None
    return upstream_selftests.plan(selection, get_arch(args.arch))


def cmd_bisect(args) -> int:
    from foliolab import bisect, workloads
    threshold = bisect.parse_threshold(args.below, args.above)
    if "," in args.workload:
        raise UsageError(f"--workload {args.workload}: bisect counts one "
                         "workload", hint="give one name")
    (w,) = workloads.get_workloads(args.workload)
    params = workloads.parse_params(args.param, [w]).get(w.name, {})
    if args.resume and args.out is None:
        raise UsageError("--resume goes on with the bisect in --out DIR",
                         hint="give the --out of the stopped bisect")
    out = args.out or PROJECT_ROOT / "results" / dt.datetime.now().strftime(
        "bisect-%Y%m%d-%H%M%S")
    req = bisect.BisectRequest(
        args.repo.expanduser(), args.good, args.bad, w, w.resolve(params),
        args.metric, threshold, args.arch, args.config, out, args.resume,
        ["foliolab", *args.argv])
    bisect.bisect(req)
    print(f"results: {out}/bisect.txt, {out}/bisect.json")
    return 0


def cmd_report(args) -> int:
    from foliolab import bisect, report
    if not args.dir.is_dir():
        raise UsageError(f"{args.dir}: no such directory",
                         hint="give the --out directory of a compare run")
    if (args.dir / bisect.RECORD).exists():
        record = bisect.Record.read(args.dir)
        (args.dir / bisect.TEXT).write_text(bisect.render(record))
        print(bisect.render(record), end="")
        return 0
    print(report.write_report(args.dir))
    return 0


def cmd_workloads(args) -> int:
    from foliolab import workloads
    print(workloads.listing(workloads.get_workloads(args.names)), end="")
    return 0


def cmd_diff(args) -> int:
    from foliolab import diff
    print(diff.diff(args.outs, args.all), end="")
    return 0


def check_args(args) -> None:
    """Input errors argparse cannot see, before any work starts."""
    from foliolab.arch import get_arch
    if hasattr(args, "arch"):
        arch = get_arch(args.arch)
        if hasattr(args, "accel"):
            arch.check_accel(args.accel)
    if getattr(args, "out", None) is not None:
        check_out(args.out)


def check_out(out: Path) -> None:
    """--out must be a directory this user can make and write in."""
    from foliolab.paths import unwritable
    why = unwritable(out)
    if why:
        raise UsageError(f"--out {out}: {why}",
                         hint="give --out a directory you can write, e.g. "
                              "under your home or /tmp")


HANDLERS = {
    "setup": cmd_setup, "tree": cmd_tree, "export": cmd_export,
    "build": cmd_build, "check": cmd_check, "compare": cmd_compare,
    "attribute": cmd_attribute, "diff": cmd_diff, "jobs": cmd_jobs,
    "run": cmd_run, "bisect": cmd_bisect,
    "test": cmd_test, "report": cmd_report, "workloads": cmd_workloads,
}


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(format="%(message)s", level=logging.INFO,
                        stream=sys.stderr)
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        args = build_parser().parse_args(argv)
        args.argv = argv
        if args.verbose:
            log.setLevel(logging.DEBUG)
        check_args(args)
        return HANDLERS[args.command](args)
    except FoliolabError as e:
        print(f"foliolab: error: {e.one_line()}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("foliolab: interrupted", file=sys.stderr)
        return 130
    except Stop as s:
        # a stop signal outside a measuring run (before it, or after)
        print(f"foliolab: stopped by {s.signame}", file=sys.stderr)
        return StoppedError.exit_code
