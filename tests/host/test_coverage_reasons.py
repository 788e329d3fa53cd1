"""The series' coverage-reasons file (foliolab/coverage/reasons.py): a
reason beside each never-ran line it names, the counts of never-ran lines
with and without one, a stale entry named, a malformed file one line, and
the repository's own files well formed. On covtree.py's small tree, whose
never-ran lines are src/util.c:7 (scale), :24 and :25 (unused).
"""

from __future__ import annotations

import json
from pathlib import Path

import covtree
import pytest

from foliolab import cli
from foliolab.coverage import (
    lines as coverage,
)
from foliolab.coverage import (
    reasons as coveragereasons,
)
from foliolab.coverage import (
    run as coveragerun,
)
from foliolab.coverage.lines import LineState
from foliolab.coverage.reasons import ReasonsError
from foliolab.kernel import sources

ROOT = Path(__file__).resolve().parents[2]

REASONS = """\
# a comment, then two entries
src/util.c unused | if (x > 3)
src/util.c unused |   x = 3;
\trace: the caller must pass more than
\t  three, which main() never does.

src/util.c scale | y = 1000;
\tfault-injection: only a failed clamp reaches it.
src/util.c twice | t += 1;
\tneeds-test: it ran, so this entry is stale.
src/util.c scale | return 42;
\tunreachable: no such line.
"""


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return covtree.make_tree(tmp_path_factory.mktemp("covtree"))


def _report(tree, text: str | None, tmp_path: Path):
    sl = covtree.series_lines(tree)
    reasons = None
    if text is not None:
        (tmp_path / "coverage-reasons").write_text(text)
        reasons = coveragereasons.read(tmp_path, "s/coverage-reasons")
    results, stale = coveragereasons.apply(
        coverage.classify(sl, covtree.gcov_data(tree), covtree.FACTS), reasons
    )
    return coverage.CoverageReport(
        sl.patches,
        results,
        covtree.FACTS,
        superseded=sl.superseded,
        reasons_file="s/coverage-reasons" if reasons else "",
        stale=stale,
    )


def test_reasons_go_beside_their_lines_and_are_counted_apart(tree, tmp_path):
    rep = _report(tree, REASONS, tmp_path)
    by = {r.where: r for r in rep.results}
    assert by["src/util.c:24"].reason_class == "race"
    assert by["src/util.c:25"].reason == (
        "the caller must pass more than three, which main() never does."
    )
    assert by["src/util.c:7"].reason_class == "fault-injection"
    # a line that ran takes no reason, and a reason is never "ran"
    assert by["src/util.c:17"].state is LineState.RAN
    assert not by["src/util.c:17"].reason_class
    t = coverage.Tally.of(rep.results)
    assert (t.executable, t.ran, t.percent) == (10, 7, 70.0)
    assert (t.reason_given, t.no_reason) == (3, 0)
    assert t.reasons == {"race": 2, "fault-injection": 1}
    p1 = coverage.Tally.of(rep.of_patch(1))
    assert (p1.reason_given, p1.no_reason) == (3, 0)


def test_stale_entries_are_named(tree, tmp_path):
    rep = _report(tree, REASONS, tmp_path)
    assert [s.line() for s in rep.stale] == [
        "s/coverage-reasons:9: src/util.c twice | t += 1;: no never-ran "
        "line: src/util.c:17 ran",
        "s/coverage-reasons:11: src/util.c scale | return 42;: matches no "
        "added line of this series",
    ]


def test_a_line_without_a_reason_is_counted_so(tree, tmp_path):
    rep = _report(
        tree,
        "src/util.c unused | if (x > 3)\n\tconfig: another one.\n",
        tmp_path,
    )
    t = coverage.Tally.of(rep.results)
    assert (t.reason_given, t.no_reason) == (1, 2)
    assert rep.stale == []
    # no file at all: nothing given, nothing stale
    rep = _report(tree, None, tmp_path)
    t = coverage.Tally.of(rep.results)
    assert (t.reason_given, t.no_reason, rep.stale) == (0, 3, [])


def test_ordinal_picks_one_of_lines_with_the_same_text(tree, tmp_path):
    # patch 2 added "t += 1;" and "t *= 1;" once each in twice(): #2 of
    # "t += 1;" does not exist, #1 is the line that ran
    rep = _report(
        tree,
        "src/util.c twice#2 | t += 1;\n\trace: x.\n"
        "src/util.c unused#1 | x = 3;\n\trace: y.\n",
        tmp_path,
    )
    assert [s.why for s in rep.stale] == [
        "there is no added line #2 of that text in that function"
    ]
    assert {r.where for r in rep.results if r.reason_class} == {
        "src/util.c:25"
    }


