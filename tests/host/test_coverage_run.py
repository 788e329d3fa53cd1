"""foliolab test --coverage's plumbing (foliolab/coverage/gcovrecord.py,
coveragerun.py, the guest's fl_gcov_ship, the coverage kernel's config
and build, run_suite): the guest's record made by lib.sh under busybox
from the .gcda files of covtree.py's C tree, what a damaged or missing
record does, and the kernel's side as far as it goes without building
one.
"""

from __future__ import annotations

import json
from pathlib import Path

import covtree
import pytest

from foliolab.arch import get_arch
from foliolab.coverage import (
    gcovdata,
    gcovrecord,
)
from foliolab.coverage import (
    lines as coverage,
)
from foliolab.coverage import (
    run as coveragerun,
)
from foliolab.coverage.lines import LineState
from foliolab.guestdata import parse
from foliolab.testrecord import Outcomes, TestStatus


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return covtree.make_tree(tmp_path_factory.mktemp("covtree"))


def test_guest_script_ships_the_data_the_host_reads(tree, tmp_path):
    records = covtree.ship(covtree.fake_debugfs(tree, tmp_path), tmp_path)
    files = parse.parse_records(records).samples[0].files
    assert records[0] == "@@ file coverage.gcda"
    archive = gcovrecord.decode(files[gcovrecord.RECORD])
    guest = gcovrecord.unpack(archive)
    assert sorted(
        p.rsplit("/", 2)[-2] + "/" + p.rsplit("/", 1)[-1] for p in guest
    ) == ["src/main.gcda", "src/util.gcda"]
    placed, unmatched = gcovrecord.place(
        guest, covtree.notes(tree), tmp_path / "boot"
    )
    assert sorted(placed) == ["src/main.c", "src/util.c"] and not unmatched
    sl = covtree.series_lines(tree)
    shipped = gcovdata.collect(
        placed, gcovdata.SourcePaths(tree["repo"], sl.final)
    )
    direct = covtree.gcov_data(tree)
    assert not shipped.bad
    assert {p: f.counts for p, f in shipped.files.items()} == {
        p: f.counts for p, f in direct.files.items()
    }


def test_guest_script_without_gcov_says_so_in_one_line(tmp_path):
    records = covtree.ship(tmp_path / "no-such-dir", tmp_path)
    text = parse.parse_records(records).samples[0].files[gcovrecord.RECORD]
    with pytest.raises(gcovrecord.CoverageRecordError) as e:
        gcovrecord.decode(text)
    assert str(e.value) == (
        "the guest sent no coverage data: no "
        f"{tmp_path}/no-such-dir in this kernel "
        "(CONFIG_GCOV_KERNEL?)"
    )


def test_damaged_or_missing_record_is_one_line_rest_whole(tree, tmp_path):
    (tmp_path / "ship").mkdir()
    good = covtree.record(tree, tmp_path)
    out, plan = covtree.run_dir(tree, tmp_path)
    # a base64 line changed on the way: the digest no longer holds
    damaged = list(good)
    damaged[3] = (
        damaged[3][:10]
        + ("A" if damaged[3][10] != "A" else "B")
        + damaged[3][11:]
    )
    cut = good[:4]  # the guest died while sending it
    boots = [
        covtree.boot(out, "mglru-y", good),
        covtree.boot(out, "mglru-n", damaged),
        covtree.boot(out, "cut", cut, exited=False),
        covtree.boot(out, "none", []),
    ]
    arch = get_arch("x86_64")
    rep = coveragerun.finish(out, boots, plan, arch)
    assert rep.boots == ["mglru-y"]
    assert rep.problems == [
        "boot mglru-n: coverage record damaged: its sha256 does not match",
        f"boot cut: coverage record cut off: {len(cut[2] + cut[3])} of "
        f"{covtree.b64_chars(good)} base64 characters "
        f"({good[1].split()[2]} bytes)",
        "boot none: no coverage record: the guest sent none (the boot "
        "ended before the suite did?)",
    ]
    # the good boot's counts, whole
    total = coverage.Tally.of(rep.results)
    assert (total.added, total.executable, total.ran) == (26, 10, 7)
    text = (out / "coverage.txt").read_text()
    assert "problem: boot mglru-n: coverage record damaged" in text
    # and the suite's own results of the damaged boot are all there
    from foliolab.bootrecord import BootResult
    from foliolab.suite import results as suiteresults

    res = BootResult(
        "ok",
        0,
        [],
        boots[1] / "console.log",
        boots[1] / "results.txt",
        1.0,
        (boots[1] / "results.txt").read_text().splitlines(),
    )
    checks = suiteresults.judge_boot("n", res).checks
    assert [(c.name, c.status) for c in checks] == [
        ("anon_swap.pageout_64k", "pass")
    ]


