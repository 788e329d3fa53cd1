"""A run directory is written only by the run that owns it, and every
record is read through one bounded, typed reader (issue 58, items 1 and
3): a test per kind of failure, each with its exit code, one line, and
every byte of what must not change as it was."""

import json
import os
import shutil
from pathlib import Path

import pytest
from runfiles import bytes_under

from foliolab import cli, errors, locks, records, rundir
from foliolab.render import report
from foliolab.rundir import RunKind


def run(capsys, *argv):
    rc = cli.main([str(a) for a in argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.startswith("foliolab: ")]
    assert len(lines) == 1, err
    return lines[0]


def mtimes(d: Path) -> dict[str, int]:
    return {
        str(p.relative_to(d)): p.stat().st_mtime_ns
        for p in sorted(d.rglob("*"))
    }


@pytest.fixture
def quick_report(monkeypatch):
    """Reports without drawing (a plot takes seconds here): one small file
    stands for plots/, so a set still has a subdirectory."""
    from foliolab.render.html import Figures

    def plots(a, out, files):
        (out / "plots").mkdir(exist_ok=True)
        (out / "plots" / "overview.png").write_bytes(b"png")
        files.append(out / "plots" / "overview.png")
        return Figures()

    monkeypatch.setattr(report, "_plots", plots)
    monkeypatch.setattr(report, "monitor_report", lambda run: ([], []))


@pytest.fixture
def run_a(data, tmp_path):
    out = tmp_path / "run-a"
    shutil.copytree(data / "run-pageout-aa", out)
    return out


@pytest.fixture
def run_b(data, tmp_path):
    out = tmp_path / "run-b"
    shutil.copytree(data / "run-pageout-aa", out)
    return out


# ---- the reader: each kind of damage ----------------------------------------


def _cut(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2])


def _empty(p: Path) -> None:
    p.write_bytes(b"")


def _directory(p: Path) -> None:
    p.unlink()
    p.mkdir()


def _dev_zero(p: Path) -> None:
    p.unlink()
    p.symlink_to("/dev/zero")


def _fifo(p: Path) -> None:
    p.unlink()
    os.mkfifo(p)


def _nan(p: Path) -> None:
    d = json.loads(p.read_text())
    d["timeout"] = float("nan")
    p.write_text(json.dumps(d))  # json.dumps writes NaN as it reads it


def _string_for_number(p: Path) -> None:
    d = json.loads(p.read_text())
    d["runs"] = "2"
    p.write_text(json.dumps(d))


def _too_large(p: Path) -> None:
    p.write_text(p.read_text() + " " * records.RecordKind.MANIFEST.bound)


DAMAGE = {
    "cut": (_cut, "not JSON"),
    "empty": (_empty, "empty"),
    "directory": (_directory, "a directory, not a record"),
    "symlink to /dev/zero": (_dev_zero, "a character device, not a record"),
    "FIFO": (_fifo, "a FIFO, not a record"),
    "NaN": (_nan, "NaN is not a number JSON has"),
    "string for a number": (_string_for_number, "field 'runs' is the str"),
    "too large": (_too_large, "more than a environment.json can hold"),
}


@pytest.mark.parametrize("kind", DAMAGE)
def test_each_damage_is_exit_11_in_one_line(run_a, capsys, kind):
    """A damaged environment.json, any kind of damage: `report` names the
    file and what is wrong, exit 11, and writes nothing (and a FIFO or
    /dev/zero is never opened to be read: the test would hang)."""
    damage, says = DAMAGE[kind]
    damage(run_a / "environment.json")
    before = bytes_under(run_a)
    rc, out, err = run(capsys, "report", run_a)
    assert rc == errors.DamagedRunError.exit_code == 11
    line = one_line(err)
    assert f"{run_a / 'environment.json'}: " in line and says in line, line
    assert "Traceback" not in err and out == ""
    assert bytes_under(run_a) == before


def _boot_json(run: Path) -> Path:
    return run / "raw" / "pageout" / "patched-001" / "boot.json"


def _job_json(run: Path) -> Path:
    return run / "raw" / "pageout" / "patched-001" / "job.json"


def _set(path: Path, **fields: object) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **fields}))


