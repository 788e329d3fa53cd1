from pathlib import Path

from foliolab import arch, bootrecord
from foliolab.arch import ARCHES
from foliolab.paths import GUEST_DIR
from foliolab.suite import kselftests as suitebuild
from foliolab.suite import plan as suite
from foliolab.suite import results as suiteresults
from foliolab.suite import run as suiterun
from foliolab.suite.request import SuiteRequest


def test_kselftest_results_tap_and_exit_code():
    text = (
        "TAP version 13\n1..3\nok 1 a\nnot ok 2 b\nok 3 c # SKIP x\n"
        "@@ exitcode cow 1\n"
    )
    r = suiteresults.kselftest_results(text)
    assert r == {"1:a": "pass", "2:b": "fail", "3:c": "skip", "": "fail"}


def test_kselftest_results_non_tap_program():
    assert suiteresults.kselftest_results("OK\n@@ exitcode ksm 0\n") == {
        "": "pass"
    }
    assert suiteresults.kselftest_results("@@ exitcode ksm 4\n") == {
        "": "skip"
    }
    assert suiteresults.kselftest_results("@@ exitcode ksm 124\n") == {
        "": "timeout"
    }
    assert suiteresults.kselftest_results("cut off\n") == {"": "fail"}


def test_regression_against_vanilla_baseline():
    base = {
        "cow": {"": "pass", "1:a": "pass", "2:b": "skip"},
        "hmm": {"": "skip"},
        "migration": {"": "fail", "1:x": "pass"},
    }
    now = {
        "cow": {"": "fail", "1:a": "fail", "2:b": "fail"},
        "hmm": {"": "skip"},
        "migration": {"": "fail", "1:x": "fail"},
    }
    checks = {c.name: c for c in suiteresults.compare_kselftests(now, base)}
    assert checks["kselftest.cow.1:a"].status == "fail"
    assert checks["kselftest.cow"].status == "fail"
    assert "kselftest.cow.2:b" not in checks  # did not pass on vanilla
    assert checks["kselftest.hmm"].status == "skip"
    # not passing as a whole on vanilla: reported, not compared
    assert checks["kselftest.migration"].status == "skip"
    assert "kselftest.migration.1:x" not in checks


def test_missing_kselftest_is_a_failure():
    checks = suiteresults.compare_kselftests({}, {"cow": {"": "pass"}})
    assert [(c.name, c.status) for c in checks] == [("kselftest.cow", "fail")]


def fake_result(records, issues=(), status="ok"):
    return bootrecord.BootResult(
        status, 0, list(issues), Path("/c.log"), Path("/r.txt"), 1.0, records
    )


RECORDS = [
    "@@ boot 1.0",
    "@@ file ktap.anon_swap",
    "KTAP version 1",
    "1..2",
    "ok 1 pageout_4k",
    "not ok 2 pageout_64k",
    "@@ end",
    "@@ oracle anon_swap swap_free ok 100kB",
    "@@ oracle anon_swap swapoff fail -",
    "@@ file kselftest.cow",
    "1..1",
    "ok 1 x",
    "@@ exitcode cow 0",
    "@@ end",
    "@@ exit 0",
]


def test_judge_boot():
    sb = suiteresults.judge_boot("y", fake_result(RECORDS))
    got = {c.name: c.status for c in sb.checks}
    assert got == {
        "anon_swap.pageout_4k": "pass",
        "anon_swap.pageout_64k": "fail",
        "anon_swap.oracle.swap_free": "pass",
        "anon_swap.oracle.swapoff": "fail",
    }
    assert sb.kselftests == {"cow": {"1:x": "pass", "": "pass"}}


def test_judge_boot_keeps_skip_reasons():
    records = [
        "@@ boot 1.0",
        "@@ file ktap.khugepaged",
        "KTAP version 1",
        "1..1",
        "ok 1 skips_lazyfree # SKIP kernel has no status",
        "@@ end",
        "@@ exit 0",
    ]
    sb = suiteresults.judge_boot("y", fake_result(records))
    assert [(c.name, c.status, c.detail) for c in sb.checks] == [
        ("khugepaged.skips_lazyfree", "skip", "kernel has no status")
    ]