def test_no_usable_record_at_all_is_no_data_never_never_ran(tree, tmp_path):
    out, plan = covtree.run_dir(tree, tmp_path)
    boot = covtree.boot(out, "mglru-y", [])
    rep = coveragerun.finish(out, [boot], plan, get_arch("x86_64"))
    t = coverage.Tally.of(rep.results)
    assert (t.executable, t.ran) == (0, 0)
    # what the build says holds without data: 8 not built (another
    # architecture's file, the #ifdef, a file with no object), 3 not
    # profiled; the other 15 lines have no data
    assert t.states[LineState.NOT_BUILT] == 8
    assert t.states[LineState.NOT_PROFILED] == 3
    assert t.states[LineState.NO_DATA] == 15
    assert coveragerun.summary_line(rep) == (
        "# coverage: 0 of 0 executable added lines ran (-), 26 added; "
        "1 problem(s), see the report"
    )


def test_one_damaged_data_file_is_no_data_for_its_lines_only(tree, tmp_path):
    (tmp_path / "ship").mkdir()
    records = covtree.record(tree, tmp_path)
    out, plan = covtree.run_dir(tree, tmp_path)
    boot = covtree.boot(out, "mglru-y", records)
    # what gcov says of a file that is not gcda: every count 0, exit 2
    (out / "coverage" / "notes" / "src" / "util.gcno").write_bytes(
        b"not a notes file"
    )
    rep = coveragerun.finish(out, [boot], plan, get_arch("x86_64"))
    assert rep.problems[0].startswith("src/util.c: gcov: ")
    util = [r for r in rep.results if r.path == "src/util.c"]
    assert {r.state for r in util} == {LineState.NO_DATA}
    assert len(util) == 6
    main = {r.line: r.state for r in rep.results if r.path == "src/main.c"}
    assert main[8] is LineState.RAN and main[12] is LineState.RAN


def test_a_build_without_notes_files_did_not_profile(tree, tmp_path):
    plan = coveragerun.Plan(
        covtree.series_lines(tree),
        coveragerun.ProfilePlan(("mm",)),
        tree["repo"],
    )
    with pytest.raises(coveragerun.BuildError) as e:
        coveragerun.snapshot(tree["build"], plan, tmp_path)
    assert "made no .gcno files in mm: nothing was profiled" in str(e.value)


def test_finish_safely_keeps_any_failure_to_one_line(tree, tmp_path):
    plan = coveragerun.Plan(
        covtree.series_lines(tree),
        coveragerun.ProfilePlan(("src",)),
        tree["repo"],
    )
    out = tmp_path / "run"
    out.mkdir()
    # a boot whose results cannot be read is that boot's one line
    (out / "mglru-y" / "results.txt").mkdir(parents=True)
    rep = coveragerun.finish(out, [out / "mglru-y"], plan, get_arch("x86_64"))
    assert len(rep.problems) == 1 and rep.problems[0].startswith(
        "boot mglru-y: coverage data unreadable"
    )
    # a report that cannot be written is one line, and no exception
    (out / "coverage.txt").unlink()
    (out / "coverage.txt").mkdir()
    line = coveragerun.finish_safely(
        out, [out / "mglru-y"], plan, get_arch("x86_64")
    )
    assert line.startswith("# coverage: no report: ")
    assert "\n" not in line
    # the earlier report is not this run's: its outcomes have no figures
    assert not (out / "coverage.json").exists()
    suite_only = Outcomes("test", [], [])
    assert coveragerun.with_coverage(suite_only, out, plan) == suite_only


# ---- the kernel's side, as far as it goes without building one --------------


def test_coverage_config_is_debug_plus_gcov_and_no_comparison_purpose():
    from foliolab.kernel import kconfig

    files = [f.name for f in kconfig.fragment_files("coverage", "x86_64")]
    assert files == [
        "base.config",
        "arch-x86_64.config",
        "debug.config",
        "debug-x86_64.config",
        "coverage.config",
    ]
    opts = kconfig.merge("coverage", "x86_64").options
    assert opts["CONFIG_GCOV_KERNEL"] == "y"
    assert opts["CONFIG_GCOV_PROFILE_ALL"] == "n"
    assert opts["CONFIG_DEBUG_VM"] == "y" and opts["CONFIG_DEBUG_FS"] == "y"
    # never a --config of compare, run, attribute ...: no timed or
    # counted sample comes from a coverage kernel
    assert "coverage" not in kconfig.PURPOSES
    from foliolab.kernel import kconfig

    assert kconfig.debug_cmdline("coverage") == kconfig.debug_cmdline("debug")


