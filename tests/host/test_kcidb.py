"""`foliolab report DIR --kcidb FILE --origin NAME`: a run as KernelCI's
common database reads it (export/kcidb.py). Each document is validated
here again with kcidb-io, independently of the exporter: the recorded
compare runs under tests/host/data/runs (copied first, their results
derived with the project's own functions), a suite run and a robot run
made with the project's own record writers, and a broken document that
is refused with nothing written. No kernel, no boot."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from kcidb_io import schema

from foliolab import cli
from foliolab.analysis.analyse import analyse
from foliolab.boot.derive import run_samples
from foliolab.errors import ExportError, UsageError
from foliolab.export import kcidb
from foliolab.kernel import build, source
from foliolab.kernel import specs as kernels
from foliolab.kernelrecord import kernel_record
from foliolab.manifest import RunManifest
from foliolab.paths import PROJECT_ROOT
from foliolab.render import report
from foliolab.robot import command as robot_command
from foliolab.robot.prefixes import Prefix
from foliolab.robot.report import CellRun, Report
from foliolab.suite.results import Check, SuiteBoot, SuiteResult
from foliolab.testrecord import Outcomes, TestOutcome, TestStatus

RUNS = PROJECT_ROOT / "tests" / "host" / "data" / "runs"
# the recorded compare runs (an mm CI run kept beside them has no
# environment.json)
RECORDED = sorted(
    p.name for p in RUNS.iterdir() if (p / "environment.json").is_file()
)


def valid(path):
    """The document at ``path``, validated with kcidb-io (raises if the
    schema refuses it), its ids unique and linked."""
    data = json.loads(path.read_text())
    schema.V5_3.validate_exactly(data)
    assert data["version"] == {"major": 5, "minor": 3}
    # what the schema does not check: every object's parent is sent too
    checkouts = {c["id"] for c in data.get("checkouts", [])}
    builds = {b["id"] for b in data.get("builds", [])}
    assert {b["checkout_id"] for b in data.get("builds", [])} <= checkouts
    assert {t["build_id"] for t in data.get("tests", [])} <= builds
    tests = [t["id"] for t in data.get("tests", [])]
    assert len(set(tests)) == len(tests)
    return data


@pytest.fixture(scope="module")
def derived_runs(tmp_path_factory):
    """Each recorded compare run copied once, with its results.json and
    outcomes.json derived as `foliolab report` derives them (the
    analysis and the outcomes, not the plots)."""
    top = tmp_path_factory.mktemp("runs")
    for name in RECORDED:
        run = top / name
        shutil.copytree(RUNS / name, run)
        m = RunManifest.read(run)
        a = analyse(run, m, run_samples(run, run))
        (run / "results.json").write_text(
            json.dumps(report.finite(report.results_json(a)), default=str)
        )
        report.run_outcomes(run, m).write(run)
    return top


@pytest.fixture
def derived(derived_runs, tmp_path):
    """derived(NAME): a test's own copy of a derived recorded run."""

    def copy(name):
        shutil.copytree(derived_runs / name, tmp_path / name)
        return tmp_path / name

    return copy


def export(args):
    return cli.main(["report", *map(str, args)])


