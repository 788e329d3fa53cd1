"""`setup`, `tree`, `export`, `post`, `build` and `check`: the host, the
developer tree, the series (and its postings) and its kernels."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from foliolab import executors, hostsetup, rundir
from foliolab.arch import get_arch
from foliolab.commands import Command, options
from foliolab.errors import BuildError, UsageError
from foliolab.kernel import build, kconfig, source, sources, trees
from foliolab.kernel import specs as kernels
from foliolab.kernel.sources.series import DirSeries
from foliolab.paths import DEFAULT_PATCHES, PROJECT_ROOT
from foliolab.robot import command as robot
from foliolab.robot import matrix
from foliolab.rundir import RunKind
from foliolab.series import check as seriescheck
from foliolab.series import post, sincespec, stablehistory


def _setup_options(s: argparse.ArgumentParser) -> None:
    options.arch(s)


def _tree_options(s: argparse.ArgumentParser) -> None:
    options.common(s)


def _export_options(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "--patches", type=Path, default=DEFAULT_PATCHES, metavar="DIR"
    )


def _post_options(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "series",
        type=Path,
        metavar="SERIES",
        help="a series folder with a `series` and a postings.toml file",
    )
    s.add_argument(
        "--base",
        required=True,
        metavar="SPEC",
        help="the tree the postings go on, only read: debian:VERSION "
        "(the cache's unpacked package) or git:PATH@REF",
    )
    s.add_argument(
        "--base-commit",
        metavar="SHA",
        help="upstream's commit of that tree (40 hex digits), for the "
        "cover letters' base-commit: (required with debian:VERSION; a "
        "clone's commit is its own)",
    )
    s.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="a new directory for the mboxes, one per posting",
    )


def _build_options(s: argparse.ArgumentParser) -> None:
    options.common(s)
    s.add_argument(
        "--variant", choices=("vanilla", "patched", "both"), default="both"
    )
    s.add_argument("--config", choices=kconfig.PURPOSES, default="perf")


def _check_options(s: argparse.ArgumentParser) -> None:
    options.common(s)
    options.base(s, "the tree the series goes on")
    s.add_argument("--config", choices=kconfig.PURPOSES, default="perf")
    s.add_argument("--accel", default="tcg", choices=("tcg", "kvm"))
    s.add_argument(
        "--out",
        type=options.directory,
        help="where the boot logs go (default results/check-<time>)",
    )
    s.add_argument(
        "--since",
        type=options.spec_arg,
        metavar="SPEC",
        help="first say which patches restore code that the "
        "base's stable history since SPEC removed, and "
        "which touch functions it changed. SPEC: "
        "debian:VERSION (e.g. debian:6.12.107) or "
        "git:PATH@REF (see docs/manual.md)",
    )
    s.add_argument(
        "--history-only",
        action="store_true",
        help="with --since: only that check (no checkpatch, build or boot)",
    )
    options.executor(s)
    robot.options(s)


def cmd_setup(args: argparse.Namespace) -> int:
    hostsetup.ensure_packages(
        hostsetup.APT_PACKAGES + hostsetup.REPORT_PACKAGES
    )
    arch = get_arch(args.arch)
    hostsetup.ensure_arch(arch)
    print(
        "host packages: ok"
        + (
            ""
            if arch.native
            else f"; {arch.name} guest sysroot: "
            f"{hostsetup.guest_sysroot(arch)}"
        )
    )
    return 0


def cmd_tree(args: argparse.Namespace) -> int:
    path = source.dev_tree(sources.read_patches(args.patches))
    print(path)
    print(
        "# commit your changes on branch `dev` there, then run "
        "`foliolab export`",
        file=sys.stderr,
    )
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    written = source.export_series(args.patches)
    for p in written:
        print(p)
    print(
        f"# {len(written)} patch(es) written to {args.patches}",
        file=sys.stderr,
    )
    return 0


def cmd_post(args: argparse.Namespace) -> int:
    # everything that can be refused is, before the base is read
    post.refuse_existing(args.out)
    folder = sources.input_class(str(args.series)).parse(str(args.series))
    if not isinstance(folder, DirSeries):
        raise UsageError(f"{args.series} is not a series folder")
    postings = folder.postings()
    who = post.sender(Path.cwd())
    spec = kernels.parse_base(args.base).source
    base = post.base_tree(spec, args.base_commit)
    series_cover = folder.directory / source.COVER_LETTER
    for w in post.write_postings(postings, base, who, series_cover, args.out):
        p = w.posting
        print(f"{w.mbox}: {p.name}, {len(p.patches)} patch(es) for {p.tree}")
        for s in w.subjects:
            print(f"  {s}")
        print(f"  To: {', '.join(w.to)}")
        print(f"  Cc: {', '.join(w.cc)}")
    print(
        f"# from {who.plain}, on {base.described}, base-commit "
        f"{base.upstream}",
        file=sys.stderr,
    )
    return 0


def _trees(
    args: argparse.Namespace, variants: Iterable[str]
) -> list[source.Tree]:
    return [trees.variant_tree(v, args.patches) for v in variants]


def cmd_build(args: argparse.Namespace) -> int:
    variants = (
        ["vanilla", "patched"] if args.variant == "both" else [args.variant]
    )
    if "patched" in variants:
        # the series read (its directory, `series` and every patch named)
        # before the vanilla tree is unpacked, not after
        sources.read_patches(args.patches)
    for tree in _trees(args, variants):
        k = build.build_kernel(tree, get_arch(args.arch), args.config)
        print(f"{tree.variant}: {k.image} ({k.elapsed:.0f} s)")
    return 0


@dataclass(frozen=True)
class CheckPlan:
    """What `check` will do, every input read and checked (plan_check):
    nothing fetched, unpacked or built yet."""

    since: sincespec.SinceSpec | None  # --since, its syntax checked
    executor: executors.ExecutorOptions
    cells: tuple[matrix.Cell, ...] | None  # --robot's, or None
    out: Path  # claimed (unless --history-only, which writes nothing)
    kind: RunKind
    series: source.Series
    spec: kernels.KernelSpec  # the base + the series, checked locally


def plan_check(args: argparse.Namespace) -> CheckPlan:
    """`check`'s one planning step: every option, the series and its
    entries, the base's spec and tree (a git: commit of no kernel, a
    debian: version the fragments do not serve) and --out, before the
    stable history is fetched or any tree unpacked."""
    if args.history_only and not args.since:
        raise UsageError(
            "--history-only checks the series against the "
            "stable history: it needs --since SPEC",
            hint="e.g. --since debian:6.12.107",
        )
    if args.since and args.base != "base":
        raise UsageError(
            f"--since compares with the pinned base's stable "
            f"history; --base {args.base} is not that base",
            hint="drop --base, or drop --since",
        )
    since = _since_spec(args)
    executor = executors.options(args, args.argv)
    executors.check_executor(executor)
    cells = robot.cells(args)
    out = args.out or PROJECT_ROOT / "results" / dt.datetime.now().strftime(
        "check-%Y%m%d-%H%M%S"
    )
    kind = RunKind.SERIES_CHECK if cells is None else RunKind.ROBOT
    if not args.history_only:  # which writes nothing
        rundir.claim(out, kind)  # before the series is read or applied
    series = sources.read_patches(args.patches)
    if not series.patches:
        raise UsageError(
            "the series is empty: nothing to check",
            hint="give --patches DIR with patches in `series`",
        )
    spec = kernels.with_series(
        kernels.parse_base(args.base), "patched", args.patches
    )
    if not args.history_only:
        kernels.check_local(spec)
    return CheckPlan(since, executor, cells, out, kind, series, spec)


def cmd_check(args: argparse.Namespace) -> int:
    plan = plan_check(args)
    out, kind, cells, spec = plan.out, plan.kind, plan.cells, plan.spec
    history = _check_history(plan.since, plan.series) if plan.since else None
    if args.history_only:
        assert history is not None  # --history-only needs --since
        history.raise_if_restored()
        return 0
    kernels.check_spec(spec)  # may ask Debian's archive
    tree = trees.tree_of(spec)  # a series that does not apply: refused here
    rundir.mark(out, kind)
    if cells is not None:
        robot.check(args, spec, tree, cells, out)  # marks it finished
        if history:
            history.raise_if_restored()
        return 0
    checks = seriescheck.check_series(
        spec, get_arch(args.arch), args.config, args.accel, out, plan.executor
    )
    result = seriescheck.SeriesCheck(tuple(checks), out)
    out.mkdir(parents=True, exist_ok=True)
    result.outcomes().write(out)
    rundir.mark(out, kind, finished=True)
    for c in checks:
        print(c.row())
    bad = result.bad
    if bad:
        raise BuildError(
            f"{len(bad)} of {len(checks)} patches fail the "
            f"check, first {bad[0].name}",
            hint="see the rows above",
        )
    print(
        f"all {len(checks)} patches pass checkpatch --strict, build "
        f"({args.config}) and boot"
    )
    if history:
        history.raise_if_restored()
    return 0


def _since_spec(args: argparse.Namespace) -> sincespec.SinceSpec | None:
    """``--since SPEC`` parsed (its syntax only), or None."""
    return sincespec.parse(args.since) if args.since else None


def _check_history(
    since: sincespec.SinceSpec, series: source.Series
) -> stablehistory.HistoryReport:
    """The stable-history check: the since-tree is found and checked
    (older than the base) before the base is unpacked; the findings are
    printed, one a line."""
    older = sincespec.resolve(since, sincespec.pinned_release())
    report = stablehistory.check_series(series, older, sincespec.pinned_base())
    for line in report.lines():
        print(line)
    return report


COMMANDS = (
    Command(
        "setup",
        "install the host packages foliolab needs",
        _setup_options,
        cmd_setup,
        example="foliolab setup --arch arm64",
    ),
    Command(
        "tree",
        "print the developer tree (base + series on branch dev) to work in",
        _tree_options,
        cmd_tree,
        example="foliolab tree",
    ),
    Command(
        "export",
        "write the developer tree's commits to the series directory",
        _export_options,
        cmd_export,
        example="foliolab export",
    ),
    Command(
        "post",
        "write a series folder's postings as b4 sends them, an mbox each",
        _post_options,
        cmd_post,
        example="foliolab post patches/7.3 --base debian:7.3 "
        "--base-commit 0123456789abcdef0123456789abcdef01234567 "
        "--out /tmp/post-73",
    ),
    Command(
        "build",
        "build kernels",
        _build_options,
        cmd_build,
        example="foliolab build --variant patched --config debug",
    ),
    Command(
        "check",
        "checkpatch each patch; build and boot base + patches "
        "1..i for every i",
        _check_options,
        cmd_check,
        example="foliolab check --patches patches/7.3 --base debian:7.3",
    ),
)
