"""The run's ETA against the true remaining time, on a host that has
measured nothing: the trial of 2026-11-26 (TCG), 7
workloads x 10 runs x 2 kernels, each workload's boots as long as they
were there."""

from types import SimpleNamespace

import pytest

from foliolab import timings
from foliolab.arch import get_arch
from foliolab.boot import measure
from foliolab.executors.base import BootSpec
from foliolab.kernel import build
from foliolab.run import dryrun
from foliolab.workloads import WORKLOADS

# seconds of the trial's 20 boots per workload (TCG, 1 sample a boot);
# khugepaged's since hot2 is bounded by its collapse: 4 boots of 11.9-13.7 s
# (/work/results-khp-bounded-quiet, 2026-11-26), x5 (the trial's: 1,731)
TRIAL = {
    "pageout": 201,
    "pageout-4k": 325,
    "pageout-lazyfree": 182,
    "dirty-tlb": 383,
    "khugepaged": 259,
    "ksm-rmap": 192,
    "file-reclaim": 180,
}


def _run(tmp_path, names=tuple(TRIAL), runs=10):
    spec = BootSpec(get_arch("x86_64"), tmp_path / "k", accel="tcg")
    req = SimpleNamespace(spec=spec)
    boots = measure.plan(
        [WORKLOADS[n] for n in names],
        {},
        ("vanilla", "patched"),
        runs,
        1,
        False,
    )
    return req, boots


def _true_times(boots):
    """Each boot's true time: its workload's trial mean, +-10% in turn
    (boots of one workload differ; the trial's khugepaged 80-93 s)."""
    return [
        TRIAL[b.workload.name] / 20 * (1.1 if i % 2 else 0.9)
        for i, b in enumerate(boots)
    ]


def test_eta_of_an_unmeasured_host_is_within_a_quarter_of_the_truth(
    tmp_path, tmp_cache
):
    req, boots = _run(tmp_path)
    assert len(boots) == 140
    true = _true_times(boots)
    eta = measure.RunEta(req, boots)
    checks = {1: None, 35: None, 70: None, 105: None}  # boot 1, 25-75%
    for i, (b, s) in enumerate(zip(boots, true, strict=True), 1):
        eta.step(b, s)
        if i in checks:
            checks[i] = (eta.left_s(), sum(true[i:]))
    for i, (est, real) in checks.items():
        assert est == pytest.approx(real, rel=0.25), (i, est, real)


def test_a_slow_workload_does_not_change_another_ones_estimate(
    tmp_path, tmp_cache
):
    """khugepaged three times slower than declared, in this run and in
    the host's history: ksm-rmap's boots still take their own time."""
    for _ in range(3):
        timings.record_boot("x86_64", "khugepaged", "tcg", False, 1, 260.0)
    req, boots = _run(tmp_path, ("khugepaged", "ksm-rmap"), runs=2)
    eta = measure.RunEta(req, boots)
    ksm = [b for b in boots if b.workload.name == "ksm-rmap"]
    assert [eta.expected[b.seq] for b in ksm] == [9.6] * 4
    for b in boots[:4]:
        eta.step(b, 400.0)  # slower still in this run
    assert eta.left_s() == pytest.approx(4 * 9.6)
    eta.step(ksm[0], 19.2)  # ksm-rmap's own speed does count
    assert eta.left_s() == pytest.approx(3 * 19.2)


def test_history_of_one_pass_scales_the_workloads_other_pass_only(tmp_cache):
    """Timed khugepaged boots measured at twice their declared time: its
    counting boots are expected at twice theirs; pageout at its own."""
    timings.record_boot("x86_64", "khugepaged", "tcg", False, 1, 173.2)
    t = timings.Timings.load()
    kh = timings.PlannedBootTime("khugepaged", True, 1, 86.6, 109.0)
    po = timings.PlannedBootTime("pageout", True, 1, 10.0, 12.6)
    assert timings.boot_seconds(t, "x86_64", "tcg", kh) == (
        pytest.approx(218.0),
        True,
    )
    assert timings.boot_seconds(t, "x86_64", "tcg", po) == (12.6, False)


def test_a_fresh_build_has_a_total_on_a_host_without_history(tmp_path):
    assert (
        build._objects(tmp_path / "x86_64-debug.objects", "x86_64", "debug")
        == timings.DEFAULT_OBJECTS["x86_64/debug"]
    )
    assert (
        build._objects(tmp_path / "arm64-perf.objects", "arm64", "perf")
        == timings.DEFAULT_OBJECTS_ANY
    )
    (tmp_path / "x86_64-perf.objects").write_text("1234")
    assert (
        build._objects(tmp_path / "x86_64-perf.objects", "x86_64", "perf")
        == 1234
    )


def test_a_build_bar_shows_a_percentage_and_an_eta(monkeypatch):
    from foliolab import ui

    clock = iter([0.0, 60.0])
    monkeypatch.setattr(ui.time, "monotonic", lambda: next(clock))
    p = ui.Progress("build vanilla/perf", 1600, eta=True)
    p.done = 400  # a quarter in a minute: 3 more
    assert p._line() == (
        "build vanilla/perf [#######                       ]"
        "  25% 1:00 ETA 3:00"
    )


def test_a_run_starts_with_its_kernels_boots_estimate_and_results(
    tmp_path, tmp_cache
):
    from test_orchestrate import request

    out = tmp_path / "run"
    run = request(
        "compare",
        "--patches",
        "none",
        "--workloads",
        "pageout,ksm-rmap",
        "--runs",
        "3",
        "--accel",
        "tcg",
        "--out",
        str(out),
    ).stages()
    block = dryrun.start_block(run.kernels, run.plan, run.machine)
    lines = block.splitlines()
    assert lines[0].startswith("# kernel vanilla: ")
    assert "# boots: 2 workload(s) x 3 run(s) x 2 kernels = 12 boots" in lines
    # 6 pageout boots at 10.0 s, 6 ksm-rmap at 9.6 s: 1:58
    assert any(
        x.startswith("# estimate: ") and "12 boot(s) 1:58" in x for x in lines
    )
    assert lines[-1] == f"# results: {out}"
    assert len(lines) <= 6