@pytest.mark.parametrize("name", RECORDED)
def test_a_recorded_compare_run_exports_as_kcidb_takes_it(
    name, derived, tmp_path, capsys
):
    run = derived(name)
    before = sorted(p.name for p in run.rglob("*"))
    out = tmp_path / "kcidb.json"
    assert export([run, "--kcidb", out, "--origin", "foliolab"]) == 0
    data = valid(out)
    assert sorted(p.name for p in run.rglob("*")) == before  # only read
    m = RunManifest.read(run)
    ids = {c["id"] for c in data["checkouts"]}
    assert ids == {f"foliolab:{name}:{k}" for k in m.names}
    by_id = {c["id"]: c for c in data["checkouts"]}
    for k in m.kernels:
        c = by_id[f"foliolab:{name}:{k.name}"]
        # a Debian base: no upstream commit to name, none invented
        assert "git_commit_hash" not in c
        if k.series is None:
            assert c["patchset_hash"] == ""  # no patches applied
    # each metric per kernel: DONE with the kernel's mean from results.json
    summary = json.loads((run / "results.json").read_text())["summary"]
    row = next(r for r in summary if r["primary"])
    # a metric is one part of the path, its dots too
    # (will-it-scale.per_process_ops)
    path = (
        f"foliolab.{kcidb.path_part(row['workload'])}."
        f"{kcidb.path_part(row['metric'])}"
    )
    mine = {
        t["build_id"]: t
        for t in data["tests"]
        if t["path"] == path and t["status"] == "DONE"
    }
    b = mine[f"foliolab:{name}:{row['kernel']}:build"]
    assert b["number"] == {"value": row["kernel_mean"], "unit": row["unit"]}
    base = mine[f"foliolab:{name}:{row['baseline']}:build"]
    assert base["number"]["value"] == row["baseline_mean"]
    builds = {b["id"]: b for b in data["builds"]}
    assert all(builds[t["build_id"]] for t in data["tests"])
    assert {b["status"] for b in data["builds"]} == {"PASS"}
    started = {c["start_time"] for c in data["checkouts"]}
    assert started == {
        json.loads((run / "environment.json").read_text())["started"]
    }
    assert "KCIDB 5.3" in capsys.readouterr().out


def test_the_same_run_exports_to_the_same_ids(derived, tmp_path):
    run = derived("results-73-r2-count")
    first, again = tmp_path / "a.json", tmp_path / "b.json"
    assert export([run, "--kcidb", first, "--origin", "lab_1"]) == 0
    assert export([run, "--kcidb", again, "--origin", "lab_1"]) == 0
    assert first.read_text() == again.read_text()
    assert all(
        t["id"].startswith("lab_1:results-73-r2-count:")
        for t in valid(first)["tests"]
    )


def test_with_out_the_report_is_derived_there_and_the_run_only_read(
    tmp_path, monkeypatch
):
    """A run from before outcomes.json: refused alone (with what to
    run), exported with --out DIR2 (the report written there; its plots
    stood in for: they cost seconds and are not what is tested)."""
    from foliolab.render.html import Figures

    monkeypatch.setattr(report, "_plots", lambda a, out, files: Figures())
    monkeypatch.setattr(report, "_growth_section", lambda a, out, files: [])
    run = tmp_path / "sweep-612-pageout"
    shutil.copytree(RUNS / run.name, run)
    before = {p: p.stat().st_mtime_ns for p in run.rglob("*")}
    out = tmp_path / "kcidb.json"
    with pytest.raises(UsageError, match="--out DIR --kcidb FILE"):
        kcidb.export(run, out, "foliolab", run.name)
    assert not out.exists()
    derive = tmp_path / "derived"
    mine = derive / "kcidb.json"  # the command's own output: allowed
    args = [run, "--out", derive, "--kcidb", mine, "--origin", "foliolab"]
    assert export(args) == 0
    data = valid(mine)
    assert (derive / "outcomes.json").is_file()
    assert {p: p.stat().st_mtime_ns for p in run.rglob("*")} == before
    # the boots are tests, under foliolab. + their outcome's path
    boots = [t for t in data["tests"] if t["path"].startswith("foliolab.c")]
    assert boots and {t["status"] for t in boots} == {"PASS"}
    assert boots[0]["misc"]["foliolab_path"].startswith("compare.pageout@")
    assert boots[0]["id"].startswith("foliolab:sweep-612-pageout:")


