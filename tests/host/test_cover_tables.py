"""A series' cover letter quotes its measured tables as `foliolab report
RUN --mail` printed them, between a line naming the command and an end
line; the run's record (its manifest and samples, under
tests/host/data/runs/RUN) is kept here, and this test prints the report
again and holds it against the letter's text, byte for byte, so a table
copied by hand or left stale fails."""

import re

import pytest

from foliolab.paths import PROJECT_ROOT
from foliolab.render.report import mail_text

RUNS = PROJECT_ROOT / "tests" / "host" / "data" / "runs"
BEGIN = re.compile(r"^\[foliolab report (\S+) --mail\]$")
END = "[end of report]"
COVERS = sorted(PROJECT_ROOT.glob("patches/*/0000-cover-letter.patch"))


def quoted_reports(cover):
    """(run, text) for each report the letter quotes."""
    found, run, text = [], None, []
    for line in cover.read_text().splitlines():
        m = BEGIN.match(line)
        if m:
            run, text = m.group(1), []
        elif run is not None and line == END:
            found.append((run, "\n".join(text) + "\n"))
            run = None
        elif run is not None:
            text.append(line)
    assert run is None, f"{cover}: a report without its end line"
    return found


def test_the_73_cover_quotes_its_measured_run():
    cover = PROJECT_ROOT / "patches" / "7.3" / "0000-cover-letter.patch"
    assert quoted_reports(cover), f"{cover} quotes no foliolab report"


@pytest.mark.parametrize("cover", COVERS, ids=lambda p: p.parent.name)
def test_each_quoted_report_is_what_its_run_prints(cover):
    for run, text in quoted_reports(cover):
        record = RUNS / run
        assert (record / "environment.json").is_file(), (
            f"{cover.parent.name}: keep {run}'s environment.json and "
            f"samples.jsonl under {RUNS.relative_to(PROJECT_ROOT)}"
        )
        assert mail_text(record) == text, f"{run}: regenerate the table"


def test_a_changed_number_is_caught(tmp_path):
    """The comparison is of the whole text: one digit changed fails."""
    record = RUNS / "results-73-r2-count"
    text = mail_text(record)
    cover = tmp_path / "0000-cover-letter.patch"
    changed = text.replace("16,935", "16,940", 1)
    assert changed != text
    cover.write_text(
        f"[foliolab report results-73-r2-count --mail]\n{changed}{END}\n"
    )
    ((run, quoted),) = quoted_reports(cover)
    assert mail_text(RUNS / run) != quoted