@pytest.mark.parametrize(
    "record, damage, says",
    [
        (_boot_json, {"elapsed": "12.5"}, "field 'elapsed' is the string"),
        (_boot_json, {"issues": "oops"}, "field 'issues' is the string"),
        (_job_json, {"seq": "3"}, "field 'seq' is the string"),
        (_job_json, {"samples": -1}, "field 'samples' is the number -1"),
        (
            lambda r: r / "environment.json",
            {"kernels": "abc"},
            "field 'kernels' is the string 'abc'",
        ),
        (
            lambda r: r / "environment.json",
            {"runs": -1},
            "field 'runs' is the number -1",
        ),
    ],
)
def test_every_record_of_a_run_is_read_typed(
    run_a, capsys, record, damage, says
):
    """Each record a report reads, through the one reader: a value of the
    wrong type is the file and the field, exit 11, nothing written (not
    a mail listing kernels a, b, c, nor "-1 runs per kernel")."""
    path = record(run_a)
    _set(path, **damage)
    before = bytes_under(run_a)
    for argv in (["report", run_a], ["report", run_a, "--mail"]):
        rc, out, err = run(capsys, *argv)
        assert rc == 11, err
        line = one_line(err)
        assert str(path) in line and says in line, line
        assert out == ""
    assert bytes_under(run_a) == before


def test_samples_of_a_run_without_boots_are_read_typed(run_a, capsys):
    """samples.jsonl (a run from before job.json has only it): a value that
    is a string or NaN is its line and field."""
    shutil.rmtree(run_a / "raw")
    path = run_a / "samples.jsonl"
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    metric = next(iter(first["values"]))
    for value in ("12", "NaN"):
        first["values"][metric] = value
        text = json.dumps(first)
        if value == "NaN":
            text = text.replace('"NaN"', "NaN")
        path.write_text("\n".join([text, *lines[1:]]) + "\n")
        rc, _, err = run(capsys, "report", run_a, "--mail")
        assert rc == 11, err
        line = one_line(err)
        assert f"{path}: line 1: " in line, line


def test_results_json_read_by_diff_is_typed(
    run_a, run_b, capsys, quick_report
):
    """results.json (what `diff` reads): a ratio that is a string or a
    NaN is named, exit 11, not a plausible table."""
    assert run(capsys, "report", run_a)[0] == 0
    assert run(capsys, "report", run_b)[0] == 0
    path = run_b / "results.json"
    d = json.loads(path.read_text())
    d["summary"][0]["ratio"] = "1.0"
    path.write_text(json.dumps(d))
    rc, out, err = run(capsys, "diff", run_a, run_b)
    assert rc == 11 and out == ""
    assert "summary[0]: field 'ratio' is the string" in one_line(err)
    path.write_text(path.read_text().replace('"1.0"', "Infinity"))
    rc, out, err = run(capsys, "diff", run_a, run_b)
    assert rc == 11 and "Infinity is not a number" in one_line(err)


def test_the_reader_bounds_and_refuses_before_it_opens(tmp_path):
    """The reader itself: a record larger than its kind's bound, a FIFO,
    /dev/zero, a directory and a missing file are refused without being
    read; a JSON object with NaN or Infinity, and a list for an object,
    too."""
    kind = records.RecordKind.BOOT
    big = tmp_path / "boot.json"
    big.write_text('{"a": "' + "x" * kind.bound + '"}')
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    for path, says in (
        (big, "more than a boot.json can hold"),
        (fifo, "a FIFO"),
        (zero, "a character device"),
        (tmp_path, "a directory"),
        (tmp_path / "nosuch.json", "missing"),
    ):
        with pytest.raises(errors.DamagedRunError, match=says):
            records.read_object(path, kind)
    for text, says in (
        ('{"a": NaN}', "NaN is not a number"),
        ('{"a": -Infinity}', "-Infinity is not a number"),
        ("[1, 2]", "not a JSON object but a list"),
        ("", "empty"),
        ('{"a": 1', "not JSON"),
        ('{"a": "\xff"}'.encode("latin-1").decode("latin-1"), ""),
    ):
        p = tmp_path / "r.json"
        p.write_text(text)
        if says:
            with pytest.raises(errors.DamagedRunError, match=says):
                records.read_object(p, kind)
    p.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(errors.DamagedRunError, match="not UTF-8"):
        records.read_object(p, kind)