def test_reports_show_reasons_counts_and_stale(tree, tmp_path):
    rep = _report(tree, REASONS, tmp_path)
    coveragerun.write(rep, tmp_path)
    text = (tmp_path / "coverage.txt").read_text()
    assert "reasons: s/coverage-reasons" in text
    assert (
        "Totals: added 26, executable 10, ran 7 (70.0%), never ran 3 "
        "(reason given 3, no reason 0)"
    ) in text
    assert (
        "never ran, by reason: fault-injection 1, race 2; no reason 0" in text
    )
    assert (
        "       src/util.c:24  unused  | if (x > 3)\n"
        "           race: the caller must pass more than three, which "
        "main() never does.\n"
        "       src/util.c:25  unused  | x = 3;\n"
        "           race: (as above)\n"
    ) in text
    assert "Stale reasons: 2 selector(s) of s/coverage-reasons" in text
    doc = json.loads((tmp_path / "coverage.json").read_text())
    assert doc["totals"]["never-ran-reason-given"] == 3
    assert doc["totals"]["never-ran-no-reason"] == 0
    assert doc["totals"]["never-ran-by-reason"] == {
        "fault-injection": 1,
        "race": 2,
    }
    assert doc["totals"]["percent"] == 70.0
    assert [s["where"] for s in doc["stale_reasons"]] == [
        "s/coverage-reasons:9",
        "s/coverage-reasons:11",
    ]
    line = next(
        r
        for r in doc["patches"][0]["lines"]
        if r["line"] == 24 and r["path"] == "src/util.c"
    )
    assert line["reason_class"] == "race"
    html = (tmp_path / "coverage.html").read_text()
    assert "<b>race</b>: the caller must pass" in html
    assert "Stale reasons: 2" in html
    assert "never ran, no reason" in html
    assert coveragerun.summary_line(rep) == (
        "# coverage: 7 of 10 executable added lines ran (70.0%), 26 added; "
        "never ran 3: reason given 3, no reason 0; 2 stale reason(s)"
    )


def test_rerendering_a_run_from_its_json(tree, tmp_path):
    rep = _report(tree, None, tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    coveragerun.write(rep, run)
    series = tmp_path / "series"
    series.mkdir()
    (series / "coverage-reasons").write_text(REASONS)
    out = tmp_path / "again"
    assert (
        cli.main(
            ["coverage-reasons", str(run), str(series), "--out", str(out)]
        )
        == 0
    )
    doc = json.loads((out / "coverage.json").read_text())
    assert doc["totals"]["never-ran-reason-given"] == 3
    assert doc["totals"]["ran"] == 7 and len(doc["stale_reasons"]) == 2


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "src/util.c:24 unused | if (x > 3)\n\trace: r.\n",
            "s/coverage-reasons:1: src/util.c:24: give the function and the "
            "line's text, not a line number",
        ),
        (
            "src/util.c unused if (x > 3)\n\trace: r.\n",
            "s/coverage-reasons:1: a selector is FILE FUNCTION | TEXT (the line "
            "as coverage.txt lists it, without :LINE)",
        ),
        (
            "src/util.c unused | x = 3;\n\n",
            "s/coverage-reasons:2: the entry of 'src/util.c unused | x = 3;' has "
            "no reason line (indented CLASS: sentence)",
        ),
        (
            "# c\n\tcosmic-rays: r.\n",
            "s/coverage-reasons:2: an indented line with no selector above it",
        ),
        (
            "src/util.c unused | x = 3;\n\tcosmic-rays: r.\n",
            "s/coverage-reasons:2: unknown reason class 'cosmic-rays': one of "
            "mglru-off, fault-injection, race, environment, config, unreachable, "
            "needs-test",
        ),
        (
            "src/util.c unused | x = 3;\n\trace:\n",
            "s/coverage-reasons:2: the reason needs a sentence after its class",
        ),
        (
            "src/util.c unused | x = 3;\n\trace: a.\nsrc/util.c unused | x = 3;\n"
            "\trace: b.\n",
            "s/coverage-reasons:3: 'src/util.c unused | x = 3;' is already given "
            "at s/coverage-reasons:1",
        ),
    ],
)
def test_a_malformed_file_is_one_line_naming_file_and_line(
    text, message, tmp_path
):
    (tmp_path / "coverage-reasons").write_text(text)
    with pytest.raises(ReasonsError) as e:
        coveragereasons.read(tmp_path, "s/coverage-reasons")
    assert e.value.message == message
    assert "\n" not in e.value.one_line()


def test_the_file_changes_no_series_digest_and_no_patch_list(tmp_path):
    for d in ("6.12", "7.3"):
        series = sources.read_patches(ROOT / "patches" / d)
        assert all(p.name.endswith(".patch") for p in series.patches)
        copy = tmp_path / d
        copy.mkdir()
        for p in series.patches:
            (copy / p.name).write_bytes(p.read_bytes())
        (copy / "series").write_text(
            (ROOT / "patches" / d / "series").read_text()
        )
        assert sources.read_patches(copy).digest == series.digest


@pytest.mark.parametrize("d", ["6.12", "7.3"])
def test_the_repositorys_reasons_files_are_well_formed(d):
    reasons = coveragereasons.read(ROOT / "patches" / d)
    assert reasons is not None and reasons.entries
    for e in reasons.entries:
        assert e.reason.endswith(".") and e.klass in coverage.REASON_CLASSES
