"""An honest clock on a machine with no history: a short probe of this
machine (compiling a fixed C file) scales the defaults that come from
another machine, is kept in timings.json, and is skipped once the machine
has measured builds or boots; the ETA from boot 1 on scales the workloads
not yet seen by how this run's boots compared with their defaults; and a
long run names a shorter one with its own estimate before the first
build."""

import json
import shutil

import pytest
from test_eta import _run

from foliolab import timings
from foliolab.boot import measure
from foliolab.run import dryrun
from foliolab.timings import Calibration, PlannedBootTime, Timings


def fake_compiler(seconds):
    """A runner that says each compile took the next of ``seconds``."""
    calls = []
    it = iter(seconds)

    def run(argv, cwd):
        assert (cwd / "probe.c").is_file() and "-O2" in argv
        calls.append(argv)
        return next(it)

    run.calls = calls
    return run


def test_the_probe_takes_the_median_of_its_compiles(no_calibration_probe):
    probe = no_calibration_probe  # the real one, with a fake compiler
    run = fake_compiler([1.8, 9.0, 1.7])
    c = probe(run)
    assert len(run.calls) == timings.PROBE_RUNS == 3
    assert c == Calibration(1.8, timings.REFERENCE_PROBE_S)
    assert c.factor == pytest.approx(1.8 / timings.REFERENCE_PROBE_S)


@pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc")
def test_the_real_probe_is_short(no_calibration_probe):
    """On this machine (2 shared cores): well under 20 s."""
    c = no_calibration_probe()
    assert c is not None and 0 < c.probe_s * timings.PROBE_RUNS < 20


def test_factor_is_bounded():
    assert Calibration(100.0, 1.0).factor == timings.MAX_FACTOR
    assert Calibration(0.01, 1.0).factor == timings.MIN_FACTOR
    assert Calibration(0.0, 1.0).factor == 1.0


def test_a_machine_without_history_is_probed_once_and_kept(
    tmp_cache, monkeypatch, no_calibration_probe
):
    monkeypatch.setattr(timings, "probe", no_calibration_probe)
    run = fake_compiler([3.6] * 6)  # two probes: the dry run, the run
    t = timings.calibrated(Timings.load(), keep=False, runner=run)
    assert t.calibration == Calibration(3.6, timings.REFERENCE_PROBE_S)
    # a dry run changes nothing on the host
    assert not (tmp_cache / timings.TIMINGS).exists()
    t = timings.calibrated(Timings.load(), keep=True, runner=run)
    kept = json.loads((tmp_cache / timings.TIMINGS).read_text())
    assert kept["calibration"]["probe_s"] == 3.6
    assert Timings.load().calibration == t.calibration
    # kept: not probed again (the runner has no more times to give)
    assert timings.calibrated(Timings.load(), True, run) == Timings.load()


def test_a_machine_with_history_is_not_probed(
    tmp_cache, monkeypatch, no_calibration_probe
):
    monkeypatch.setattr(timings, "probe", no_calibration_probe)
    timings.record_boot("x86_64", "pageout", "tcg", False, 1, 12.0)

    def no_compiler(argv, cwd):
        pytest.fail("probed a machine with history")

    t = timings.calibrated(Timings.load(), keep=True, runner=no_compiler)
    assert t.calibration is None


def test_the_defaults_are_scaled_by_the_probe(tmp_cache):
    """A machine 4x slower than the defaults': builds and boots not
    measured here take 4x their defaults, and the line says so."""
    c = Calibration(4 * timings.REFERENCE_PROBE_S, timings.REFERENCE_PROBE_S)
    t = Timings(calibration=c)
    boots = [PlannedBootTime("ksm-rmap", False, 1, 9.6, 12.1)] * 10
    e = timings.estimate(t, "x86_64", "perf", "tcg", 2, boots)
    plain = timings.estimate(Timings(), "x86_64", "perf", "tcg", 2, boots)
    assert e.build_s == pytest.approx(4 * plain.build_s)
    assert e.boot_s == pytest.approx(4 * plain.boot_s)
    assert "scaled x4.00 by this machine's probe" in e.line()
    # what was measured here is not scaled
    t.boots["x86_64/ksm-rmap/tcg/timed/1"] = [10.0]
    measured = timings.estimate(t, "x86_64", "perf", "tcg", 0, boots)
    assert measured.boot_s == 100.0 and "probe" not in measured.line()


def test_the_eta_at_boot_1_scales_workloads_not_yet_seen(tmp_path, tmp_cache):
    """Every boot 4x its declared time (the trial's fresh machine): after
    the first boot the ETA of all the rest is within a quarter of the
    truth, not only that of the first workload's boots."""
    req, boots = _run(tmp_path)
    true = [
        4 * timings.declared_seconds("tcg", measure.planned_time(b))
        for b in boots
    ]
    eta = measure.RunEta(req, boots)
    eta.step(boots[0], true[0])
    assert eta.left_s() == pytest.approx(sum(true[1:]), rel=0.25)


def test_a_long_run_names_a_shorter_one_before_the_first_build(
    tmp_path, tmp_cache
):
    from test_orchestrate import request

    def start(*argv):
        run = request(
            "compare",
            "--patches",
            "none",
            "--accel",
            "tcg",
            "--out",
            str(tmp_path / "run"),
            *argv,
        ).stages()
        return dryrun.start_block(run.kernels, run.plan, run.machine)

    lines = start("--runs", "10").splitlines()
    (long,) = [x for x in lines if x.startswith("# long run: ")]
    # before the estimate line, as a run prints them before its builds
    assert lines.index(long) < next(
        i for i, x in enumerate(lines) if x.startswith("# estimate: ")
    )
    opts, _, clock = long.partition("; a shorter one: ")[2].rpartition(" (")
    assert opts.startswith("--runs 4")
    m, s = clock.rstrip(")").split(":")[-2:]
    assert 0 < int(m) * 60 + int(s) and ":" not in m
    assert int(m) < 31  # within the half hour: the longest such
    short = start("--runs", "2", "--workloads", "pageout").splitlines()
    assert not any(x.startswith("# long run") for x in short)


def test_a_long_sweep_is_offered_fewer_runs_not_its_points_as_workloads(
    tmp_path, tmp_cache
):
    """--workloads takes no sweep point (pageout@folio_kb=16): a long
    sweep's shorter run keeps its workloads and its sweeps."""
    from test_orchestrate import request

    run = request(
        "compare",
        "--patches",
        "none",
        "--accel",
        "tcg",
        "--workloads",
        "pageout,ksm-rmap",
        "--sweep",
        "pageout.folio_kb=16,64,256",
        "--runs",
        "10",
        "--out",
        str(tmp_path / "run"),
    ).stages()
    offered = dryrun.shorter_plans(run.plan)
    assert [opts for opts, _ in offered] == ["--runs 4"]
    lines = dryrun.start_block(run.kernels, run.plan, run.machine)
    assert "@" not in "".join(
        x for x in lines.splitlines() if x.startswith("# long run")
    )