# ---- who may write a directory ------------------------------------------------


def test_report_into_another_run_is_refused(run_a, run_b, capsys):
    """`report RUN_A --out RUN_B`, RUN_B another run: refused in one line
    before anything is read or written; RUN_B's samples are its own."""
    before = bytes_under(run_b)
    rc, out, err = run(capsys, "report", run_a, "--out", run_b)
    assert rc == errors.UsageError.exit_code
    line = one_line(err)
    assert f"--out {run_b} holds a finished compare run" in line
    assert bytes_under(run_b) == before


def test_a_report_set_elsewhere_is_its_runs_own(
    quick_report, run_a, run_b, tmp_path, capsys
):
    """report --out DIR: a new DIR, or one holding the same run's set
    (written again); not the set of another run."""
    elsewhere = tmp_path / "set"
    for _ in range(2):
        rc, _, err = run(capsys, "report", run_a, "--out", elsewhere)
        assert rc == 0, err
    assert rundir.identify(elsewhere) == rundir.Held(
        RunKind.REPORT, True, str(run_a.resolve())
    )
    assert (elsewhere / "report.txt").is_file()
    before = bytes_under(elsewhere)
    rc, _, err = run(capsys, "report", run_b, "--out", elsewhere)
    assert rc == 2
    assert f"holds the report set (report --out) of {run_a}" in one_line(err)
    assert bytes_under(elsewhere) == before


def _foreign(d: Path) -> None:
    d.mkdir(parents=True)
    (d / "notes.txt").write_text("mine\n")


def _suite(d: Path) -> None:
    rundir.mark(d, RunKind.SUITE, finished=True)
    (d / "suite.json").write_text("{}\n")


def _compare(d: Path, data: Path) -> None:
    shutil.copytree(data / "run-pageout-aa", d)