def test_judge_boot_reads_the_kselftest_harness():
    """What tests/guest programs print on the kernel's kselftest harness:
    FIXTURE.NAME cases (the fixture is the program), diagnostics, a skip,
    a timeout."""
    records = [
        "@@ boot 1.0",
        "@@ file ktap.ksm",
        "TAP version 13",
        "1..3",
        "# Starting 3 tests from 1 test cases.",
        "#  RUN           ksm.merge_fork_swapout_verify ...",
        "# merge_fork_swapout_verify: ok",
        "#            OK  ksm.merge_fork_swapout_verify",
        "ok 1 ksm.merge_fork_swapout_verify",
        "#      SKIP      FL_KSM_VMAS=0",
        "ok 2 ksm.ksm_many_vmas_move_pages # SKIP FL_KSM_VMAS=0",
        "# ksm_failed_merge_retried_every_scan: Test terminated by timeout",
        "not ok 3 ksm.ksm_failed_merge_retried_every_scan",
        "# FAILED: 2 / 3 tests passed.",
        "# Totals: pass:1 fail:1 xfail:0 xpass:0 skip:1 error:0",
        "@@ end",
        "@@ exit 0",
    ]
    sb = suiteresults.judge_boot("y", fake_result(records))
    assert [(c.name, c.status, c.detail) for c in sb.checks] == [
        ("ksm.merge_fork_swapout_verify", "pass", ""),
        ("ksm.ksm_many_vmas_move_pages", "skip", "FL_KSM_VMAS=0"),
        ("ksm.ksm_failed_merge_retried_every_scan", "fail", ""),
    ]


def test_judge_boot_kernel_warning_fails():
    sb = suiteresults.judge_boot(
        "n",
        fake_result(
            RECORDS[:2] + ["@@ exit 0"], ["warning: WARNING: at mm/x.c"]
        ),
    )
    assert sb.checks[0].name == "boot" and sb.checks[0].status == "fail"


def test_judge_boot_cut_off_group_fails():
    sb = suiteresults.judge_boot(
        "y",
        fake_result(
            ["@@ file ktap.lazyfree", "1..4", "ok 1 a"], status="panic"
        ),
    )
    names = {c.name: c.status for c in sb.checks}
    assert names["boot"] == "fail"
    assert names["lazyfree"] == "fail"


def test_ktap_summary():
    sb = suiteresults.judge_boot("y", fake_result(RECORDS))
    text = suiteresults.ktap_summary([sb])
    assert text.startswith("KTAP version 1\n1..4\n")
    assert "not ok 2 mglru=y anon_swap.pageout_64k" in text
    assert "# Totals: pass:2 fail:2 skip:0" in text


def test_kselftest_results_dots_style():
    text = (
        "Save THP and khugepaged settings... \x1b[32mOK\x1b[0m\n"
        "\nRun test: collapse_full (khugepaged:anon)\n"
        "Collapse multiple fully populated PTE table.... \x1b[32mOK\x1b[0m\n"
        "Run test: collapse_empty (madvise:anon)\n"
        "Do not collapse empty PTE table... \x1b[31mFail\x1b[0m\n"
        "@@ exitcode khugepaged 0\n"
    )
    r = suiteresults.kselftest_results(text)
    assert r["1:Save THP and khugepaged settings"] == "pass"
    assert (
        r[
            "2:collapse_full (khugepaged:anon): Collapse multiple fully "
            "populated PTE table"
        ]
        == "pass"
    )
    assert (
        r["3:collapse_empty (madvise:anon): Do not collapse empty PTE table"]
        == "fail"
    )
    assert r[""] == "fail"  # a failed subtest fails it despite exit 0


def test_kselftest_results_uffd_style():
    text = (
        "Testing wp-fork on anon... done\n"
        "Testing events-wp on hugetlb... skipped [reason: memory "
        "allocation failed]\n"
        "Testing poison on shmem... failed [reason: x]\n"
        "Userfaults unit tests: pass=1, skip=1, fail=1 (total=3)\n"
        "@@ exitcode uffd-unit-tests 1\n"
    )
    r = suiteresults.kselftest_results(text)
    assert list(r.values()) == ["pass", "skip", "fail", "fail"]
    assert "1:wp-fork on anon" in r


