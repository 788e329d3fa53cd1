"""`foliolab test`: the correctness suite on a debug kernel.

Boots the debug kernel (DEBUG_VM, PAGE_TABLE_CHECK with page_table_check=on,
PROVE_LOCKING, DEBUG_LIST, panic_on_warn=1) once with MGLRU on and once
with it off, runs our guest tests (tests/guest, KTAP) with leak oracles
after each group, and the 6.12 mm kselftests built from the same tree.
A kselftest result counts against the kernel only if the same test passed
on vanilla (tests/kselftest-vanilla.json, recorded with --record-baseline).

Any WARN, BUG, Oops or "Bad page" on the console fails the run.

A run is three steps: ``build`` (the kernel, the kselftests, the image),
``boot`` (one boot per MGLRU setting, on the executor the request names)
and ``_verdict``. What is run is plan.py's; what a boot's results say,
and how they compare with vanilla's, is results.py's.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from dataclasses import dataclass
from pathlib import Path

from foliolab import counting, records, rundir
from foliolab.boot.measure import boot_once
from foliolab.counting import Counter
from foliolab.coverage import run as coveragerun
from foliolab.executors import make_executor
from foliolab.executors.base import BootRequest, BootSpec, Executor
from foliolab.kernel import build as kbuild
from foliolab.kernel import image, kconfig
from foliolab.kernel import upstream_selftests as upstream_mod
from foliolab.kernelrecord import KernelRecord, build_record, kernel_record
from foliolab.rundir import RunKind
from foliolab.suite.kselftests import build_kselftests
from foliolab.suite.plan import (
    NOT_BUILT,
    SUITE_LIMIT,
    UPSTREAM_LIMIT,
    baseline_path,
    guest_job,
    kselftest_entries,
    only_limit,
    slowdown_of,
)
from foliolab.suite.request import SuiteRequest
from foliolab.suite.results import (
    Check,
    SuiteBoot,
    SuiteResult,
    compare_kselftests,
    compare_upstream,
    count_lines,
    judge_boot,
    ktap_summary,
    test_counts,
)

log = logging.getLogger("foliolab")


def run_suite(req: SuiteRequest) -> SuiteResult:
    """Build, boot and judge: the verdict, the KTAP summary (the coverage
    report's line added when ``req.coverage`` asks for one), the boots and
    the kernel's record. The executor is checked and made before anything
    is built."""
    rundir.claim(req.out, RunKind.SUITE)
    executor = make_executor(req.executor, req.out, req.count)
    rundir.mark(req.out, RunKind.SUITE)
    built = build(req)
    boots = boot(req, built, executor)
    passed, summary = _verdict(req, boots)
    if req.coverage:
        summary += (
            coveragerun.finish_safely(
                req.out,
                [req.out / f"mglru-{b.lru_gen}" for b in boots],
                req.coverage,
                req.arch,
            )
            + "\n"
        )
    return SuiteResult(passed, summary, tuple(boots), _record(req, built))


def _record(req: SuiteRequest, built: Built) -> KernelRecord:
    """The suite's kernel as every command records one."""
    if req.kernel is None:  # a request made without its spec (tests)
        return KernelRecord(
            req.tree.variant, "", built=build_record(built.kernel)
        )
    return kernel_record(req.kernel, req.tree, built.kernel)


@dataclass(frozen=True)
class Built:
    """What a suite's boots boot: the kernel (the run's own copy), its
    counter (``count``) and the base image with the kselftests."""

    kernel: kbuild.Kernel
    counter: Counter | None
    image: Path


def build(req: SuiteRequest) -> Built:
    """The kernel, the kselftests and upstream's selftests the request
    asks for, and the image that holds them."""
    arch, coverage = req.arch, req.coverage
    # the image booted is the run's own copy: two suites on one cache
    # (up and next, 2026-11-26) both booted the second one's kernel
    # and a coverage run's notes files are copied before the lock goes too
    kernel = kbuild.build_kernel(
        req.tree,
        arch,
        req.purpose,
        make_vars=coveragerun.make_vars(coverage.profile.dirs)
        if coverage
        else (),
        keep=req.out / "kernel",
        keep_files=kbuild.KEPT_FILES,
        also_keep=(
            lambda k: coveragerun.snapshot(k.build_dir, coverage, req.out)
        )
        if coverage
        else None,
    )
    # the symbols of the kept kernel, not of whatever the slot holds later
    counter = (
        counting.counter_for(arch, kernel.image.parent) if req.count else None
    )
    kselftest_bins = (
        build_kselftests(req.tree, arch, kernel) if req.kselftests else None
    )
    if req.upstream:
        upstream_mod.build(req.upstream.source, arch)
    img = image.build_image(arch, kselftests=kselftest_bins)
    req.out.mkdir(parents=True, exist_ok=True)
    return Built(kernel, counter, img.path)


def boot(
    req: SuiteRequest, built: Built, executor: Executor
) -> list[SuiteBoot]:
    """One boot per MGLRU setting of the request, by ``executor``, each
    judged."""
    ks = kselftest_entries(req.arch, slowdown_of(req.purpose), req.kselftests)
    up = _upstream_entries(req)
    spec = _boot_spec(req, built)
    boots = []
    for i, lru in enumerate(req.lru_gens):
        # kselftests once (they test the kernel, not reclaim's LRU choice)
        # The 20,000-VMA KSM migration (minutes on vanilla) runs once too.
        # Upstream's selftests run in every boot: they are compared per
        # MGLRU setting.
        entries = (ks if req.kselftests and i == 0 else "", up)
        job = guest_job(
            lru,
            i == 0,
            ";".join(filter(None, entries)),
            req.count,
            req.coverage is not None,
            req.stress,
            req.only,
            req.repeat,
        )
        log.info(
            "correctness suite: %s %s kernel, MGLRU %s",
            req.tree.variant,
            req.purpose,
            "on" if lru == "y" else "off",
        )
        rundir = req.out / f"mglru-{lru}"
        res = boot_once(
            executor,
            BootRequest(f"suite/mglru-{lru}", spec, job, rundir),
            built.image,
        )
        boots.append(judge_boot(lru, res))
        if req.count:
            boots[-1].counts = test_counts(res, req.arch.name)
    return boots


def _upstream_entries(req: SuiteRequest) -> str:
    """Upstream's selftests as the job's NAME|CMD|SECONDS|DIR entries."""
    if not req.upstream:
        return ""
    slowdown = req.arch.tcg_slowdown * slowdown_of(req.purpose)
    return ";".join(
        f"{n}|{cmd}|{secs}|{upstream_mod.GUEST_DIR}"
        for n, (cmd, secs) in req.upstream.guest_commands(slowdown).items()
    )


def _boot_spec(req: SuiteRequest, built: Built) -> BootSpec:
    """The machine of every suite boot, and its time limit."""
    arch = req.arch
    limit = (only_limit(req.only) if req.only else SUITE_LIMIT) + (
        UPSTREAM_LIMIT if req.upstream else 0
    )
    # 4 vCPUs although the host has 2 cores: the migration kselftest
    # needs at least 3 CPUs, and more vCPUs than cores only makes
    # races likelier, which suits a correctness run.
    return BootSpec(
        arch,
        built.kernel.image,
        accel=req.accel,
        vcpus=4,
        memory_mb=4096,
        numa_nodes=2,
        timeout=limit
        * arch.tcg_slowdown
        * (counting.TIMEOUT_FACTOR if req.count else 1)
        * slowdown_of(req.purpose)
        * req.repeat
        + 2 * req.stress.total_seconds,
        counter=built.counter,
        # null_blk (debug config): one memory-backed device, an
        # asynchronous swap device for vmscan's guest test; a kernel
        # without null_blk ignores the parameters
        cmdline=kconfig.debug_cmdline(req.purpose)
        + ("brd.rd_nr=1", "brd.rd_size=1048576")
        + ("null_blk.memory_backed=1", "null_blk.gb=1")
        + req.append,
    )


def _verdict(req: SuiteRequest, boots: list[SuiteBoot]) -> tuple[bool, str]:
    """The kselftests against vanilla's (``record_baseline``: written as
    vanilla's), then suite.ktap and suite.json; (passed, KTAP summary)."""
    if req.kselftests:
        _kselftest_checks(req, boots)
    if req.upstream:
        compare_upstream(
            boots, req.arch, req.record_baseline, req.upstream.names
        )
    summary = ktap_summary(boots)
    for b in boots:
        summary += "\n".join(count_lines(b.lru_gen, b.counts)) + (
            "\n" if b.counts else ""
        )
    (req.out / "suite.ktap").write_text(summary)
    _write_json(req, boots)
    passed = all(c.status != "fail" for b in boots for c in b.checks)
    return passed, summary


def _kselftest_checks(req: SuiteRequest, boots: list[SuiteBoot]) -> None:
    """The first boot's kselftest results against vanilla's, as its
    checks; with ``record_baseline``, written as vanilla's first."""
    base_file = baseline_path(req.arch)
    baseline = (
        records.read_object(
            base_file,
            records.RecordKind.CACHE,
            hint="record it again with `foliolab test --record-baseline`",
        )
        if base_file.exists()
        else {}
    )
    # a run of some kselftests (--kselftests) is compared on those alone
    baseline = {k: v for k, v in baseline.items() if k in req.kselftests}
    results = {
        k: v
        for b in boots
        for k, v in b.kselftests.items()
        if not k.startswith(upstream_mod.PREFIX)
    }
    if req.record_baseline:
        records.write_whole(
            base_file, json.dumps(results, indent=1, sort_keys=True) + "\n"
        )
        log.info("kselftest baseline written to %s", base_file)
    # when recording, vanilla is its own reference: its failures show
    # as skips, never as regressions
    boots[0].checks += compare_kselftests(
        results,
        results if req.record_baseline else baseline,
        boots[0].kselftest_reruns,
    )
    boots[0].checks += [
        Check(
            f"kselftest.{name}",
            "skip",
            f"not built for {req.arch.name} by the mm Makefile",
        )
        for name in NOT_BUILT.get(req.arch.name, ())
        if name in req.kselftests
    ]


def _write_json(req: SuiteRequest, boots: list[SuiteBoot]) -> None:
    """suite.json: the kernel's variant and commit, and each boot's
    checks, kselftests and counts."""
    (req.out / "suite.json").write_text(
        json.dumps(
            {
                "variant": req.tree.variant,
                "commit": req.tree.commit,
                # the kselftests asked for (--kselftests): a quick run
                # is not a full one with rows missing
                "kselftests": list(req.kselftests),
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
                        "kselftest_seconds": b.kselftest_seconds,
                        "counts": b.counts,
                    }
                    for b in boots
                ],
            },
            indent=1,
        )
        + "\n"
    )
