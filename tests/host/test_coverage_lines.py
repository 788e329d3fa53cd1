"""Changed-line coverage (foliolab/series/lines.py, coverage.py,
ifdefs.py, gcovdata.py, the reports): a small C tree with a two-patch
series (covtree.py), built on the host with ``gcc --coverage`` and run
once, so that some added lines run and some do not; the mapper and the
classifier must give exact counts. The guest's record and the kernel's
side are in test_coveragerun.py.
"""

from __future__ import annotations

import json

import covtree
import pytest

from foliolab.coverage import ifdefs
from foliolab.coverage import lines as coverage
from foliolab.coverage import run as coveragerun
from foliolab.coverage.lines import LineState
from foliolab.series import lines as serieslines


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return covtree.make_tree(tmp_path_factory.mktemp("covtree"))


def test_mapper_places_each_patch_line_in_the_final_tree(tree):
    sl = covtree.series_lines(tree)
    assert [p.subject for p in sl.patches] == [
        "util: clamp scale() and unused()",
        "util: clamp from 1000 on, count twice",
    ]
    # the in-memory result is the tree git made
    for path, text in sl.final.items():
        assert "\n".join(text) + "\n" == (tree["repo"] / path).read_text()
    got = {(a.patch, a.path, a.line, a.text) for a in sl.lines}
    assert got == {
        (1, "src/util.c", 7, "\t\ty = 1000;"),
        # patch 1 left these at 23-24; patch 2 removed a line above them
        # and added two
        (1, "src/util.c", 24, "\tif (x > 3)"),
        (1, "src/util.c", 25, "\t\tx = 3;"),
        (1, "src/util.h", 4, ""),
        (1, "src/util.h", 5, "static inline int bump(int x)"),
        (1, "src/util.h", 6, "{"),
        (1, "src/util.h", 7, "\treturn x + 1;"),
        (1, "src/util.h", 8, "}"),
        (1, "src/main.c", 8, "\ttotal += bump(argc);"),
        (1, "src/main.c", 9, "#ifdef CONFIG_ARM64"),
        (1, "src/main.c", 10, "\ttotal += 7;"),
        (1, "src/main.c", 11, "#endif"),
        (1, "arch/arm64/fast.c", 3, "\tint z = 2;"),
        (1, "arch/arm64/fast.c", 4, ""),
        (1, "arch/arm64/fast.c", 5, "\treturn z;"),
        (2, "src/util.c", 6, "\tif (y >= 1000)"),  # patch 1's, changed
        (2, "src/util.c", 17, "\tt += 1;"),
        (2, "src/util.c", 18, "\tt *= 1;"),
        (2, "src/main.c", 12, "\ttotal += twice(argc);"),
        (2, "src/extra.c", 1, "int extra(void)"),
        (2, "src/extra.c", 2, "{"),
        (2, "src/extra.c", 3, "\treturn 2;"),
        (2, "src/extra.c", 4, "}"),
        (2, "tools/gen.c", 3, "\tint g = 0;"),
        (2, "tools/gen.c", 4, ""),
        (2, "tools/gen.c", 5, "\treturn g;"),
    }
    # patch 1's "if (y > 1000)" (changed) and "/* clamped */" (removed)
    assert sl.superseded == {1: 2}
    assert sorted(sl.touched) == [
        "arch/arm64/fast.c",
        "src/extra.c",
        "src/main.c",
        "src/util.c",
        "src/util.h",
        "tools/gen.c",
    ]


def test_classify_gives_exact_counts_per_patch(tree):
    sl = covtree.series_lines(tree)
    data = covtree.gcov_data(tree)
    assert data.objects == {"src/main.c", "src/util.c"} and not data.bad
    results = coverage.classify(sl, data, covtree.FACTS)
    rep = coverage.CoverageReport(
        sl.patches, results, covtree.FACTS, superseded=sl.superseded
    )
    p1 = coverage.Tally.of(rep.of_patch(1))
    by = {(r.path, r.line): r for r in results}
    # patch 1: 15 lines; ran: bump()'s signature and return, the call;
    # never ran: the clamp's assignment and both lines in unused()
    assert (p1.added, p1.executable, p1.ran) == (15, 6, 3)
    assert p1.states[LineState.NEVER_RAN] == 3
    assert p1.states[LineState.NOT_EXECUTABLE] == 5
    assert p1.states[LineState.NOT_BUILT] == 4
    never = [
        (r.where, r.function)
        for r in rep.of_patch(1)
        if r.state is LineState.NEVER_RAN
    ]
    assert never == [
        ("src/util.c:7", "scale"),
        ("src/util.c:24", "unused"),
        ("src/util.c:25", "unused"),
    ]
    assert by[("src/main.c", 8)].count == 1
    assert by[("src/util.h", 7)].state is LineState.RAN
    assert by[("src/util.h", 7)].function == "bump"
    assert (
        by[("src/main.c", 10)].why
        == "not built for x86_64: #ifdef CONFIG_ARM64 in src/main.c"
    )
    assert p1.apart == {
        "not built for x86_64: arch/arm64/fast.c": 3,
        "not built for x86_64: #ifdef CONFIG_ARM64 in src/main.c": 1,
    }
    # patch 2: 11 lines; the changed clamp test, t += 1, t *= 1 and the
    # call of twice() ran; extra.c is built by no object, tools/ is not
    # profiled
    p2 = coverage.Tally.of(rep.of_patch(2))
    assert (p2.added, p2.executable, p2.ran) == (11, 4, 4)
    assert p2.percent == 100.0
    assert p2.apart == {
        "not built for x86_64: src/extra.c (this config compiles no "
        "object from it)": 4,
        "not profiled: tools/gen.c (its directory is not profiled)": 3,
    }
    total = coverage.Tally.of(results)
    assert (total.added, total.executable, total.ran) == (26, 10, 7)
    assert total.percent == 70.0


