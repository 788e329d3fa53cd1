"""compare --sweep: the sweep's points (workloads/sweep.py), the growth
analysis (analysis/growth.py: the exponent fit on known power laws with
noise, the crossing) and what a run with a sweep plans, records, refuses
and reports."""

import json
import math
import random
import shutil

import pytest
from test_orchestrate import FakeExecutor, request, stand_in

from foliolab import errors, workloads
from foliolab.analysis.growth import (
    GrowthPoint,
    crossing,
    fit_exponent,
    growth_tables,
)
from foliolab.boot import derive
from foliolab.boot.derive import Sample
from foliolab.bootrecord import BootStatus
from foliolab.render import growth as report_growth
from foliolab.render import report
from foliolab.run import orchestrate
from foliolab.run import record as runrecord
from foliolab.workloads import sweep
from foliolab.workloads.model import MACHINE_VCPUS


def noisy_power_law(exponent, xs, per_point=3, sigma=0.02, seed=1):
    rng = random.Random(seed)
    out_x, out_y = [], []
    for x in xs:
        for _ in range(per_point):
            out_x.append(x)
            out_y.append(7.0 * x**exponent * math.exp(rng.gauss(0, sigma)))
    return out_x, out_y


VMAS = [1000, 2000, 5000, 10000, 20000, 60000]


@pytest.mark.parametrize("exponent", [1.0, 0.0, -0.75, 0.5])
def test_the_fit_finds_a_known_exponent_inside_its_interval(exponent):
    e = fit_exponent(*noisy_power_law(exponent, VMAS))
    assert e.slope is not None and e.lo is not None and e.hi is not None
    assert e.lo < exponent < e.hi
    assert abs(e.slope - exponent) < 0.03
    assert e.points == 6 and e.samples == 18
    # 2% noise over a factor of 60 pins the slope to a few hundredths
    assert e.hi - e.lo < 0.05


def test_the_interval_excludes_a_wrong_exponent():
    """A test that can fail: linear data is not flat, nor O(1)."""
    e = fit_exponent(*noisy_power_law(1.0, VMAS))
    assert e.lo is not None and not e.lo <= 0.0 <= e.hi
    assert not e.lo <= 0.9 <= e.hi


def test_an_exact_power_law_has_an_interval_of_no_width():
    xs = [16, 64, 256, 1024]
    e = fit_exponent(xs, [5.0 * x**-0.5 for x in xs])
    assert e.slope == pytest.approx(-0.5)
    assert e.lo == pytest.approx(-0.5) and e.hi == pytest.approx(-0.5)


def test_two_samples_give_a_slope_and_no_interval():
    e = fit_exponent([2, 4], [10.0, 40.0])
    assert e.slope == pytest.approx(2.0)
    assert e.lo is None and "no interval" in e.why


def test_values_at_or_below_zero_are_left_out_and_said():
    e = fit_exponent([2, 4, 8, 16], [0.0, 4.0, 8.0, 16.0])
    assert e.slope == pytest.approx(1.0) and e.samples == 3
    assert "1 sample(s) at or below 0 left out" in e.why
    e = fit_exponent([2, 4], [0.0, 0.0])
    assert e.slope is None and "fewer than two" in e.why


def point(value, base, other):
    return GrowthPoint(value, f"w@p={value}", {"a": base, "b": other}, {})


def test_a_crossing_is_found_between_points_on_log_axes():
    points = (point(1, 10, 20), point(4, 10, 5), point(16, 10, 1))
    # ratio 2 at 1, 0.5 at 4: log ratio crosses 0 halfway on log x
    assert crossing(points, "b", "a") == pytest.approx(2.0)
    assert crossing((point(1, 10, 5), point(4, 10, 1)), "b", "a") is None


# ---- the sweep's points --------------------------------------------------


def parse(items, names="pageout,dirty-tlb,ksm-rmap", params=(), numa=1):
    wl = workloads.get_workloads(names)
    p = workloads.parse_params(list(params), wl)
    return wl, p, sweep.parse_sweeps(items, wl, p, numa, 64)


