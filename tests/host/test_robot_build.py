"""End to end: `foliolab check --robot` on one cell (i386/mm) of the real
6.12 base, with a one-patch series made here that adds a W=1 warning
and a kernel-doc `Returns` without a colon.

It makes the robot's worktree of the base, applies the patch, and
compiles mm/ of the base and then mm/ksm.o of the patch, with the real
cache: 8.5 minutes the first time beside two other engineers' builds
(load 8 to 10 on the 2 cores, 2026-11-28), about three on an idle
machine, 9 s once its results are cached. This is the robot's share of
CI; the whole matrix over patches/7.3 and patches/6.12 is a notebook
run (docs/manual.md).
Deselect with -m 'not robot'.
"""

from __future__ import annotations

import difflib
import json

import pytest

from foliolab import cli
from foliolab.errors import DiagnosticsError
from foliolab.kernel import source

pytestmark = pytest.mark.robot

ANCHOR = "static int __init ksm_init(void)\n{\n"
ADDED = """\
/**
 * ksm_robot_probe - a helper the robot's test adds
 *
 * Returns 1.
 */
static int __init ksm_robot_probe(void)
{
\tint robot_set;

\trobot_set = 1;
\treturn 1;
}

"""


def one_patch_series(tmp_path):
    """A series of one patch on the pinned base: ksm.c gets a helper whose
    variable is set but never used (a W=1 warning) and whose kernel-doc
    says `Returns` without a colon, called from ksm_init()."""
    repo = source.prepare_base()
    old = source.git(repo, "show", f"{source.BASE_TAG}:mm/ksm.c").stdout
    assert ANCHOR in old
    new = old.replace(ANCHOR, ADDED + ANCHOR + "\tksm_robot_probe();\n", 1)
    diff = "".join(
        difflib.unified_diff(
            old.splitlines(True),
            new.splitlines(True),
            "a/mm/ksm.c",
            "b/mm/ksm.c",
        )
    )
    series = tmp_path / "series-dir"
    series.mkdir()
    (series / "0001-robot-probe.patch").write_text(
        "From: foliolab <foliolab@example.org>\n"
        "Date: Thu, 1 Jan 2026 00:00:00 +0000\n"
        "Subject: [PATCH] mm/ksm: a probe for the robot's test\n\n"
        "Signed-off-by: foliolab <foliolab@example.org>\n---\n"
        f"diff --git a/mm/ksm.c b/mm/ksm.c\n{diff}-- \n2.39.5\n\n"
    )
    (series / "series").write_text("0001-robot-probe.patch\n")
    return series


def test_the_robot_finds_what_one_patch_adds_on_i386(tmp_path, capsys):
    series = one_patch_series(tmp_path)
    out = tmp_path / "out"
    rc = cli.main(
        [
            "check",
            "--robot",
            "--robot-cells",
            "i386/mm",
            "--patches",
            str(series),
            "--out",
            str(out),
        ]
    )
    text = capsys.readouterr().out
    assert rc == DiagnosticsError.exit_code, text
    found = (out / "robot.txt").read_text().splitlines()
    assert any(
        line.startswith("0001: i386/mm: mm/ksm.c:")
        and "variable 'robot_set' set but not used" in line
        for line in found
    ), found
    assert any(
        line.startswith("0001: all/kernel-doc: mm/ksm.c:")
        and "return value of 'ksm_robot_probe'" in line
        for line in found
    ), found
    # nothing the base had already: mm/'s other files are not reported
    assert all(
        " mm/ksm.c:" in line or "all/checkpatch" in line for line in found
    ), found
    res = json.loads((out / "robot.json").read_text())
    (cell,) = [t for t in res["times"] if t["cell"] == "i386/mm"]
    # mm/ of the base compiled (or found in the cache by an earlier run)
    assert cell["objects"] > 30 or 0 in cell["cached"]
