"""The general mm workloads (issue 61): page-fault, page-fault-threads,
usemem, time-unmap and the stress-ng family. Their sets, their names as
the kernel test robot and mmtests give them, their parameters' bounds,
the stress-ng family's refusal of a stressor that is not an mm one, and
each derive's validity checks on made-up samples (the contract test
holds them to captured boots)."""

import pytest

from foliolab import workloads
from foliolab.errors import UsageError
from foliolab.guestdata import parse
from foliolab.workloads import sweep
from foliolab.workloads.stress_ng import workload as stress_ng

GENERAL = [
    "page-fault",
    "page-fault-threads",
    "usemem",
    "lru-file-readonce",
    "time-unmap",
    "mremap",
    "madvise",
    "thpchallenge",
    "stutterp",
    "stress-ng-mmap",
]

INTERRUPTS = (
    "           CPU0       CPU1\n"
    "TLB:   {0}   0   TLB shootdowns\n"
    "CAL:   {1}   0   Function call interrupts\n"
)


def sample(metrics, before="", after="", files=None):
    """A guest sample with these metrics and vmstat lines."""
    return parse.GuestSample(
        files={
            "vmstat.before": "oom_kill 0\n" + before,
            "vmstat.after": "oom_kill 0\n" + after,
            "meminfo.before": "SwapTotal:  524288 kB\n",
            **(files or {}),
        },
        metrics=metrics,
    )


def test_the_default_run_is_the_seeds_and_general_names_the_set():
    default = [w.name for w in workloads.get_workloads(None)]
    assert not set(default) & set(GENERAL)
    assert default == [w.name for w in workloads.get_workloads("seeds")]
    assert [w.name for w in workloads.get_workloads("general")] == GENERAL
    everything = workloads.get_workloads("all")
    assert [w.name for w in everything] == list(workloads.WORKLOADS)
    listed = workloads.listing(everything)
    for name in GENERAL:
        assert f"\n{name}: " in "\n" + listed


def test_lead_metrics_have_the_robots_and_mmtests_names():
    lead = {
        name: next(m for m in workloads.WORKLOADS[name].metrics if m.primary)
        for name in GENERAL
    }
    assert {n: m.key for n, m in lead.items()} == {
        "page-fault": "will-it-scale.per_process_ops",
        "page-fault-threads": "will-it-scale.per_thread_ops",
        "usemem": "vm-scalability.throughput",
        "lru-file-readonce": "vm-scalability.throughput",
        "time-unmap": "time_unmap.Time",
        "mremap": "mremap.ops_per_sec",
        "madvise": "madvise.mb_per_s",
        "thpchallenge": "thpchallenge.fault-huge",
        "stutterp": "stutterp.mmap_latency",
        "stress-ng-mmap": "stress-ng.mmap.ops_per_sec",
    }
    assert [lead[n].better for n in GENERAL] == [
        "higher",
        "higher",
        "higher",
        "higher",
        "lower",
        "higher",
        "higher",
        "lower",
        "lower",
        "higher",
    ]
    # rates are averaged harmonically
    assert lead["usemem"].is_rate and lead["page-fault"].is_rate


@pytest.mark.parametrize(
    "name, param, bad",
    [
        ("page-fault", "case", "4"),
        ("page-fault", "tasks", "65"),
        ("page-fault", "mode", "threads"),
        ("page-fault-threads", "mode", "processes"),
        ("usemem", "total_mb", "4096"),
        ("usemem", "swap", "2"),
        ("usemem", "thp", "madvise"),
        ("time-unmap", "threads", "0"),
        ("madvise", "advice", "willneed"),
        ("stress-ng-mmap", "stressor", "cpu"),
    ],
)
def test_parameters_out_of_range_are_refused(name, param, bad):
    with pytest.raises(UsageError, match=f"bad value '{bad}'"):
        workloads.WORKLOADS[name].resolve({param: bad})


