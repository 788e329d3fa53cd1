"""The general mm workloads (issue 61): page-fault, page-fault-threads,
usemem, time-unmap and the stress-ng family. Their sets, their names as
the kernel test robot and mmtests give them, their parameters' bounds,
the stress-ng family's refusal of a stressor that is not an mm one, and
each derive's validity checks on made-up samples (the contract test
holds them to captured boots), and their counting: each one's window,
marked by the program it runs (built for the host with its markers
logging themselves, and run small), and the per-operation counts derived
from made-up counter output as a counting boot's are."""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from foliolab import workloads
from foliolab.boot import derive as boot_derive
from foliolab.bootrecord import BootResult
from foliolab.errors import UsageError
from foliolab.guestdata import parse
from foliolab.paths import WORKLOADS_DIR
from foliolab.workloads import sweep, windows
from foliolab.workloads.dirty_tlb import workload as dirty_tlb
from foliolab.workloads.model import Window
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


# --- counting (--count): each workload's window and its per-op counts ---

ROOT = Path(__file__).resolve().parents[2]
# (workload, window tag, window name, count unit's root or "")
WINDOWS = [
    ("page-fault", 6, "FAULT", "handle_mm_fault"),
    ("page-fault-threads", 6, "FAULT", "handle_mm_fault"),
    ("usemem", 7, "USEMEM", ""),
    ("lru-file-readonce", 11, "READONCE", ""),
    ("time-unmap", 8, "UNMAP", "do_vmi_munmap"),
    ("mremap", 10, "MREMAP", "move_vma"),
    ("madvise", 9, "MADVISE", "do_madvise"),
    ("thpchallenge", 12, "THPFAULT", "handle_mm_fault"),
    ("stress-ng-mmap", 3, "STRESS", ""),
]


# General workloads that mark no window, on purpose. stutterp: what it
# measures is the latency of one task's rounds while other tasks keep
# its memcg in reclaim, and a window is the machine's: every vCPU's
# kernel work between the marks, the pressure tasks' included, which is
# most of it (their faults, swap-outs and writeback), in proportions
# that follow the scheduling of a time-bounded run (under the plugin, a
# slower one), so a count per round would mostly count the pressure. A
# root does not single the measured task out either: handle_mm_fault and
# reclaim's functions count whichever task enters them, and the pressure
# tasks enter them all the time; only mmap and munmap are the measured
# task's alone, and they are not where its rounds meet reclaim (the
# faults are). (As test_counting.UNCOUNTED.)
UNCOUNTED = ["stutterp"]


def test_each_general_workload_counts_in_a_window_it_declares():
    assert [n for n, *_ in WINDOWS] == [
        g for g in GENERAL if g not in UNCOUNTED
    ]
    for name in UNCOUNTED:
        assert not isinstance(workloads.WORKLOADS[name].window, Window), name
    for name, tag, wname, root in WINDOWS:
        w = workloads.WORKLOADS[name]
        assert isinstance(w.window, Window), name
        assert (int(w.window), w.window.name) == (tag, wname), name
        assert (w.count_unit.root if w.count_unit else "") == root
        # a counted figure per operation leads (report --mail lists the
        # counted metrics with _per_ in their name)
        counted = [m for m in w.metrics if m.counted]
        assert any("_per_" in m.key and m.primary for m in counted), name
        # and no counted key is also a timed one
        assert not {m.key for m in counted} & {
            m.key for m in w.metrics if not m.counted
        }, name
        # what a sweep reports is a metric it declares (a counted one
        # makes a table only in a counting sweep)
        for g in w.growth:
            assert w.metric(g.metric), (name, g.metric)
    growth = workloads.WORKLOADS["time-unmap"].growth_for("threads")
    assert "ipis_sent_per_munmap" in {g.metric for g in growth}
    # the stress-ng family marks dirty-tlb's window: one object, one tag
    assert workloads.WORKLOADS["stress-ng-mmap"].window is dirty_tlb.WINDOW
    assert stress_ng.workload("stress-ng-mremap").window is dirty_tlb.WINDOW
    # gathered with the seeds' without a tag or a name twice
    gathered = windows.gather(
        [*workloads.WORKLOADS.values(), stress_ng.workload("stress-ng-vm")]
    )
    assert [int(w) for w in gathered] == list(range(13))
    assert gathered == windows.WINDOWS
    assert "#define FL_WIN_UNMAP\t8" in windows.c_header()
    assert "#define FL_WIN_THPFAULT\t12" in windows.c_header()
    assert "FL_WIN_MADVISE=9" in windows.shell()
    assert "FL_WIN_READONCE=11" in windows.shell()


