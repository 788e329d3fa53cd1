"""orchestrate.py: a run from request to report, with the kernels and the
boots stood in for (a prepare and an executor passed in): stopped by a
signal, resumed, refused when it is not the same run; damaged run
directories and the bad inputs a new user tried, each one line."""

import json
import os
import re
import shutil
import signal
import subprocess

import gitrepo
import pytest
from runfiles import bytes_under

from foliolab import cli, errors
from foliolab.arch import get_arch
from foliolab.boot import derive
from foliolab.commands import measure as measure_cmd
from foliolab.executors.base import BootCapture, BootSpec, Ended
from foliolab.kernel.build import Kernel
from foliolab.run import orchestrate, rootcheck
from foliolab.run import record as runrecord
from foliolab.testrecord import Outcomes, TestStatus


class FakeExecutor:
    """Each boot gives one valid-looking pageout sample... unless
    ``signal_at`` boots have started: then the stop signal arrives (a real
    SIGTERM to this process, as `kill` sends it)."""

    kind = "fake"
    rounds_per_block = 0

    def __init__(self, records: str, signal_at: int = 0):
        self.records = records
        self.signal_at = signal_at
        self.booted = 0

    def run(self, image, blocks):
        for block in blocks:
            caps = []
            for b in block.boots:
                self.booted += 1
                if self.booted == self.signal_at:
                    os.kill(os.getpid(), signal.SIGTERM)
                caps.append(
                    BootCapture(b.rundir, Ended.EXITED, b"", self.records, 1.0)
                )
            yield block, caps


def stand_in(tmp_path, commit="c0ffee"):
    def prepare(run, m):
        kernels = {}
        for n in m.names:
            (tmp_path / n).mkdir(exist_ok=True)
            kernels[n] = Kernel(
                n,
                "perf",
                "x86_64",
                tmp_path / n,
                tmp_path / n / "bzImage",
                commit,
                "5ha",
                0.0,
            )
        runrecord.record_builds(m, kernels, run.plan.resume)
        spec = BootSpec(
            get_arch("x86_64"), kernels[m.names[0]].image, accel="tcg"
        )
        return orchestrate.Machine(kernels, tmp_path / "initrd", spec)

    return prepare


def request(*argv):
    argv = list(argv)
    args = cli.build_parser().parse_args(argv)
    args.argv = argv
    return measure_cmd._request(
        args, measure_cmd._kernel_args(args), args.patches, {}
    )


ARGS = (
    "compare",
    "--patches",
    "none",
    "--workloads",
    "pageout,ksm-rmap",
    "--runs",
    "2",
)


@pytest.fixture
def records(data):
    return (data / "pageout-results.txt").read_text()


def test_a_stopped_run_reports_what_finished_and_resumes(
    tmp_path, records, capsys
):
    out = tmp_path / "run"
    req = request(*ARGS, "--out", str(out))
    stopped = orchestrate.compare(
        req, stand_in(tmp_path), FakeExecutor(records, signal_at=3)
    )
    # the error is the command's to raise, after it shows the report
    assert isinstance(stopped, orchestrate.Finished)
    assert isinstance(stopped.error, errors.StoppedError)
    assert stopped.error.exit_code == 10
    assert stopped.error.hint.endswith(
        f"`foliolab compare --patches none --workloads pageout,ksm-rmap "
        f"--runs 2 --out {out} --resume`"
    )
    m = json.loads((out / "environment.json").read_text())
    assert m["stopped"] == "SIGTERM"
    assert m["command_line"][:2] == ["foliolab", "compare"]
    report = (out / "report.txt").read_text()
    assert stopped.written.text == report
    # boots 1 and 2 finished; the 3rd was under way when it stopped
    assert "MISSING: 1 of 2 boots of pageout/patched finished" in report
    assert "MISSING: 0 of 2 boots of ksm-rmap/vanilla finished" in report
    assert len(derive.load_samples(out)) == 2
    # its outcomes: the two finished boots, and the one under way missed
    got = Outcomes.read(out)
    assert [t.status for t in got.tests] == [
        TestStatus.PASS,
        TestStatus.PASS,
        TestStatus.MISS,
    ]
    # the handlers are the process's own again
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL

    again = request(*ARGS, "--out", str(out), "--resume")
    fake = FakeExecutor(records)
    orchestrate.compare(again, stand_in(tmp_path), fake)
    assert fake.booted == 6
    straight = tmp_path / "straight"
    orchestrate.compare(
        request(*ARGS, "--out", str(straight)),
        stand_in(tmp_path),
        FakeExecutor(records),
    )

    def summary(d):
        return sorted(
            (s.workload, s.variant, s.run, s.valid)
            for s in derive.load_samples(d)
        )

    assert summary(out) == summary(straight) and len(summary(out)) == 8
    m = json.loads((out / "environment.json").read_text())
    assert m["stopped"] == "" and len(m["resumed"]) == 1
    assert "MISSING" not in (out / "report.txt").read_text()