def test_points_are_workloads_of_their_own_in_sweep_order():
    wl, p, sweeps = parse(["pageout.folio_kb=16,2048", "vcpus=2,8"])
    points, params = sweep.expand(wl, p, sweeps)
    names = [w.name for w in points]
    assert names == [
        "pageout@folio_kb=16,vcpus=2",
        "pageout@folio_kb=16,vcpus=8",
        "pageout@folio_kb=2048,vcpus=2",
        "pageout@folio_kb=2048,vcpus=8",
        "dirty-tlb@vcpus=2",
        "dirty-tlb@vcpus=8",
        "ksm-rmap@vcpus=2",
        "ksm-rmap@vcpus=8",
    ]
    by = {w.name: w for w in points}
    big = by["pageout@folio_kb=2048,vcpus=8"]
    assert big.sweep_of == "pageout" and big.vcpus == 8
    assert big.resolve(params[big.name])["folio_kb"] == "2048"
    # dirty-tlb's workers follow the vCPUs, two each
    assert by["dirty-tlb@vcpus=8"].resolve({})["workers"] == "16"
    assert set(params) == set(by)


def test_a_fixed_parameter_does_not_follow_the_vcpus():
    wl, p, sweeps = parse(
        ["dirty-tlb.vcpus=2,8"], "dirty-tlb", ["dirty-tlb.workers=3"]
    )
    points, params = sweep.expand(wl, p, sweeps)
    assert [w.resolve(params[w.name])["workers"] for w in points] == [
        "3",
        "3",
    ]


def test_a_point_found_by_its_name_is_the_point():
    wl, p, sweeps = parse(["pageout.folio_kb=16,256"], "pageout")
    points, _ = sweep.expand(wl, p, sweeps)
    for w in points:
        found = workloads.find(w.name)
        assert found is not None
        assert (found.name, found.point, found.sweep_of) == (
            w.name,
            w.point,
            "pageout",
        )
        assert found.resolve({}) == w.resolve({})
    assert workloads.find("pageout@no_such=1") is None
    assert workloads.find("pageout") is workloads.WORKLOADS["pageout"]


@pytest.mark.parametrize(
    "items, names, params, says",
    [
        (["pageout.folio_kb=3,16"], "pageout", (), "bad value '3'"),
        (["pageout.folio_kb=16"], "pageout", (), "two different values"),
        (["pageout.folio_kb=16,16"], "pageout", (), "two different values"),
        (["pageout.folio_kb"], "pageout", (), "is not [WORKLOAD.]PARAM"),
        (["khugepaged.vmas=1,2"], "pageout", (), "is not being run"),
        (["pageout.vmas=1,2"], "pageout", (), "no selected workload"),
        (["vcpus=2,65"], "pageout", (), "bad vCPU count '65'"),
        (["vcpus=0,2"], "pageout", (), "bad vCPU count '0'"),
        # ksm-rmap boots with 2 NUMA nodes: 3 vCPUs do not split
        (["vcpus=2,3"], "ksm-rmap", (), "cannot be split"),
        (
            ["pageout.folio_kb=16,64"],
            "pageout",
            ("pageout.folio_kb=64",),
            "--param and --sweep both set pageout.folio_kb",
        ),
        (
            ["pageout.size_mb=1,2", "pageout.size_mb=3,4"],
            "pageout",
            (),
            "sweeps pageout.size_mb twice",
        ),
        (
            [
                "pageout.size_mb=" + ",".join(map(str, range(1, 10))),
                "vcpus=" + ",".join(map(str, range(1, 9))),
            ],
            "pageout",
            (),
            "makes 72 points",
        ),
    ],
)
def test_a_bad_sweep_is_one_line(items, names, params, says):
    with pytest.raises(errors.UsageError) as e:
        parse(items, names, params)
    assert says in str(e.value)
    assert "\n" not in str(e.value)


def test_a_bad_sweep_is_refused_before_anything_is_built(tmp_path):
    """Through the command line: exit 2, one line, no run directory."""
    from foliolab import cli

    out = tmp_path / "run"
    rc = cli.main(
        [
            "compare",
            "--workloads",
            "pageout",
            "--sweep",
            "pageout.folio_kb=16,3",
            "--out",
            str(out),
        ]
    )
    assert rc == 2 and not out.exists()


# ---- a run with a sweep --------------------------------------------------

SWEEP_ARGS = (
    "compare",
    "--patches",
    "none",
    "--workloads",
    "pageout",
    "--runs",
    "2",
    "--sweep",
    "pageout.size_mb=64,256",
)


