"""--kselftests: which of the base tree's mm kselftests a suite boot runs,
checked before any work, and a run of some compared on those alone."""

import json
from types import SimpleNamespace

import pytest

from foliolab import cli
from foliolab.arch import ARCHES
from foliolab.errors import UsageError
from foliolab.kernel import build
from foliolab.suite import plan
from foliolab.suite import results as suiteresults
from foliolab.suite import run as suiterun
from foliolab.suite.request import SuiteRequest

X86 = ARCHES["x86_64"]


def test_the_selection_names_kselftests_in_their_order():
    assert plan.parse_kselftests("all") == tuple(plan.KSELFTESTS)
    assert plan.parse_kselftests("none") == ()
    assert plan.parse_kselftests("mkdirty, cow") == ("cow", "mkdirty")
    quick = plan.parse_kselftests("quick")
    # each left-out name is a kselftest's (a misspelt one would leave the
    # test it means in CI's share)
    assert set(plan.QUICK_LEFT_OUT) <= set(plan.KSELFTESTS)
    assert len(quick) == len(plan.KSELFTESTS) - len(plan.QUICK_LEFT_OUT)
    # the two with a rule of their own are in CI's share
    assert {"ksm_tests-unmerge", "mremap_test"} <= set(quick)
    with pytest.raises(UsageError, match="no kselftest nosuch"):
        plan.parse_kselftests("cow,nosuch")
    with pytest.raises(UsageError, match=r"\(empty\)"):
        plan.parse_kselftests(",")


def test_a_boot_runs_the_selected_kselftests_alone():
    entries = plan.kselftest_entries(X86, names=("cow", "mremap_test"))
    assert [e.split("|")[0] for e in entries.split(";")] == [
        "cow",
        "mremap_test",
    ]
    assert entries.endswith("|off")  # mremap_test's ASLR rule kept
    assert plan.kselftest_entries(X86, names=()) == ""


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--kselftests", "nosuch"], "--kselftests nosuch: no kselftest"),
        (
            ["--kselftests", "cow", "--no-kselftests"],
            "--kselftests cow with --no-kselftests",
        ),
        (
            ["--kselftests", "cow", "--only", "anon_swap"],
            "--kselftests cow with --only",
        ),
        (
            [
                "--variant",
                "vanilla",
                "--record-baseline",
                "--kselftests",
                "quick",
            ],
            "--record-baseline --kselftests quick: the baseline holds every",
        ),
        (
            ["--arch", "arm64", "--kselftests", "soft-dirty"],
            "--kselftests soft-dirty: not built for arm64",
        ),
        (
            ["--mm-ci", "--kernel", "up=base", "--kselftests", "quick"],
            "--mm-ci runs the mm CI's tests, not --kselftests",
        ),
    ],
)
def test_a_bad_selection_is_refused_before_any_work(
    argv, says, capsys, monkeypatch, tmp_path
):
    monkeypatch.setattr(
        build, "build_kernel", lambda *a, **k: pytest.fail("built a kernel")
    )
    rc = cli.main(["test", *argv, "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert rc == UsageError.exit_code
    assert says in err


def test_a_run_of_some_kselftests_is_compared_on_those_alone(tmp_path):
    """cow ran alone: vanilla's other kselftests are not "did not run",
    and cow's own regression still fails."""
    sb = suiteresults.SuiteBoot(
        "y", "ok", kselftests={"cow": {"": "fail", "1:x": "fail"}}
    )
    tree = SimpleNamespace(variant="patched", commit="c0ffee")
    req = SuiteRequest(tree, X86, tmp_path, kselftests=("cow",))
    suiterun._verdict(req, [sb])
    checks = json.loads((tmp_path / "suite.json").read_text())["boots"][0]
    failed = [c for c in checks["checks"] if c["status"] == "fail"]
    assert [c["name"] for c in failed] == ["kselftest.cow"]
    assert "did not run" not in (tmp_path / "suite.ktap").read_text()


def test_each_kselftest_row_says_how_long_it_ran():
    """The guest's "@@ seconds" of a kselftest is its row's duration in
    outcomes.json (a rerun's seconds added to the first's), and
    suite.json keeps them: what chose CI's quick share, kept with the
    run."""
    from pathlib import Path

    from foliolab import bootrecord
    from foliolab.kernelrecord import KernelRecord

    records = [
        "@@ boot 1.0",
        "@@ file kselftest.cow",
        "1..1",
        "ok 1 x",
        "@@ seconds cow 50",
        "@@ exitcode cow 0",
        "@@ end",
        "@@ file kselftest.ksm_tests-unmerge",
        "@@ seconds ksm_tests-unmerge 3",
        "@@ exitcode ksm_tests-unmerge 1",
        "@@ end",
        "@@ file kselftest.ksm_tests-unmerge@2",
        "@@ seconds ksm_tests-unmerge@2 4",
        "@@ exitcode ksm_tests-unmerge@2 0",
        "@@ end",
        "@@ exit 0",
    ]
    res = bootrecord.BootResult(
        "ok", 0, [], Path("/c.log"), Path("/r.txt"), 1.0, records
    )
    sb = suiteresults.judge_boot("y", res)
    assert sb.kselftest_seconds == {"cow": 50, "ksm_tests-unmerge": 7}
    sb.checks = suiteresults.compare_kselftests(
        sb.kselftests, {}, sb.kselftest_reruns
    )
    result = suiteresults.SuiteResult(
        True, "", (sb,), KernelRecord("k", "base")
    )
    took = {t.path: t.duration_s for t in result.tests()}
    assert took["suite.mglru-on.kselftest.cow"] == 50
    assert took["suite.mglru-on.kselftest.ksm_tests-unmerge"] == 7


@pytest.mark.parametrize(
    "extra",
    [
        ["--only", "anon_swap.pageout_4k"],
        ["--no-kselftests"],
        ["--kselftests", "none"],
    ],
)
def test_upstreams_baseline_alone_is_still_recorded(
    extra, monkeypatch, tmp_path
):
    """The manual's way to record upstream's selftests' baseline without
    the 6.12 kselftests (--record-baseline with --only) is a request, not
    a refusal: its kselftests are none."""
    from foliolab.commands import test as test_cmd
    from foliolab.kernel import upstream_selftests

    monkeypatch.setattr(upstream_selftests, "plan", lambda sel, arch: None)
    argv = [
        "test",
        "--variant",
        "vanilla",
        "--record-baseline",
        "--upstream-selftests",
        "all",
        *extra,
        "--out",
        str(tmp_path / "r"),
    ]
    args = cli.build_parser().parse_args(argv)
    args.argv = argv
    req = test_cmd._request(args)
    assert req.kselftests == () and req.record_baseline
