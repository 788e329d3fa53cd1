"""Patches read and applied in memory, as the history check reads a
series."""

import pytest

from foliolab.series import unidiff

PATCH = """\
From 1 Mon Sep 17 00:00:00 2001
Subject: [PATCH] mm: x

--- this line of the message is not a diff
---
 a.c | 3 ++-

diff --git a/a.c b/a.c
index 1..2 100644
--- a/a.c
+++ b/a.c
@@ -3,3 +3,4 @@ int f(void)
 three
-four
+FOUR
+four and a half
 five
diff --git a/new.c b/new.c
new file mode 100644
--- /dev/null
+++ b/new.c
@@ -0,0 +1 @@
+only
--
2.39.5
"""


def test_a_format_patch_reads_as_its_files():
    files = unidiff.parse(PATCH)
    assert [(f.old_path, f.new_path) for f in files] == [
        ("a.c", "a.c"),
        (None, "new.c"),
    ]
    (hunk,) = files[0].hunks
    assert (hunk.old_start, hunk.old_len, hunk.new_len) == (3, 3, 4)
    assert hunk.new_lines() == ["three", "FOUR", "four and a half", "five"]
    assert files[1].hunks[0].lines == (("+", "only"),)


def test_a_hunk_applies_where_its_lines_are_and_places_them():
    old = ["zero", "one", "two", "three", "four", "five", "six"]
    # the file has one more line on top than the patch expects
    applied = unidiff.apply(old, unidiff.parse(PATCH)[0])
    assert applied.lines == [
        "zero",
        "one",
        "two",
        "three",
        "FOUR",
        "four and a half",
        "five",
        "six",
    ]
    placed = applied.hunks[0]
    assert [(p.kind, p.old_no, p.new_no) for p in placed] == [
        (" ", 4, 4),
        ("-", 5, None),
        ("+", None, 5),
        ("+", None, 6),
        (" ", 6, 7),
    ]
    assert unidiff.apply([], unidiff.parse(PATCH)[1]).lines == ["only"]


def test_a_hunk_whose_lines_are_not_there_is_named():
    with pytest.raises(unidiff.HunkMismatch, match="@@ -3,3 \\+3,4 @@"):
        unidiff.apply(["three", "4", "five"], unidiff.parse(PATCH)[0])