@pytest.fixture(scope="module")
def host_build(tmp_path_factory):
    """Build a general workload's program for the host as the Makefile
    does (its flags but -static; common/ and the generated fl_windows.h
    on the include path, linked to wrap munmap, sched_setaffinity and
    close), with its markers logging themselves
    (tests/host/c/flmark_log.h): the executable's path."""
    out = tmp_path_factory.mktemp("marks")
    (out / "fl_windows.h").write_text(windows.c_header())

    def build(folder, prog):
        exe = out / prog
        if not exe.exists():
            subprocess.run(
                [
                    "gcc",
                    "-O2",
                    "-Wall",
                    "-Wextra",
                    "-pthread",
                    "-Wl,--wrap=munmap,--wrap=sched_setaffinity,--wrap=close",
                    "-include",
                    str(ROOT / "tests" / "host" / "c" / "flmark_log.h"),
                    "-I",
                    str(WORKLOADS_DIR / "common"),
                    "-I",
                    str(out),
                    "-o",
                    str(exe),
                    str(WORKLOADS_DIR / folder / f"{prog}.c"),
                ],
                check=True,
            )
        return exe

    return build


def marks_of(stderr, parent):
    """The marks a program's stderr logged: (begin|end, tag, whether
    ``parent`` marked it)."""
    return [
        (how, int(tag), int(pid) == parent)
        for how, tag, pid in re.findall(
            r"^@@mark (begin|end) (\d+) (\d+)$", stderr, re.M
        )
    ]