def test_kselftest_baseline_per_arch():
    from foliolab.arch import ARCHES

    assert suite.baseline_path(ARCHES["x86_64"]) == suite.BASELINE
    assert (
        suite.baseline_path(ARCHES["arm64"]).name
        == "kselftest-vanilla-arm64.json"
    )


def _kselftest_make_argv(tmp_path, tmp_cache, monkeypatch, arch):
    import pytest

    from foliolab.errors import BuildError
    from foliolab.kernel import build, source

    calls = []
    monkeypatch.setattr(source, "checkout", lambda tree: None)
    monkeypatch.setattr(
        suitebuild.proc, "run", lambda argv, **kw: calls.append(list(argv))
    )
    mm = tmp_path / "tree/tools/testing/selftests/mm"
    mm.mkdir(parents=True)
    tree = source.Tree("vanilla", tmp_path / "tree", "c0ffee", "")
    kernel = build.Kernel(
        "vanilla",
        "debug",
        arch.name,
        tmp_path / "out",
        tmp_path / "out/Image",
        "c0ffee",
        "x",
        0.0,
    )
    with pytest.raises(BuildError, match="not built"):
        suitebuild.build_kselftests(tree, arch, kernel)
    return calls[-1], mm


def test_kselftests_cross_build_for_arm64(tmp_path, tmp_cache, monkeypatch):
    from foliolab.arch import ARCHES

    a64 = ARCHES["arm64"]
    argv, mm = _kselftest_make_argv(tmp_path, tmp_cache, monkeypatch, a64)
    assert "ARCH=arm64" in argv and "CROSS_COMPILE=aarch64-linux-gnu-" in argv
    assert f"OUTPUT={tmp_cache}/kselftest/arm64/c0ffee/mm" in argv
    cflags = next(a for a in argv if a.startswith("EXTRA_CFLAGS="))
    assert f"-L{tmp_cache}/sysroot/arm64/usr/lib/aarch64-linux-gnu" in cflags
    assert (mm / ".foliolab-probe-cc").read_text() == "aarch64-linux-gnu-gcc\n"


def test_kselftests_native_build_unchanged(tmp_path, tmp_cache, monkeypatch):
    from foliolab.arch import ARCHES

    argv, mm = _kselftest_make_argv(
        tmp_path, tmp_cache, monkeypatch, ARCHES["x86_64"]
    )
    assert not [a for a in argv if a.startswith(("ARCH=", "CROSS_COMPILE="))]
    cflags = next(a for a in argv if a.startswith("EXTRA_CFLAGS="))
    assert cflags == f"EXTRA_CFLAGS=-include {mm.parent / 'kselftest.h'}"


def test_liburing_probe_of_another_compiler_is_dropped(tmp_path):
    from foliolab.arch import ARCHES

    mm = tmp_path
    for name in ("local_config.h", "local_config.mk"):
        (mm / name).write_text("probed by gcc")
    suitebuild._forget_other_probe(mm, ARCHES["x86_64"])  # gcc made it: kept
    assert (mm / "local_config.h").exists()
    suitebuild._forget_other_probe(mm, ARCHES["arm64"])
    assert not (mm / "local_config.h").exists()
    assert not (mm / "local_config.mk").exists()


def test_kselftests_per_arch():
    x86 = suite.kselftests_for(arch.get_arch("x86_64"))
    arm = suite.kselftests_for(arch.get_arch("arm64"))
    assert x86 == suite.KSELFTESTS
    assert "soft-dirty" not in arm and "cow" in arm
    assert len(arm) == len(x86) - 1
    # arm64 guests are slower under TCG: longer limits
    assert arm["cow"][1] > x86["cow"][1]


