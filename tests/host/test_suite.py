from pathlib import Path

from foliolab import boot, suite


def test_kselftest_results_tap_and_exit_code():
    text = ("TAP version 13\n1..3\nok 1 a\nnot ok 2 b\nok 3 c # SKIP x\n"
            "@@ exitcode cow 1\n")
    r = suite.kselftest_results(text)
    assert r == {"1:a": "pass", "2:b": "fail", "3:c": "skip", "": "fail"}


def test_kselftest_results_non_tap_program():
    assert suite.kselftest_results("OK\n@@ exitcode ksm 0\n") == {"": "pass"}
    assert suite.kselftest_results("@@ exitcode ksm 4\n") == {"": "skip"}
    assert suite.kselftest_results("@@ exitcode ksm 124\n") == {"": "timeout"}
    assert suite.kselftest_results("cut off\n") == {"": "fail"}


def test_regression_against_vanilla_baseline():
    base = {"cow": {"": "pass", "1:a": "pass", "2:b": "skip"},
            "hmm": {"": "skip"}, "migration": {"": "fail", "1:x": "pass"}}
    now = {"cow": {"": "fail", "1:a": "fail", "2:b": "fail"},
           "hmm": {"": "skip"}, "migration": {"": "fail", "1:x": "fail"}}
    checks = {c.name: c for c in suite.compare_kselftests(now, base)}
    assert checks["kselftest.cow.1:a"].status == "fail"
    assert checks["kselftest.cow"].status == "fail"
    assert "kselftest.cow.2:b" not in checks          # did not pass on vanilla
    assert checks["kselftest.hmm"].status == "skip"
    # not passing as a whole on vanilla: reported, not compared
    assert checks["kselftest.migration"].status == "skip"
    assert "kselftest.migration.1:x" not in checks


def test_missing_kselftest_is_a_failure():
    checks = suite.compare_kselftests({}, {"cow": {"": "pass"}})
    assert [(c.name, c.status) for c in checks] == [("kselftest.cow", "fail")]


def fake_result(records, issues=(), status="ok"):
    return boot.BootResult(status, 0, list(issues), Path("/c.log"),
                           Path("/r.txt"), 1.0, records)


RECORDS = ["@@ boot 1.0", "@@ file ktap.anon_swap", "KTAP version 1", "1..2",
           "ok 1 pageout_4k", "not ok 2 pageout_64k", "@@ end",
           "@@ oracle anon_swap swap_free ok 100kB",
           "@@ oracle anon_swap swapoff fail -",
           "@@ file kselftest.cow", "1..1", "ok 1 x", "@@ exitcode cow 0",
           "@@ end", "@@ exit 0"]


def test_judge_boot():
    sb = suite.judge_boot("y", fake_result(RECORDS))
    got = {c.name: c.status for c in sb.checks}
    assert got == {"anon_swap.pageout_4k": "pass",
                   "anon_swap.pageout_64k": "fail",
                   "anon_swap.oracle.swap_free": "pass",
                   "anon_swap.oracle.swapoff": "fail"}
    assert sb.kselftests == {"cow": {"1:x": "pass", "": "pass"}}


def test_judge_boot_kernel_warning_fails():
    sb = suite.judge_boot("n", fake_result(RECORDS[:2] + ["@@ exit 0"],
                                           ["warning: WARNING: at mm/x.c"]))
    assert sb.checks[0].name == "boot" and sb.checks[0].status == "fail"


def test_judge_boot_cut_off_group_fails():
    sb = suite.judge_boot("y", fake_result(
        ["@@ file ktap.lazyfree", "1..4", "ok 1 a"], status="panic"))
    names = {c.name: c.status for c in sb.checks}
    assert names["boot"] == "fail"
    assert names["lazyfree"] == "fail"


def test_ktap_summary():
    sb = suite.judge_boot("y", fake_result(RECORDS))
    text = suite.ktap_summary([sb])
    assert text.startswith("KTAP version 1\n1..4\n")
    assert "not ok 2 mglru=y anon_swap.pageout_64k" in text
    assert "# Totals: pass:2 fail:2 skip:0" in text


def test_kselftest_results_dots_style():
    text = ("Save THP and khugepaged settings... \x1b[32mOK\x1b[0m\n"
            "\nRun test: collapse_full (khugepaged:anon)\n"
            "Collapse multiple fully populated PTE table.... \x1b[32mOK\x1b[0m\n"
            "Run test: collapse_empty (madvise:anon)\n"
            "Do not collapse empty PTE table... \x1b[31mFail\x1b[0m\n"
            "@@ exitcode khugepaged 0\n")
    r = suite.kselftest_results(text)
    assert r["1:Save THP and khugepaged settings"] == "pass"
    assert r["2:collapse_full (khugepaged:anon): Collapse multiple fully "
             "populated PTE table"] == "pass"
    assert r["3:collapse_empty (madvise:anon): Do not collapse empty PTE "
             "table"] == "fail"
    assert r[""] == "fail"       # a failed subtest fails it despite exit 0


def test_kselftest_results_uffd_style():
    text = ("Testing wp-fork on anon... done\n"
            "Testing events-wp on hugetlb... skipped [reason: memory "
            "allocation failed]\n"
            "Testing poison on shmem... failed [reason: x]\n"
            "Userfaults unit tests: pass=1, skip=1, fail=1 (total=3)\n"
            "@@ exitcode uffd-unit-tests 1\n")
    r = suite.kselftest_results(text)
    assert list(r.values()) == ["pass", "skip", "fail", "fail"]
    assert "1:wp-fork on anon" in r
