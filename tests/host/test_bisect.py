"""bisect.py: the search over a scratch git repository whose commits each
hold the count a stand-in lab reports for them (a file `count`), so the
right answer is known from the repository; skipped steps, a stop and a
resume, and bad input refused before the lab is made."""

import os
import signal
import subprocess
from pathlib import Path

import pytest

from foliolab import cli, errors, workloads
from foliolab.bisect import (
    lab as bisectlab,
)
from foliolab.bisect import (
    record as bisectrecord,
)
from foliolab.bisect import (
    search as bisect,
)
from foliolab.bisect.record import (
    BisectRequest,
    Measurement,
    StepStatus,
    Verdict,
    parse_threshold,
)
from foliolab.kernel.build import Kernel
from foliolab.testrecord import Outcomes, TestStatus

METRIC = "try_to_unmap_insns_per_folio"


def git(repo, *args):
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.org",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.org",
        },
    ).stdout.strip()


def scratch_repo(path: Path, counts: list[int]) -> list[str]:
    """A kernel-looking repository with one commit per count (the first
    is good); the commit ids, oldest first."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "mm").mkdir()
    (path / "mm" / "rmap.c").write_text("/* rmap */\n")
    (path / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 12\n")
    shas = []
    for i, n in enumerate(counts):
        (path / "count").write_text(f"{n}\n")
        git(path, "add", "-A")
        git(
            path,
            "-c",
            "commit.gpgsign=false",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            f"mm: step {i}",
        )
        shas.append(git(path, "rev-parse", "HEAD"))
    git(path, "tag", "good", shas[0])
    return shas


class FakeLab:
    """Builds are the commit's `count` file; a commit in ``unbuildable``
    fails to build, one in ``unbootable`` to boot; ``signal_at``: the
    n-th build sends this process SIGTERM (as `kill` would)."""

    def __init__(self, repo, unbuildable=(), unbootable=(), signal_at=0):
        self.repo, self.unbuildable = repo, set(unbuildable)
        self.unbootable, self.signal_at = set(unbootable), signal_at
        self.built: list[str] = []

    def __call__(self, req, commits):
        self.made = True
        return self

    def build(self, commit):
        self.built.append(commit.sha)
        if len(self.built) == self.signal_at:
            os.kill(os.getpid(), signal.SIGTERM)
        if commit.sha in self.unbuildable:
            raise errors.BuildError("build bisect/perf failed")
        return Kernel(
            "bisect",
            "perf",
            "x86_64",
            Path("/nonexistent"),
            Path("/nonexistent/bzImage"),
            commit.sha,
            "5ha",
            0.0,
        )

    def count(self, kernel, rundir):
        if kernel.commit in self.unbootable:
            return Measurement(StepStatus.BOOT_FAILED, detail="boot panic")
        return Measurement(
            StepStatus.COUNTED,
            float(git(self.repo, "show", f"{kernel.commit}:count")),
        )


def request(
    repo,
    tmp_path,
    bad="main",
    below="0.5x",
    above=None,
    metric=METRIC,
    resume=False,
):
    w = workloads.WORKLOADS["pageout"]
    return BisectRequest(
        repo,
        "good",
        bad,
        w,
        w.resolve({}),
        metric,
        parse_threshold(below, above),
        "x86_64",
        "perf",
        tmp_path / "out",
        resume,
        ["foliolab", "bisect"],
    )


# good at 1000; the batched unmap lands at commit 7 and halves it and more
COUNTS = [1000, 1000, 990, 1010, 1000, 1005, 1000, 420, 420, 415, 410]


@pytest.fixture
def repo(tmp_path):
    return tmp_path / "linux"


def test_finds_the_first_commit_below_half_of_good(repo, tmp_path, capsys):
    shas = scratch_repo(repo, COUNTS)
    lab = FakeLab(repo)
    r = bisect.bisect(request(repo, tmp_path), lab)
    assert r.first_bad == [shas[7]]
    assert "first bad commit: " + shas[7] + " mm: step 7" in r.result
    # good, bad, then halving 1..9: no commit twice, log2 steps
    assert [s.position for s in r.steps][:2] == [0, 10]
    assert len(set(lab.built)) == len(lab.built) <= 2 + 4
    printed = capsys.readouterr().out
    steps = [line for line in printed.splitlines() if line.startswith("step ")]
    assert len(steps) == len(r.steps) and " 410 -> bad" in steps[1]
    on_disk = bisectrecord.Record.read(tmp_path / "out")
    assert on_disk.first_bad == [shas[7]] and on_disk.steps == r.steps
    assert (
        tmp_path / "out" / "bisect.txt"
    ).read_text() == bisectrecord.render(r)


def test_above_an_absolute_count(repo, tmp_path):
    shas = scratch_repo(repo, [10, 10, 10, 30, 31, 40])
    r = bisect.bisect(
        request(repo, tmp_path, below=None, above="25"), FakeLab(repo)
    )
    assert r.first_bad == [shas[3]]


def test_an_unbuildable_step_is_skipped_for_a_neighbour(repo, tmp_path):
    shas = scratch_repo(repo, COUNTS)
    lab = FakeLab(repo, unbuildable={shas[5]}, unbootable={shas[8]})
    r = bisect.bisect(request(repo, tmp_path), lab)
    assert r.first_bad == [shas[7]]
    by_commit = {s.commit: s for s in r.steps}
    assert by_commit[shas[5]].status is StepStatus.BUILD_FAILED
    assert by_commit[shas[5]].verdict is Verdict.SKIP
    assert "build bisect/perf failed" in by_commit[shas[5]].detail
    # the neighbour of the skipped middle was tried instead
    assert shas[4] in by_commit or shas[6] in by_commit


def test_the_outcomes_are_the_steps_on_their_commits_kernels(repo, tmp_path):
    shas = scratch_repo(repo, COUNTS)
    lab = FakeLab(repo, unbuildable={shas[5]}, unbootable={shas[8]})
    r = bisect.bisect(request(repo, tmp_path), lab)
    got = Outcomes.read(tmp_path / "out")
    assert got.command == "bisect"
    assert [t.path for t in got.tests] == [
        f"bisect.{s.commit[:12]}" for s in r.steps
    ]
    assert [k.name for k in got.kernels] == [s.commit[:12] for s in r.steps]
    status = {t.path: t.status for t in got.tests}
    assert status[f"bisect.{shas[0][:12]}"] is TestStatus.PASS
    assert status[f"bisect.{shas[-1][:12]}"] is TestStatus.FAIL
    assert status[f"bisect.{shas[5][:12]}"] is TestStatus.ERROR
    if any(s.commit == shas[8] for s in r.steps):
        assert status[f"bisect.{shas[8][:12]}"] is TestStatus.ERROR
    bad = next(t for t in got.tests if t.path == f"bisect.{shas[-1][:12]}")
    assert bad.kernel == shas[-1][:12]
    assert bad.misc["value"] == 410.0 and bad.misc["verdict"] == "bad"
    assert bad.misc["limit"] == 500.0 and bad.misc["metric"] == METRIC
    assert bad.misc["threshold"] == "below 0.5x good's count"
    kernels = {k.name: k for k in got.kernels}
    # a commit that did not build has a kernel without a build
    assert kernels[shas[5][:12]].built is None
    assert kernels[shas[-1][:12]].commit == shas[-1]
    assert kernels[shas[0][:12]].spec == f"git:{repo.resolve()}@{shas[0]}"


def test_a_skipped_first_bad_commit_gives_the_span(repo, tmp_path):
    shas = scratch_repo(repo, COUNTS)
    r = bisect.bisect(
        request(repo, tmp_path), FakeLab(repo, unbuildable={shas[7]})
    )
    assert r.first_bad == [shas[7], shas[8]]
    assert "one of 2" in r.result


def test_bad_that_does_not_cross_is_no_answer(repo, tmp_path):
    scratch_repo(repo, [1000, 900, 800])
    with pytest.raises(errors.BenchmarkError, match="does not cross"):
        bisect.bisect(request(repo, tmp_path), FakeLab(repo))
    assert "no answer" in (tmp_path / "out" / "bisect.txt").read_text()


def test_an_error_of_the_lab_keeps_the_steps(repo, tmp_path):
    scratch_repo(repo, COUNTS)

    class BrokenQemu(FakeLab):
        def count(self, kernel, rundir):
            if len(self.built) == 3:
                raise errors.BootError("qemu-system-x86_64 is not installed")
            return super().count(kernel, rundir)

    with pytest.raises(errors.BootError):
        bisect.bisect(request(repo, tmp_path), BrokenQemu(repo))
    r = bisectrecord.Record.read(tmp_path / "out")
    assert len(r.steps) == 2 and "not installed" in r.result


def test_a_stopped_bisect_keeps_its_steps_and_resumes(repo, tmp_path):
    shas = scratch_repo(repo, COUNTS)
    with pytest.raises(errors.StoppedError) as stopped:
        bisect.bisect(request(repo, tmp_path), FakeLab(repo, signal_at=3))
    assert "--resume" in stopped.value.hint
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    kept = bisectrecord.Record.read(tmp_path / "out")
    assert kept.stopped == "SIGTERM" and len(kept.steps) == 2
    # the stopped bisect's outcomes are its two steps
    stopped_outcomes = Outcomes.read(tmp_path / "out")
    assert [t.path for t in stopped_outcomes.tests] == [
        f"bisect.{shas[0][:12]}",
        f"bisect.{shas[-1][:12]}",
    ]
    lab = FakeLab(repo)
    r = bisect.bisect(request(repo, tmp_path, resume=True), lab)
    assert r.first_bad == [shas[7]]
    # a kept step's kernel keeps the build the stopped bisect recorded
    resumed = Outcomes.read(tmp_path / "out")
    assert len(resumed.tests) == len(r.steps)
    assert [k.commit for k in resumed.kernels] == [s.commit for s in r.steps]
    assert shas[0] not in lab.built and shas[-1] not in lab.built
    assert len(lab.built) == len(r.steps) - 2
    # another metric is another bisect: its counts are not these
    with pytest.raises(errors.UsageError, match="--resume: the bisect in"):
        bisect.bisect(
            request(
                repo, tmp_path, resume=True, metric="kernel_insns_per_folio"
            ),
            FakeLab(repo),
        )


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--good", "nosuch"], "'nosuch' is not a commit"),
        (["--good", "main", "--bad", "good"], "is not an ancestor of --bad"),
        (["--bad", "good"], "are the same commit"),
        (["--workload", "nosuch"], "unknown workload 'nosuch'"),
        (["--metric", "nosuch"], "workload pageout has no metric 'nosuch'"),
        (["--metric", "pageout_ms"], "pageout_ms is a timed metric"),
        (["--metric", "kernel_insns_deterministic"], "derived from repeated"),
        (["--below", "half"], "--below 'half' is not a threshold"),
        (["--above", "2"], "give one threshold"),
        (["--param", "size_mb=0"], "bad value '0' for pageout.size_mb"),
    ],
)
def test_bad_input_is_one_line_before_anything_is_built(
    repo, tmp_path, capsys, monkeypatch, argv, says
):
    scratch_repo(repo, COUNTS)
    lab = FakeLab(repo)
    monkeypatch.setattr(bisect, "QemuLab", lab)
    base = {
        "--repo": str(repo),
        "--good": "good",
        "--bad": "main",
        "--workload": "pageout",
        "--metric": METRIC,
        "--below": "0.5x",
        "--out": str(tmp_path / "out"),
    }
    for k, v in zip(argv[::2], argv[1::2]):
        base[k] = v
    code = cli.main(["bisect", *[a for kv in base.items() for a in kv]])
    err = capsys.readouterr().err.strip()
    assert code == 2 and says in err and len(err.splitlines()) == 1
    assert not hasattr(lab, "made") and not (tmp_path / "out").exists()


def test_not_a_kernel_tree_is_refused(tmp_path):
    repo = tmp_path / "notlinux"
    scratch_repo(repo, COUNTS)
    git(repo, "rm", "-q", "-r", "mm")
    git(repo, "-c", "commit.gpgsign=false", "commit", "-q", "-m", "rm mm")
    with pytest.raises(errors.UsageError, match="not a Linux kernel tree"):
        bisect.bisect(request(repo, tmp_path), FakeLab(repo))


def test_report_prints_a_bisect_directory(repo, tmp_path, capsys):
    shas = scratch_repo(repo, COUNTS)
    bisect.bisect(request(repo, tmp_path), FakeLab(repo))
    capsys.readouterr()
    assert cli.main(["report", str(tmp_path / "out")]) == 0
    assert f"first bad commit: {shas[7]}" in capsys.readouterr().out


@pytest.mark.parametrize(
    "below, above, want",
    [
        ("0.5x", None, (bisectrecord.Direction.BELOW, 0.5, True)),
        (None, "1200", (bisectrecord.Direction.ABOVE, 1200.0, False)),
        (None, "1.25x", (bisectrecord.Direction.ABOVE, 1.25, True)),
    ],
)
def test_thresholds(below, above, want):
    t = parse_threshold(below, above)
    assert (t.direction, t.value, t.relative) == want
    assert t.crossed(499, 1000) is (want[0] is bisectrecord.Direction.BELOW)


@pytest.mark.parametrize("cache_has_good", [True, False])
def test_the_range_is_fetched_once_and_shallow_only_if_it_must(
    repo, tmp_path, monkeypatch, cache_has_good
):
    shas = scratch_repo(repo, COUNTS)
    cache = tmp_path / "cache-linux"
    git(tmp_path, "init", "-q", str(cache))
    if cache_has_good:
        git(cache, "fetch", "-q", str(repo), "good:refs/heads/good")
    assert (
        subprocess.run(
            ["git", "-C", str(cache), "cat-file", "-e", shas[-1]]
        ).returncode
        != 0
    )
    monkeypatch.setattr(bisectlab.source, "prepare_base", lambda: cache)
    commits = bisectlab.commit_range(repo, "good", "main")
    bisectlab.fetch_range(repo, commits)
    assert git(cache, "cat-file", "-t", shas[-1]) == "commit"
    shallow = (cache / ".git" / "shallow").exists()
    assert shallow is not cache_has_good