def test_a_sweep_is_interleaved_recorded_and_resumed(
    tmp_path, data, monkeypatch
):
    records = (data / "pageout-results.txt").read_text()
    out = tmp_path / "run"
    req = request(*SWEEP_ARGS, "--out", str(out))
    boots = req.stages().plan.boots(counted=False)
    # each point's rounds interleave the kernels, ABBA, as any workload's
    assert [(b.workload.name, b.kernel) for b in boots] == [
        ("pageout@size_mb=64", "vanilla"),
        ("pageout@size_mb=64", "patched"),
        ("pageout@size_mb=64", "patched"),
        ("pageout@size_mb=64", "vanilla"),
        ("pageout@size_mb=256", "vanilla"),
        ("pageout@size_mb=256", "patched"),
        ("pageout@size_mb=256", "patched"),
        ("pageout@size_mb=256", "vanilla"),
    ]
    stopped = orchestrate.compare(
        req, stand_in(tmp_path), FakeExecutor(records, signal_at=6)
    )
    assert isinstance(stopped.error, errors.StoppedError)
    m = json.loads((out / "environment.json").read_text())
    assert m["sweeps"] == {"pageout": {"size_mb": ["64", "256"]}}
    assert m["workloads"] == ["pageout@size_mb=64", "pageout@size_mb=256"]
    assert m["params"]["pageout@size_mb=256"]["size_mb"] == "256"
    job = json.loads(
        (out / "raw/pageout@size_mb=64/vanilla-000/job.json").read_text()
    )
    assert job["params"]["size_mb"] == "64"

    # another sweep is not this run
    with pytest.raises(errors.UsageError, match="has --sweep"):
        orchestrate.compare(
            request(
                *SWEEP_ARGS[:-1],
                "pageout.size_mb=64,128",
                "--out",
                str(out),
                "--resume",
            ),
            stand_in(tmp_path),
            FakeExecutor(records),
        )
    fake = FakeExecutor(records)
    finished = orchestrate.compare(
        request(*SWEEP_ARGS, "--out", str(out), "--resume"),
        stand_in(tmp_path),
        fake,
    )
    assert isinstance(finished, orchestrate.Finished)
    assert finished.error is None
    assert fake.booted == 3  # boots 1-5 were kept
    results = json.loads((out / "results.json").read_text())
    # no growth declared for size_mb: each primary metric's
    tables = [t for t in results["growth"] if t["metric"] == "pageout_ms"]
    assert [p["value"] for p in tables[0]["points"]] == [64, 256]
    assert tables[0]["exponents"]["vanilla"]["samples"] == 4
    text = (out / "report.txt").read_text()
    assert "== Growth" in text and "pageout by size_mb" in text
    # the exponents are in the head `compare` prints at its end, and the
    # points are not a headline row each
    head = "\n".join(finished.written.headline)
    assert "pageout@size_mb=64 " not in head
    assert "pageout by size_mb, MADV_PAGEOUT time: vanilla 0.00" in head
    assert max(len(line) for line in text.splitlines()) <= 100
    assert any(
        p.name.startswith("growth-pageout-size_mb")
        for p in (out / "plots").iterdir()
    )


def test_the_manifest_keeps_a_vcpu_sweeps_machines(tmp_path):
    req = request(
        "compare",
        "--patches",
        "none",
        "--workloads",
        "dirty-tlb",
        "--sweep",
        "vcpus=2,4",
        "--out",
        str(tmp_path / "r"),
    )
    m = runrecord.start_manifest(req.stages())
    assert m.sweeps == {"dirty-tlb": {MACHINE_VCPUS: ["2", "4"]}}
    assert m.vcpus_per_workload == {
        "dirty-tlb@vcpus=2": 2,
        "dirty-tlb@vcpus=4": 4,
    }


def sample(workload, variant, run, values):
    return Sample(workload, variant, run, values, True, [], BootStatus.OK, "")


