"""--count and a workload that marks no counting window (stutterp, a
user's folder): it is timed only, never given a counting boot whose
sample could only be invalid; --count where no workload marks a window
is refused before anything is built. No kernel is built or booted."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from test_measure import fake_request
from test_orchestrate import request

from foliolab import bootrecord, cli
from foliolab.analysis.runboots import missing_boots
from foliolab.analysis.workloadstats import invalid_lines, summarize_workload
from foliolab.boot import derive, measure
from foliolab.bootrecord import BootStatus, Pass
from foliolab.counting import Counter
from foliolab.run import dryrun, orchestrate
from foliolab.workloads import WORKLOADS

COUNTED, UNCOUNTED = WORKLOADS["pageout"], WORKLOADS["stutterp"]


def test_the_two_workloads_are_what_this_file_takes_them_for():
    assert COUNTED.has_window and not UNCOUNTED.has_window


def test_a_counting_plan_gives_counting_boots_only_to_a_counted_workload():
    boots = measure.plan([COUNTED, UNCOUNTED], {}, ("a", "b"), 2, 1, True)
    passes = {
        w.name: [(b.name, b.what) for b in boots if b.workload is w]
        for w in (COUNTED, UNCOUNTED)
    }
    assert passes[COUNTED.name] == [
        ("a-000", Pass.TIMED),
        ("a-000-count", Pass.COUNT),
        ("b-000", Pass.TIMED),
        ("b-000-count", Pass.COUNT),
        ("b-001", Pass.TIMED),
        ("b-001-count", Pass.COUNT),
        ("a-001", Pass.TIMED),
        ("a-001-count", Pass.COUNT),
    ]
    assert passes[UNCOUNTED.name] == [
        ("a-000", Pass.TIMED),
        ("b-000", Pass.TIMED),
        ("b-001", Pass.TIMED),
        ("a-001", Pass.TIMED),
    ]
    # the whole plan numbered in boot order, with no gap
    assert [b.seq for b in boots] == list(range(12))


class PassRecorder:
    """Boots nothing: says which boots it was handed (a counting one is
    one with a counter) and gives each a sample that ends cleanly."""

    kind = "fake"
    rounds_per_block = 0

    def __init__(self) -> None:
        self.booted: list[tuple[str, str, bool]] = []

    def run(self, image, blocks):
        from foliolab.executors.base import BootCapture, Ended

        for block in blocks:
            caps = []
            for b in block.boots:
                self.booted.append(
                    (
                        b.rundir.parent.name,
                        b.rundir.name,
                        b.spec.counter is not None,
                    )
                )
                caps.append(
                    BootCapture(
                        b.rundir,
                        Ended.EXITED,
                        b"",
                        "@@ sample 0\n@@ exit 0\n",
                        1.0,
                    )
                )
            yield block, caps


def test_a_counting_run_counts_one_workload_times_the_other_and_resumes(
    tmp_path,
):
    counter = Counter(tmp_path / "plugin.so", tmp_path / "System.map")
    fake = PassRecorder()
    req, _ = fake_request(
        tmp_path, ["a", "b"], runs=2, counters={"a": counter, "b": counter}
    )
    req.workloads = [COUNTED, UNCOUNTED]
    req.executor = fake
    res = measure.run_workloads(req)
    assert res.planned == 12
    counted = {(w, n) for w, n, c in fake.booted if c}
    assert {w for w, _ in counted} == {COUNTED.name}
    assert len(counted) == 4
    assert [n for w, n, _ in fake.booted if w == UNCOUNTED.name] == [
        "a-000",
        "b-000",
        "b-001",
        "a-001",
    ]
    assert not list((req.out / "raw" / UNCOUNTED.name).glob("*-count"))
    # a stutterp sample of this run is a timed one, never "no counting
    # window -1"
    assert not any(
        s.counts or "no counting window" in "; ".join(s.reasons)
        for s in res.samples
        if s.workload == UNCOUNTED.name
    )

    # --resume plans the same boots, by name: every one kept, none booted
    again = PassRecorder()
    req.executor, req.resume = again, True
    resumed = measure.run_workloads(req)
    assert (resumed.planned, resumed.kept, again.booted) == (12, 12, [])


def _manifest(count: bool) -> SimpleNamespace:
    """What missing_boots reads of a run's manifest."""
    return SimpleNamespace(
        runs=2,
        samples_per_boot=1,
        count=object() if count else None,
        workloads=[COUNTED.name, UNCOUNTED.name],
        names=["a", "b"],
    )


