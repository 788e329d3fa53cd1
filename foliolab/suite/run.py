"""`foliolab test`: the correctness suite on a debug kernel.

Boots the debug kernel (DEBUG_VM, PAGE_TABLE_CHECK with page_table_check=on,
PROVE_LOCKING, DEBUG_LIST, panic_on_warn=1) once with MGLRU on and once
with it off, runs our guest tests (tests/guest, KTAP) with leak oracles
after each group, and the 6.12 mm kselftests built from the same tree.
A kselftest result counts against the kernel only if the same test passed
on vanilla (tests/kselftest-vanilla.json, recorded with --record-baseline).

Any WARN, BUG, Oops or "Bad page" on the console fails the run.

What a boot's results say, and how they compare with vanilla's, is
results.py's; here the suite is planned, built and booted.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from foliolab import counting, hostsetup, proc
from foliolab.coverage import run as coveragerun
from foliolab.kernel import build, image, kconfig, source
from foliolab.kernel import upstream_selftests as upstream_mod
from foliolab.arch import Arch
from foliolab.errors import BuildError, UsageError
from foliolab.executors import here
from foliolab.executors.base import BootRequest, BootSpec
from foliolab.boot.measure import boot_once
from foliolab.paths import PROJECT_ROOT
from foliolab.suite.results import (
    Check,
    SuiteBoot,
    compare_kselftests,
    compare_upstream,
    count_lines,
    judge_boot,
    ktap_summary,
    test_counts,
)

log = logging.getLogger("foliolab")

BASELINE = PROJECT_ROOT / "tests" / "kselftest-vanilla.json"


def baseline_path(arch: Arch) -> Path:
    """Vanilla's kselftest results for ``arch``: what passes differs per
    architecture (soft-dirty, for one, is x86-only in 6.12), so each has
    its own file; x86_64 keeps the original name."""
    if arch.name == "x86_64":
        return BASELINE
    return BASELINE.with_name(f"kselftest-vanilla-{arch.name}.json")


# name -> (command line in the kselftest dir, timeout in seconds). The
# names are what results and the baseline use.
KSELFTESTS = {
    "cow": ("cow", 1500),
    "gup_longterm": ("gup_longterm", 600),
    "khugepaged": ("khugepaged", 900),
    "khugepaged-mthp": ("khugepaged -s 2", 900),
    "ksm_tests-merge": ("ksm_tests -M -p 10", 300),
    "ksm_tests-unmerge": ("ksm_tests -U", 300),
    "ksm_tests-zero": ("ksm_tests -Z -p 10 -z 1", 300),
    "ksm_tests-numa": ("ksm_tests -N -m 0", 300),
    "ksm_functional_tests": ("ksm_functional_tests", 600),
    "uffd-unit-tests": ("uffd-unit-tests", 900),
    "soft-dirty": ("soft-dirty", 300),
    "pagemap_ioctl": ("pagemap_ioctl", 600),
    "migration": ("migration", 600),
    # nine pagecache passes, each writing 4 MiB a byte per write(): about
    # 100 s each on the debug kernel here (2026-11-23), 1,000 s in all
    "split_huge_page_test": ("split_huge_page_test", 1500),
    "transhuge-stress": ("transhuge-stress -d 20", 300),
    "mremap_test": ("mremap_test", 600),
    "droppable": ("droppable", 300),
    "mkdirty": ("mkdirty", 300),
    "madv_populate": ("madv_populate", 300),
}
# Kselftests that may run again when they fail, each with how many runs
# in all. The suite judges the last run and reports the failed ones
# beside it; every run failing is a failure as before.
#   ksm_tests -U waits for one full KSM scan after writing to its merged
#   pages, then reads the global pages_shared. That scan can be one that
#   had already passed its pages before the write, so they are still
#   counted as merged. Right after `ksm_tests -M`, as the suite runs them,
#   in 2-vCPU debug boots beside a KASAN build it failed 16 of 100 times
#   on vanilla 6.12 and 19 of 100 on round 6; on round 6, a copy waiting
#   for two scans failed 0 of 100 where the same build of the unchanged
#   test failed 12. In the suite's 4-vCPU shape on a quiet host: 0 of 100
#   after -M, 1 of 100 alone; with another guest beside it, a suite boot
#   saw two failed runs in a row (2026-11-26, notebook "The ksm_tests -U
#   race"). The runs fail together when the host is loaded, hence five.
RERUNS = {"ksm_tests-unmerge": 5}
# The randomized stress test: these seeds always (CI), random ones on
# request; a failing seed reruns with --stress-seeds.
FIXED_STRESS_SEEDS = (1, 2, 3)
FIXED_STRESS_SECONDS = 10
RANDOM_STRESS_SECONDS = 20
# Generic KASAN checks every access in software, under TCG on top: the
# kasan kernel gets twice the time limits (a guess until a KASAN run of
# the suite is timed here).
KASAN_SLOWDOWN = 2
# gcov's counters in the profiled directories are atomic adds (the top
# Makefile's -fprofile-update=prefer-atomic) in every hot path of mm/,
# under TCG: the same guess until a coverage run is timed here.
COVERAGE_SLOWDOWN = 2

# Tests 6.12's tools/testing/selftests/mm/Makefile does not build for an
# architecture (soft-dirty is left out for arm64, which has no soft-dirty).
NOT_BUILT = {"arm64": ("soft-dirty",)}


GUEST_TESTS_DIR = PROJECT_ROOT / "tests" / "guest"


def guest_tests() -> dict[str, dict[str, int]]:
    """Each guest test program (tests/guest/NAME.c) and the cases it declares
    with FL_TEST(), each with its time limit in seconds; a program without
    cases (stress) maps to {}."""
    tests = {}
    for src in sorted(GUEST_TESTS_DIR.glob("*.c")):
        tests[src.stem] = {
            case: int(secs)
            for case, secs in re.findall(
                r"^FL_TEST\(\s*\w+\s*,\s*(\w+)\s*,\s*(\d+)\s*\)",
                src.read_text(),
                re.M,
            )
        }
    return tests


# A suite boot's time limit on x86 under TCG: 25 min for the boot with the
# kselftests here (2026-11-23), of which split_huge_page_test ~17; ~3
# without. With --only, the selected cases' own limits and this much for
# booting and setting up (zram, XFS, memcg) instead.
SUITE_LIMIT = 2700
# ... plus this for upstream 7.3's mm selftests in each boot: all seven
# took at most 439 s in a boot here (2026-11-24, host at load 11-15)
UPSTREAM_LIMIT = 1800
ONLY_SETUP_LIMIT = 300


def only_limit(only: tuple[str, ...]) -> int:
    """The time limit of a suite boot that runs just ``only`` (checked):
    the sum of the selected cases' FL_TEST() limits and setup time, at
    most the whole suite's (the cases' limits are each a worst case)."""
    tests = guest_tests()
    total = ONLY_SETUP_LIMIT
    for item in only:
        group, _, case = item.partition(".")
        total += tests[group][case] if case else sum(tests[group].values())
    return min(total, SUITE_LIMIT)


def check_only(only: tuple[str, ...]) -> None:
    """``--only`` names a guest test program or PROGRAM.CASE; raise a usage
    error naming what does not exist."""
    tests = guest_tests()
    for item in only:
        group, _, case = item.partition(".")
        if group not in tests:
            raise UsageError(
                f"--only {item}: no guest test program {group}",
                hint="one of " + ", ".join(tests),
            )
        if case and case not in tests[group]:
            raise UsageError(
                f"--only {item}: {group} has no case {case}",
                hint=(
                    "it runs only whole"
                    if not tests[group]
                    else "its cases: " + ", ".join(tests[group])
                ),
            )


@dataclass(frozen=True)
class StressPlan:
    """Seeds of the randomized stress test (tests/guest/stress.c) and the
    seconds each runs for."""

    seeds: tuple[int, ...] = FIXED_STRESS_SEEDS
    seconds: int = FIXED_STRESS_SECONDS

    @property
    def total_seconds(self) -> int:
        return len(self.seeds) * self.seconds


def stress_plan(
    seconds: int | None, seeds: tuple[int, ...] | None
) -> StressPlan:
    """The fixed seeds (CI), plus random ones for ``--stress SECONDS`` in
    rounds of RANDOM_STRESS_SECONDS, or exactly ``--stress-seeds``."""
    if seeds:
        return StressPlan(seeds, RANDOM_STRESS_SECONDS)
    if not seconds:
        return StressPlan()
    extra = tuple(
        secrets.randbelow(2**32)
        for _ in range(max(1, seconds // RANDOM_STRESS_SECONDS))
    )
    return StressPlan(FIXED_STRESS_SEEDS + extra, RANDOM_STRESS_SECONDS)


def kselftests_for(
    arch: Arch, slowdown: float = 1
) -> dict[str, tuple[str, int]]:
    """KSELFTESTS without those the mm Makefile does not build for
    ``arch``, with time limits scaled to how slow its guests are (times
    ``slowdown`` for a slower kernel, e.g. KASAN)."""
    skip = NOT_BUILT.get(arch.name, ())
    return {
        n: (cmd, round(secs * arch.tcg_slowdown * slowdown))
        for n, (cmd, secs) in KSELFTESTS.items()
        if n not in skip
    }


def kselftest_entries(arch: Arch, slowdown: float = 1) -> str:
    """The kselftests of ``arch`` as run.sh's FL_KSELFTESTS entries,
    NAME|CMD|SECONDS||RUNS: RUNS from RERUNS, 1 for the others."""
    return ";".join(
        f"{n}|{cmd}|{secs}||{RERUNS.get(n, 1)}"
        for n, (cmd, secs) in kselftests_for(arch, slowdown).items()
    )


def build_kselftests(
    tree: source.Tree, arch: Arch, kernel: build.Kernel
) -> Path:
    """Build the mm selftests of ``tree`` against the kernel's headers,
    in the cache directory of its commit; the directory they are in."""
    out = image.kselftest_dir(arch, tree.commit)
    stamp = out.parent / "built-from"

    def built() -> bool:
        return stamp.exists() and stamp.read_text().strip() == tree.commit

    if built():
        return out
    with source.checkout_lock(tree.path):
        if built():  # another run built them while we waited
            return out
        return _build_kselftests_checked_out(tree, arch, kernel, out, stamp)


def _build_kselftests_checked_out(
    tree: source.Tree, arch: Arch, kernel: build.Kernel, out: Path, stamp: Path
) -> Path:
    source.checkout(tree)
    logp = out.parent / "build.log"
    out.mkdir(parents=True, exist_ok=True)
    proc.run(
        build.make_argv(tree.path, kernel.build_dir, arch, "headers"),
        env=build.make_env(),
        log_path=out.parent / "headers.log",
        error=BuildError,
        what="make headers",
    )
    hdr = kernel.build_dir / "usr" / "include"
    mm = tree.path / "tools/testing/selftests/mm"
    # 6.12.117's khugepaged.c uses KSFT_SKIP without including
    # kselftest.h (a stable backport slip); including it for every test is
    # harmless (include guards). -k keeps the rest building if an optional
    # test cannot be.
    cflags = f"-include {mm.parent / 'kselftest.h'}"
    cross = []
    if not arch.native:
        # libnuma's header and library for the target come from the
        # guest sysroot; -idirafter so they never shadow libc's headers.
        root = hostsetup.guest_sysroot(arch)
        cflags += (
            f" -idirafter {root}/usr/include -L{root}/usr/lib/{arch.multiarch}"
        )
        cross = [
            f"ARCH={arch.linux_arch}",
            f"CROSS_COMPILE={arch.cross_compile}",
        ]
    _forget_other_probe(mm, arch)
    proc.run(
        [
            "make",
            "-k",
            "-C",
            str(mm),
            f"OUTPUT={out}",
            *cross,
            f"KHDR_INCLUDES=-isystem {hdr}",
            f"EXTRA_CFLAGS={cflags}",
            f"-j{os.cpu_count() or 2}",
        ],
        log_path=logp,
        check=False,
    )
    missing = [
        cmd.split()[0]
        for cmd, _ in kselftests_for(arch).values()
        if not (out / cmd.split()[0]).exists()
    ]
    if missing:
        raise BuildError(
            f"mm kselftests not built: {', '.join(sorted(set(missing)))}",
            log_path=logp,
        )
    stamp.write_text(tree.commit + "\n")
    return out


def _forget_other_probe(mm: Path, arch: Arch) -> None:
    """The mm Makefile probes the compiler for liburing once and keeps the
    answer in the source tree (local_config.h/.mk), which every
    architecture builds from: drop an answer made with another compiler."""
    marker = mm / ".foliolab-probe-cc"
    if (
        marker.read_text().strip() if marker.exists() else "gcc"
    ) != arch.guest_cc:
        for name in ("local_config.h", "local_config.mk"):
            (mm / name).unlink(missing_ok=True)
    marker.write_text(arch.guest_cc + "\n")


def run_suite(
    tree: source.Tree,
    arch: Arch,
    out: Path,
    lru_gens: tuple[str, ...] = ("y", "n"),
    kselftests: bool = True,
    record_baseline: bool = False,
    accel: str = "tcg",
    count: bool = False,
    append: tuple[str, ...] = (),
    purpose: str = "debug",
    stress: StressPlan = StressPlan(),
    only: tuple[str, ...] = (),
    repeat: int = 1,
    upstream: upstream_mod.Plan | None = None,
    coverage: coveragerun.Plan | None = None,
) -> tuple[bool, str]:
    """Build, boot and judge; returns (passed, KTAP summary). ``count``:
    boot with the counter and report each guest test's kernel work;
    ``append``: extra kernel arguments; ``purpose``: the config, ``debug``
    or ``kasan``; ``only``: just these guest programs or PROGRAM.CASEs,
    each run ``repeat`` times (to chase a flaky case); the caller has
    checked ``only`` (check_only) before preparing the tree; ``upstream``:
    upstream 7.3's mm selftests to run too, in every boot; ``coverage``:
    the series' lines to measure, on the coverage kernel (``purpose``
    kconfig.COVERAGE), reported after the suite's own results are
    written."""
    # the image booted is the run's own copy: two suites on one cache
    # (up and next, 2026-11-26) both booted the second one's kernel
    # and a coverage run's notes files are copied before the lock goes too
    kernel = build.build_kernel(
        tree,
        arch,
        purpose,
        make_vars=coveragerun.make_vars(coverage.profile.dirs)
        if coverage
        else (),
        keep=out / "kernel",
        keep_files=build.KEPT_FILES,
        also_keep=(lambda k: coveragerun.snapshot(k.build_dir, coverage, out))
        if coverage
        else None,
    )
    # the symbols of the kept kernel, not of whatever the slot holds later
    counter = (
        counting.counter_for(arch, kernel.image.parent) if count else None
    )
    kselftest_bins = (
        build_kselftests(tree, arch, kernel) if kselftests else None
    )
    if upstream:
        upstream_mod.build(upstream.source, arch)
    img = image.build_image(arch, kselftests=kselftest_bins)
    out.mkdir(parents=True, exist_ok=True)
    slowdown = {
        "kasan": KASAN_SLOWDOWN,
        kconfig.COVERAGE: COVERAGE_SLOWDOWN,
    }.get(purpose, 1)
    ks = kselftest_entries(arch, slowdown) if kselftests else ""
    up = (
        ";".join(
            f"{n}|{cmd}|{secs}|{upstream_mod.GUEST_DIR}"
            for n, (cmd, secs) in upstream.guest_commands(
                arch.tcg_slowdown * slowdown
            ).items()
        )
        if upstream
        else ""
    )
    limit = (only_limit(only) if only else SUITE_LIMIT) + (
        UPSTREAM_LIMIT if upstream else 0
    )
    boots = []
    for i, lru in enumerate(lru_gens):
        # kselftests once (they test the kernel, not reclaim's LRU choice)
        # The 20,000-VMA KSM migration (minutes on vanilla) runs once too.
        # Upstream's selftests run in every boot: they are compared per
        # MGLRU setting.
        boot_ks = ";".join(filter(None, (ks if i == 0 else "", up)))
        job = _guest_job(
            lru,
            i == 0,
            boot_ks,
            count,
            coverage is not None,
            stress,
            only,
            repeat,
        )
        # 4 vCPUs although the host has 2 cores: the migration kselftest
        # needs at least 3 CPUs, and more vCPUs than cores only makes
        # races likelier, which suits a correctness run.
        spec = BootSpec(
            arch,
            kernel.image,
            accel=accel,
            vcpus=4,
            memory_mb=4096,
            numa_nodes=2,
            timeout=limit
            * arch.tcg_slowdown
            * (counting.TIMEOUT_FACTOR if count else 1)
            * slowdown
            * repeat
            + 2 * stress.total_seconds,
            counter=counter,
            # null_blk (debug config): one memory-backed device, an
            # asynchronous swap device for vmscan's guest test; a kernel
            # without null_blk ignores the parameters
            cmdline=kconfig.debug_cmdline(purpose)
            + ("brd.rd_nr=1", "brd.rd_size=1048576")
            + ("null_blk.memory_backed=1", "null_blk.gb=1")
            + append,
        )
        log.info(
            "correctness suite: %s %s kernel, MGLRU %s",
            tree.variant,
            purpose,
            "on" if lru == "y" else "off",
        )
        res = boot_once(
            here(),
            BootRequest(f"mglru-{lru}", spec, job, out / f"mglru-{lru}"),
            img.path,
        )
        boots.append(judge_boot(lru, res))
        if count:
            boots[-1].counts = test_counts(res, arch.name)
    passed, summary = _verdict(
        boots, tree, arch, out, kselftests, record_baseline, upstream
    )
    if coverage:
        summary += (
            coveragerun.finish_safely(
                out,
                [out / f"mglru-{b.lru_gen}" for b in boots],
                coverage,
                arch,
            )
            + "\n"
        )
    return passed, summary


def _guest_job(
    lru: str,
    first: bool,
    kselftests: str,
    count: bool,
    coverage: bool,
    stress: StressPlan,
    only: tuple[str, ...],
    repeat: int,
) -> str:
    """The job script of one suite boot: MGLRU ``lru``; ``first``, the
    boot that also runs the 20,000-VMA KSM migration; ``kselftests``, the
    NAME|CMD|SECONDS[|DIR[|RUNS]] entries it runs."""
    return (
        f"export FL_LRU_GEN={lru}\n"
        f"export FL_COUNT={1 if count else 0}\n"
        f"export FL_COVERAGE={1 if coverage else 0}\n"
        f"export FL_KSM_VMAS={20000 if first else 0}\n"
        f"export FL_STRESS_SEEDS='{' '.join(map(str, stress.seeds))}'\n"
        f"export FL_STRESS_SECONDS={stress.seconds}\n"
        f"export FL_KSELFTESTS='{kselftests}'\n"
        f"export FL_ONLY='{' '.join(only)}'\n"
        f"export FL_REPEAT={repeat}\n"
        ". /foliolab/lib.sh\n. /foliolab/suite/run.sh\n"
    )


def _verdict(
    boots: list[SuiteBoot],
    tree: source.Tree,
    arch: Arch,
    out: Path,
    kselftests: bool,
    record_baseline: bool,
    upstream: upstream_mod.Plan | None,
) -> tuple[bool, str]:
    """The kselftests against vanilla's (``record_baseline``: written as
    vanilla's), then suite.ktap and suite.json; (passed, KTAP summary)."""
    base_file = baseline_path(arch)
    baseline = json.loads(base_file.read_text()) if base_file.exists() else {}
    results = {
        k: v
        for b in boots
        for k, v in b.kselftests.items()
        if not k.startswith(upstream_mod.PREFIX)
    }
    if record_baseline and kselftests:
        base_file.write_text(
            json.dumps(results, indent=1, sort_keys=True) + "\n"
        )
        log.info("kselftest baseline written to %s", base_file)
    if kselftests:
        # when recording, vanilla is its own reference: its failures show
        # as skips, never as regressions
        boots[0].checks += compare_kselftests(
            results,
            results if record_baseline else baseline,
            boots[0].kselftest_reruns,
        )
        boots[0].checks += [
            Check(
                f"kselftest.{name}",
                "skip",
                f"not built for {arch.name} by the mm Makefile",
            )
            for name in NOT_BUILT.get(arch.name, ())
        ]
    if upstream:
        compare_upstream(boots, arch, record_baseline, upstream.names)
    summary = ktap_summary(boots)
    for b in boots:
        summary += "\n".join(count_lines(b.lru_gen, b.counts)) + (
            "\n" if b.counts else ""
        )
    (out / "suite.ktap").write_text(summary)
    (out / "suite.json").write_text(
        json.dumps(
            {
                "variant": tree.variant,
                "commit": tree.commit,
                "finished": dt.datetime.now(dt.timezone.utc).isoformat(
                    timespec="seconds"
                ),
                "boots": [
                    {
                        "lru_gen": b.lru_gen,
                        "boot": b.boot,
                        "console": b.console,
                        "checks": [c.__dict__ for c in b.checks],
                        "kselftests": b.kselftests,
                        "kselftest_reruns": b.kselftest_reruns,
                        "counts": b.counts,
                    }
                    for b in boots
                ],
            },
            indent=1,
        )
        + "\n"
    )
    passed = all(c.status != "fail" for b in boots for c in b.checks)
    return passed, summary