def test_growth_reports_per_page_where_the_metric_is_per_folio():
    """try_to_unmap's instructions per folio, flat per page on one kernel
    (linear per folio) and falling on the other."""
    wl, p, sweeps = parse(["pageout.folio_kb=16,64,256"], "pageout")
    points, params = sweep.expand(wl, p, sweeps)
    samples = []
    for w in points:
        kb = int(w.resolve({})["folio_kb"])
        pages = kb // 4
        for run in range(2):
            samples += [
                sample(
                    w.name,
                    "up",
                    run,
                    {"try_to_unmap_insns_per_folio": 1000.0 * pages},
                ),
                sample(
                    w.name,
                    "next",
                    run,
                    {"try_to_unmap_insns_per_folio": 1000.0 * pages**0.25},
                ),
            ]
    tables = growth_tables(points, samples, ["up", "next"])
    t = next(t for t in tables if t.metric == "try_to_unmap_insns_per_folio")
    assert t.label.endswith("per page")
    assert [p.means["up"] for p in t.points] == [1000.0] * 3
    assert t.exponents["up"].slope == pytest.approx(0.0, abs=1e-9)
    assert t.exponents["next"].slope == pytest.approx(-0.75)
    assert t.points[0].ratio("next", "up") == pytest.approx(4**0.25 / 4)
    assert t.crossings["next"] is None


def test_a_sweep_steering_the_folio_size_is_fitted_against_the_size_measured():
    """file-reclaim's readahead only steers the folio size: the exponent
    is of the cost on the size each sample measured, not on the setting.
    Here the settings 16, 64 and 256 KiB give folios of 16, 32 and 32 KiB
    and a cost per page that is 1000 / pages on next: against the setting
    the fit would be about -0.25, against the size it is -1."""
    wl, p, sweeps = parse(
        ["file-reclaim.readahead_kb=16,64,256"], "file-reclaim"
    )
    points, params = sweep.expand(wl, p, sweeps)
    got = {16: 16.0, 64: 32.0, 256: 32.0}
    samples = []
    for w in points:
        kb = got[int(w.resolve({})["readahead_kb"])]
        for run in range(2):
            for variant, cost in (("up", 80.0), ("next", 1000 * 4 / kb)):
                samples.append(
                    sample(
                        w.name,
                        variant,
                        run,
                        {
                            "try_to_unmap_insns_per_page": cost,
                            "reclaimed_folio_kb": kb,
                        },
                    )
                )
    tables = growth_tables(points, samples, ["up", "next"])
    t = next(t for t in tables if t.metric == "try_to_unmap_insns_per_page")
    assert (t.param, t.against, t.axis) == (
        "readahead_kb",
        "reclaimed_folio_kb",
        "reclaimed_folio_kb",
    )
    assert [(p.value, p.at) for p in t.points] == [
        (16, 16.0),
        (64, 32.0),
        (256, 32.0),
    ]
    assert t.exponents["up"].slope == pytest.approx(0.0, abs=1e-9)
    assert t.exponents["next"].slope == pytest.approx(-1.0)
    # next crosses up where 4000 / kb = 80: at 50 KiB, outside 16-32
    assert t.crossings["next"] is None
    text = "\n".join(report_growth.text_lines(tables))
    assert "against reclaimed_folio_kb as measured" in text
    assert "between reclaimed_folio_kb 16 and 32" in text
    # a timed sample, which measures no size, is placed at its point's
    # measured size; at a point where nothing measured it, it is left out
    samples.append(
        sample(points[0].name, "next", 9, {"try_to_unmap_insns_per_page": 1.0})
    )
    again = growth_tables(points, samples, ["up", "next"])
    t2 = next(t for t in again if t.metric == "try_to_unmap_insns_per_page")
    assert t2.exponents["next"].samples == t.exponents["next"].samples + 1
    assert t2.points[0].at == 16.0 and t2.points[0].counts["next"] == 3
    last = points[-1].name
    unmeasured = [
        sample(
            s.workload,
            s.variant,
            s.run,
            {k: v for k, v in s.values.items() if k != "reclaimed_folio_kb"},
        )
        if s.workload == last
        else s
        for s in samples
    ]
    t3 = next(
        t
        for t in growth_tables(points, unmeasured, ["up", "next"])
        if t.metric == "try_to_unmap_insns_per_page"
    )
    assert t3.points[-1].counts == {"up": 0, "next": 0}
    assert t3.exponents["next"].samples == t2.exponents["next"].samples - 2
    # shown as measured nowhere, not at its setting
    assert math.isnan(t3.points[-1].at)
    assert t3.points[-1].value == 256
    assert "between reclaimed_folio_kb 16 and 32" in "\n".join(
        report_growth.text_lines([t3])
    )


