"""report.txt's per-kernel summary, as mmtests' compare-kernels: the
workload's User/System/Elapsed time (the guest's `times` around the timed
window) and reclaim's vmstat counters, each kernel's mean per sample;
samples from before the times record keep reporting their counters."""

import shutil
import subprocess

import pytest

from foliolab.analysis.kernelsummary import workload_cost
from foliolab.boot.derive import Sample, load_samples
from foliolab.guestdata import parse
from foliolab.guestdata.window import TimedWindow, parse_times, timed_window
from foliolab.paths import PROJECT_ROOT
from foliolab.render import report
from foliolab.render.text import REPORT_WIDTH, cost_lines

LIB = PROJECT_ROOT / "foliolab" / "guest" / "lib.sh"
AA = PROJECT_ROOT / "tests" / "host" / "data" / "run-pageout-aa"


@pytest.mark.parametrize(
    "text, user, sys",
    [
        # busybox ash (the guest's shell)
        ("0m0.000s 0m0.010s\n1m2.500s 0m0.250s\nuptime 12.50\n", 62.5, 0.25),
        # dash
        (
            "0m0.000000s 0m0.000000s\n0m0.090000s 0m0.030000s\nuptime 1\n",
            0.09,
            0.03,
        ),
    ],
)
def test_times_records_are_read(text, user, sys):
    t = parse_times(text)
    assert t is not None
    assert (t.children_user_s, t.children_sys_s) == (user, sys)


@pytest.mark.parametrize("text", ["", "uptime 3\n", "a\nb\nuptime x\n"])
def test_what_is_no_times_record_is_none(text):
    assert parse_times(text) is None


@pytest.mark.skipif(not shutil.which("busybox"), reason="needs busybox")
def test_lib_sh_times_a_busy_child_under_busybox():
    """fl_times around a child that spins: the record parses, and the
    child's CPU time is in the delta."""
    script = (
        f". {LIB}; fl_times before; "
        "i=0; (while [ $i -lt 200000 ]; do i=$((i+1)); done); "
        "fl_times after"
    )
    out = subprocess.run(
        ["busybox", "sh", "-c", script],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    g = parse.parse_records(out).samples[0]
    g.files["vmstat.before"] = "pswpout 1\n"
    g.files["vmstat.after"] = "pswpout 5\n"
    w = timed_window(g)
    assert w is not None and w.vmstat == {"pswpout": 4}
    assert w.user_s is not None and w.sys_s is not None
    assert w.user_s + w.sys_s > 0.05
    assert w.elapsed_s is not None and w.elapsed_s >= 0


def sample(kernel, run, window, valid=True):
    return Sample(
        "pageout", kernel, run, {}, valid, [], "ok", "", window=window
    )


def test_means_per_kernel_efficiency_and_old_samples():
    w = [
        TimedWindow(
            1.0,
            2.0,
            4.0,
            {
                "pgscan_kswapd": 100,
                "pgsteal_kswapd": 50,
                "pswpout": 10,
                "thp_split_pmd": 0,
            },
        ),
        TimedWindow(
            3.0,
            4.0,
            6.0,
            {
                "pgscan_kswapd": 300,
                "pgsteal_kswapd": 250,
                "pswpout": 30,
                "thp_split_pmd": 0,
            },
        ),
        # a sample from before the times record: counters only
        TimedWindow(
            vmstat={
                "pgscan_kswapd": 200,
                "pgsteal_kswapd": 0,
                "pswpout": 20,
                "thp_split_pmd": 0,
            }
        ),
    ]
    samples = [
        sample("a", 0, w[0]),
        sample("a", 1, w[1]),
        sample("b", 0, w[2]),
        sample("b", 1, w[0], valid=False),  # excluded
        sample("b", 2, None),  # a counting sample: no window
    ]
    c = workload_cost("pageout", samples, ["a", "b"])
    assert c is not None
    a, b = c.kernels
    assert (a.n, a.n_times, a.user_s, a.sys_s, a.elapsed_s) == (
        2,
        2,
        2.0,
        3.0,
        5.0,
    )
    assert a.counters["pswpout"] == 20.0
    assert a.efficiency_pct == pytest.approx(75.0)
    assert (b.n, b.n_times, b.user_s) == (1, 0, None)
    assert b.efficiency_pct == 0.0
    # thp_ counters only where they moved
    assert c.counters == ["pswpout", "pgscan_kswapd", "pgsteal_kswapd"]
    text = cost_lines(c, "tcg")
    assert text[0].endswith("(times under TCG: emulated):")
    assert text[2].split() == ["User", "(s)", "2", "-"]
    assert "pgsteal/pgscan % 75.00 0.00" in " ".join(" ".join(text).split())
    assert "b 0 of 1" in text[-1]


def test_many_kernels_fit_the_width_in_blocks():
    w = TimedWindow(1.0, 2.0, 3.0, {"pswpout": 123456789})
    names = [f"kernel-{i}-with-a-long-name" for i in range(7)]
    samples = [sample(k, 0, w) for k in names]
    c = workload_cost("pageout", samples, names)
    lines = cost_lines(c, "kvm")
    assert max(map(len, lines)) <= REPORT_WIDTH
    assert sum("pswpout" in x for x in lines) == 2  # two blocks
    assert "times on kvm" in lines[0]


def test_a_recorded_run_reports_its_counters_without_times(tmp_path):
    """run-pageout-aa predates the times record: its summary has the
    vmstat counters from its raw boots, and says why there are no times."""
    report.write_report(AA, dest=tmp_path)
    text = (tmp_path / "report.txt").read_text()
    start = text.index("Per kernel, mean per sample")
    block = text[start:].split("\n\n")[0].splitlines()
    assert block[1].split() == ["vanilla", "patched"]
    assert block[2].split() == ["pswpin", "8,192", "8,192"]
    assert block[3].split() == ["pswpout", "8,192", "8,192"]
    assert block[-1].startswith("(no User/System/Elapsed")
    assert all(len(x) <= REPORT_WIDTH for x in text.splitlines())
    # the samples of the recorded run are as they were, but for the
    # window beside them
    old = load_samples(AA)
    assert all(s.window is None for s in old)