@pytest.fixture(scope="module")
def logged_marks(host_build):
    """Run a general workload's program built by host_build small: its
    stdout and the marks it executed, with its pid. With ``calls``, the
    marks come with the munmap, sched_setaffinity and close calls the
    program made, in the order they were logged; ``env`` adds
    flmark_log.h's delays."""

    def run(folder, prog, *args, calls=False, env=None):
        exe = host_build(folder, prog)
        cp = subprocess.Popen(
            [str(exe), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=exe.parent,
            env={
                "PATH": "/usr/bin:/bin",
                **({"FL_MARK_LOG_CALLS": "1"} if calls else {}),
                **(env or {}),
            },
        )
        stdout, stderr = cp.communicate(timeout=60)
        assert cp.returncode == 0, stderr
        # ("begin"|"end", tag, by the first process) for a mark,
        # ("call", name, by the first process) for a call
        marks: list[tuple[str, int | str, bool]] = []
        for line in stderr.splitlines():
            mark = re.fullmatch(r"@@mark (begin|end) (\d+) (\d+)", line)
            call = re.fullmatch(r"@@call (\w+) (\d+)", line)
            if mark:
                marks.append((mark[1], int(mark[2]), int(mark[3]) == cp.pid))
            elif call:
                marks.append(("call", call[1], int(call[2]) == cp.pid))
        return stdout, marks

    return run


# mremapmove and thpfault read /proc/kpageflags (whether a page is a
# THP), which only root may
NEEDS_KPAGEFLAGS = pytest.mark.skipif(
    not os.access("/proc/kpageflags", os.R_OK),
    reason="/proc/kpageflags is root's to read",
)


@pytest.mark.parametrize(
    "folder, prog, args, tag, by_parent",
    [
        # 1 task, 1 s measured (after its 1 s warm-up), 1 MiB
        (
            "page_fault",
            "pagefault",
            ("1", "threads", "1", "1", "1", "."),
            6,
            (True, True),
        ),
        # 2 processes: the last one ready opens the window, the last one
        # to finish writing ends it
        ("usemem", "usemem", ("2", "2", "1", "1"), 7, (False, False)),
        ("time_unmap", "timeunmap", ("1", "1", "3"), 8, (True, True)),
        (
            "madvise",
            "madvthroughput",
            ("dontneed", "1", "3"),
            9,
            (True, True),
        ),
        # 2 MiB moved 6 times
        pytest.param(
            "mremap",
            "mremapmove",
            ("pte", "2", "3"),
            10,
            (True, True),
            marks=NEEDS_KPAGEFLAGS,
        ),
        pytest.param(
            "mremap",
            "mremapmove",
            ("maymove", "2", "3"),
            10,
            (True, True),
            marks=NEEDS_KPAGEFLAGS,
        ),
        # 2 processes reading 2 MiB each from the test's directory: the
        # last one ready opens the window, the last one done closes it
        (
            "lru_file_readonce",
            "lrureadonce",
            ("2", "4", "."),
            11,
            (False,) * 2,
        ),
        # a filler of 1% of the host's available memory (the smallest),
        # keeping every other page, then 2 blocks faulted
        pytest.param(
            "thpchallenge",
            "thpfault",
            ("1", "2", "4"),
            12,
            (True, True),
            marks=NEEDS_KPAGEFLAGS,
        ),
    ],
)
def test_each_program_marks_its_window_once_a_sample(
    logged_marks, folder, prog, args, tag, by_parent
):
    """The program opens its window once and closes it once, in that
    order, whatever the number of iterations or tasks; usemem's is
    opened and closed by its tasks, not by the parent (the window is the
    machine's)."""
    stdout, marks = logged_marks(folder, prog, *args)
    assert "@@ metric" in stdout
    begin, end = by_parent
    assert marks == [("begin", tag, begin), ("end", tag, end)]


def children_of(pid):
    """The pids of ``pid``'s children, from /proc."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


@pytest.fixture
def shm_dir():
    """A directory of the test's own on tmpfs, where reading a sparse
    file's holes allocates nothing."""
    if not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm")
    d = Path(tempfile.mkdtemp(dir="/dev/shm"))
    yield d
    shutil.rmtree(d)


@pytest.mark.parametrize(
    "folder, prog, args, tag",
    [
        # 2 processes filling 8 MiB each 10 million times over
        ("usemem", "usemem", ("2", "16", "10000000", "0"), 7),
        # 2 processes reading 500 GB of holes each (nothing allocated)
        ("lru_file_readonce", "lrureadonce", ("2", "1000000", "SHM"), 11),
    ],
)
def test_the_tasks_give_up_when_one_of_them_dies(
    host_build, tmp_path, shm_dir, folder, prog, args, tag
):
    """A task process killed mid-run (as the memcg's OOM killer would
    kill one) used to leave the others waiting for it to finish, and the
    parent for them, until the boot timed out. Now the parent, seeing it
    die, sets the abort flag: the other stops, the window is closed
    (once, by the parent) and the sample is invalid, at once. The run
    asked for would take hours: only giving up ends it."""
    exe = host_build(folder, prog)
    err = tmp_path / "stderr"
    with err.open("w") as stderr:
        p = subprocess.Popen(
            [str(exe), *(str(shm_dir) if a == "SHM" else a for a in args)],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    try:
        for _ in range(1000):  # until the window is open: both writing
            if "@@mark begin" in err.read_text():
                break
            time.sleep(0.01)
        tasks = children_of(p.pid)
        assert len(tasks) == 2, tasks
        os.kill(tasks[0], signal.SIGKILL)
        stdout, _ = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            for pid in [*children_of(p.pid), p.pid]:
                os.kill(pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 1
    assert f"@@ invalid a {prog} task failed" in stdout
    assert "@@ metric" not in stdout
    assert marks_of(err.read_text(), p.pid) == [
        ("begin", tag, False),
        ("end", tag, True),
    ]


def test_usemem_checks_nothing_before_its_window_is_closed(logged_marks):
    """No usemem task goes on to its check (and munmap) before the last
    one to finish writing has closed the window, even when that one is
    held up right at its marker (flmark_log.h's delay): the others wait
    for the marker itself, not for the count of tasks done."""
    _, marks = logged_marks(
        "usemem",
        "usemem",
        "3",
        "3",
        "1",
        "1",
        calls=True,
        env={"FL_MARK_LOG_END_DELAY_MS": "300"},
    )
    assert marks[0] == ("begin", 7, False)  # the last one ready's
    end = marks.index(("end", 7, False))
    unmapped = [i for i, m in enumerate(marks) if m[:2] == ("call", "munmap")]
    assert len(unmapped) == 3  # one a task
    assert min(unmapped) > end, marks


def test_lru_file_readonce_closes_no_file_before_its_window_is(
    logged_marks,
):
    """No lrureadonce task closes its file (which frees its page cache)
    before the last one to finish reading has closed the window, even
    when that one is held up right at its marker: the others wait for
    the marker itself, not for the count of tasks done, and every one
    keeps its file open until then."""
    _, marks = logged_marks(
        "lru_file_readonce",
        "lrureadonce",
        "3",
        "3",
        ".",
        calls=True,
        env={"FL_MARK_LOG_END_DELAY_MS": "300"},
    )
    assert marks[0] == ("begin", 11, False)
    end = marks.index(("end", 11, False))
    closed = [i for i, m in enumerate(marks) if m[:2] == ("call", "close")]
    assert len(closed) == 3  # one a task
    assert min(closed) > end, marks


def test_time_unmap_opens_its_window_once_its_threads_are_pinned(
    logged_marks,
):
    """time-unmap's helper threads move to their CPUs before the window
    opens, even when they are slow to (flmark_log.h delays every
    sched_setaffinity): their start is setup, not the iterations."""
    _, marks = logged_marks(
        "time_unmap",
        "timeunmap",
        "3",
        "1",
        "2",
        calls=True,
        env={"FL_MARK_LOG_PIN_DELAY_MS": "200"},
    )
    begin = marks.index(("begin", 8, True))
    pinned = [
        i
        for i, m in enumerate(marks)
        if m[:2] == ("call", "sched_setaffinity")
    ]
    assert len(pinned) == 3  # the main thread's and two helpers'
    assert max(pinned) < begin, marks
    assert marks[-1] == ("end", 8, True)


def test_stress_ng_marks_its_run_in_a_counting_boot_only(tmp_path):
    """stress-ng.sh run with the guest's helpers stubbed and stress-ng
    and flmark logging themselves: the run between flmark begin and end
    of FL_WIN_STRESS with FL_COUNT=1, no flmark at all without."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "log"
    for prog in ("stress-ng", "flmark"):
        exe = bin_dir / prog
        exe.write_text(f'#!/bin/sh\necho "{prog} $1 $2" >> {log}\n')
        exe.chmod(0o755)
    (tmp_path / "thp").mkdir()
    # the script's scratch files, in the test's directory
    script = (
        (WORKLOADS_DIR / "stress_ng" / "stress-ng.sh")
        .read_text()
        .replace("/tmp", str(tmp_path))
    )
    stubs = (
        "fl_anon_folio() { :; }\nfl_fault() { :; }\nfl_snap() { :; }\n"
        'fl_file() { :; }\nfl_invalid() { echo "invalid $*" >> '
        f"{log}; }}\n"
    )

    def run(count):
        log.write_text("")
        subprocess.run(
            ["sh", "-c", f"{windows.shell()}{stubs}{script}\nfl_sample"],
            env={
                "PATH": f"{bin_dir}:/usr/bin:/bin",
                "THP": str(tmp_path / "thp"),
                "FL_COUNT": count,
                "FL_STRESSOR": "mmap",
                "FL_WORKERS": "2",
                "FL_SECONDS": "1",
                "FL_BYTES_MB": "4",
            },
            check=True,
        )
        return log.read_text().splitlines()

    assert run("1") == [
        "flmark begin 3",
        "stress-ng --mmap 2",
        "flmark end 3",
    ]
    assert run("0") == ["stress-ng --mmap 2"]


def counting_sample(name, counts, records, **params):
    """The sample a counting boot of ``name`` gives, derived as a run
    derives it from the boot's raw files: the plugin's ``counts`` (the
    counts.txt of countwindows.parse_counts) and the guest's result
    ``records`` (results.txt's lines)."""
    w = workloads.WORKLOADS.get(name) or stress_ng.workload(name)
    res = BootResult(
        "ok",
        0,
        [],
        Path(counts.parent) / "console.log",
        Path(counts.parent) / "results.txt",
        1.0,
        records=["@@ sample 0", *records],
    )
    [s] = boot_derive.samples_from_boot(
        w, w.resolve(params), "up", 0, res, 1, "x86_64"
    )
    return s


def records(metrics, vm="", files=()):
    """Result lines: the metrics, and the counter snapshots around them."""
    lines = []
    for when in ("before", "after"):
        lines += [
            f"@@ file vmstat.{when}",
            "oom_kill 0",
            *(vm.get(when, "") if isinstance(vm, dict) else vm).splitlines(),
            "@@ end",
            f"@@ file meminfo.{when}",
            "SwapTotal:  524288 kB",
            "@@ end",
        ]
    lines += [f"@@ metric {k} {v}" for k, v in metrics.items()]
    for name, text in files:
        lines += [f"@@ file {name}", *text.splitlines(), "@@ end"]
    return lines


def window(tag, insns, classes=(), roots=()):
    """A closed window of counts.txt: ``roots`` are (name, insns, calls,
    {class: n}) for the roots counted in it."""
    lines = [
        "switch_tracking on __switch_to_asm ffffffff81001130",
        f"window {tag} 0",
        f"kernel_insns {insns}",
        *(f"class {c} {n}" for c, n in classes),
    ]
    for root, n, calls, inside in roots:
        lines.append(f"root {root} {n} {calls} 0")
        lines += [f"rootclass {root} {c} {k}" for c, k in inside.items()]
    return "\n".join([*lines, "end", ""])


def test_page_fault_counts_per_fault(tmp_path):
    counts = tmp_path / "counts.txt"
    counts.write_text(
        window(
            6,
            1_000_000,
            [("invlpg", 40), ("cr3_write", 2), ("apic_icr_write", 6)],
            [("handle_mm_fault", 600_000, 500, {"invlpg": 1})],
        )
    )
    s = counting_sample(
        "page-fault-threads",
        counts,
        records(PF, {"before": "pgfault 0", "after": "pgfault 61000"}),
    )
    assert s.valid, s.reasons
    assert s.count_window == 0 and s.roots_follow_tasks is True
    v = s.values
    assert v["faults_counted"] == 500
    assert v["kernel_insns_per_fault"] == 2000
    assert v["handle_mm_fault_insns_per_fault"] == 1200
    assert v["tlb_flush_insns_per_fault"] == pytest.approx(42 / 500)
    assert v["ipis_sent_per_fault"] == pytest.approx(6 / 500)
    assert v["handle_mm_fault_tlb_flush_insns"] == 1
    # the timed metrics are not a counting sample's
    assert "will-it-scale.per_thread_ops" not in v
    # another workload's window is not this one's
    counts.write_text(window(7, 1_000_000))
    s = counting_sample(
        "page-fault",
        counts,
        records(PF, {"before": "pgfault 0", "after": "pgfault 61000"}),
    )
    assert not s.valid
    assert "no counting window 6 in counts.txt" in s.reasons


def test_usemem_counts_per_mib_written(tmp_path):
    counts = tmp_path / "counts.txt"
    # 2 passes over 256 MiB: 512 MiB written
    counts.write_text(
        window(
            7,
            512_000_000,
            [("invlpg", 1024), ("apic_icr_write", 64)],
            [("handle_mm_fault", 256_000_000, 65_536, {})],
        )
    )
    vm = UM_VM.format(0, 0)
    s = counting_sample(
        "usemem",
        counts,
        records(UM | {"pages_written": 131072.0}, vm),
        loops="2",
    )
    assert s.valid, s.reasons
    v = s.values
    assert v["mib_written"] == 512
    assert v["kernel_insns_per_mib"] == 1_000_000
    assert v["handle_mm_fault_insns_per_mib"] == 500_000
    assert v["tlb_flush_insns_per_mib"] == 2
    assert v["ipis_sent_per_mib"] == 0.125
    assert v["handle_mm_fault_calls"] == 65_536
    assert "vm-scalability.throughput" not in v


def test_time_unmap_counts_per_munmap_inside_do_vmi_munmap(tmp_path):
    counts = tmp_path / "counts.txt"
    # the window holds the populating too: only the root is per munmap
    counts.write_text(
        window(
            8,
            90_000_000,
            [("cr3_write", 30), ("apic_icr_write", 12)],
            [
                (
                    "do_vmi_munmap",
                    30_000_000,
                    10,
                    {"cr3_write": 10, "apic_icr_write": 10},
                )
            ],
        )
    )
    interrupts = [
        ("interrupts.before", INTERRUPTS.format(0, 0)),
        ("interrupts.after", INTERRUPTS.format(40, 5)),
    ]
    s = counting_sample(
        "time-unmap",
        counts,
        records(
            TU | {"pages": 163840.0, "pages_touched": 163840.0},
            {"before": "pgfault 0", "after": "pgfault 170000"},
            interrupts,
        ),
    )
    assert s.valid, s.reasons
    v = s.values
    assert v["munmaps_counted"] == 10
    assert v["kernel_insns_per_munmap"] == 3_000_000
    assert v["ipis_sent_per_munmap"] == 1
    assert v["tlb_flush_insns_per_munmap"] == 1
    assert v["tlb_flush_insns"] == 30  # the window's: every CPU's
    lead = {
        m.key
        for m in workloads.WORKLOADS["time-unmap"].metrics
        if m.counted and m.primary
    }
    # its instructions hold the wait for the other CPUs' acknowledgements
    # (timing, not path): the IPIs lead
    assert lead == {"ipis_sent_per_munmap"}
    insns = workloads.WORKLOADS["time-unmap"].metric("kernel_insns_per_munmap")
    assert insns.counted and "acknowledgements" in insns.label


def test_madvise_counts_per_call_and_per_mib(tmp_path):
    counts = tmp_path / "counts.txt"
    counts.write_text(
        window(
            9,
            50_000_000,
            [("invlpg", 80)],
            [("do_madvise", 16_000_000, 5, {"invlpg": 5})],
        )
    )
    s = counting_sample(
        "madvise", counts, records(MA | {"pages_as_advised": 40960.0})
    )
    assert s.valid, s.reasons
    v = s.values
    assert v["calls_counted"] == 5
    assert v["mib_advised"] == 160  # 5 calls of 32 MiB
    assert v["kernel_insns_per_call"] == 3_200_000
    assert v["do_madvise_insns_per_mib"] == 100_000
    assert v["tlb_flush_insns_per_call"] == 1
    assert v["ipis_sent_per_call"] == 0
    # a window in which madvise was never entered has nothing to be per
    counts.write_text(window(9, 50_000_000))
    s = counting_sample(
        "madvise", counts, records(MA | {"pages_as_advised": 40960.0})
    )
    assert "do_madvise was never entered in the window" in " ".join(s.reasons)


MR = {
    "ops_per_sec": 2000.0,
    "mb_per_s": 32000.0,
    "us_mean": 500.0,
    "us_min": 400.0,
    "us_max": 900.0,
    "ops": 1000.0,
    "pages": 4096.0,
    "pages_present": 4096.0,
    "thp_blocks": 0.0,
    "blocks": 8.0,
    "verify_errors": 0.0,
}


def test_mremap_counts_per_move_inside_move_vma(tmp_path):
    counts = tmp_path / "counts.txt"
    # the window holds the clock's reads too: only the root is per move
    counts.write_text(
        window(
            10,
            90_000_000,
            [("invlpg", 3000)],
            [("move_vma", 40_000_000, 1000, {"invlpg": 1000})],
        )
    )
    s = counting_sample("mremap", counts, records(MR, "thp_split_pmd 0\n"))
    assert s.valid, s.reasons
    v = s.values
    assert v["moves_counted"] == 1000
    assert v["mib_moved"] == 16000  # 1000 moves of 16 MiB
    assert v["kernel_insns_per_move"] == 40_000
    assert v["move_vma_insns_per_mib"] == 2500
    assert v["tlb_flush_insns_per_move"] == 1
    assert v["ipis_sent_per_move"] == 0
    assert v["tlb_flush_insns"] == 3000  # the window's
    assert "mremap.ops_per_sec" not in v
    lead = {
        m.key
        for m in workloads.WORKLOADS["mremap"].metrics
        if m.counted and m.primary
    }
    assert lead == {
        "kernel_insns_per_move",
        "move_vma_insns_per_mib",
        "ipis_sent_per_move",
    }
    # a window in which no move was made has nothing to be per
    counts.write_text(window(10, 90_000_000))
    s = counting_sample("mremap", counts, records(MR, "thp_split_pmd 0\n"))
    assert "move_vma was never entered in the window" in " ".join(s.reasons)


def test_lru_file_readonce_counts_per_mib_read(tmp_path):
    counts = tmp_path / "counts.txt"
    counts.write_text(
        window(
            11,
            256_000_000,
            [("invlpg", 512), ("apic_icr_write", 256)],
            [("shrink_lruvec", 64_000_000, 300, {})],
        )
    )
    memcg = [
        ("memcg_events.before", "max 0\noom_kill 0\n"),
        ("memcg_events.after", "max 3000\noom_kill 0\n"),
        ("memcg_stat.before", "pgsteal 0\n"),
        ("memcg_stat.after", "pgsteal 50000\n"),
    ]
    ro = {
        "throughput_kbs": 150000.0,
        "elapsed_ms": 1800.0,
        "bytes": 268435456.0,
        "bytes_read": 268435456.0,
    }
    s = counting_sample(
        "lru-file-readonce", counts, records(ro, "pgscan_file 0\n", memcg)
    )
    assert s.valid, s.reasons
    v = s.values
    assert v["mib_read"] == 256
    assert v["kernel_insns_per_mib"] == 1_000_000
    assert v["shrink_lruvec_insns_per_mib"] == 250_000
    assert v["tlb_flush_insns_per_mib"] == 2
    assert v["ipis_sent_per_mib"] == 1
    assert v["shrink_lruvec_calls"] == 300
    assert "vm-scalability.throughput" not in v


def test_thpchallenge_counts_per_fault_with_compactions_share(tmp_path):
    counts = tmp_path / "counts.txt"
    # the window holds the probes too: the faults are handle_mm_fault's
    counts.write_text(
        window(
            12,
            500_000_000,
            [("invlpg", 700), ("apic_icr_write", 80)],
            [
                (
                    "handle_mm_fault",
                    384_000_000,
                    128,
                    {"invlpg": 128, "apic_icr_write": 64},
                ),
                ("try_to_compact_pages", 256_000_000, 130, {"invlpg": 100}),
            ],
        )
    )
    tc = {
        "fill_mb": 800.0,
        "kept_mb": 25.0,
        "free_mb": 820.0,
        "free_huge_mb": 12.0,
        "faults": 128.0,
        "huge_faults": 120.0,
        "fault_huge_us_mean": 3000.0,
        "fault_base_us_mean": 9000.0,
    }
    vm = {
        "before": "thp_fault_alloc 0\ncompact_stall 0\n",
        "after": "thp_fault_alloc 120\ncompact_stall 130\n",
    }
    s = counting_sample("thpchallenge", counts, records(tc, vm), thp_mb="256")
    assert s.valid, s.reasons
    v = s.values
    assert v["faults_counted"] == 128
    assert v["kernel_insns_per_fault"] == 3_000_000
    assert v["try_to_compact_pages_insns_per_fault"] == 2_000_000
    assert v["tlb_flush_insns_per_fault"] == 1
    assert v["ipis_sent_per_fault"] == 0.5
    assert v["try_to_compact_pages_calls"] == 130
    assert "thpchallenge.fault-huge" not in v
    lead = {
        m.key
        for m in workloads.WORKLOADS["thpchallenge"].metrics
        if m.counted and m.primary
    }
    assert lead == {
        "kernel_insns_per_fault",
        "try_to_compact_pages_insns_per_fault",
        "ipis_sent_per_fault",
    }


def test_stress_ng_counts_per_bogo_op(tmp_path):
    counts = tmp_path / "counts.txt"
    counts.write_text(
        window(3, 1_200_000, [("invlpg", 2400), ("apic_icr_write", 120)])
    )
    s = counting_sample(
        "stress-ng-mmap",
        counts,
        records({}, "pgfault 0\n", [("stress-ng.yaml", YAML)]),
    )
    assert s.valid, s.reasons
    v = s.values
    assert v["kernel_insns_per_bogo_op"] == 1000
    assert v["tlb_flush_insns_per_bogo_op"] == 2
    assert v["ipis_sent_per_bogo_op"] == 0.1
    assert "stress-ng.mmap.ops_per_sec" not in v