def test_each_kernel_is_placed_at_the_size_it_measured():
    """Two kernels that reclaim different folio sizes at one setting: each
    kernel's samples, timed ones too, sit at its own size, and the table
    gives a size column per kernel."""
    wl, p, sweeps = parse(["file-reclaim.readahead_kb=16,256"], "file-reclaim")
    points, params = sweep.expand(wl, p, sweeps)
    size = {("up", 16): 4.0, ("up", 256): 4.0, ("next", 16): 16.0}
    size[("next", 256)] = 256.0
    samples = []
    for w in points:
        ra = int(w.resolve({})["readahead_kb"])
        for k in ("up", "next"):
            kb = size[(k, ra)]
            cost = 1000 * 4 / kb
            samples.append(
                sample(
                    w.name,
                    k,
                    0,
                    {
                        "try_to_unmap_insns_per_page": cost,
                        "reclaimed_folio_kb": kb,
                    },
                )
            )
            # a timed pass: no size of its own
            samples.append(
                sample(w.name, k, 1, {"try_to_unmap_insns_per_page": cost})
            )
    (t,) = [
        t
        for t in growth_tables(points, samples, ["up", "next"])
        if t.metric == "try_to_unmap_insns_per_page"
    ]
    assert t.points[1].measured == {"up": 4.0, "next": 256.0}
    # next: 250 at 16 KiB, 15.6 at 256 KiB, every sample at its own size
    assert t.exponents["next"].slope == pytest.approx(-1.0)
    assert t.exponents["next"].lo == pytest.approx(-1.0)
    text = "\n".join(report_growth.text_lines([t]))
    assert (
        "reclaimed_folio_kb[up]" in text and "reclaimed_folio_kb[next]" in text
    )


def test_a_size_nothing_measured_is_said_not_dropped():
    """Without --count no sample measures the folio size: the table stays,
    and its exponents say why they are missing."""
    wl, p, sweeps = parse(["file-reclaim.readahead_kb=16,256"], "file-reclaim")
    points, params = sweep.expand(wl, p, sweeps)
    samples = [
        sample(w.name, k, 0, {"reclaim_real_s": 0.1})
        for w in points
        for k in ("up", "next")
    ]
    tables = growth_tables(points, samples, ["up", "next"])
    t = next(t for t in tables if t.metric == "reclaim_real_s")
    assert t.exponents["up"].slope is None
    assert "compare --count" in t.exponents["up"].why


# ---- a recorded sweep ------------------------------------------------------

# Cut from a real sweep (/lab/runs/sweep-612, 2026-11-28: 6.12 against
# 6.12 + patches/6.12, --count --runs 1): the points 16K and 2M of pageout,
# each a timed and a counting boot per kernel, with the run's own samples.
RECORDED = "runs/sweep-612-pageout"


class Replay:
    """An executor giving each boot what the recorded run captured of it
    (its console, its records and, for a counting boot, the counts the
    plugin wrote into its directory)."""

    kind = "replay"
    rounds_per_block = 0

    def __init__(self, recorded):
        self.recorded = recorded
        self.booted = []

    def run(self, image, blocks):
        from foliolab.executors.base import BootCapture, Ended

        for block in blocks:
            caps = []
            for b in block.boots:
                src = self.recorded / "raw" / b.boot_id
                self.booted.append(b.boot_id)
                if (src / "counts.txt").exists():
                    b.rundir.mkdir(parents=True, exist_ok=True)
                    shutil.copy(src / "counts.txt", b.rundir / "counts.txt")
                boot = json.loads((src / "boot.json").read_text())
                caps.append(
                    BootCapture(
                        b.rundir,
                        Ended.EXITED,
                        (src / "console.log").read_bytes(),
                        (src / "results.txt").read_text(),
                        boot["elapsed"],
                    )
                )
            yield block, caps


def key(s):
    return (s.workload, s.variant, s.run, s.valid, sorted(s.values.items()))