def test_test_counts_pairs_windows_with_guest_tests(tmp_path):
    records = [
        "@@ boot 1.0",
        "@@ file ktap.anon_swap",
        "KTAP version 1",
        "1..1",
        "ok 1 a",
        "@@ end",
        "@@ file ktap.ksm_index",
        "KTAP version 1",
        "1..1",
        "ok 1 b",
        "@@ end",
        "@@ file kselftest.cow",
        "1..1",
        "ok 1 x",
        "@@ end",
        "@@ exit 0",
    ]
    (tmp_path / "counts.txt").write_text(
        "window 0 0\nkernel_insns 100\nclass invlpg 4\n"
        "class apic_icr_write 1\nend\n"
        "window 1 0\nkernel_insns 7\nend\n"
        "window 0 1\nkernel_insns 200\nclass cr3_write 2\nend\n"
    )
    res = bootrecord.BootResult(
        "ok",
        0,
        [],
        tmp_path / "console.log",
        tmp_path / "results.txt",
        1.0,
        records,
    )
    counts = suiteresults.test_counts(res, "x86_64")
    assert list(counts) == ["anon_swap", "ksm_index"]
    assert counts["anon_swap"]["tlb_flush_insns"] == 4
    assert counts["anon_swap"]["ipis_sent"] == 1
    assert counts["ksm_index"]["kernel_insns"] == 200
    lines = suiteresults.count_lines("y", counts)
    assert lines[1] == (
        "# counted mglru=y ksm_index: kernel_insns 200, "
        "tlb_flush_insns 2, ipis_sent 0"
    )


def test_stress_plan_fixed_seeds_by_default():
    plan = suite.stress_plan(None, None)
    assert plan.seeds == suite.FIXED_STRESS_SEEDS
    assert plan.total_seconds == len(plan.seeds) * plan.seconds


def test_stress_plan_adds_random_seeds_for_the_time_asked():
    plan = suite.stress_plan(100, None)
    assert plan.seeds[:3] == suite.FIXED_STRESS_SEEDS
    assert len(plan.seeds) == 3 + 100 // suite.RANDOM_STRESS_SECONDS
    assert len(set(plan.seeds)) == len(plan.seeds)


def test_stress_seeds_reproduce_exactly():
    assert suite.stress_plan(100, (7, 9)).seeds == (7, 9)


def test_stress_seeds_are_checked_before_any_work(capsys):
    from foliolab import cli

    assert cli.main(["test", "--stress-seeds", "3,abc"]) != 0
    assert "comma-separated list of numbers" in capsys.readouterr().err


def test_judge_boot_names_repeated_runs():
    """--repeat: the K-th run of a program is ktap.NAME@K, each its own
    check, so a flaky case shows how often it failed."""
    records = ["@@ boot 1.0"]
    for k, verdict in ((1, "ok"), (2, "not ok"), (3, "ok")):
        records += [
            f"@@ file ktap.ksm{'' if k == 1 else f'@{k}'}",
            "TAP version 13",
            "1..1",
            f"{verdict} 1 ksm.a",
            "@@ end",
            f"@@ oracle ksm{'' if k == 1 else f'@{k}'} swapoff ok -",
        ]
    sb = suiteresults.judge_boot("n", fake_result(records + ["@@ exit 0"]))
    assert [(c.name, c.status) for c in sb.checks] == [
        ("ksm.a", "pass"),
        ("ksm.a@2", "fail"),
        ("ksm.a@3", "pass"),
        ("ksm.oracle.swapoff", "pass"),
        ("ksm@2.oracle.swapoff", "pass"),
        ("ksm@3.oracle.swapoff", "pass"),
    ]


def test_only_names_are_checked_against_the_guest_sources():
    import pytest

    from foliolab.errors import UsageError

    suite.check_only(("anon_swap", "ksm.ksm_failed_merge_retried_every_scan"))
    with pytest.raises(UsageError, match="no guest test program nosuch"):
        suite.check_only(("nosuch",))
    with pytest.raises(UsageError, match="anon_swap has no case nope"):
        suite.check_only(("anon_swap.nope",))