def test_any_mm_stressor_is_a_workload_by_name_and_others_are_refused():
    (w,) = workloads.get_workloads("stress-ng-mremap")
    assert w.name == "stress-ng-mremap"
    assert w.resolve({})["stressor"] == "mremap"
    assert w.metrics[0].key == "stress-ng.mremap.ops_per_sec"
    assert workloads.find("stress-ng-mremap") is w
    assert workloads.find("stress-ng-mremap@workers=4") is not None
    with pytest.raises(UsageError) as e:
        workloads.get_workloads("pageout,stress-ng-cpu")
    assert "'cpu' is not an mm stressor" in e.value.args[0]
    assert "\n" not in e.value.args[0]
    assert workloads.find("stress-ng-cpu") is None
    for s in ("mmap", "madvise", "mremap", "vm", "fault", "tlb-shootdown"):
        assert s in stress_ng.MM_STRESSORS


def test_the_task_count_is_swept_and_follows_the_vcpus():
    wl = workloads.get_workloads("page-fault,usemem")
    p = workloads.parse_params([], wl)
    sweeps = sweep.parse_sweeps(["tasks=1,2,4"], wl, p, 1, 64)
    points, params = sweep.expand(wl, p, sweeps)
    assert [w.name for w in points] == [
        "page-fault@tasks=1",
        "page-fault@tasks=2",
        "page-fault@tasks=4",
        "usemem@tasks=1",
        "usemem@tasks=2",
        "usemem@tasks=4",
    ]
    four = points[2]
    assert four.resolve(params[four.name])["tasks"] == "4"
    growth = four.growth_for("tasks")
    assert growth[0].metric == "will-it-scale.per_process_ops"
    tu = workloads.WORKLOADS["time-unmap"]
    assert tu.follow_vcpus is not None
    assert tu.follow_vcpus(8) == {"threads": "8"}


def derive(name, s, **params):
    w = workloads.WORKLOADS[name]
    return w.derive(s, w.resolve(params))


PF = {
    "ops_per_s": 10000.0,
    "task_ops_per_s_min": 4000.0,
    "task_ops_per_s_max": 6000.0,
    "ops": 60000.0,
    "min_passes": 3.0,
}


def test_page_fault_reports_per_task_ops_and_wants_a_fault_a_page():
    d = derive("page-fault", sample(PF, "pgfault 0\n", "pgfault 61000\n"))
    assert d.invalid == []
    assert d.values["will-it-scale.per_process_ops"] == 5000.0
    d = derive(
        "page-fault-threads",
        sample(PF, "pgfault 0\n", "pgfault 61000\n"),
        tasks="4",
    )
    assert d.values["will-it-scale.per_thread_ops"] == 2500.0
    # THP or fault-around: fewer faults than pages written
    d = derive("page-fault", sample(PF, "pgfault 0\n", "pgfault 200\n"))
    assert any("not one fault a page" in r for r in d.invalid)
    # a task that never wrote its whole mapping
    d = derive(
        "page-fault",
        sample(PF | {"min_passes": 0.0}, "pgfault 0\n", "pgfault 61000\n"),
    )
    assert any("no whole pass" in r for r in d.invalid)
    d = derive("page-fault", sample({}, "pgfault 0\n", "pgfault 1\n"))
    assert "pagefault reported no ops" in d.invalid


UM = {
    "throughput_kbs": 500000.0,
    "elapsed_ms": 600.0,
    "pages": 65536.0,
    "pages_written": 65536.0,
    "verify_errors": 0.0,
}
UM_VM = "pswpout {0}\nswpout_zero 0\npswpin 0\nthp_fault_alloc {1}\n"


