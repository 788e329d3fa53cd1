"""The lab's measured build and boot times, and the estimates and ETAs
made from them."""

import json
import logging
from pathlib import Path

from foliolab import cli, timings
from foliolab.timings import PlannedBootTime, Timings


def _store(cache, d):
    cache.mkdir(parents=True, exist_ok=True)
    (cache / timings.TIMINGS).write_text(json.dumps(d))


def test_estimate_takes_the_medians_of_a_stored_timing_file(tmp_cache):
    _store(
        tmp_cache,
        {
            "version": 1,
            "builds": {"x86_64/perf": [100, 300, 200]},
            "boots": {
                "x86_64/pageout/tcg/timed/1": [10, 30, 20],
                "x86_64/pageout/tcg/count/1": [40],
            },
        },
    )
    t = Timings.load()
    boots = [PlannedBootTime("pageout", False, 1)] * 3 + [
        PlannedBootTime("pageout", True, 1),
        PlannedBootTime("pageout", False, 2),
    ]  # 2 samples: 2 x 20
    e = timings.estimate(t, "x86_64", "perf", "tcg", 2, boots)
    assert (e.builds, e.build_s, e.boots, e.boot_s) == (2, 400, 5, 140)
    assert e.defaults == []
    assert e.total_s == 540 + timings.RUN_OVERHEAD_S
    assert "measured" in e.line() and "9:15" in e.line()


def test_kinds_not_measured_take_defaults_and_say_so(tmp_cache):
    """A boot not measured takes its workload's declared TCG time (a
    third of it under KVM)."""
    e = timings.estimate(
        Timings.load(),
        "x86_64",
        "perf",
        "kvm",
        1,
        [PlannedBootTime("ksm-rmap", False, 1, 9.6, 12.1)],
    )
    assert e.build_s == timings.DEFAULT_BUILD_S
    assert e.boot_s == 9.6 / 3
    # vanilla, then patched in its directory (incremental)
    two = timings.estimate(Timings.load(), "x86_64", "perf", "tcg", 2, [])
    assert two.build_s == (
        timings.DEFAULT_BUILD_S + timings.DEFAULT_NEXT_BUILD_S
    )
    assert (
        timings.estimate(
            Timings.load(), "x86_64", "perf", "tcg", 0, []
        ).build_s
        == 0
    )
    assert e.defaults == ["builds (x86_64/perf)", "ksm-rmap boots"]
    assert "defaults for builds (x86_64/perf), ksm-rmap boots" in e.line()


def test_records_keep_the_newest_few(tmp_cache):
    for s in range(8):
        timings.record_boot("x86_64", "pageout", "tcg", False, 1, s)
    timings.record_build("arm64", "debug", 99.94)
    t = Timings.load()
    assert t.boots == {"x86_64/pageout/tcg/timed/1": [3, 4, 5, 6, 7]}
    assert t.builds == {"arm64/debug": [99.9]}


def test_a_damaged_timing_file_gives_defaults_and_a_warning(tmp_cache, caplog):
    tmp_cache.mkdir()
    (tmp_cache / timings.TIMINGS).write_text('{"builds": {"x": ["a"]}')
    with caplog.at_level(logging.WARNING):
        assert Timings.load() == Timings()
    assert "timings.json is damaged" in caplog.text
    timings.record_build("x86_64", "perf", 5)  # rewritten whole
    assert Timings.load().builds == {"x86_64/perf": [5.0]}


def test_dry_run_prints_builds_boots_and_the_estimate(capsys, tmp_cache):
    _store(
        tmp_cache,
        {"builds": {}, "boots": {"x86_64/pageout/tcg/timed/1": [60]}},
    )
    rc = cli.main(
        [
            "compare",
            "--patches",
            "none",
            "--workloads",
            "pageout",
            "--runs",
            "3",
            "--accel",
            "tcg",
            "--dry-run",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0
    assert "6 boots" in out
    # no base tree in this cache: the kernels' commits are not known
    assert "# kernel vanilla: not known to be kept, counted as a build" in out
    assert (
        "# estimate: 22:15 wall time (2 build(s) 16:00, 6 boot(s) 6:00)"
        ", defaults for builds (x86_64/perf) (not measured here yet)" in out
    )


def test_clock():
    assert timings.clock(65) == "1:05"
    assert timings.clock(3725) == "1:02:05"


def test_a_near_noop_build_is_not_recorded(tmp_path, tmp_cache, monkeypatch):
    """A build of the same commit again compiles a handful of objects in
    seconds: recording it would pull the median, and the next estimate,
    far below what the next real kernel costs."""
    from foliolab.arch import get_arch
    from foliolab.kernel import build, kconfig, source

    compiled = iter([1700, 12, 1100])  # fresh, near no-op, series
    monkeypatch.setattr(build.hostsetup, "ensure_arch", lambda arch: None)
    monkeypatch.setattr(source, "checkout", lambda tree: None)

    def configure(tree, arch, purpose, out):
        out.mkdir(parents=True, exist_ok=True)
        return out / ".config"

    def make(argv, log, label, total):
        (Path(argv[3][2:]) / "vmlinux").write_text("")  # O=out
        return next(compiled)

    monkeypatch.setattr(build, "configure", configure)
    monkeypatch.setattr(build, "_run_make", make)
    monkeypatch.setattr(build, "stale_steps", lambda out, src: None)
    monkeypatch.setattr(kconfig, "check", lambda *a: None)
    monkeypatch.setattr(build, "config_digest", lambda p: "x")
    monkeypatch.setattr(source.Tree, "version", lambda self: (6, 12))
    for commit in ("a" * 40, "b" * 40, "c" * 40):
        tree = source.Tree("patched", source.base_repo(), commit, "d")
        build._build_checked_out(
            tree, get_arch("x86_64"), "perf", tmp_path / "out", ()
        )
    assert len(Timings.load().builds["x86_64/perf"]) == 2
    assert timings.is_real_build(170, 1700)
    assert not timings.is_real_build(169, 1700)
