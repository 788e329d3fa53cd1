"""The checkpatch verdict of `foliolab check`, against stand-in scripts."""

import pytest

from foliolab.series import check as seriescheck


def fake_tree(tmp_path, out: str, rc: int):
    script = tmp_path / "scripts" / "checkpatch.pl"
    script.parent.mkdir()
    script.write_text(f'print "{out}";\nexit {rc};\n')
    patch = tmp_path / "0001-x.patch"
    patch.write_text("From: foliolab <foliolab@example.org>\n")
    return tmp_path, patch


@pytest.mark.parametrize(
    "out, rc, verdict",
    [
        ("total: 0 errors, 0 warnings, 0 checks, 9 lines checked\\n", 0, "ok"),
        # --strict: a CHECK is a finding too, although checkpatch exits 0
        (
            "total: 0 errors, 0 warnings, 1 checks, 9 lines checked\\n",
            0,
            "total: 0 errors, 0 warnings, 1 checks, 9 lines checked",
        ),
        (
            "total: 1 errors, 1 warnings, 0 checks, 8 lines checked\\n",
            1,
            "total: 1 errors, 1 warnings, 0 checks, 8 lines checked",
        ),
        ("", 2, "no summary"),
    ],
)
def test_checkpatch_verdict(tmp_path, out, rc, verdict):
    repo, patch = fake_tree(tmp_path, out, rc)
    step = seriescheck.run_checkpatch(repo, patch)
    assert step.text == verdict and step.passed is (verdict == "ok")


def test_row_fails_on_any_stage():
    Step = seriescheck.Step
    c = seriescheck.PatchCheck(
        1,
        "0001-x.patch",
        Step(True, "ok"),
        Step(True, "ok in 5 s"),
        Step(False, "failed: panic"),
    )
    assert not c.ok and "FAIL" in c.row() and "failed: panic" in c.row()
    c.boot = Step(True, "ok in 1.6 s")
    assert c.ok
    assert not seriescheck.PatchCheck(2, "0002-y.patch").ok  # not run