def _boots_on_disk(out, names: list[tuple[str, str]]) -> None:
    for w, n in names:
        d = out / "raw" / w / n
        d.mkdir(parents=True)
        (d / bootrecord.BOOT_FILE).write_text("{}\n")


def test_a_counting_run_misses_no_counting_boot_of_an_uncounted_workload(
    tmp_path,
):
    boots = measure.plan([COUNTED, UNCOUNTED], {}, ("a", "b"), 2, 1, True)
    _boots_on_disk(tmp_path, [(b.workload.name, b.name) for b in boots])
    assert missing_boots(_manifest(count=True), tmp_path) == []


def test_an_old_run_with_stutterps_counting_boots_misses_none(tmp_path):
    """A run from before: stutterp was given counting boots too."""
    old = [
        (w, f"{k}-{r:03d}{c}")
        for w in (COUNTED.name, UNCOUNTED.name)
        for k in "ab"
        for r in range(2)
        for c in ("", "-count")
    ]
    _boots_on_disk(tmp_path, old)
    assert missing_boots(_manifest(count=True), tmp_path) == []
    # and a counted workload's counting boot gone is still missed
    (tmp_path / "raw" / COUNTED.name / "a-001-count" / "boot.json").unlink()
    assert missing_boots(_manifest(count=True), tmp_path) == [
        "3 of 4 boots of pageout/a finished"
    ]


def _timed(variant: str, run: int, latency: float) -> derive.Sample:
    return derive.Sample(
        UNCOUNTED.name,
        variant,
        run,
        {"stutterp.mmap_latency": latency, "mmap_us_p99": 2 * latency},
        True,
        [],
        BootStatus.OK,
        f"raw/stutterp/{variant}-{run:03d}",
    )


def _old_counting(variant: str, run: int) -> derive.Sample:
    """What a counting boot of stutterp gave before this rule."""
    return derive.Sample(
        UNCOUNTED.name,
        variant,
        run,
        {},
        False,
        ["no counting window -1 in counts.txt"],
        BootStatus.OK,
        f"raw/stutterp/{variant}-{run:03d}-count",
        counts=f"raw/stutterp/{variant}-{run:03d}-count/counts.txt",
    )


TIMED = [
    _timed(v, r, x)
    for v, xs in (("a", (100.0, 101, 99, 100)), ("b", (80.0, 81, 79, 80)))
    for r, x in enumerate(xs)
]


def test_a_new_counting_run_reports_stutterps_times_and_nothing_invalid():
    rows = summarize_workload(UNCOUNTED, TIMED, ["a", "b"])
    assert {r.metric for r in rows} == {
        "stutterp.mmap_latency",
        "mmap_us_p99",
    }
    assert invalid_lines(UNCOUNTED, TIMED, ["a", "b"]) == []


def test_an_old_runs_invalid_counting_samples_are_reported_as_before():
    old = TIMED + [_old_counting(v, r) for v in "ab" for r in range(4)]
    rows = summarize_workload(UNCOUNTED, old, ["a", "b"])
    assert rows == summarize_workload(UNCOUNTED, TIMED, ["a", "b"])
    lines = invalid_lines(UNCOUNTED, old, ["a", "b"])
    assert lines[0] == "a: 4 of 8 samples INVALID (excluded):"
    assert lines[1] == "  run 0: no counting window -1 in counts.txt"
    assert len(lines) == 10


