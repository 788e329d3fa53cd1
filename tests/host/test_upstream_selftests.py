"""Upstream 7.3's mm selftests as the suite's second group of kselftests:
how they are built, named in the guest, and judged against vanilla."""

import json
import subprocess
from pathlib import Path

import pytest

from foliolab.arch import ARCHES
from foliolab.errors import SourceError, UsageError
from foliolab.kernel import debian
from foliolab.kernel import upstream_selftests as up
from foliolab.suite import results as suiteresults

X86, ARM64 = ARCHES["x86_64"], ARCHES["arm64"]
SOURCE = debian.Source(up.PACKAGE, "ab" * 32, Path("/src/7.3"), "c0ffee")


def test_compile_argv_is_static_against_73_headers():
    src, hdr, out = Path("/u/src"), Path("/u/hdr/include"), Path("/u/bin")
    argv = up.compile_argv("gcc", up.TESTS["rmap"], src, hdr, out)
    assert argv[0] == "gcc" and "-static" in argv
    # 7.3's uapi headers, then tools' copies; kselftest.h from selftests/
    assert argv[argv.index("-isystem") + 1] == str(hdr)
    assert "/u/src/tools/include/uapi" in argv
    assert argv[argv.index("-I") + 1] == "/u/src"
    assert "/u/src/tools/testing/selftests" in argv
    assert argv[-2:] == ["-o", "/u/bin/rmap"]
    # sources before libraries (a static link resolves left to right)
    srcs = ["rmap.c", "vm_util.c", "hugepage_settings.c"]
    assert all(argv.index(s) < argv.index("-lnuma") for s in srcs)
    assert "uffd-common.c" not in argv


def test_compile_argv_extra_sources_and_no_numa():
    argv = up.compile_argv(
        "gcc", up.TESTS["uffd-wp-mremap"], Path("/s"), Path("/h"), Path("/o")
    )
    assert "uffd-wp-mremap.c" in argv and "uffd-common.c" in argv
    assert "-lnuma" not in argv


def test_required_tests_are_in_the_group():
    for name in (
        "rmap",
        "ksm_functional_tests",
        "khugepaged",
        "droppable",
        "uffd-wp-mremap",
        "cow",
    ):
        assert name in up.TESTS


def test_guest_commands_run_beside_the_612_kselftests():
    plan = up.Plan(SOURCE, ("rmap", "khugepaged-mthp"))
    cmds = plan.guest_commands(slowdown=2)
    assert cmds == {
        "upstream.rmap": ("rmap", 1800),
        "upstream.khugepaged-mthp": ("khugepaged -s 2", 1800),
    }
    # run where they are: ksm_functional_tests execs ./ksm_functional_tests
    assert up.GUEST_DIR == "upstream"


def test_selection():
    assert up.parse_selection("all") == tuple(up.TESTS)
    assert up.parse_selection("none") == ()
    assert up.parse_selection("rmap,cow") == ("rmap", "cow")
    with pytest.raises(UsageError, match="no upstream test rmapp"):
        up.parse_selection("rmap,rmapp")
    with pytest.raises(UsageError):
        up.parse_selection(",")


def _no_source(monkeypatch):
    def fail():
        raise SourceError("apt-get update failed")

    monkeypatch.setattr(up, "source", fail)


def test_default_leaves_the_group_out_when_the_source_cannot_be_had(
    monkeypatch, caplog
):
    _no_source(monkeypatch)
    assert up.plan(None, X86) is None
    assert "upstream selftests left out" in caplog.text


def test_asked_for_and_unavailable_is_one_usage_error(monkeypatch):
    _no_source(monkeypatch)
    with pytest.raises(
        UsageError,
        match="--upstream-selftests: linux-source-7.3 .* cannot be had",
    ):
        up.plan(("rmap",), X86)


def test_default_plan_runs_all(monkeypatch):
    monkeypatch.setattr(up, "source", lambda: SOURCE)
    plan = up.plan(None, X86)
    assert plan.names == tuple(up.TESTS) and plan.source is SOURCE
    assert up.plan((), X86) is None


def test_other_arch_left_out_by_default_refused_when_asked(monkeypatch):
    monkeypatch.setattr(up, "source", lambda: SOURCE)
    assert up.plan(None, ARM64) is None
    with pytest.raises(UsageError, match="not arm64"):
        up.plan(("rmap",), ARM64)