@pytest.mark.parametrize(
    "change, says",
    [
        (("--runs", "3"), "has --runs 2, this asks for 3"),
        (
            ("--param", "pageout.size_mb=64"),
            "has parameters "
            "pageout.size_mb=256, this asks for pageout.size_mb=64",
        ),
        (
            ("--workloads", "pageout"),
            "has workloads pageout,ksm-rmap, this asks for pageout",
        ),
        (("--count",), "has --count off, this asks for on"),
        (
            ("--patches", "patches/6.12"),
            "has kernels vanilla=base,patched=base, "
            "this asks for vanilla=base,patched=base+",
        ),
    ],
)
def test_resume_refuses_another_run(tmp_path, records, change, says):
    out = tmp_path / "run"
    orchestrate.compare(
        request(*ARGS, "--out", str(out)),
        stand_in(tmp_path),
        FakeExecutor(records),
    )
    argv = list(ARGS) + ["--out", str(out), "--resume"]
    i = argv.index(change[0]) if change[0] in argv else len(argv)
    argv[i : i + len(change)] = change
    with pytest.raises(errors.UsageError, match=re.escape(says)) as e:
        orchestrate.compare(
            request(*argv), stand_in(tmp_path), FakeExecutor(records)
        )
    assert "[" not in str(e.value) and "{" not in str(e.value)


def test_resume_refuses_other_builds(tmp_path, records):
    out = tmp_path / "run"
    orchestrate.compare(  # stopped: a finished run has nothing to resume
        request(*ARGS, "--out", str(out)),
        stand_in(tmp_path),
        FakeExecutor(records, signal_at=3),
    )
    refused = orchestrate.compare(
        request(*ARGS, "--out", str(out), "--resume"),
        stand_in(tmp_path, commit="d00d"),
        FakeExecutor(records),
    )
    assert isinstance(refused.error, errors.UsageError)
    assert "kernel vanilla is now commit d00d" in str(refused.error)


# --- damaged run directories: one line, never a traceback --------------------


@pytest.fixture
def finished(tmp_path, records):
    out = tmp_path / "run"
    orchestrate.compare(
        request(*ARGS, "--out", str(out)),
        stand_in(tmp_path),
        FakeExecutor(records),
    )
    return out


