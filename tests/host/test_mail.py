"""render/mail.py: `foliolab report RUN --mail`, the report for a mail:
within 80 columns, the kernels, the CI that decides at a precision that
shows its width, the reproduce command wrapped, the same text each time
and nothing written."""

import shutil

import pytest
from runfiles import bytes_under

from foliolab import cli, render
from foliolab.render import mail


@pytest.fixture
def run(tmp_path, data):
    out = tmp_path / "run-pageout-aa"
    shutil.copytree(data / "run-pageout-aa", out)
    return out


def _mail(run, capsys):
    assert cli.main(["report", str(run), "--mail"]) == 0
    return capsys.readouterr().out


def test_the_mail_fits_80_columns_and_says_the_kernels(run, capsys):
    before = bytes_under(run)
    text = _mail(run, capsys)
    assert bytes_under(run) == before  # nothing written
    lines = text.splitlines()
    assert lines and all(len(x) <= 80 for x in lines), [
        x for x in lines if len(x) > 80
    ]
    assert not any(x.endswith("~") for x in lines)  # nothing cut
    assert "  vanilla: base" in lines and "  patched: base" in lines
    assert "    commit 9dc52e640653, config sha f34ebeeb4fdf" in lines
    assert (
        "2 runs per kernel; times under TCG are emulated; counts are exact."
        in lines
    )
    row = next(x for x in lines if x.split()[:1] == ["pageout_ms"])
    assert row.split()[1:3] == ["176.8", "194.0"] and "n.s." in row
    exact = next(
        x for x in lines if x.split()[:1] == ["page_vma_mapped_walk_per_folio"]
    )
    assert exact.split()[1:] == ["17", "17", "1.00", "exact", "same"]
    # the command, wrapped: every line but the last ends in a backslash
    i = lines.index("Reproduce:")
    cmd = lines[i + 1 :]
    assert cmd[0].startswith("  foliolab compare --kernel vanilla=base")
    assert all(x.endswith(" \\") for x in cmd[:-1]) and len(cmd) > 1
    assert not cmd[-1].endswith("\\")


def test_the_mail_is_the_same_text_each_time(run, capsys, tmp_path):
    first = _mail(run, capsys)
    moved = tmp_path / "elsewhere" / run.name
    shutil.copytree(run, moved)
    assert _mail(moved, capsys) == first


def test_mail_and_out_together_are_refused(run, capsys, tmp_path):
    rc = cli.main(["report", str(run), "--mail", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1


@pytest.mark.parametrize(
    "values, digits",
    [
        ([0.00211, 0.00215], 3),  # '0.002 [0.002, 0.002]' before
        ([0.9991, 0.9994], 4),
        ([0.99912, 0.99914], 5),
        ([0.5, 0.7], 3),
    ],
)
def test_a_ci_is_shown_as_precise_as_its_width(values, digits):
    d = mail._digits_apart(values)
    assert d == digits
    low, high = (mail._g(v, d) for v in values)
    assert low != high


def test_a_long_command_wraps_within_the_width():
    cmd = (
        ["foliolab", "compare"]
        + [
            a
            for k in (
                "v6.12=base",
                "port=base+patches/6.12",
                "up=debian:7.3",
                "next=debian:7.3+patches/7.3",
            )
            for a in ("--kernel", k)
        ]
        + ["--count", "--runs", "2", "--no-monitors"]
    )
    lines = render.wrapped_command(cmd, 78)
    assert all(len(x) <= 78 for x in lines)
    assert " ".join(x.rstrip(" \\").strip() for x in lines).split() == [
        w for a in cmd for w in a.split()
    ]
    assert "--kernel next=debian:7.3+patches/7.3" in "\n".join(lines)


def test_a_path_in_the_clone_is_said_relative_to_it():
    from foliolab.paths import PROJECT_ROOT

    spec = f"next=debian:7.3+{PROJECT_ROOT}/patches/7.3"
    assert render.for_reader(spec) == "next=debian:7.3+patches/7.3"


def test_the_command_is_the_readers_not_where_the_run_was_written():
    cmd = [
        "foliolab",
        "compare",
        "--runs",
        "2",
        "--out",
        "/x/run",
        "--resume",
        "--out=/y",
        "--force",
        "--count",
    ]
    assert mail.reader_command(cmd) == [
        "foliolab",
        "compare",
        "--runs",
        "2",
        "--count",
    ]