def test_cli_rejects_an_unknown_test_before_any_work(capsys, monkeypatch):
    from foliolab import cli
    from foliolab.kernel import build

    monkeypatch.setattr(
        build, "build_kernel", lambda *a: pytest.fail("built a kernel")
    )
    rc = cli.main(["test", "--upstream-selftests", "rmap,nosuch"])
    err = capsys.readouterr().err
    assert rc == UsageError.exit_code
    assert "--upstream-selftests rmap,nosuch: no upstream test nosuch" in err


def test_cli_only_leaves_the_group_out_by_default(monkeypatch):
    from foliolab import cli
    from foliolab.commands import test as test_cmd

    monkeypatch.setattr(up, "source", lambda: pytest.fail("fetched 7.3"))
    args = cli.build_parser().parse_args(["test", "--only", "anon_swap"])
    kselftests = test_cmd._kselftests(args, ARCHES["x86_64"])
    assert test_cmd._upstream_plan(args, kselftests) is None


# -- comparison -------------------------------------------------------------


def test_case_passing_on_vanilla_must_pass_even_if_program_failed():
    # on 6.12 the program fails as a whole (a case for a newer feature);
    # its other cases are still compared
    base = {
        "upstream.rmap": {
            "": "fail",
            "1:migrate.anon": "pass",
            "5:migrate.ksm_and_mremap": "pass",
            "6:newer": "fail",
        }
    }
    now = {
        "upstream.rmap": {
            "": "fail",
            "1:migrate.anon": "pass",
            "5:migrate.ksm_and_mremap": "fail",
            "6:newer": "fail",
        }
    }
    got = {v.name: v for v in up.compare(now, base, ("rmap",))}
    assert (
        got["kselftest.upstream.rmap.5:migrate.ksm_and_mremap"].status
        == "fail"
    )
    assert got["kselftest.upstream.rmap"].status == "fail"
    assert "kselftest.upstream.rmap.6:newer" not in got


def test_same_results_pass_with_counts():
    res = {"upstream.cow": {"": "pass", "1:a": "pass", "2:b": "skip"}}
    (v,) = up.compare(res, res, ("cow",))
    assert (v.name, v.status) == ("kselftest.upstream.cow", "pass")
    assert "1 of 2 cases pass here, 1 on vanilla" in v.detail


def test_whole_program_passing_on_vanilla_must_pass():
    base = {"upstream.droppable": {"": "pass"}}
    now = {"upstream.droppable": {"": "timeout"}}
    got = [(v.name, v.status) for v in up.compare(now, base, ("droppable",))]
    # one line, the program's
    assert got == [("kselftest.upstream.droppable", "fail")]


def test_missing_and_unrecorded_programs_fail():
    base = {"upstream.rmap": {"": "pass"}}
    got = {
        v.name: v
        for v in up.compare(
            {"upstream.cow": {"": "pass"}}, base, ("rmap", "cow")
        )
    }
    assert got["kselftest.upstream.rmap"].detail == "did not run"
    assert (
        "not in the vanilla baseline" in got["kselftest.upstream.cow"].detail
    )
    (v,) = up.compare({}, None, ("rmap",))
    assert v.status == "fail" and "--record-baseline" in v.detail


def test_unselected_programs_of_the_baseline_are_not_required():
    base = {"upstream.rmap": {"": "pass"}, "upstream.cow": {"": "pass"}}
    got = up.compare({"upstream.rmap": {"": "pass"}}, base, ("rmap",))
    assert [(v.name, v.status) for v in got] == [
        ("kselftest.upstream.rmap", "pass")
    ]


def test_baseline_round_trip(tmp_path):
    b = up.Baseline(
        "linux-source-7.3 X", {"y": {"upstream.rmap": {"": "pass"}}}
    )
    b.save(tmp_path / "b.json")
    assert up.Baseline.load(tmp_path / "b.json") == b
    assert up.Baseline.load(tmp_path / "none.json") is None


def test_baseline_per_arch():
    assert up.baseline_path(X86).name == "upstream-selftests-vanilla.json"
    assert (
        up.baseline_path(ARM64).name == "upstream-selftests-vanilla-arm64.json"
    )


def _boot(lru, kselftests):
    return suiteresults.SuiteBoot(lru, "ok", kselftests=kselftests)