def test_with_out_into_another_run_nothing_is_written(tmp_path, capsys):
    """--out with --kcidb writes a report set there first, so it claims
    the directory as report --out does: one holding another run is
    refused in one line, its files as they were, and no document."""
    run = tmp_path / "a"
    other = tmp_path / "b"
    shutil.copytree(RUNS / RECORDED[0], run)
    shutil.copytree(RUNS / RECORDED[-1], other)
    (other / "plots").mkdir(exist_ok=True)
    (other / "plots" / "my-notes.txt").write_text("mine\n")
    before = {p: p.read_bytes() for p in other.rglob("*") if not p.is_dir()}
    doc = tmp_path / "x.json"
    args = [run, "--kcidb", doc, "--origin", "foliolab", "--out", other]
    assert export(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--out {other} holds" in err[0], err
    assert not doc.exists()
    after = {p: p.read_bytes() for p in other.rglob("*") if not p.is_dir()}
    assert after == before


@pytest.fixture
def series_dir(tmp_path):
    d = tmp_path / "series"
    d.mkdir()
    for name, text in (("0001-a.patch", "a\n"), ("0002-b.patch", "b\n")):
        (d / name).write_text(f"diff --git {text}")
    (d / "series").write_text("0001-a.patch\n0002-b.patch\n")
    return d


def sha256sum_hash(files):
    """`sha256sum FILES | cut -c-64 | sha256sum | cut -c-64`."""
    lines = "".join(
        hashlib.sha256(f.read_bytes()).hexdigest() + "\n" for f in files
    )
    return hashlib.sha256(lines.encode()).hexdigest()


UPSTREAM = "b" * 40


def git_series_spec(series_dir):
    base = kernels.parse_spec("next", "git:/src/linux@v7.3")
    return kernels.with_series(base, "next", series_dir)


def git_tree(name):
    return source.Tree(
        name,
        Path("/src/linux"),
        "a" * 40,
        "d1g",
        onto=source.Onto("git:/src/linux@v7.3", "/src/linux v7.3", UPSTREAM),
    )


def test_a_suite_run_exports_its_checks_on_its_build(
    tmp_path, series_dir, capsys
):
    """The suite's kernel (a git base and a series) with its build; its
    checks as tests of that build, their statuses KernelCI's."""
    spec = git_series_spec(series_dir)
    built = build.Kernel(
        "next",
        "debug",
        "x86_64",
        Path("/b"),
        Path("/b/bzImage"),
        "a" * 40,
        "5ha",
        512.5,
    )
    boots = (
        SuiteBoot(
            "y",
            "ok",
            [
                Check("kselftest.ksm_tests", "pass"),
                Check("vmscan.pageout", "fail", "exit 1"),
                Check("kselftest.uffd", "skip", "no userfaultfd"),
            ],
        ),
        SuiteBoot("n", "ok", [Check("kselftest.ksm_tests", "pass")]),
    )
    kernel = kernel_record(spec, git_tree("next"), built)
    out = tmp_path / "suite"
    out.mkdir()
    SuiteResult(False, "", boots, kernel).outcomes().write(out)
    doc = tmp_path / "suite.json"
    assert export([out, "--kcidb", doc, "--origin", "foliolab"]) == 0
    data = valid(doc)
    (c,) = data["checkouts"]
    assert c["id"] == "foliolab:suite:next"
    assert c["git_commit_hash"] == UPSTREAM  # the git base's, not the lab's
    assert c["patchset_hash"] == sha256sum_hash(
        [series_dir / "0001-a.patch", series_dir / "0002-b.patch"]
    )
    assert "git_repository_url" not in c  # a local clone: no URL known
    (b,) = data["builds"]
    assert (b["architecture"], b["config_name"], b["status"]) == (
        "x86_64",
        "debug",
        "PASS",
    )
    got = [(t["path"], t["status"]) for t in data["tests"]]
    assert got == [
        ("foliolab.suite.mglru-on.kselftest.ksm_tests", "PASS"),
        ("foliolab.suite.mglru-on.vmscan.pageout", "FAIL"),
        ("foliolab.suite.mglru-on.kselftest.uffd", "SKIP"),
        ("foliolab.suite.mglru-off.kselftest.ksm_tests", "PASS"),
    ]
    assert data["tests"][1]["misc"] == {
        "detail": "exit 1",
        "log": "mglru-y/console.log",
    }
    assert {t["build_id"] for t in data["tests"]} == {b["id"]}


def test_a_robot_run_has_a_build_per_kernel_and_cell(tmp_path, series_dir):
    """check --robot's outcomes (robot/command.outcomes on a report of
    two cells and a broken one over a base and two patches): a checkout
    per prefix, a build per prefix and cell, a test per cell and patch;
    a cell never run on a kernel is left out, and said."""
    spec = git_series_spec(series_dir)
    prefixes = tuple(
        Prefix(i, f"{i}" * 40, f"t{i}", None if i == 0 else Path("p"))
        for i in range(3)
    )
    rep = Report(
        findings=[],
        times=[],
        notes=[],
        elapsed=1.0,
        broken={"i386/mm": "compile failed"},
        ran=[
            CellRun("x86_64/perf", 0, "x86_64", "perf"),
            CellRun("x86_64/perf", 1, "x86_64", "perf"),
            CellRun("x86_64/perf", 2, "x86_64", "perf"),
            CellRun("all/kernel-doc", 0),
            CellRun("all/kernel-doc", 1),
            CellRun("all/kernel-doc", 2),
        ],
        skipped={"x86_64/perf-clang": "the tree needs LLVM 21"},
        prefixes=prefixes,
    )
    out = tmp_path / "robot"
    out.mkdir()
    tree = git_tree("patched")
    robot_command.outcomes(rep, spec, tree, out).write(out)
    doc = tmp_path / "robot.json"
    assert export([out, "--kcidb", doc, "--origin", "foliolab"]) == 0
    data = valid(doc)
    by_id = {c["id"]: c for c in data["checkouts"]}
    assert list(by_id) == [f"foliolab:robot:000{i}" for i in range(3)]
    assert by_id["foliolab:robot:0000"]["patchset_hash"] == ""
    assert by_id["foliolab:robot:0001"]["patchset_hash"] == sha256sum_hash(
        [series_dir / "0001-a.patch"]
    )
    builds = {b["id"]: b for b in data["builds"]}
    cell = builds["foliolab:robot:0002:robot:x86_64/perf"]
    assert (cell["architecture"], cell["config_name"], cell["status"]) == (
        "x86_64",
        "perf",
        "PASS",
    )
    statuses = {(t["path"], t["build_id"]): t["status"] for t in data["tests"]}
    assert (
        statuses[
            (
                "foliolab.robot.x86_64.perf.0001",
                "foliolab:robot:0001:robot:x86_64/perf",
            )
        ]
        == "PASS"
    )
    assert (
        statuses[
            (
                "foliolab.robot.all.kernel-doc.0002",
                "foliolab:robot:0002:robot:all/kernel-doc",
            )
        ]
        == "PASS"
    )
    # the broken cell ran on no prefix, the skipped one never ran: their
    # tests are on no kernel, and KCIDB's test needs a build
    assert not any("i386" in p or "clang" in p for p, _ in statuses)
    done = kcidb.export(out, tmp_path / "again.json", "foliolab", "robot")
    assert sum("i386" in line for line in done.left_out) == 2
    assert sum("perf-clang" in line for line in done.left_out) == 2


def test_a_document_the_schema_refuses_is_never_written(tmp_path):
    out = tmp_path / "kcidb.json"
    data = {
        "version": {"major": 5, "minor": 3},
        "tests": [
            {
                "id": "lab:1",
                "build_id": "lab:b",
                "origin": "lab",
                "status": "OK",
            }
        ],
    }
    with pytest.raises(ExportError, match=r"tests\[0\]\.status: 'OK'") as e:
        kcidb.write_document(data, out, force=False)
    assert e.value.exit_code == 15
    assert not out.exists() and not list(tmp_path.iterdir())
    del data["tests"][0]["id"]
    data["tests"][0]["status"] = "PASS"
    with pytest.raises(ExportError, match="'id' is a required property"):
        kcidb.write_document(data, out, force=False)
    assert not list(tmp_path.iterdir())


def test_the_command_writes_no_document_the_schema_refuses(
    tmp_path, capsys, monkeypatch
):
    """The command's own path: the document of a small run, spoiled
    after it is made (the project's records give no field KCIDB refuses:
    paths, architectures and origins are checked as they are made), is
    one line on stderr naming where, exit code 15, and no file."""
    out = tmp_path / "run"
    out.mkdir()
    k = kernel_record(kernels.parse_spec("up", "git:/src/linux@v7.3"))
    row = TestOutcome("a.b", TestStatus.PASS, "up")
    Outcomes("test", [k], [row]).write(out)
    made = kcidb.document

    def spoiled(*args):
        data, left_out = made(*args)
        data["tests"][0]["duration"] = "long"
        return data, left_out

    monkeypatch.setattr(kcidb, "document", spoiled)
    doc = tmp_path / "kcidb.json"
    assert export([out, "--kcidb", doc, "--origin", "foliolab"]) == 15
    err = capsys.readouterr().err
    assert "tests[0].duration: 'long' is not of type 'number'" in err
    assert len(err.strip().splitlines()) == 1
    assert not doc.exists() and sorted(tmp_path.iterdir()) == [out]


@pytest.mark.parametrize(
    "args, why",
    [
        (["--origin", "Foo Lab"], "not a KCIDB origin"),
        ([], "needs --origin"),
        (["--origin", "lab", "--mail"], "--mail prints"),
    ],
)
def test_bad_options_are_one_line_before_anything_is_read(
    tmp_path, capsys, args, why
):
    out = tmp_path / "k.json"
    assert export([tmp_path, "--kcidb", out, *args]) == 2
    assert why in capsys.readouterr().err
    assert not out.exists()


def test_an_existing_file_or_one_inside_the_run_is_refused(
    derived, tmp_path, capsys
):
    run = derived("results-73-r2-count")
    there = tmp_path / "k.json"
    there.write_text("mine\n")
    assert export([run, "--kcidb", there, "--origin", "lab"]) == 2
    assert "there already" in capsys.readouterr().err
    assert there.read_text() == "mine\n"
    assert export([run, "--kcidb", there, "--origin", "lab", "--force"]) == 0
    valid(there)
    inside = run / "k.json"
    assert export([run, "--kcidb", inside, "--origin", "lab"]) == 2
    assert "only reads" in capsys.readouterr().err
    assert not inside.exists()
    assert export([run, "--origin", "lab"]) == 2
    assert "--origin is an option of --kcidb" in capsys.readouterr().err


def test_patchset_hash_is_kcidbs():
    """The schema's own example: `sha256sum *.patch | cut -c-64 |
    sha256sum | cut -c-64` over one patch whose sha256 is that of ''."""
    empty = hashlib.sha256(b"").hexdigest()
    assert (
        kcidb.patchset_hash([empty])
        == hashlib.sha256((empty + "\n").encode()).hexdigest()
    )
    assert kcidb.patchset_hash([]) == ""


def test_a_bisect_run_exports_each_commit_it_tried(tmp_path):
    """bisect's outcomes (bisect/record.Record.outcomes): a checkout per
    commit tried, named by its commit (a git tree's, so KCIDB's
    git_commit_hash) and no patches; a commit that did not build has a
    build without a status, its step an ERROR."""
    from foliolab.bisect.record import (
        BisectKey,
        Record,
        Step,
        StepStatus,
        Verdict,
    )
    from foliolab.kernelrecord import BuildRecord

    good, mid, bad = "1" * 40, "2" * 40, "3" * 40
    steps = [
        Step(0, good, "good", StepStatus.COUNTED, 100.0, Verdict.GOOD),
        Step(2, bad, "bad", StepStatus.COUNTED, 300.0, Verdict.BAD),
        Step(1, mid, "mid", StepStatus.BUILD_FAILED, None, Verdict.SKIP),
    ]
    key = BisectKey(
        "/src/linux", "pageout", {}, "kernel_insns", "x86_64", "perf"
    )
    record = Record([], key, good, bad, "above 200", 3, steps, limit=200.0)
    out = tmp_path / "bisect"
    out.mkdir()
    built = {
        c: BuildRecord(c[:12], "perf", "x86_64", commit=c, elapsed=60.0)
        for c in (good, bad)
    }
    record.outcomes(out, built).write(out)
    doc = tmp_path / "bisect.json"
    assert export([out, "--kcidb", doc, "--origin", "foliolab"]) == 0
    data = valid(doc)
    hashes = [c.get("git_commit_hash") for c in data["checkouts"]]
    assert hashes == [good, bad, None]  # the unbuilt commit's is unknown
    assert {c["patchset_hash"] for c in data["checkouts"]} == {""}
    assert [b.get("status") for b in data["builds"]] == ["PASS", "PASS", None]
    got = [(t["path"], t["status"]) for t in data["tests"]]
    assert got == [
        (f"foliolab.bisect.{good[:12]}", "PASS"),
        (f"foliolab.bisect.{bad[:12]}", "FAIL"),
        (f"foliolab.bisect.{mid[:12]}", "ERROR"),
    ]
    assert data["tests"][1]["misc"]["value"] == 300.0


def test_a_record_from_before_patch_hashes_reads_its_series_again(
    tmp_path, series_dir
):
    """A series record without its patches' hashes (a run from before
    they were kept): the folder gives them while it holds the patches
    the run applied (the record's digest), else no patchset_hash, said."""
    import dataclasses

    k = kernel_record(git_series_spec(series_dir), git_tree("next"))
    assert k.series is not None and len(k.series.patch_sha256) == 2
    old = dataclasses.replace(
        k, series=dataclasses.replace(k.series, patch_sha256=[])
    )
    out = tmp_path / "run"
    out.mkdir()
    Outcomes("test", [old], [TestOutcome("a", TestStatus.PASS, "next")]).write(
        out
    )
    done = kcidb.export(out, tmp_path / "1.json", "lab", "r")
    (c,) = valid(tmp_path / "1.json")["checkouts"]
    assert c["patchset_hash"] == sha256sum_hash(
        [series_dir / "0001-a.patch", series_dir / "0002-b.patch"]
    )
    assert done.left_out == ()
    (series_dir / "0002-b.patch").write_text("diff --git changed\n")
    done = kcidb.export(out, tmp_path / "2.json", "lab", "r")
    (c,) = valid(tmp_path / "2.json")["checkouts"]
    assert "patchset_hash" not in c
    assert "not as the run applied it" in done.left_out[0]


# the kept `test --mm-ci` records (outcomes.json, no environment.json)
MMCI_RECORDED = sorted(
    p.name
    for p in RUNS.iterdir()
    if (p / "outcomes.json").is_file()
    and not (p / "environment.json").exists()
)


@pytest.mark.parametrize("name", MMCI_RECORDED)
def test_a_kept_mm_ci_run_exports_every_row_on_its_kernels_build(
    name, tmp_path, capsys
):
    """A real `test --mm-ci` record, read only: a checkout and a build
    per kernel, a test per row (each boot round's its own id), statuses
    as the record has them; a series kernel carries its patchset hash
    from the record alone (the series folder need not exist)."""
    outcomes = Outcomes.read(RUNS / name)
    doc = tmp_path / "mmci.json"
    assert export([RUNS / name, "--kcidb", doc, "--origin", "foliolab"]) == 0
    data = valid(doc)
    kernels = [k.name for k in outcomes.kernels]
    assert [c["id"] for c in data["checkouts"]] == [
        f"foliolab:{name}:{k}" for k in kernels
    ]
    assert len(data["builds"]) == len(kernels)
    assert len(data["tests"]) == len(outcomes.tests)
    status = {
        TestStatus.PASS: "PASS",
        TestStatus.FAIL: "FAIL",
        TestStatus.SKIP: "SKIP",
        TestStatus.ERROR: "ERROR",
        TestStatus.MISS: "MISS",  # mmci612-host: vma, whose build failed
    }
    want: dict[str, int] = {}
    for t in outcomes.tests:
        want[status[t.status]] = want.get(status[t.status], 0) + 1
    got: dict[str, int] = {}
    for t in data["tests"]:
        got[t["status"]] = got.get(t["status"], 0) + 1
    assert got == want
    for c in data["checkouts"][1:]:  # the series kernels
        if "+" in c["misc"]["spec"]:
            assert len(c["patchset_hash"]) == 64