def test_usemem_holds_its_setup_in_memory_and_under_swap():
    ok = sample(UM, UM_VM.format(0, 0), UM_VM.format(0, 0))
    d = derive("usemem", ok)
    assert d.invalid == []
    assert d.values["vm-scalability.throughput"] == 500000.0
    # swap asked, not used: the fill exceeds the memcg by half of 65536
    d = derive("usemem", ok, swap="1")
    assert any("swap not used as asked" in r for r in d.invalid)
    swapped = sample(UM, UM_VM.format(0, 0), UM_VM.format(20000, 0))
    assert derive("usemem", swapped, swap="1").invalid == []
    assert any(
        "swapped out in a run in memory" in r
        for r in derive("usemem", swapped).invalid
    )
    # fewer pages written than asked
    short = sample(
        UM | {"pages_written": 100.0}, UM_VM.format(0, 0), UM_VM.format(0, 0)
    )
    assert any(
        "pages written of the" in r for r in derive("usemem", short).invalid
    )
    # THP asked and none made, or made when not asked
    assert any(
        "none allocated" in r
        for r in derive("usemem", ok, thp="always").invalid
    )
    thp = sample(UM, UM_VM.format(0, 0), UM_VM.format(0, 128))
    assert any("THPs allocated" in r for r in derive("usemem", thp).invalid)
    bad = sample(
        UM | {"verify_errors": 3.0}, UM_VM.format(0, 0), UM_VM.format(0, 0)
    )
    assert any("read back wrong" in r for r in derive("usemem", bad).invalid)


TU = {
    "time_us_mean": 20000.0,
    "time_us_min": 15000.0,
    "time_us_max": 30000.0,
    "pages_touched": 655360.0,
    "pages": 655360.0,
}


def test_time_unmap_wants_every_page_touched_and_a_shootdown_a_munmap():
    def tu(metrics, tlb):
        return sample(
            metrics,
            "pgfault 0\n",
            "pgfault 700000\n",
            files={
                "interrupts.before": INTERRUPTS.format(0, 0),
                "interrupts.after": INTERRUPTS.format(tlb, 5),
            },
        )

    d = derive("time-unmap", tu(TU, 40))
    assert d.invalid == []
    assert d.values["time_unmap.Time"] == 20000.0
    assert d.values["tlb_shootdowns_per_unmap"] == 4.0
    d = derive("time-unmap", tu(TU, 3))
    assert any("not running the mm" in r for r in d.invalid)
    # one thread: no other CPU to shoot down, and none asked for
    assert derive("time-unmap", tu(TU, 0), threads="1").invalid == []
    d = derive("time-unmap", tu(TU | {"pages_touched": 1000.0}, 40))
    assert any("pages touched of the" in r for r in d.invalid)


MA = {"mb_per_s": 300.0, "ms_mean": 100.0, "pages": 40960.0}


def test_madvise_checks_what_each_advice_left():
    def ma(done, vm=""):
        return sample(MA | {"pages_as_advised": done}, vm, vm)

    d = derive("madvise", ma(40960.0))
    assert d.invalid == []
    assert d.values["madvise.mb_per_s"] == 300.0
    assert d.values["pages_as_advised_pct"] == 100.0
    d = derive("madvise", ma(100.0), advice="pageout")
    assert any("every page swapped out" in r for r in d.invalid)
    # MADV_FREE that the kernel did not count as lazily freed
    lazy = sample(
        MA | {"pages_as_advised": 40960.0},
        "pglazyfree 0\n",
        "pglazyfree 10\n",
    )
    d = derive("madvise", lazy, advice="free")
    assert any("pglazyfree 10 for 40960" in r for r in d.invalid)
    no_swap = ma(40960.0)
    no_swap.files["meminfo.before"] = "SwapTotal:  0 kB\n"
    assert "no swap" in derive("madvise", no_swap, advice="pageout").invalid


YAML = """metrics:
    - stressor: mmap
      bogo-ops: 1200
      bogo-ops-per-second-usr-sys-time: 70.0
      bogo-ops-per-second-real-time: 120.5
"""


def test_stress_ng_takes_its_stressors_rate_from_the_yaml():
    s = sample({}, "pgfault 0\n", "pgfault 9\n", {"stress-ng.yaml": YAML})
    d = derive("stress-ng-mmap", s)
    assert d.invalid == []
    assert d.values["stress-ng.mmap.ops_per_sec"] == 120.5
    assert d.values["stress-ng.mmap.ops"] == 1200
    w = workloads.get_workloads("stress-ng-mremap")[0]
    d = w.derive(s, w.resolve({}))
    assert "stress-ng reported no mremap metrics" in d.invalid
