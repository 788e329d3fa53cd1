"""A series' cover letters quote measured tables, and this test prints
each again from its run's record (its manifest and samples, under
tests/host/data/runs/RUN) and holds it against the letter's text, byte
for byte, so a table copied by hand or left stale fails.

Two forms:
- a series' 0000-cover-letter.patch (patches/6.12) quotes `foliolab
  report RUN --mail` whole, between a line naming the command and an
  end line;
- a posting's cover letter (patches/7.3, postings.toml's `cover`) goes
  to the list, where a lab's run names and commands mean nothing: it
  quotes only the table of the report (each kernel against the
  baseline, and the verdict's legend), and the folder's
  cover-tables.toml says which run each table comes from."""

import functools
import re
import tomllib

import pytest

from foliolab.analysis.analyse import analyse
from foliolab.boot.derive import load_samples, rederive
from foliolab.manifest import RunManifest
from foliolab.paths import PROJECT_ROOT
from foliolab.render.mail import (
    comparison_lines,
    mail_report,
    verdict_legend,
)
from foliolab.render.report import mail_text

RUNS = PROJECT_ROOT / "tests" / "host" / "data" / "runs"
BEGIN = re.compile(r"^\[foliolab report (\S+) --mail\]$")
END = "[end of report]"
COVERS = sorted(PROJECT_ROOT.glob("patches/*/0000-cover-letter.patch"))
# A table's first line, as comparison_lines() writes it
TABLE_HEAD = re.compile(r"^\S+ against \S+ \(ratio = \S+ / \S+\):$", re.M)
TABLE_FILES = sorted(PROJECT_ROOT.glob("patches/*/cover-tables.toml"))
SERIES_73 = PROJECT_ROOT / "patches" / "7.3"


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


@functools.cache
def analysed(run):
    """``run``'s analysis, as mail_text() derives it (once a run: the
    bootstrap takes seconds)."""
    manifest = RunManifest.read(run)
    samples = rederive(run)
    if samples is None:
        samples = load_samples(run)
    return analyse(run, manifest, samples)


def table_text(run):
    """The tables of ``run``'s mail report, without its head (the run's
    name, kernels and lab commits) and its reproducing command: each
    kernel against the baseline, then the verdict's legend."""
    a = analysed(run)
    lines = []
    for kernel in a.names[1:]:
        lines += [*comparison_lines(a, kernel), ""]
    lines += verdict_legend(a)
    return "\n".join(lines) + "\n"


def posting_tables(listing):
    """(cover file, run folder) for each table ``listing`` (a
    cover-tables.toml) names."""
    entries = tomllib.loads(listing.read_text()).get("table", [])
    return [(listing.parent / e["cover"], RUNS / e["run"]) for e in entries]


def test_the_73_cover_quotes_no_report_and_its_postings_carry_tables():
    """7.3's letters go to the list: no `foliolab report` block, and
    the posting covers' tables are named in cover-tables.toml."""
    assert not quoted_reports(SERIES_73 / "0000-cover-letter.patch")
    tables = posting_tables(SERIES_73 / "cover-tables.toml")
    assert {c.name for c, _ in tables} == {"cover-s0.txt", "cover-s1.txt"}


@pytest.mark.parametrize("cover", COVERS, ids=lambda p: p.parent.name)
def test_each_quoted_report_is_what_its_run_prints(cover):
    for run, text in quoted_reports(cover):
        record = RUNS / run
        assert (record / "environment.json").is_file(), (
            f"{cover.parent.name}: keep {run}'s environment.json and "
            f"samples.jsonl under {RUNS.relative_to(PROJECT_ROOT)}"
        )
        assert mail_text(record) == text, f"{run}: regenerate the table"


@pytest.mark.parametrize("listing", TABLE_FILES, ids=lambda p: p.parent.name)
def test_each_posting_table_is_what_its_run_prints(listing):
    for cover, record in posting_tables(listing):
        assert (record / "environment.json").is_file(), (
            f"{listing}: keep {record.name}'s environment.json and "
            f"samples.jsonl under {RUNS.relative_to(PROJECT_ROOT)}"
        )
        table = table_text(record)
        # the report's own words
        assert table in mail_report(analysed(record), record)
        assert table in cover.read_text(), (
            f"{cover.name}: the table of {record.name} is not in it as "
            "its run prints it: print it again (table_text)"
        )


@pytest.mark.parametrize("listing", TABLE_FILES, ids=lambda p: p.parent.name)
def test_every_table_in_a_posting_cover_is_named(listing):
    """A table no entry names would be checked by nothing."""
    tables = posting_tables(listing)
    for cover in {c for c, _ in tables}:
        named = [r for c, r in tables if c == cover]
        text = cover.read_text()
        assert len(TABLE_HEAD.findall(text)) == len(named), (
            f"{cover.name}: {len(TABLE_HEAD.findall(text))} tables, "
            f"{len(named)} named in {listing.name}"
        )


def test_the_73_postings_name_no_run_and_no_lab_tool():
    """What goes to the list carries no lab run name and no foliolab
    command; the placeholder identity lines are `post`'s to replace."""
    runs = {r.name for _, r in posting_tables(SERIES_73 / "cover-tables.toml")}
    mail = sorted(SERIES_73.glob("cover-*.txt")) + sorted(
        p for p in SERIES_73.glob("0*.patch") if not p.name.startswith("0000")
    )
    placeholder = re.compile(
        r"^(From|Signed-off-by): foliolab <foliolab@example\.org>$", re.M
    )
    for path in mail:
        text = placeholder.sub("", path.read_text())
        assert "foliolab" not in text.lower(), path.name
        assert not re.search(r"\bresults-|\bsweep-\d", text), path.name
        assert not any(r in text for r in runs), path.name


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


def test_a_changed_cell_in_a_posting_cover_is_caught(tmp_path):
    """A posting cover whose table has one cell changed no longer holds
    the run's table."""
    cover = SERIES_73 / "cover-s0.txt"
    record = RUNS / "results-73-r2-count"
    text = cover.read_text()
    table = table_text(record)
    assert table in text
    changed = text.replace(
        "16,935     3,922 0.232", "16,935     3,923 0.232", 1
    )
    assert changed != text
    copy = tmp_path / "cover-s0.txt"
    copy.write_text(changed)
    assert table not in copy.read_text()
