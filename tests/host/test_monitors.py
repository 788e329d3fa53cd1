"""Monitors: the guest's per-second reads of /proc/vmstat and
/proc/interrupts, kept per boot, parsed and drawn; damage is named."""

import logging

from foliolab.boot import monitors
from foliolab.bootrecord import BootJob, Pass
from foliolab.guestdata.parse import parse_records
from foliolab.render.monitors import monitor_report

VMSTAT = """# foliolab monitor vmstat (docs/manual.md, "Monitors")
## sample 0
== 10.00
pgfault 100
pswpout 0
==.
== 11.00
pgfault 400
pswpout 50
==.
== 12.00
pgfault 500
pswpout 250
==.
== 13.00
pgfault 9
"""

INTERRUPTS = """# foliolab monitor interrupts (docs/manual.md, "Monitors")
## sample 0
== 10.00
           CPU0       CPU1
  0:         40          0   IO-APIC   2-edge      timer
CAL:         10         20   Function call interrupts
TLB:          1          2   TLB shootdowns
ERR:          0
==.
== 12.00
           CPU0       CPU1
  0:         40          0   IO-APIC   2-edge      timer
CAL:         30         60   Function call interrupts
TLB:          5         12   TLB shootdowns
ERR:          0
==.
"""


def test_vmstat_reads_give_rates_and_the_cut_last_read_is_dropped():
    (s,) = monitors.parse_monitor(VMSTAT, "vmstat")
    assert s.problems == []
    assert [r.uptime for r in s.readings] == [10.0, 11.0, 12.0]
    assert s.rates(("pgfault",)) == [(1.0, 300.0), (2.0, 100.0)]
    assert s.rates(("pgfault", "pswpout")) == [(1.0, 350.0), (2.0, 300.0)]


def test_interrupts_are_summed_over_cpus_and_named():
    (s,) = monitors.parse_monitor(INTERRUPTS, "interrupts")
    assert s.problems == []
    assert s.readings[1].counters["TLB"] == 17
    assert s.readings[1].counters["0"] == 40
    assert s.names["CAL"] == "Function call interrupts"
    # 14 more TLB shootdowns in 2 s
    assert s.rates(("TLB",)) == [(2.0, 7.0)]


def test_damage_is_named_never_raised():
    text = (
        "## sample 0\n== 1.0\npgfault 1\n== 2.0\npgfault 2\n==.\n"
        "== x\npgfault 3\n==.\n== 4.0\npgfault ?!\n==.\n"
        "== 5.0\npgfault \u00b2\n==.\n"
        "stray line\n\x00\x01garbage\n## sample one\n"
    )
    series = monitors.parse_monitor(text, "vmstat")
    problems = [p for s in series for p in s.problems]
    assert "line 4: a read cut short" in problems
    assert any("bad uptime '== x'" in p for p in problems)
    assert any("unreadable 'pgfault ?!'" in p for p in problems)
    assert any("unreadable 'pgfault \u00b2'" in p for p in problems)
    assert any("outside a read 'stray line'" in p for p in problems)
    assert any("bad sample" in p for p in problems)
    assert [r.uptime for r in series[0].readings] == [2.0]


def test_the_guest_records_become_one_file_per_boot_and_monitor(tmp_path):
    records = [
        "@@ sample 0",
        "@@ file monitor.vmstat",
        *VMSTAT.splitlines()[2:],
        "@@ end",
        "@@ sample 1",
        "@@ file monitor.vmstat",
        "== 5.0",
        "pgfault 1",
        "==.",
        "@@ end",
        "@@ file vmstat.before",
        "pgfault 1",
        "@@ end",
    ]
    samples = parse_records(records).samples
    written = monitors.write_monitors(tmp_path, samples)
    assert written == [tmp_path / "monitor-vmstat.txt"]
    got = monitors.read_monitor(tmp_path, "vmstat")
    assert [(s.sample, len(s.readings)) for s in got] == [(0, 3), (1, 1)]
    assert monitors.read_monitor(tmp_path, "interrupts") == []


def _boot(run, workload, name, kernel, seq, files):
    d = run / "raw" / workload / name
    BootJob(seq, workload, kernel, Pass.TIMED, seq, 1).write(d)
    for monitor, text in files.items():
        monitors.monitor_path(d, monitor).write_text(text)
    return d


def test_figures_per_workload_and_a_damaged_file_is_named(tmp_path, caplog):
    _boot(
        tmp_path,
        "pageout",
        "a-000",
        "a",
        0,
        {"vmstat": VMSTAT, "interrupts": INTERRUPTS},
    )
    _boot(
        tmp_path,
        "pageout",
        "b-000",
        "b",
        1,
        {
            "vmstat": VMSTAT.replace("==.\n== 11", "== 11"),
            "interrupts": "\x00\xff not a monitor file",
        },
    )
    _boot(tmp_path, "ksm-rmap", "a-000", "a", 2, {})
    with caplog.at_level(logging.WARNING):
        figs, _ = monitor_report(tmp_path)
    assert len(figs) == 1
    caption, png = figs[0]
    assert caption.startswith("pageout:")
    assert "raw/pageout/b-000/monitor-vmstat.txt" in caption
    assert "raw/pageout/b-000/monitor-interrupts.txt" in caption
    assert png.startswith(b"\x89PNG")
    # constant panels are named, not drawn
    assert (
        "Zero throughout, not drawn: pages scanned /s (pgscan), pages "
        "reclaimed /s (pgsteal)."
    ) in caption
    assert "monitor-vmstat.txt" in caplog.text


def test_a_run_without_monitors_has_no_figures(tmp_path):
    _boot(tmp_path, "pageout", "a-000", "a", 0, {})
    assert monitor_report(tmp_path) == ([], [])
    (tmp_path / "raw" / "pageout" / "a-000" / "job.json").write_text("{")
    assert monitor_report(tmp_path) == ([], [])
