"""Options that contradict each other are refused in one line before any
work, never resolved silently (the newcomer trial's kind 6): the same
parameter given two values, --vcpus beside a sweep of the vCPUs, and
--variant beside --kernel, which replaces it."""

from __future__ import annotations

import pytest

from foliolab import cli, errors
from foliolab.kernel import build, debian, source


@pytest.fixture(autouse=True)
def no_work(monkeypatch, tmp_cache):
    def refuse(*a, **k):
        raise AssertionError("work started before the refusal")

    monkeypatch.setattr(build, "build_kernel", refuse)
    monkeypatch.setattr(source, "prepare_base", refuse)
    monkeypatch.setattr(debian, "resolve", refuse)


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            [
                "compare",
                "--workloads",
                "pageout",
                "--param",
                "pageout.size_mb=8",
                "--param",
                "pageout.size_mb=16",
                "--dry-run",
            ],
            "pageout.size_mb is already set by --param 'pageout.size_mb=8'",
        ),
        (
            [
                "compare",
                "--workloads",
                "pageout",
                "--param",
                "size_mb=8",
                "--param",
                "pageout.size_mb=16",
            ],
            "already set by --param 'size_mb=8'",
        ),
        (
            [
                "compare",
                "--workloads",
                "pageout",
                "--vcpus",
                "2",
                "--sweep",
                "pageout.vcpus=1,2",
                "--dry-run",
            ],
            "--vcpus 2 beside --sweep pageout.vcpus",
        ),
        (
            [
                "run",
                "--kernel",
                "k=base",
                "--variant",
                "vanilla",
                "--",
                "true",
            ],
            "--variant vanilla beside --kernel",
        ),
        (
            ["test", "--kernel", "k=base", "--variant", "patched"],
            "--variant patched beside --kernel",
        ),
    ],
)
def test_contradicting_options_are_refused_first(capsys, argv, message):
    rc = cli.main(argv)
    err = capsys.readouterr().err
    assert rc == errors.UsageError.exit_code, err
    assert message in err
    assert len(err.strip().splitlines()) <= 2  # the line and its hint


def test_the_same_value_twice_and_the_default_are_no_conflict(capsys):
    """The same --param twice says one thing; --vcpus left at its
    default beside a sweep of the vCPUs is the sweep's: both go on to
    the dry run's plan."""
    for argv in (
        ["--param", "pageout.size_mb=8", "--param", "pageout.size_mb=8"],
        ["--sweep", "pageout.vcpus=1,2"],
    ):
        rc = cli.main(
            ["compare", "--workloads", "pageout", *argv, "--dry-run"]
        )
        out, err = capsys.readouterr()
        assert rc == 0, err
        assert "already set" not in err and "beside" not in err