def test_suite_compares_each_mglru_setting_with_its_own(tmp_path, monkeypatch):
    path = tmp_path / "up.json"
    monkeypatch.setattr(up, "baseline_path", lambda arch: path)
    vanilla = [
        _boot(
            "y",
            {
                "upstream.rmap": {"": "pass", "1:a": "pass"},
                "cow": {"": "pass"},
            },
        ),
        _boot("n", {"upstream.rmap": {"": "fail", "1:a": "fail"}}),
    ]
    suiteresults.compare_upstream(vanilla, X86, True, ("rmap",))
    data = json.loads(path.read_text())
    assert data["package"] == up.package_label()
    assert set(data["mglru"]) == {"y", "n"}
    assert "cow" not in data["mglru"]["y"]  # the 6.12 group's own
    port = [
        _boot("y", {"upstream.rmap": {"": "fail", "1:a": "fail"}}),
        _boot("n", {"upstream.rmap": {"": "fail", "1:a": "fail"}}),
    ]
    suiteresults.compare_upstream(port, X86, False, ("rmap",))
    assert any(c.status == "fail" for c in port[0].checks)
    # MGLRU off failed on vanilla too: not a regression
    assert all(c.status != "fail" for c in port[1].checks)


def test_suite_refuses_a_baseline_of_another_package(tmp_path, monkeypatch):
    path = tmp_path / "up.json"
    up.Baseline("linux-source-7.3 7.3.1-1", {"y": {}}).save(path)
    monkeypatch.setattr(up, "baseline_path", lambda arch: path)
    boots = [_boot("y", {"upstream.rmap": {"": "pass"}})]
    suiteresults.compare_upstream(boots, X86, False, ("rmap",))
    (c,) = boots[0].checks
    assert c.status == "fail" and "record it again" in c.detail


def test_harness_output_of_rmap_is_read_per_case():
    text = (
        "TAP version 13\n1..2\n# Starting 2 tests from 1 test cases.\n"
        "#  RUN           migrate.ksm ...\n#            OK  migrate.ksm\n"
        "ok 1 migrate.ksm\n#  RUN           migrate.ksm_and_mremap ...\n"
        "not ok 2 migrate.ksm_and_mremap\n@@ exitcode upstream.rmap 1\n"
    )
    r = suiteresults.kselftest_results(text)
    assert r == {
        "1:migrate.ksm": "pass",
        "2:migrate.ksm_and_mremap": "fail",
        "": "fail",
    }


# -- build ------------------------------------------------------------------


def test_build_reads_the_73_tree_only_and_is_kept(tmp_cache, monkeypatch):
    calls = []

    def fake_run(argv, cwd=None, **kw):
        argv = [str(a) for a in argv]
        calls.append((argv, cwd))
        if argv[0] == "tar":
            mm = Path(argv[argv.index("-C") + 1]) / up.MM
            mm.mkdir(parents=True)
        if "-o" in argv and argv[0] == "gcc":
            Path(argv[argv.index("-o") + 1]).write_text("elf")
        if argv[:2] == ["git", "-C"]:
            Path(argv[argv.index("-o") + 1]).write_text("tar")
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(up.proc, "run", fake_run)
    bins = up.build(SOURCE, X86)
    out = tmp_cache / "upstream-selftests" / "x86_64"
    assert bins == out / "bin"
    hdr = next(a for a, _ in calls if "headers_install" in a)
    # the shared tree gets no build output: O= and the headers go to ours
    assert (
        f"O={out / 'kbuild'}" in hdr
        and f"INSTALL_HDR_PATH={out / 'hdr'}" in hdr
    )
    gcc = [(a, cwd) for a, cwd in calls if a[0] == "gcc"]
    # khugepaged runs twice (-s 2) but is built once
    assert sorted(Path(a[-1]).name for a, _ in gcc) == sorted(
        {t.program for t in up.TESTS.values()}
    )
    assert all(cwd == out / "src" / up.MM for _, cwd in gcc)
    assert (
        "No liburing"
        in (out / "src" / up.MM / "local_config.h_gen").read_text()
    )
    n = len(calls)
    up.build(SOURCE, X86)
    assert len(calls) == n  # kept: same commit and tests


def test_ci_subset_in_the_makefile_names_real_tests():
    from foliolab.paths import PROJECT_ROOT

    # make's logical line: continued lines joined
    text = (PROJECT_ROOT / "Makefile").read_text().replace("\\\n", " ")
    line = next(t for t in text.splitlines() if t.startswith("SUITE_ARGS ?="))
    names = up.parse_selection(
        line.split("--upstream-selftests", 1)[1].split()[0]
    )
    # and the 6.12 kselftests that take under a minute
    assert line.split("--kselftests", 1)[1].split()[0] == "quick"
    # the seeds' paths CI keeps: S2/S4 migration and rmap walks (rmap,
    # with ksm_and_mremap), lazy-free reclaim (droppable), PTE bits
    # through a batched remap (uffd-wp-mremap)
    assert set(names) == {"rmap", "droppable", "uffd-wp-mremap"}