def test_reports_text_json_html(tree, tmp_path):
    sl = covtree.series_lines(tree)
    letter = sorted(tree["series"].glob("0000-*.patch"))[0]
    letter.write_text(
        letter.read_text().replace(
            "*** BLURB HERE ***",
            "Series map\n----------\n\n  0001       S1.  The clamp.\n"
            "             0001  sub-line, not an entry\n"
            "  0002       Prerequisites of S1 and S2: more\n",
        )
    )
    groups = serieslines.series_map(letter.read_text())
    assert [(g.label, g.first, g.last) for g in groups] == [
        ("S1", 1, 1),
        ("Prerequisites of S1 and S2", 2, 2),
    ]
    rep = coverage.CoverageReport(
        sl.patches,
        coverage.classify(sl, covtree.gcov_data(tree), covtree.FACTS),
        covtree.FACTS,
        groups,
        sl.superseded,
        ["mglru-y"],
        [],
    )
    coveragerun.write(rep, tmp_path)
    text = (tmp_path / "coverage.txt").read_text()
    assert "Totals: added 26, executable 10, ran 7 (70.0%)" in text
    assert "src/util.c:24  unused  | if (x > 3)" in text
    assert "not built for x86_64: arch/arm64/fast.c (3 lines)" in text
    assert "(2 of its added line(s) a later patch changed or removed" in text
    assert "never-ran" in text and "Legend" in text
    doc = json.loads((tmp_path / "coverage.json").read_text())
    assert doc["totals"]["ran"] == 7 and doc["totals"]["executable"] == 10
    assert [g["label"] for g in doc["groups"]] == [
        "S1",
        "Prerequisites of S1 and S2",
    ]
    assert doc["patches"][0]["totals"]["never-ran"] == 3
    html = (tmp_path / "coverage.html").read_text()
    assert html.count('<tr class="never-ran"') == 3
    assert html.count('<tr class="ran"') == 7
    assert "Legend" in html and "<script" not in html


def test_ifdefs_decide_config_conditions_only():
    cfg = {"CONFIG_X86_64": "y", "CONFIG_KSM": "m", "CONFIG_NR": "4"}
    src = [
        "#ifdef CONFIG_ARM64",
        "a",
        "#elif defined(CONFIG_X86_64)",
        "b",
        "#else",
        "c",
        "#endif",
        "#if IS_ENABLED(CONFIG_KSM) && !defined(CONFIG_ARM64)",
        "d",
        "#endif",
        "#if FOO_LOCAL > 2",
        "e",
        "#else",
        "f",
        "#endif",
        "#ifndef CONFIG_X86_64",
        "g",
        "#endif",
        "#if CONFIG_NR == 4 || defined(CONFIG_ARM64)",
        "h",
        "#else",
        "i",
        "#endif",
    ]
    assert ifdefs.excluded_lines(src, cfg) == {
        2: "#ifdef CONFIG_ARM64",
        6: "#else of #ifdef CONFIG_ARM64",
        17: "#ifndef CONFIG_X86_64",
        22: "#else of #if CONFIG_NR == 4 || defined(CONFIG_ARM64)",
    }


def test_profile_dirs_from_the_series_paths():
    makefiles = {
        "mm/Makefile": "obj-y += rmap.o\n",
        "arch/x86/mm/Makefile": "obj-y += tlb.o\n",
        "arch/x86/boot/Makefile": "GCOV_PROFILE := n\n",
    }
    plan = coveragerun.profile_dirs(
        [
            "mm/rmap.c",
            "mm/internal.h",
            "include/linux/mm.h",
            "arch/arm64/mm/contpte.c",
            "arch/x86/mm/tlb.c",
            "arch/x86/boot/main.c",
            "tools/testing/selftests/mm/cow.c",
            "arch/x86/include/asm/tlbflush.h",
        ],
        "x86",
        makefiles.get,
    )
    assert plan.dirs == ("arch/x86/mm", "mm")
    assert plan.skipped == {
        "arch/arm64/mm": "another architecture's",
        "arch/x86/boot": "its Makefile turns gcov off (GCOV_PROFILE := n)",
    }
    assert coveragerun.make_vars(plan.dirs) == (
        "GCOV_PROFILE=$(if $(filter arch/x86/mm arch/x86/mm/ mm mm/,"
        "$(obj)),y)",
    )
