"""The one record of what any run tested (testrecord.py)."""

import json
import math

import pytest

from foliolab.errors import DamagedRunError
from foliolab.kernelrecord import KernelRecord
from foliolab.testrecord import OUTCOMES, Outcomes, TestOutcome, TestStatus

KERNELS = [KernelRecord("up", "debian:7.3")]


def test_outcomes_read_back_as_written(tmp_path):
    rows = [
        TestOutcome("suite.lru_gen-on.vmscan.case", TestStatus.PASS, "up"),
        TestOutcome(
            "suite.lru_gen-on.kselftest.mm.ksm",
            TestStatus.FAIL,
            "up",
            duration_s=1.5,
            log="console-on.log",
            misc={"detail": "exit 1", "reruns": 2},
        ),
    ]
    Outcomes("test", KERNELS, rows).write(tmp_path)
    back = Outcomes.read(tmp_path)
    assert back.command == "test"
    assert [k.to_json() for k in back.kernels] == [
        k.to_json() for k in KERNELS
    ]
    assert list(back.tests) == rows
    assert [p.name for p in tmp_path.iterdir()] == [OUTCOMES]  # no part


@pytest.mark.parametrize(
    "row, why",
    [
        ({"path": "a..b", "status": "pass"}, "empty part"),
        ({"path": "a", "status": "maybe"}, "maybe"),
        ({"path": "a", "status": "pass", "duration_s": "1"}, "not a number"),
        ({"path": "a", "status": "pass", "duration_s": math.nan}, "not a"),
        ({"path": "a", "status": "pass", "misc": {"x": [1]}}, "flat"),
        ({"path": 3, "status": "pass"}, "not a string"),
    ],
)
def test_a_damaged_row_names_the_file_and_what_is_wrong(tmp_path, row, why):
    (tmp_path / OUTCOMES).write_text(
        json.dumps(
            {"schema": 1, "command": "test", "kernels": [], "tests": [row]}
        )
    )
    with pytest.raises(DamagedRunError, match=why) as e:
        Outcomes.read(tmp_path)
    assert str(tmp_path / OUTCOMES) in str(e.value)


def test_a_test_on_a_kernel_the_run_has_not_is_refused():
    with pytest.raises(ValueError, match="'next' is not one of the run's"):
        Outcomes("test", KERNELS, [TestOutcome("a", TestStatus.PASS, "next")])


def test_a_later_schema_and_a_missing_file_are_damage(tmp_path):
    with pytest.raises(DamagedRunError, match="missing"):
        Outcomes.read(tmp_path)
    (tmp_path / OUTCOMES).write_text(
        json.dumps({"schema": 2, "command": "x", "kernels": [], "tests": []})
    )
    with pytest.raises(DamagedRunError, match="schema 2"):
        Outcomes.read(tmp_path)


def test_an_unfinished_run_says_so_and_a_finished_one_as_before(tmp_path):
    """A run's rows so far carry finished: false; a finished run's file
    is as every file before it (no such key), and a key that is not true
    or false is damage."""
    row = TestOutcome("a", TestStatus.PASS, "up")
    Outcomes("test", KERNELS, [row], finished=False).write(tmp_path)
    assert json.loads((tmp_path / OUTCOMES).read_text())["finished"] is False
    assert not Outcomes.read(tmp_path).finished
    Outcomes("test", KERNELS, [row]).write(tmp_path)
    assert "finished" not in json.loads((tmp_path / OUTCOMES).read_text())
    assert Outcomes.read(tmp_path).finished
    (tmp_path / OUTCOMES).write_text(
        json.dumps(
            {
                "schema": 1,
                "command": "x",
                "finished": "no",
                "kernels": [],
                "tests": [],
            }
        )
    )
    with pytest.raises(DamagedRunError, match="'no' is not true or false"):
        Outcomes.read(tmp_path)