def test_cli_refuses_coverage_with_count_or_another_config():
    from foliolab.errors import UsageError

    x86 = get_arch("x86_64")
    with pytest.raises(UsageError, match="--coverage and --count do not mix"):
        coveragerun.check_request(True, "debug", x86)
    with pytest.raises(UsageError, match="builds its own kernel"):
        coveragerun.check_request(False, "kasan", x86)
    coveragerun.check_request(False, "debug", x86)  # gcov is here
    from foliolab.cli import build_parser

    args = build_parser().parse_args(["test", "--coverage"])
    assert args.coverage and args.config == "debug"


def test_build_passes_the_profiling_variable_to_make(
    tmp_path, tmp_cache, monkeypatch
):
    from foliolab import timings
    from foliolab.kernel import build, kconfig, source

    argvs = []
    monkeypatch.setattr(build.hostsetup, "ensure_arch", lambda arch: None)
    monkeypatch.setattr(source, "checkout", lambda tree: None)
    monkeypatch.setattr(
        build,
        "configure",
        lambda tree, arch, purpose, out: (
            out.mkdir(parents=True) or out / ".config"
        ),
    )
    monkeypatch.setattr(
        build, "_run_make", lambda argv, *a: argvs.append(argv) or 0
    )
    monkeypatch.setattr(kconfig, "check", lambda *a: None)
    monkeypatch.setattr(timings, "record_build", lambda *a: None)
    monkeypatch.setattr(build, "config_digest", lambda p: "x")
    tree = source.Tree("patched", source.base_repo(), "c0ffee", "d")
    monkeypatch.setattr(source.Tree, "version", lambda self: (6, 12))
    k = build.build_kernel(
        tree,
        get_arch("x86_64"),
        "coverage",
        make_vars=coveragerun.make_vars(("mm",)),
    )
    assert k.build_dir.name == "x86_64-coverage-base"
    assert argvs[0][-2:] == [
        "GCOV_PROFILE=$(if $(filter mm mm/,$(obj)),y)",
        "bzImage",
    ]


def test_plan_for_the_series_of_the_tree(tree):
    from foliolab.errors import UsageError
    from foliolab.kernel import source

    t, series = covtree.tree_and_series(tree)
    plan = coveragerun.plan_for(t, series, get_arch("x86_64"))
    assert plan.profile.dirs == ("src",)
    assert plan.problems == [
        "arch/arm64/ not profiled: another architecture's"
    ]
    assert len(plan.lines.lines) == 26
    with pytest.raises(UsageError, match="has no series"):
        coveragerun.plan_for(
            t, source.Series(Path("/dev/null"), ()), get_arch("x86_64")
        )


