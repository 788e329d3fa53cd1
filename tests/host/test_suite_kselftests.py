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
    assert quick and set(quick) < set(plan.KSELFTESTS)
    assert not set(quick) & set(plan.QUICK_LEFT_OUT)
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
            "--record-baseline records every kselftest's result",
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