COMMANDS = {
    "compare": ["compare", "--workloads", "pageout", "--patches", "none"],
    "compare --dry-run": [
        "compare",
        "--workloads",
        "pageout",
        "--patches",
        "none",
        "--dry-run",
    ],
    "jobs export": ["jobs", "export", "--workloads", "pageout"],
    "test": ["test", "--only", "ksm"],
    "check": ["check"],
    "check --robot": ["check", "--robot"],
    "bisect": [
        "bisect",
        "--repo",
        "/nonexistent",
        "--good",
        "a",
        "--bad",
        "b",
        "--workload",
        "pageout",
        "--metric",
        "try_to_unmap_insns_per_folio",
        "--above",
        "5000",
    ],
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("holds", ["foreign files", "another kind's run"])
def test_every_writer_refuses_a_directory_not_its_own(
    command, holds, data, tmp_path, tmp_cache, capsys, monkeypatch
):
    """Every command that writes a directory, given one that holds
    someone else's files or another kind of run: one line naming the
    directory and what it holds, exit 2, before any work (nothing in the
    cache, no kernel source fetched), every byte as it was."""
    from foliolab.kernel import trees

    monkeypatch.setattr(
        trees, "tree_of", lambda *a, **k: pytest.fail("applied a series")
    )
    out = tmp_path / "out"
    if holds == "foreign files":
        _foreign(out)
    elif command.startswith("compare") or command == "jobs export":
        _suite(out)
    else:
        _compare(out, data)
    before = bytes_under(out)
    rc, _, err = run(capsys, *COMMANDS[command], "--out", out)
    assert rc == errors.UsageError.exit_code, err
    line = one_line(err)
    assert f"--out {out} holds " in line, line
    assert "give a new or empty --out directory" in line
    assert bytes_under(out) == before
    assert not tmp_cache.exists()


def test_coverage_reasons_into_a_compare_run_is_refused(run_a, run_b, capsys):
    before = bytes_under(run_b)
    rc, _, err = run(
        capsys, "coverage-reasons", run_a, "patches", "--out", run_b
    )
    assert rc == 2 and "holds a finished compare run" in one_line(err)
    assert bytes_under(run_b) == before


def test_claims_by_what_a_directory_holds(tmp_path, data):
    """rundir.claim over the states a directory can be in."""
    new = tmp_path / "new"
    assert rundir.claim(new, RunKind.SUITE) is None
    new.mkdir()
    assert rundir.claim(new, RunKind.SUITE) is None  # empty
    rundir.mark(new, RunKind.SUITE)  # marked, nothing written yet
    assert rundir.claim(new, RunKind.SUITE) is None
    (new / "suite.ktap").write_text("TAP version 13\n")
    with pytest.raises(errors.UsageError, match="an unfinished suite run"):
        rundir.claim(new, RunKind.SUITE)
    with pytest.raises(errors.UsageError, match="not a series check"):
        rundir.claim(new, RunKind.SERIES_CHECK)
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(errors.UsageError, match="a file, not a directory"):
        rundir.claim(a_file, RunKind.COMPARE)
    compare = tmp_path / "compare"
    _compare(compare, data)
    with pytest.raises(errors.UsageError) as e:
        rundir.claim(compare, RunKind.COMPARE, resumable=True, forceable=True)
    assert "a finished compare run" in e.value.message
    assert e.value.hint == "give another --out or replace it with --force"
    held = rundir.claim(compare, RunKind.COMPARE, resume=True)
    assert held is not None and held.finished
    with pytest.raises(errors.UsageError, match="holds no bisect to finish"):
        rundir.claim(tmp_path / "none", RunKind.BISECT, resume=True)
    (new / rundir.MARKER).write_text('{"kind": "suite", "finished": "yes"}')
    with pytest.raises(errors.UsageError, match="a damaged rundir.json"):
        rundir.claim(new, RunKind.SUITE)


# ---- --resume with nothing to do ---------------------------------------------


def test_resume_of_a_finished_compare_writes_nothing(
    data, tmp_path, capsys, monkeypatch
):
    """compare --resume of a finished run: it says so, exit 0, before any
    source is unpacked, and no file's bytes or time change (an interrupt
    then has nothing to mark stopped)."""
    from test_orchestrate import ARGS, FakeExecutor, request, stand_in

    from foliolab.kernel import trees
    from foliolab.run import orchestrate

    records_txt = (data / "pageout-results.txt").read_text()
    out = tmp_path / "run"
    orchestrate.compare(
        request(*ARGS, "--out", str(out)),
        stand_in(tmp_path),
        FakeExecutor(records_txt),
    )
    capsys.readouterr()
    monkeypatch.setattr(
        trees, "series_trees", lambda *a: pytest.fail("unpacked a source")
    )
    before, times = bytes_under(out), mtimes(out)
    rc, printed, err = run(capsys, *ARGS, "--out", out, "--resume")
    assert rc == 0, err
    assert f"{out}: the run is finished, nothing to resume" in printed
    assert bytes_under(out) == before and mtimes(out) == times


def test_resume_of_a_finished_bisect_writes_nothing(tmp_path, capsys):
    from test_bisect import COUNTS, FakeLab, request, scratch_repo

    from foliolab.bisect import search

    repo = tmp_path / "linux"
    scratch_repo(repo, COUNTS)
    search.bisect(request(repo, tmp_path), FakeLab(repo))
    out = tmp_path / "out"
    before, times = bytes_under(out), mtimes(out)
    capsys.readouterr()
    lab = FakeLab(repo)
    search.bisect(request(repo, tmp_path, resume=True), lab)
    assert "the bisect is finished, nothing to resume" in (
        capsys.readouterr().out
    )
    assert lab.built == []
    assert bytes_under(out) == before and mtimes(out) == times
    # without --resume the finished bisect is not replaced
    with pytest.raises(errors.UsageError, match="holds a finished bisect"):
        search.bisect(request(repo, tmp_path), FakeLab(repo))


# ---- a report set, whole -------------------------------------------------------


@pytest.mark.parametrize("elsewhere", [False, True])
def test_an_interrupted_report_leaves_the_old_set_whole(
    run_a, tmp_path, monkeypatch, elsewhere, quick_report
):
    """A report that fails half-way (after results.json and report.md of
    the new set are written): every file of the old set as it was, no
    new file beside them, no staging directory left."""
    dest = tmp_path / "set" if elsewhere else run_a
    report.write_report(run_a, dest=dest)
    (run_a / "environment.json").write_text(
        (run_a / "environment.json")
        .read_text()
        .replace('"runs": 2', '"runs": 3')
    )
    before = bytes_under(dest)

    def fail(a):
        raise RuntimeError("interrupted half-way through the set")

    with monkeypatch.context() as m:
        m.setattr(report, "text_report", fail)
        with pytest.raises(RuntimeError):
            report.write_report(run_a, dest=dest)
    assert bytes_under(dest) == before
    assert not (dest / rundir.STAGING).exists()
    written = report.write_report(run_a, dest=dest)
    assert written.files and all(
        p.is_file() and dest in p.parents for p in written.files
    )
    assert '"runs": 3' in (dest / "results.json").read_text()
    assert not (dest / rundir.STAGING).exists()


def test_a_set_replaces_its_plots(tmp_path):
    """move_in: a subdirectory's files the new set does not have go."""
    out, stage = tmp_path / "out", tmp_path / "out" / rundir.STAGING
    (out / "plots").mkdir(parents=True)
    (out / "plots" / "old.png").write_bytes(b"old")
    (out / "raw").mkdir()
    (out / "raw" / "keep").write_text("a boot")
    (stage / "plots").mkdir(parents=True)
    (stage / "plots" / "new.png").write_bytes(b"new")
    (stage / "report.txt").write_text("new\n")
    rundir.move_in(stage, out)
    assert sorted(p.name for p in (out / "plots").iterdir()) == ["new.png"]
    assert (out / "raw" / "keep").is_file()
    assert (out / "report.txt").read_text() == "new\n"


def test_kernel_records_are_read_typed(tmp_path):
    """A kernel's record, in a manifest or in outcomes.json: a build's
    time that is a string, a series' patch count that is a number in
    words, named by file and field."""
    from foliolab.manifest import RunManifest
    from foliolab.testrecord import Outcomes

    kernel = {"name": "a", "spec": "base", "built": {"elapsed": "12"}}
    (tmp_path / "environment.json").write_text(
        json.dumps({"workloads": ["pageout"], "kernel_records": [kernel]})
    )
    with pytest.raises(
        errors.DamagedRunError,
        match=r"environment.json: kernel_records\[0\].built: field "
        "'elapsed' is the string '12', not a number",
    ):
        RunManifest.read(tmp_path)
    kernel = {"name": "a", "spec": "base", "series": {"patches": "two"}}
    (tmp_path / "outcomes.json").write_text(
        json.dumps(
            {"schema": 1, "command": "test", "kernels": [kernel], "tests": []}
        )
    )
    with pytest.raises(
        errors.DamagedRunError,
        match=r"outcomes.json: kernels\[0\].series: field 'patches'",
    ):
        Outcomes.read(tmp_path)


@pytest.mark.parametrize(
    "text, says",
    [
        ("- a\n- list\n", "not a LAVA job"),
        ("metadata: {foliolab.boots: 3}\n", "'metadata.foliolab.boots'"),
        ("job: [unclosed\n", "not YAML"),
    ],
)
def test_a_lava_job_of_the_wrong_shape_is_named(tmp_path, text, says):
    """jobs collect reads the exported jobs' YAML through the reader: a
    job that is not one is exit 11 naming the file, not a traceback."""
    from foliolab.executors.lava import export
    from foliolab.executors.lava.job import JOBS_DIR

    jobs = tmp_path / JOBS_DIR
    jobs.mkdir(parents=True)
    (jobs / "block-01.yaml").write_text(text)
    with pytest.raises(errors.DamagedRunError, match=says) as e:
        export._planned_blocks(tmp_path)
    assert str(jobs / "block-01.yaml") in e.value.message


def test_a_boots_raw_output_is_read_bounded(tmp_path, caplog):
    """A boot's counts.txt or monitor file that is /dev/zero or a FIFO is
    refused before it is opened: counts as a damaged run (exit 11), a
    monitor's figure left out with a warning."""
    from foliolab.boot import monitors
    from foliolab.guestdata import countwindows

    counts = tmp_path / "counts.txt"
    counts.symlink_to("/dev/zero")
    with pytest.raises(errors.DamagedRunError, match="a character device"):
        countwindows.read_counts(counts)
    name = monitors.MONITORS[0]
    os.mkfifo(monitors.monitor_path(tmp_path, name))
    with caplog.at_level("WARNING", "foliolab"):
        assert monitors.read_monitor(tmp_path, name) == []
    assert "a FIFO, not a record" in caplog.text


def test_a_signal_during_the_move_waits_for_the_whole_set(
    tmp_path, monkeypatch
):
    """SIGTERM sent while a new set is renamed into place acts only after
    every file is in: its handler sees the whole new set, never half."""
    import os
    import signal

    out = tmp_path / "run"
    out.mkdir()
    names = [f"report{i}.txt" for i in range(5)]
    for n in names:
        (out / n).write_text("old\n")
    seen: list[list[str]] = []

    def on_term(signum, frame):
        seen.append([(out / n).read_text() for n in names])

    old_handler = signal.signal(signal.SIGTERM, on_term)
    real_replace = os.replace
    calls = []

    def replace_then_signal(src, dst):
        real_replace(src, dst)
        calls.append(dst)
        if len(calls) == 1:  # after the first file of the set is in
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(rundir.os, "replace", replace_then_signal)
    try:
        with rundir.staged(out) as stage:
            for n in names:
                (stage / n).write_text("new\n")
    finally:
        signal.signal(signal.SIGTERM, old_handler)
    assert len(calls) == len(names)
    assert seen == [["new\n"] * len(names)]


# ---- one writer at a time ------------------------------------------------------

HOLDER = """\
import sys
from pathlib import Path
from foliolab import rundir
out = Path(sys.argv[1])
rundir.claim(out, rundir.RunKind.MMCI)
rundir.mark(out, rundir.RunKind.MMCI)
(out / "mmci-request.json").write_text("{}")
print("held", flush=True)
sys.stdin.read()
"""


def test_a_directory_being_written_is_refused_to_a_second_command(
    tmp_path, tmp_cache, monkeypatch, other_command
):
    """A run writing its directory holds it until its command ends: a
    second command, a --resume of that run among them, is told in one
    line who holds it (two writers of outcomes.json lose each other's
    rows); once the first has ended, the --resume goes on. The first
    claimed a new directory and held it once it made it (mark)."""
    out = tmp_path / "run"
    child = other_command(out)
    with pytest.raises(errors.UsageError) as e:
        rundir.claim(out, RunKind.MMCI, resumable=True)
    # what it holds is said first: an unfinished run, to --resume
    assert "finish it with --resume" in e.value.hint
    with pytest.raises(errors.UsageError) as e:
        rundir.claim(out, RunKind.MMCI, resume=True, resumable=True)
    assert e.value.message == (
        f"--out {out} is being written by another foliolab "
        f"command now (pid {child.pid})"
    )
    assert e.value.hint == "wait for it to end, or give another --out"
    assert child.stdin is not None
    child.stdin.close()
    child.wait(timeout=30)
    held = rundir.claim(out, RunKind.MMCI, resume=True, resumable=True)
    assert held is not None and not held.finished
    assert not tmp_cache.exists()  # the lock is on the directory itself
    # held by this process now: claimed again by it, not refused
    assert rundir.claim(out, RunKind.MMCI, resume=True) == held
    let_go = []
    monkeypatch.setattr(locks, "let_go", lambda: let_go.append(1))
    cli.main(["report", str(tmp_path / "no-such-run")])
    assert let_go == [1]  # every command lets go when it ends


@pytest.fixture
def other_command(tmp_path):
    """Another foliolab process holding a directory: start(out) makes,
    marks (an unfinished mm CI run) and holds ``out`` until stop()."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    children = []

    def start(out: Path):
        child = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(out)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
        children.append(child)
        assert child.stdout is not None
        assert child.stdout.readline() == "held\n"
        return child

    yield start
    for child in children:
        assert child.stdin is not None
        if not child.stdin.closed:
            child.stdin.close()
        child.wait(timeout=30)


def test_a_new_directory_written_by_another_since_the_claim_is_refused(
    tmp_path, tmp_cache, other_command
):
    """A claim of a new directory takes no lock (there is nothing to lock
    yet); when the command first makes it, the directory must still be
    new: another command that made and wrote it in between (a compare's
    checks fetch and apply for minutes first) is not written over."""
    out = tmp_path / "run"
    assert rundir.claim(out, RunKind.MMCI) is None
    other_command(out)
    with pytest.raises(errors.UsageError, match="being written by another"):
        rundir.mark(out, RunKind.MMCI)
    rundir.let_go()
    # the other has ended, its run stays: still not this command's
    assert rundir.claim(tmp_path / "two", RunKind.MMCI) is None
    shutil.copytree(out, tmp_path / "two")
    with pytest.raises(errors.UsageError) as e:
        rundir.mark(tmp_path / "two", RunKind.MMCI)
    assert "was new when this command claimed it, and holds an " in (
        e.value.message
    )
    assert not locks.holds(tmp_path / "two")
    rundir.let_go()


def test_a_refused_command_leaves_the_directory_another_made(
    tmp_path, tmp_cache, other_command
):
    """A report refused the --out another command made after its claim
    does not remove it (removed_if_it_fails removes what this command
    made and holds)."""
    out = tmp_path / "set"
    assert rundir.claim(out, RunKind.REPORT, of="x") is None
    with pytest.raises(errors.UsageError):
        with rundir.removed_if_it_fails(out):
            other_command(out)
            rundir.mark(out, RunKind.REPORT, of="x")
    assert (out / "mmci-request.json").exists()
    rundir.let_go()


def test_a_dry_run_asks_and_holds_nothing_and_a_report_waits_its_turn(
    tmp_path, tmp_cache, other_command, run_a, capsys
):
    """A dry run is refused a directory another command holds, but holds
    none itself; `report RUN` into a run another command holds is
    refused before it writes."""
    out = tmp_path / "run"
    out.mkdir()
    assert rundir.claim(out, RunKind.MMCI, dry_run=True) is None
    assert not locks.holds(out)
    before = bytes_under(run_a)
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; "
            "from foliolab import rundir; rundir.hold(Path(sys.argv[1])); "
            "print('held', flush=True); sys.stdin.read()",
            str(run_a),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        rc, _, err = run(capsys, "report", run_a)
        assert rc == errors.UsageError.exit_code, err
        assert f"pid {holder.pid}" in one_line(err)
        with pytest.raises(errors.UsageError, match="being written"):
            rundir.claim(run_a, RunKind.COMPARE, resume=True, dry_run=True)
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    assert bytes_under(run_a) == before


def test_a_file_system_that_locks_no_directory_is_said_and_gone_on(
    tmp_path, monkeypatch, caplog
):
    """flock on a directory fails on NFS (it needs a file open for
    writing): the command goes on unguarded, says so, and keeps no
    descriptor."""
    import errno
    import fcntl

    def no_flock(fd, op):
        raise OSError(errno.EBADF, "Bad file descriptor")

    monkeypatch.setattr(fcntl, "flock", no_flock)
    opened = len(os.listdir("/proc/self/fd"))
    assert locks.held_for_the_command(tmp_path) is None
    assert not locks.holds(tmp_path)
    assert len(os.listdir("/proc/self/fd")) == opened
    assert "cannot be locked (Bad file descriptor)" in caplog.text
    # a whole command's flow there: its own files are its own to the end
    out = tmp_path / "run"
    assert rundir.claim(out, RunKind.MMCI) is None
    rundir.mark(out, RunKind.MMCI)
    (out / "outcomes.json").write_text("{}")
    rundir.mark(out, RunKind.MMCI, finished=True)
    made = tmp_path / "set"
    assert rundir.claim(made, RunKind.REPORT, of="x") is None
    with pytest.raises(RuntimeError):
        with rundir.removed_if_it_fails(made):
            rundir.mark(made, RunKind.REPORT, of="x")
            raise RuntimeError("the report failed")
    assert not made.exists()  # what it made, removed
    rundir.let_go()


def test_a_run_that_is_no_directory_is_said_by_its_command(
    tmp_path, tmp_cache, capsys
):
    """Holding a run to write into it leaves a path that is no directory
    to the command's own check, which says what is wrong (exit 2)."""
    rc, _, err = run(
        capsys, "coverage-reasons", tmp_path / "nosuch", "patches"
    )
    assert rc == errors.UsageError.exit_code, err
    assert "no coverage.json" in one_line(err)