def test_run_suite_with_coverage_reports_after_the_suite(
    tree, tmp_path, monkeypatch
):
    """run_suite with the build and the boots stood in for: the profiling
    variable reaches the build, the job turns coverage on, the suite's
    results are written as ever, and the coverage report follows; a boot
    whose record is missing is one line of it."""
    from foliolab.bootrecord import BootResult
    from foliolab.kernel import build
    from foliolab.suite import run as suite
    from foliolab.suite.request import SuiteRequest

    (tmp_path / "ship").mkdir()
    record = covtree.record(tree, tmp_path)
    t, series = covtree.tree_and_series(tree)
    arch = get_arch("x86_64")
    plan = coveragerun.plan_for(t, series, arch)
    (tree["build"] / ".config").write_text("CONFIG_X86_64=y\n")
    seen: dict = {"jobs": []}

    def fake_build(
        tree_,
        arch_,
        purpose,
        slot=None,
        make_vars=(),
        keep=None,
        keep_files=None,
        also_keep=None,
    ):
        seen["purpose"], seen["make_vars"] = purpose, make_vars
        seen["keep"] = keep
        k = build.Kernel(
            "patched",
            purpose,
            "x86_64",
            tree["build"],
            tree["build"] / "bzImage",
            "c0ffee",
            "x",
            0.0,
        )
        also_keep(k)  # as build_kernel does, under its lock
        return k

    def fake_boot(spec, image, job, rundir, extra=None):
        seen["jobs"].append(job)
        rundir.mkdir(parents=True)
        lines = [
            "@@ boot 1.0",
            *covtree.KTAP,
            *(record if rundir.name == "mglru-y" else []),
            "@@ exit 0",
        ]
        (rundir / "results.txt").write_text("\n".join(lines) + "\n")
        return BootResult(
            "ok",
            0,
            [],
            rundir / "console.log",
            rundir / "results.txt",
            1.0,
            lines,
        )

    monkeypatch.setattr(build, "build_kernel", fake_build)
    monkeypatch.setattr(
        suite.image,
        "build_image",
        lambda arch_, kselftests=None: type("Img", (), {"path": tmp_path})(),
    )
    monkeypatch.setattr(
        suite,
        "boot_once",
        lambda executor, r, image: fake_boot(r.spec, image, r.job, r.rundir),
    )
    out = tmp_path / "out"
    result = suite.run_suite(
        SuiteRequest(
            t, arch, out, kselftests=(), purpose="coverage", coverage=plan
        )
    )
    assert result.passed
    summary = result.summary
    (test,) = [
        t
        for t in result.tests()
        if t.path == "suite.mglru-on.anon_swap.pageout_64k"
    ]
    assert test.status is TestStatus.PASS and test.log == "mglru-y/console.log"
    assert seen["purpose"] == "coverage"
    assert seen["make_vars"] == coveragerun.make_vars(("src",))
    # the suite boots its own copy of the image, kept in the run
    assert seen["keep"] == out / "kernel"
    assert all("export FL_COVERAGE=1\n" in job for job in seen["jobs"])
    ktap = (out / "suite.ktap").read_text()
    assert "ok 1 mglru=y anon_swap.pageout_64k" in ktap
    assert "# coverage" not in ktap  # the suite's own file, as ever
    assert summary.splitlines()[-1] == (
        "# coverage: 7 of 10 executable added lines ran (70.0%), 26 added; "
        "2 problem(s), see the report"
    )
    doc = json.loads((out / "coverage.json").read_text())
    assert doc["boots"] == ["mglru-y"]
    assert doc["problems"] == [
        "arch/arm64/ not profiled: another architecture's",
        "boot mglru-n: no coverage record: the guest sent none (the boot "
        "ended before the suite did?)",
    ]
    assert (out / "coverage" / "notes" / "src" / "util.gcno").exists()
    # the run's outcomes: the suite's checks, then a test per patch with
    # its figures, as coverage.json has them
    coveragerun.with_coverage(result.outcomes(), out, plan).write(out)
    got = Outcomes.read(out)
    suite_rows = [t for t in got.tests if t.path.startswith("suite.")]
    assert suite_rows == result.tests()
    rows = [t for t in got.tests if t.path.startswith("coverage.")]
    assert [t.path for t in rows] == [
        f"coverage.{p['number']}" for p in doc["patches"]
    ]
    assert len(rows) >= 2
    assert {t.status for t in rows} == {TestStatus.DONE}
    assert {t.kernel for t in rows} == {got.kernels[0].name}
    for t, p in zip(rows, doc["patches"]):
        want = p["totals"]
        assert t.misc["patch"] == p["name"]
        assert (t.misc["executable"], t.misc["ran"], t.misc["added"]) == (
            want["executable"],
            want["ran"],
            want["added"],
        )
        assert t.misc.get("percent") == want["percent"]
    assert sum(t.misc["ran"] for t in rows) == 7
    assert sum(t.misc["executable"] for t in rows) == 10
    # a run without coverage has none of these rows
    assert coveragerun.with_coverage(result.outcomes(), out, None).tests == (
        result.tests()
    )


def test_data_the_build_kept_no_notes_for_is_named(tree, tmp_path):
    ship = tmp_path / "ship"
    gcov = covtree.fake_debugfs(tree, ship)
    stray = gcov / "lib" / "other.gcda"
    stray.parent.mkdir()
    stray.write_bytes(b"data of an object outside the profiled dirs")
    records = covtree.ship(gcov, ship)
    out, plan = covtree.run_dir(tree, tmp_path)
    rep = coveragerun.finish(
        out, [covtree.boot(out, "mglru-y", records)], plan, get_arch("x86_64")
    )
    assert rep.problems == [
        "boot mglru-y: 1 data file(s) match no notes "
        "file of the build, first lib/other.gcda"
    ]
    assert coverage.Tally.of(rep.results).ran == 7


def test_sources_moved_on_after_the_build_still_map(tree, tmp_path):
    """Other kernels' builds check other commits out into the build
    checkout while a coverage run boots: gcov then notes that a source is
    newer than its notes file. The lines are mapped from git at the built
    commit, so that note is no damage (the both-MGLRU run of 2026-11-26
    lost every object to it)."""
    import os

    (tmp_path / "ship").mkdir()
    records = covtree.record(tree, tmp_path)
    out, plan = covtree.run_dir(tree, tmp_path)
    boot = covtree.boot(out, "mglru-y", records)
    src = tree["repo"] / "src" / "util.c"
    before = src.stat()
    later = before.st_mtime + 3600
    os.utime(src, (later, later))
    try:
        rep = coveragerun.finish(out, [boot], plan, get_arch("x86_64"))
    finally:
        os.utime(src, (before.st_atime, before.st_mtime))
    assert rep.problems == []
    total = coverage.Tally.of(rep.results)
    assert (total.added, total.executable, total.ran) == (26, 10, 7)