def _start(tmp_path, *argv: str) -> str:
    run = request(
        "compare",
        "--patches",
        "none",
        "--accel",
        "tcg",
        "--runs",
        "2",
        "--out",
        str(tmp_path / "run"),
        *argv,
    ).stages()
    return dryrun.start_block(run.kernels, run.plan, run.machine)


def test_a_counting_run_says_its_boots_without_an_uncounted_workloads(
    tmp_path, tmp_cache
):
    lines = _start(
        tmp_path, "--count", "--workloads", "pageout,stutterp"
    ).splitlines()
    assert (
        "# boots: 2 workload(s) x 2 run(s) x 2 kernels = 8 boots (+4 counting)"
    ) in lines
    assert any(" 12 boot(s) " in x for x in lines if x.startswith("# est"))


def test_a_counting_dry_run_says_and_lists_its_boots(tmp_path, tmp_cache):
    out = tmp_path / "run"
    planned = orchestrate.compare(
        request(
            "compare",
            "--patches",
            "none",
            "--accel",
            "tcg",
            "--workloads",
            "pageout,stutterp",
            "--runs",
            "2",
            "--count",
            "--out",
            str(out),
            "--dry-run",
        )
    )
    assert isinstance(planned, orchestrate.Planned)
    lines = planned.text.splitlines()
    assert lines[0].endswith("; 12 boots, 8 samples")
    assert any(" 12 boot(s) " in x for x in lines if x.startswith("# est"))
    assert (
        "# pageout: 2 rounds x 2 kernels (each boot followed by a "
        "counting boot)" in lines
    )
    assert (
        "# stutterp: 2 rounds x 2 kernels (timed only: it marks no "
        "counting window)"
    ) in lines
    assert not out.exists()


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]])
def test_count_of_only_uncounted_workloads_is_refused_before_any_build(
    tmp_path, nothing_built, capsys, dry_run
):
    out = tmp_path / "out"
    rc = cli.main(
        [
            "compare",
            "--workloads",
            "stutterp",
            "--runs",
            "4",
            "--count",
            "--out",
            str(out),
            *dry_run,
        ]
    )
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if not x.startswith("WARNING")]
    assert rc == 2, err
    assert lines == [
        "foliolab: error: --count: none of the workloads (stutterp) marks "
        "a counting window, so there is nothing to count; leave --count out"
    ]
    assert nothing_built == []
    assert not out.exists()


def test_a_users_folder_is_timed_beside_a_counted_workload(
    tmp_path, tmp_cache, nothing_built, capsys
):
    """A user's folder marks no window: beside pageout under --count it
    is timed only (it used to be refused); alone, --count is refused."""
    from test_user_workload import good_folder

    folder = good_folder(tmp_path)
    argv = ["compare", "--patches", "none", "--accel", "tcg", "--runs", "2"]
    out = tmp_path / "out"
    rc = cli.main(
        [
            *argv,
            "--workloads",
            f"pageout,{folder}",
            "--count",
            "--out",
            str(out),
            "--dry-run",
        ]
    )
    said = capsys.readouterr()
    assert rc == 0, said.err
    assert (
        "# mywl: 2 rounds x 2 kernels (timed only: it marks no counting "
        "window)"
    ) in said.out.splitlines()
    assert said.out.splitlines()[0].endswith("; 12 boots, 8 samples")
    rc = cli.main(
        [*argv, "--workloads", str(folder), "--count", "--out", str(out)]
    )
    err = capsys.readouterr().err
    assert rc == 2
    assert "--count: none of the workloads (mywl) marks a counting" in err
    assert nothing_built == [] and not out.exists()


def test_a_shorter_run_counts_only_a_workload_with_a_window(tmp_path):
    def offered(workloads: str) -> list[str]:
        run = request(
            "compare",
            "--patches",
            "none",
            "--workloads",
            workloads,
            "--runs",
            "10",
            "--out",
            str(tmp_path / "run"),
        ).stages()
        return [opts for opts, _ in dryrun.shorter_plans(run.plan)]

    assert offered("stutterp,pageout")[-1] == (
        "--count --runs 2 --workloads pageout"
    )
    assert not any("--count" in x for x in offered("stutterp"))