def recorded_copy(data, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(data / RECORDED, run)
    return run


def test_a_recorded_sweep_derives_again_to_its_own_samples(data, tmp_path):
    run = recorded_copy(data, tmp_path)
    recorded = derive.load_samples(run)
    assert len(recorded) == 8
    assert sorted(map(key, derive.rederive(run))) == sorted(map(key, recorded))
    report.write_report(run)
    first = (
        (run / "results.json").read_bytes(),
        (run / "report.txt").read_bytes(),
    )
    report.write_report(run)
    assert (
        (run / "results.json").read_bytes(),
        (run / "report.txt").read_bytes(),
    ) == first
    mail = report.mail_text(run)
    assert "How the cost grows" in mail and "growth exponent" in mail
    assert max(len(line) for line in mail.splitlines()) <= 80
    growth = json.loads(first[0])["growth"]
    walk = next(
        t for t in growth if t["metric"] == "page_vma_mapped_walk_per_folio"
    )
    # the walk stops at every PTE of a folio unbatched (4 + 1 at 16K; a
    # 2M folio's PMD split, then 512 + 2) and once per batch with the series
    assert [p["means"] for p in walk["points"]] == [
        {"vanilla": 5.0, "patched": 1.0},
        {"vanilla": 514.0, "patched": 2.0},
    ]


def test_a_recorded_sweep_stopped_and_resumed_gives_the_same_samples(
    data, tmp_path
):
    """The run stopped after the 16K point: its 2M point's boots have no
    boot.json. Resumed with the recorded boots given back, only the 2M
    point's four boots run, and the samples are the recorded run's."""
    from foliolab.arch import get_arch
    from foliolab.boot import measure
    from foliolab.counting import Counter
    from foliolab.executors.base import BootSpec
    from foliolab.kernel.build import Kernel
    from foliolab.manifest import RunManifest

    run = recorded_copy(data, tmp_path)
    recorded = derive.load_samples(run)
    for boot in (run / "raw" / "pageout@folio_kb=2048").iterdir():
        (boot / "boot.json").unlink()
    m = RunManifest.read(run)
    points = [workloads.find(n) for n in m.workloads]
    kernels = {
        n: Kernel(n, "perf", "x86_64", tmp_path, tmp_path / "bz", "c", "s", 0)
        for n in m.names
    }
    replay = Replay(data / RECORDED)
    result = measure.run_workloads(
        measure.RunRequest(
            points,
            {w.name: m.params[w.name] for w in points},
            m.runs,
            kernels,
            tmp_path / "initrd",
            BootSpec(get_arch("x86_64"), tmp_path / "bz"),
            run,
            counters={n: Counter(tmp_path, tmp_path) for n in m.names},
            executor=replay,
            resume=True,
        )
    )
    assert result.kept == 4 and sorted(replay.booted) == [
        "pageout@folio_kb=2048/patched-000",
        "pageout@folio_kb=2048/patched-000-count",
        "pageout@folio_kb=2048/vanilla-000",
        "pageout@folio_kb=2048/vanilla-000-count",
    ]
    assert sorted(map(key, result.samples)) == sorted(map(key, recorded))
    assert sorted(map(key, derive.load_samples(run))) == sorted(
        map(key, recorded)
    )


def test_the_eta_carries_a_points_speed_to_its_workloads_next_points(
    tmp_path, tmp_cache
):
    """The first boot of a sweep took twice its estimate (pageout's times
    on this host): the points not yet begun are estimated twice as long
    too, not at the workload's kept times again."""
    from types import SimpleNamespace

    from foliolab import timings
    from foliolab.arch import get_arch
    from foliolab.boot import measure
    from foliolab.executors.base import BootSpec

    for _ in range(3):
        timings.record_boot("x86_64", "pageout", "tcg", False, 1, 10.0)
    wl, p, sweeps = parse(["pageout.folio_kb=16,64"], "pageout")
    points, params = sweep.expand(wl, p, sweeps)
    req = SimpleNamespace(
        spec=BootSpec(get_arch("x86_64"), tmp_path, accel="tcg")
    )
    boots = measure.plan(points, params, ("a", "b"), 1, 1, False)
    eta = measure.RunEta(req, boots)
    first = eta.expected[boots[0].seq]
    assert first == 10.0
    assert all(eta.expected[b.seq] == first for b in boots)
    eta.step(boots[0], 2 * first)
    assert eta.left_s() == pytest.approx(3 * 2 * first)