def test_only_selects_harness_cases_in_the_guest(tmp_path):
    """run.sh's fl_selection turns --only into kselftest harness -t
    arguments per program: "" all cases, "-" skip the program."""
    import subprocess

    run_sh = (GUEST_DIR / "suite/run.sh").read_text()
    func = run_sh[run_sh.index("fl_selection() {") :]
    func = func[: func.index("\n}\n") + 3]

    def sel(only, prog):
        return subprocess.run(
            ["sh", "-c", func + f'FL_ONLY="{only}"; fl_selection {prog}'],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    assert sel("", "ksm") == ""
    assert sel("ksm", "ksm") == ""
    assert sel("anon_swap.a", "ksm") == "-"
    assert sel("anon_swap.a ksm.b anon_swap.c", "anon_swap") == "-t a -t c"
    assert sel("anon_swap.a anon_swap", "anon_swap") == ""


def test_an_only_boot_gets_the_limits_of_its_cases():
    """A --only boot of one case is limited by that case's FL_TEST() limit
    (and setup), so a hang on a broken kernel costs minutes, not the whole
    suite's 45."""
    tests = suite.guest_tests()
    one = tests["anon_swap"]["swapoff_swapon_loop_against_pageout_loop"]
    assert one == 300
    assert suite.only_limit(
        ("anon_swap.swapoff_swapon_loop_against_pageout_loop",)
    ) == (suite.ONLY_SETUP_LIMIT + 300)
    two = suite.only_limit(
        ("vmscan", "file_shmem.shmem_uffd_wp_survives_reclaim")
    )
    assert two == min(
        suite.SUITE_LIMIT,
        suite.ONLY_SETUP_LIMIT
        + sum(tests["vmscan"].values())
        + tests["file_shmem"]["shmem_uffd_wp_survives_reclaim"],
    )
    assert suite.only_limit(("anon_swap",)) == suite.SUITE_LIMIT


def test_kselftests_of_two_commits_never_share_a_directory(
    tmp_path, tmp_cache, monkeypatch
):
    """A 6.12 suite booted 7.3's selftests when a 7.3 suite rebuilt the
    one shared directory between the 6.12 build and its image: each
    commit's selftests have their own, and a built one is reused."""
    from foliolab.kernel import build, image, source

    monkeypatch.setattr(source, "checkout", lambda tree: None)
    built = []

    def fake_make(argv, **kw):
        out = next(
            (
                a[len("OUTPUT=") :]
                for a in argv
                if str(a).startswith("OUTPUT=")
            ),
            None,
        )
        if out:
            built.append(out)
            for cmd, _ in suite.kselftests_for(ARCHES["x86_64"]).values():
                f = Path(out) / cmd.split()[0]
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_text("#!/bin/sh\n")
                f.chmod(0o755)

    monkeypatch.setattr(suitebuild.proc, "run", fake_make)
    arch = ARCHES["x86_64"]
    dirs = []
    for commit in ("aaaa6120000000", "bbbb7300000000", "aaaa6120000000"):
        tree = source.Tree("t", tmp_path / "tree", commit, "")
        (tmp_path / "tree/tools/testing/selftests/mm").mkdir(
            parents=True, exist_ok=True
        )
        kernel = build.Kernel(
            "t",
            "debug",
            arch.name,
            tmp_path / "out",
            tmp_path / "out/bzImage",
            commit,
            "x",
            0.0,
        )
        dirs.append(suitebuild.build_kselftests(tree, arch, kernel))
    assert dirs[0] != dirs[1] and dirs[0] == dirs[2]
    assert dirs[0] == image.kselftest_dir(arch, "aaaa6120000000")
    assert len(built) == 2  # the third found the first one's build


def _kselftest_runs(tmp_path, entries: str, script: str) -> list[str]:
    """run.sh's kselftest loop in a host shell, /foliolab being
    ``tmp_path``, with ./flaky written from ``script``: its records. The
    shell is busybox's, as in the guest, where the host has it (setup
    installs busybox-static for the guest image)."""
    import shutil
    import subprocess

    run_sh = (GUEST_DIR / "suite/run.sh").read_text()
    start = run_sh.index("# FL_KSELFTESTS: ")
    loop = run_sh[start : run_sh.index("\ndone\n", start) + 6]
    (tmp_path / "kselftest").mkdir()
    flaky = tmp_path / "kselftest" / "flaky"
    flaky.write_text("#!/bin/sh\n" + script)
    flaky.chmod(0o755)
    # the ASLR switch is a file here, never the host's own
    sysctl = tmp_path / "randomize_va_space"
    sysctl.write_text("2\n")
    loop = loop.replace("/proc/sys/kernel/randomize_va_space", str(sysctl))
    assert "/proc/" not in loop
    shell = ["busybox", "sh"] if shutil.which("busybox") else ["sh"]
    out = subprocess.run(
        [*shell, "-c", loop.replace("/foliolab/", f"{tmp_path}/")],
        env={"FL_KSELFTESTS": entries, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout
    return ["@@ boot 1.0", *out.splitlines(), "@@ exit 0"]


# fails its first two runs (a count kept beside it), passes after
FAILS_TWICE = (
    "n=$(cat ../count 2>/dev/null || echo 0)\n"
    "echo $((n + 1)) > ../count\n"
    'echo "1..1"\n'
    '[ "$n" -ge 2 ] && { echo "ok 1 unmerging"; exit 0; }\n'
    'echo "not ok 1 unmerging"; exit 1\n'
)


def test_a_kselftest_that_fails_runs_again_and_says_so(tmp_path):
    """suite.RERUNS: a failed run of such a kselftest runs again, up to its
    count; the last run is judged, and the KTAP line names the failed runs
    before it."""
    records = _kselftest_runs(
        tmp_path, "unmerge|flaky|10||3;once|flaky|10", FAILS_TWICE
    )
    sb = suiteresults.judge_boot("y", fake_result(records))
    # the second entry, run once, is the script's fourth run: it passes
    assert sb.kselftests["once"] == {"1:unmerging": "pass", "": "pass"}
    assert sb.kselftest_reruns == {"unmerge": ["fail", "fail"]}
    assert sb.kselftests["unmerge"] == {"1:unmerging": "pass", "": "pass"}
    base = {"unmerge": {"": "pass", "1:unmerging": "pass"}}
    checks = suiteresults.compare_kselftests(
        {"unmerge": sb.kselftests["unmerge"]}, base, sb.kselftest_reruns
    )
    assert [(c.name, c.status, c.reruns) for c in checks] == [
        ("kselftest.unmerge", "pass", "run 3 of 3; run 1: fail, run 2: fail")
    ]
    sb.checks = checks
    assert (
        "ok 1 mglru=y kselftest.unmerge # run 3 of 3; run 1: fail, "
        "run 2: fail" in suiteresults.ktap_summary([sb])
    )


def test_a_kselftest_failing_every_run_fails(tmp_path):
    """Three failed runs of a kselftest allowed three are a failure, which
    says how many runs it had; a kselftest without a count runs once."""
    records = _kselftest_runs(
        tmp_path,
        "unmerge|flaky|10||3;once|flaky|10",
        'echo "1..1"; echo "not ok 1 unmerging"; exit 1\n',
    )
    sb = suiteresults.judge_boot("y", fake_result(records))
    assert sb.kselftest_reruns == {"unmerge": ["fail", "fail"]}
    assert sum(r.startswith("@@ file kselftest.once") for r in records) == 1
    base = {
        n: {"": "pass", "1:unmerging": "pass"} for n in ("unmerge", "once")
    }
    checks = {
        c.name: c
        for c in suiteresults.compare_kselftests(
            sb.kselftests, base, sb.kselftest_reruns
        )
    }
    assert checks["kselftest.unmerge"].status == "fail"
    assert checks["kselftest.unmerge"].reruns == (
        "run 3 of 3; run 1: fail, run 2: fail"
    )
    assert checks["kselftest.unmerge.1:unmerging"].status == "fail"
    assert checks["kselftest.once"].status == "fail"
    assert checks["kselftest.once"].reruns == ""
    sb.checks = [checks["kselftest.unmerge"]]
    assert suiteresults.ktap_summary([sb]).splitlines()[2] == (
        "not ok 1 mglru=y kselftest.unmerge # fail here, pass on vanilla "
        "(run 3 of 3; run 1: fail, run 2: fail)"
    )


def test_a_skipping_kselftest_is_not_run_again(tmp_path):
    records = _kselftest_runs(
        tmp_path, "unmerge|flaky|10||3", "echo skipped; exit 4\n"
    )
    sb = suiteresults.judge_boot("y", fake_result(records))
    assert sb.kselftests == {"unmerge": {"": "skip"}}
    assert sb.kselftest_reruns == {}


def test_a_pass_or_a_timeout_ends_the_runs(tmp_path):
    """With runs to spare, a pass is the last run, and so is a timeout (a
    hang is not the race a rerun is for)."""
    records = _kselftest_runs(tmp_path, "unmerge|flaky|10||5", FAILS_TWICE)
    files = [r for r in records if r.startswith("@@ file ")]
    assert files == [
        "@@ file kselftest.unmerge",
        "@@ file kselftest.unmerge@2",
        "@@ file kselftest.unmerge@3",
    ]
    (tmp_path / "hang").mkdir()
    records = _kselftest_runs(
        tmp_path / "hang", "unmerge|flaky|1||5", "exec sleep 5\n"
    )
    sb = suiteresults.judge_boot("y", fake_result(records))
    assert sb.kselftests == {"unmerge": {"": "timeout"}}
    assert sb.kselftest_reruns == {}


def test_only_ksm_tests_unmerge_runs_again():
    """The one kselftest allowed more runs has the race measured in
    suite.py's comment; a name there must be a kselftest the suite runs,
    and the guest's entries carry the count."""
    assert suite.RERUNS == {"ksm_tests-unmerge": 5}
    assert set(suite.RERUNS) <= set(suite.KSELFTESTS)
    entries = suite.kselftest_entries(ARCHES["x86_64"]).split(";")
    assert len(entries) == len(suite.KSELFTESTS)
    runs = {e.split("|")[0]: e.split("|")[4] for e in entries}
    assert runs.pop("ksm_tests-unmerge") == "5"
    assert set(runs.values()) == {"1"}


def test_mremap_test_runs_with_aslr_off_and_the_others_with_it_on(tmp_path):
    """suite.ASLR_OFF: the guest turns randomization off for such a
    kselftest alone (its entry says "off") and puts the setting back after
    it, the other kselftests keeping the boot's."""
    entries = suite.kselftest_entries(ARCHES["x86_64"]).split(";")
    aslr = {e.split("|")[0]: e.split("|")[5] for e in entries}
    assert aslr.pop("mremap_test") == "off"
    assert set(aslr.values()) == {""}
    # each run prints the switch's value as its case's name
    script = 'echo "1..1"; echo "ok 1 aslr $(cat ../randomize_va_space)"\n'
    records = _kselftest_runs(
        tmp_path,
        "before|flaky|10||1|;fixed|flaky|10||1|off;after|flaky|10",
        script,
    )
    sb = suiteresults.judge_boot("y", fake_result(records))
    assert sb.kselftests["before"] == {"1:aslr 2": "pass", "": "pass"}
    assert sb.kselftests["fixed"] == {"1:aslr 0": "pass", "": "pass"}
    assert sb.kselftests["after"] == {"1:aslr 2": "pass", "": "pass"}
    assert (tmp_path / "randomize_va_space").read_text() == "2\n"


def test_the_verdict_keeps_the_runs_before_the_last(tmp_path):
    """suite.json and suite.ktap say that ksm_tests -U passed on its second
    run, and a not-compared kselftest's skip line says it too."""
    import json
    from types import SimpleNamespace

    sb = suiteresults.SuiteBoot(
        "y",
        "ok",
        kselftests={
            "ksm_tests-unmerge": {"1:KSM unmerging": "pass", "": "pass"},
            "migration": {"": "fail"},
        },
        kselftest_reruns={
            "ksm_tests-unmerge": ["fail"],
            "migration": ["fail"],
        },
    )
    tree = SimpleNamespace(variant="patched", commit="c0ffee")
    req = SuiteRequest(tree, ARCHES["x86_64"], tmp_path)
    suiterun._verdict(req, [sb])
    boot = json.loads((tmp_path / "suite.json").read_text())["boots"][0]
    assert boot["kselftest_reruns"] == {
        "ksm_tests-unmerge": ["fail"],
        "migration": ["fail"],
    }
    ktap = (tmp_path / "suite.ktap").read_text()
    assert "kselftest.ksm_tests-unmerge # run 2 of 2; run 1: fail\n" in ktap
    # migration fails on vanilla too (tests/kselftest-vanilla.json)
    assert (
        "kselftest.migration # SKIP fail here; not compared: fail on "
        "vanilla (run 2 of 2; run 1: fail)\n"
    ) in ktap