def report(capsys, out):
    rc = cli.main(["report", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    return rc, err


def test_a_cut_manifest_is_named(finished, capsys):
    path = finished / "environment.json"
    path.write_text(path.read_text()[:200])
    rc, err = report(capsys, finished)
    assert rc == errors.DamagedRunError.exit_code and len(err) == 1
    assert f"{path}: not JSON" in err[0] and "cut short" in err[0]


def test_raw_boots_without_a_manifest_are_named(finished, capsys):
    (finished / "environment.json").unlink()
    rc, err = report(capsys, finished)
    assert rc == errors.DamagedRunError.exit_code and len(err) == 1
    assert "environment.json: missing, though" in err[0]


def test_a_damaged_samples_file_without_raw_is_named(finished, capsys):
    shutil.rmtree(finished / "raw")
    path = finished / "samples.jsonl"
    path.write_text(path.read_text()[:-40])
    rc, err = report(capsys, finished)
    assert rc == errors.DamagedRunError.exit_code and len(err) == 1
    assert f"{path}: line 8: not JSON" in err[0]


def test_a_damaged_boot_record_is_named(finished, capsys):
    path = finished / "raw" / "pageout" / "patched-001" / "boot.json"
    path.write_text('{"status": "ok"')
    rc, err = report(capsys, finished)
    assert rc == errors.DamagedRunError.exit_code and len(err) == 1
    assert f"{path}: not JSON" in err[0]
    job = finished / "raw" / "pageout" / "vanilla-000" / "job.json"
    job.write_text("{}")
    rc, err = report(capsys, finished)
    assert f"{job}: no seq" in err[0]


def test_a_boot_without_its_record_is_counted_missing(finished, capsys):
    (finished / "raw" / "ksm-rmap" / "vanilla-001" / "boot.json").unlink()
    rc, err = report(capsys, finished)
    assert rc == 0
    text = (finished / "report.txt").read_text()
    assert "MISSING: 1 of 2 boots of ksm-rmap/vanilla finished" in text
    results = json.loads((finished / "results.json").read_text())
    assert results["environment"]["missing_boots"] == [
        "1 of 2 boots of ksm-rmap/vanilla finished"
    ]
    assert len(results["samples"]) < 8 * 10


# --- bad input a new user tried: refused before anything is built ------------


@pytest.fixture
def kernel_less_repo(tmp_path):
    repo = tmp_path / "notlinux"
    repo.mkdir()
    for argv in (
        ["init", "-q"],
        [
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
    ):
        subprocess.run(["git", "-C", str(repo), *argv], check=True)
    return repo


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--workloads", ""], "names an empty workload"),
        (["--workloads", "pageout,pageout"], "names pageout twice"),
        (
            ["--workloads", "pageout", "--lava-url", "https://lab"],
            "--lava-url is an option of --executor lava, not of --executor qemu",
        ),
        (
            ["--workloads", "pageout", "--lava-dtb", "/etc/hostname"],
            "--lava-dtb is an option of --executor",
        ),
        (
            ["--workloads", "pageout", "--lava-u", "https://lab"],
            "--lava-url is an option of --executor lava, not of --executor qemu",
        ),
        (
            ["--workloads", "pageout", "--artifacts-dir=/srv"],
            "--artifacts-dir is an option of --executor lava, not of --executor "
            "qemu",
        ),
        (
            ["--workloads", "pageout", "--lava-tags", "x"],
            "--lava-tags is an option of --executor",
        ),
        (
            [
                "--workloads",
                "pageout",
                "--executor",
                "lava",
                "--lava-url",
                "https://lab.example",
                "--artifacts-url",
                "https://f.example",
            ],
            "needs a token for https://lab.example",
        ),
        (
            [
                "--workloads",
                "pageout",
                "--kernel",
                "a=base",
                "--kernel",
                "b=git:{repo}@HEAD",
            ],
            "is not a Linux kernel tree",
        ),
        (
            ["--workloads", "pageout", "--resume"],
            "--resume finishes the run in --out DIR",
        ),
        (
            [
                "--workloads",
                "pageout",
                "--kernel",
                "a=base",
                "--kernel",
                "b=debian:9.99",
            ],
            "debian:9.99: Linux has no 9.99",
        ),
        (
            ["--workloads", "pageout", "--count", "--root", "no such()"],
            "--root 'no such()' is not a kernel function name",
        ),
        (
            [
                "--workloads",
                "pageout",
                "--kernel",
                "a=debian:7.3",
                "--kernel",
                "a=debian:7.3+patches/7.3",
            ],
            "kernel name 'a' given twice",
        ),
    ],
)
def test_trial_bad_inputs_stop_before_any_build(
    capsys, tmp_path, tmp_cache, kernel_less_repo, monkeypatch, argv, says
):
    monkeypatch.delenv("LAVA_TOKEN", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no lavacli config
    argv = [a.replace("{repo}", str(kernel_less_repo)) for a in argv]
    out = [] if "--resume" in argv else ["--out", str(tmp_path / "o")]
    rc = cli.main(["compare", "--runs", "4", *out, *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == errors.UsageError.exit_code
    assert len(err) == 1 and says in err[0], err
    assert not (tmp_path / "o").exists()
    assert not tmp_cache.exists()  # nothing fetched or built


def _system_map(d, *functions):
    d.mkdir(parents=True, exist_ok=True)
    (d / "System.map").write_text(
        "".join(f"ffffffff8{i:07x} T {f}\n" for i, f in enumerate(functions))
    )
    return d


def test_a_root_no_kept_kernel_has_stops_before_anything(
    capsys, tmp_path, monkeypatch
):
    """--count --root no_such_fn, the kernels kept from an earlier run:
    their System.maps answer at once, before QEMU's source is fetched for
    the counter or anything is built."""
    from foliolab import counting
    from foliolab.kernel import store

    maps = {
        "base": _system_map(
            tmp_path / "k", "try_to_unmap", "shrink_folio_list"
        )
    }
    monkeypatch.setattr(
        store, "kept_kernel", lambda k, arch, purpose: (maps["base"], "c0ffee")
    )
    monkeypatch.setattr(
        counting, "build_plugin", lambda arch: pytest.fail("built the counter")
    )
    monkeypatch.setattr(
        orchestrate, "prepare", lambda *a: pytest.fail("prepared the kernels")
    )
    out = tmp_path / "o"
    rc = cli.main(
        [
            "compare",
            "--patches",
            "none",
            "--workloads",
            "pageout",
            "--runs",
            "4",
            "--count",
            "--root",
            "no_such_fn",
            "--out",
            str(out),
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == errors.UsageError.exit_code
    assert err == [
        "foliolab: error: --root no_such_fn: no kernel of the "
        "run has this function (vanilla, patched); check its "
        "spelling in System.map (a static function may carry a "
        "suffix such as .isra.0)"
    ]
    assert not out.exists()


def test_a_root_is_checked_before_the_counter_is_built(tmp_path, monkeypatch):
    """Kernels not kept: once built, their System.maps are read before the
    counter plugin (whose header may come from QEMU's source package)."""
    from foliolab import counting

    monkeypatch.setattr(
        counting, "build_plugin", lambda arch: pytest.fail("built the counter")
    )
    req = request(
        "compare",
        "--patches",
        "none",
        "--workloads",
        "pageout",
        "--runs",
        "4",
        "--count",
        "--root",
        "no_such_fn",
    )
    built = {
        n: Kernel(
            n,
            "perf",
            "x86_64",
            _system_map(tmp_path / n, "try_to_unmap", "shrink_folio_list"),
            tmp_path / n / "bzImage",
            "c0ffee",
            "5ha",
            0.0,
        )
        for n in ("vanilla", "patched")
    }
    with pytest.raises(
        errors.UsageError, match="--root no_such_fn: no kernel of the run"
    ):
        orchestrate._counters(
            get_arch("x86_64"), built, req.workloads, req.roots
        )


@pytest.fixture
def two_commits(tmp_path):
    """A clone whose tag ``up`` has try_to_unmap() and 7.3's
    collapse_single_pmd(), and a commit on it (a series' tree) that adds
    folio_unmap_for_reclaim(); a series directory of one patch."""
    repo = tmp_path / "linux"
    (repo / "mm").mkdir(parents=True)

    def git(*argv):
        return gitrepo.git(repo, *argv)

    git("init", "-q")
    (repo / "Makefile").write_text("VERSION = 7\nPATCHLEVEL = 3\n")
    (repo / "mm" / "rmap.c").write_text(
        "void try_to_unmap(void) {}\nvoid collapse_single_pmd(void) {}\n"
    )
    git("add", "-A")
    git("commit", "-q", "-m", "up")
    git("tag", "up")
    (repo / "mm" / "vmscan.c").write_text(
        "static int folio_unmap_for_reclaim(void) { return 0; }\n"
    )
    git("add", "-A")
    git("commit", "-q", "-m", "next")
    series = tmp_path / "series"
    series.mkdir()
    (series / "0001-x.patch").write_text("x\n")
    (series / "series").write_text("0001-x.patch\n")
    return repo, git("rev-parse", "up"), git("rev-parse", "HEAD"), series


def _source_only(monkeypatch, two_commits):
    """Kernels not kept, and the series' tree applied (as series_trees()
    finds it in the cache): nothing else may be prepared or built."""
    from foliolab import counting
    from foliolab.kernel import source, store, trees

    repo, up, nxt, _ = two_commits
    onto = source.Onto(f"git:{repo}@up", f"{repo} {up[:12]}", up)
    monkeypatch.setattr(
        trees,
        "series_trees",
        lambda specs: {
            k.name: source.Tree(k.name, repo, nxt, "d1935", onto=onto)
            for k in specs
            if k.applied is not None
        },
    )
    monkeypatch.setattr(store, "kept_kernel", lambda *a: (None, ""))
    monkeypatch.setattr(
        counting, "build_plugin", lambda arch: pytest.fail("built the counter")
    )
    monkeypatch.setattr(
        orchestrate, "prepare", lambda *a: pytest.fail("prepared the kernels")
    )


def test_a_root_no_source_has_stops_before_any_build(
    capsys, tmp_path, monkeypatch, two_commits
):
    """--count --root no_such_fn, no kernel built yet: the name is looked
    for in the kernels' source (the series' tree, the clone's commit)
    before anything is built or QEMU's source is fetched."""
    _source_only(monkeypatch, two_commits)
    repo, _, _, series = two_commits
    out = tmp_path / "o"
    rc = cli.main(
        [
            "compare",
            "--kernel",
            f"up=git:{repo}@up",
            "--kernel",
            f"next=git:{repo}@up+{series}",
            "--workloads",
            "pageout",
            "--runs",
            "4",
            "--count",
            "--root",
            "no_such_fn",
            "--out",
            str(out),
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == errors.UsageError.exit_code
    assert err[-1] == (
        "foliolab: error: --root no_such_fn: no kernel of "
        "the run has this function (up, next: not in their "
        "source); check its spelling in System.map (a static "
        "function may carry a suffix such as .isra.0)"
    )
    assert "Traceback" not in "\n".join(err) and not out.exists()


@pytest.mark.parametrize(
    "root",
    [
        "folio_unmap_for_reclaim",  # the series' own function
        "try_to_unmap.isra.0",  # a compiler's suffix
        "hpage_collapse_scan_pmd",  # the lab's name, 7.3 renamed it
    ],
)
def test_a_root_in_some_kernels_source_waits_for_their_system_map(
    tmp_path, monkeypatch, two_commits, root
):
    _source_only(monkeypatch, two_commits)
    from foliolab.kernel import trees

    repo, _, _, series = two_commits
    req = request(
        "compare",
        "--kernel",
        f"up=git:{repo}@up",
        "--kernel",
        f"next=git:{repo}@up+{series}",
        "--workloads",
        "pageout",
        "--runs",
        "4",
        "--count",
        "--root",
        root,
    )
    rootcheck.check_in_source(
        req.specs, req.roots, trees.series_trees(req.specs)
    )


def test_a_root_is_not_refused_when_a_kernels_source_is_not_at_hand(
    tmp_path, monkeypatch, two_commits, caplog
):
    """debian:7.3 is not unpacked before its build: its System.map says."""
    _source_only(monkeypatch, two_commits)
    req = request(
        "compare",
        "--kernel",
        "up=debian:7.3",
        "--kernel",
        f"next=git:{two_commits[0]}@up",
        "--workloads",
        "pageout",
        "--runs",
        "4",
        "--count",
        "--root",
        "no_such_fn",
    )
    with caplog.at_level("INFO", "foliolab"):
        rootcheck.check_in_source(req.specs, req.roots, {})
    assert (
        "checked against the kernels' System.map once they are built"
        in caplog.text
    )


def test_resume_of_a_directory_without_a_run_is_one_line(capsys, tmp_path):
    (tmp_path / "o").mkdir()
    rc = cli.main(
        [
            "compare",
            "--workloads",
            "pageout",
            "--runs",
            "4",
            "--out",
            str(tmp_path / "o"),
            "--resume",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == errors.UsageError.exit_code and len(err) == 1
    assert "holds no compare run to finish" in err[0]


def test_too_few_runs_are_warned_of(caplog, tmp_path):
    rc = cli.main(
        [
            "compare",
            "--workloads",
            "pageout",
            "--runs",
            "3",
            "--patches",
            "none",
            "--dry-run",
        ]
    )
    assert rc == 0
    assert "with --runs 3 no row can be significant" in caplog.text


def test_a_damaged_boot_is_booted_again_as_its_line_says(
    finished, records, tmp_path, capsys
):
    boot = finished / "raw" / "pageout" / "patched-001"
    (boot / "boot.json").write_text("{")
    again = request(*ARGS, "--out", str(finished), "--resume")
    with pytest.raises(errors.DamagedRunError) as e:
        orchestrate.compare(again, stand_in(tmp_path), FakeExecutor(records))
    assert f"remove {boot} and finish the run with" in e.value.hint
    shutil.rmtree(boot)
    fake = FakeExecutor(records)
    orchestrate.compare(again, stand_in(tmp_path), fake)
    assert fake.booted == 1
    assert len(derive.load_samples(finished)) == 8


def test_the_manifest_keeps_each_series_sha():
    """The report's reproduce line names the series a kernel applied."""
    from foliolab.kernel import sources
    from foliolab.paths import DEFAULT_PATCHES

    m = runrecord.start_manifest(
        request("compare", "--workloads", "pageout", "--runs", "4").stages()
    )
    assert m.kernel("vanilla").series_sha == ""
    assert "series_sha" not in m.kernel("vanilla").to_json()["given"]
    assert (
        m.kernel("patched").series_sha
        == sources.read_patches(DEFAULT_PATCHES).digest
    )


# ---- a reused --out ---------------------------------------------------------


@pytest.mark.parametrize("dry", [[], ["--dry-run"]])
def test_a_finished_run_in_out_is_refused_and_kept(
    finished, capsys, tmp_cache, dry
):
    """compare --out of a finished run, without --resume: one line, exit 2,
    every byte of the run as it was, nothing in the cache."""
    before = bytes_under(finished)
    rc = cli.main([*ARGS, "--out", str(finished), *dry])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == errors.UsageError.exit_code and len(err) == 1, err
    assert "holds a finished compare run (8 boots recorded)" in err[0]
    # a finished run has nothing to finish: --resume is not offered
    assert "--resume" not in err[0] and "--force" in err[0]
    assert bytes_under(finished) == before
    assert not tmp_cache.exists()


def test_an_interrupted_run_in_out_is_refused(
    tmp_path, records, capsys, tmp_cache
):
    out = tmp_path / "run"
    stopped = orchestrate.compare(
        request(*ARGS, "--out", str(out)),
        stand_in(tmp_path),
        FakeExecutor(records, signal_at=3),
    )
    assert isinstance(stopped.error, errors.StoppedError)
    before = bytes_under(out)
    capsys.readouterr()
    rc = cli.main([*ARGS, "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == errors.UsageError.exit_code and len(err) == 1, err
    assert "holds an unfinished compare run (2 boots recorded)" in err[0]
    assert bytes_under(out) == before


def test_boots_without_a_manifest_in_out_are_refused(tmp_path, capsys):
    out = tmp_path / "run"
    (out / "raw" / "pageout" / "vanilla-001").mkdir(parents=True)
    rc = cli.main([*ARGS, "--out", str(out), "--dry-run"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == errors.UsageError.exit_code and len(err) == 1, err
    assert "holds an unfinished compare run (no environment.json)" in err[0]


def test_force_replaces_the_run_in_out(finished, records, tmp_path, caplog):
    fake = FakeExecutor(records)
    with caplog.at_level("WARNING", "foliolab"):
        orchestrate.compare(
            request(*ARGS, "--out", str(finished), "--force"),
            stand_in(tmp_path),
            fake,
        )
    assert "--force deletes its boots and samples" in caplog.text
    assert fake.booted == 8
    assert len(derive.load_samples(finished)) == 8


def test_resume_and_force_together_are_refused(finished, capsys):
    rc = cli.main([*ARGS, "--out", str(finished), "--resume", "--force"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == errors.UsageError.exit_code and len(err) == 1, err
    assert "--resume keeps the run in --out, --force deletes it" in err[0]


def test_an_empty_out_is_a_new_run(tmp_path, records):
    out = tmp_path / "empty"
    out.mkdir()
    fake = FakeExecutor(records)
    orchestrate.compare(
        request(*ARGS, "--out", str(out)), stand_in(tmp_path), fake
    )
    assert fake.booted == 8


# ---- what a run hands back, and what the command shows of it -----------------


class FailingExecutor(FakeExecutor):
    """As FakeExecutor, but every boot of the kernel ``patched`` times
    out with nothing recorded."""

    def run(self, image, blocks):
        for block, caps in super().run(image, blocks):
            yield (
                block,
                [
                    BootCapture(c.rundir, Ended.TIMEOUT, b"", "", 1.0)
                    if "patched" in str(c.rundir)
                    else c
                    for c in caps
                ],
            )


def test_failed_boots_are_handed_back_not_printed(tmp_path, records, capsys):
    out = tmp_path / "run"
    done = orchestrate.compare(
        request(*ARGS, "--out", str(out)),
        stand_in(tmp_path),
        FailingExecutor(records),
    )
    assert isinstance(done, orchestrate.Finished)
    assert done.failures and all("patched" in f for f in done.failures)
    assert isinstance(done.error, errors.BenchmarkError)
    assert done.error.exit_code == 8
    assert done.error.one_line() == (
        f"{len(done.failures)} boot(s) failed; results so far are in "
        f"{out}; log: {out / 'report.txt'}"
    )
    assert done.written.text == (out / "report.txt").read_text()
    # the run's outcomes: its kernels as built, every boot a test, the
    # patched kernel's timed-out boots errors
    got = Outcomes.read(out)
    assert got.command == "compare"
    assert [(k.name, k.commit) for k in got.kernels] == [
        ("vanilla", "c0ffee"),
        ("patched", "c0ffee"),
    ]
    assert len(got.tests) == 8
    for t in got.tests:
        assert t.path.startswith(f"compare.{t.misc['workload']}.{t.kernel}.")
        assert t.status is (
            TestStatus.ERROR if t.kernel == "patched" else TestStatus.PASS
        )
        assert (out / t.log).is_file()
    assert {t.misc["boot"] for t in got.tests} == {"ok", "timeout"}
    # the orchestrator printed nothing: the report, the lines a run
    # starts with and the error are the command's to show
    printed = capsys.readouterr()
    assert printed.out == ""
    assert "# boots:" not in printed.err and "guest: " not in printed.err


def stand_ins(monkeypatch, tmp_path, executor):
    """`foliolab compare` with ``executor`` and stand-in kernels."""
    real = orchestrate.compare

    def compare(req, **kw):
        return real(req, stand_in(tmp_path), executor, **kw)

    monkeypatch.setattr(orchestrate, "compare", compare)


def test_the_command_shows_the_report_then_the_error(
    tmp_path, records, capsys, monkeypatch
):
    out = tmp_path / "run"
    stand_ins(monkeypatch, tmp_path, FailingExecutor(records))
    rc = cli.main([*ARGS, "--out", str(out)])
    printed = capsys.readouterr()
    assert rc == errors.BenchmarkError.exit_code
    assert printed.out == (out / "report.txt").read_text() + "\n"
    assert "# boots: 2 workload(s) x 2 run(s) x 2 kernels" in printed.err
    assert printed.err.splitlines()[-1].startswith(
        "foliolab: error: 4 boot(s) failed; results so far are in"
    )


def test_the_command_ends_with_the_headline(
    tmp_path, records, capsys, monkeypatch
):
    out = tmp_path / "run"
    stand_ins(monkeypatch, tmp_path, FakeExecutor(records))
    assert cli.main([*ARGS, "--out", str(out)]) == 0
    printed = capsys.readouterr()
    text = (out / "report.txt").read_text()
    head = text[: text.index("\nguest: ")]
    assert printed.out == (
        f"{head}\nfull report: {out}/report.txt (also report.html, "
        f"report.md, results.json, plots/; `foliolab report {out} "
        "--mail` for a mail)\n"
    )
    assert f"# results: {out}" in printed.err


def test_a_dry_run_is_planned(tmp_path, capsys):
    out = tmp_path / "run"
    planned = orchestrate.compare(
        request(*ARGS, "--out", str(out), "--dry-run")
    )
    assert isinstance(planned, orchestrate.Planned)
    assert planned.text.startswith("# dry run: 2 kernels, baseline vanilla")
    assert capsys.readouterr().out == "" and not out.exists()
