import subprocess

import pytest

from foliolab import workloads
from foliolab.errors import UsageError
from foliolab.guestdata import parse
from foliolab.kernel import image
from foliolab.paths import WORKLOADS_DIR
from foliolab.workloads.model import with_roots


def test_get_workloads():
    assert [w.name for w in workloads.get_workloads("pageout,pageout-4k")] == [
        "pageout",
        "pageout-4k",
    ]
    # the default run: the seeds' workloads (the general set by name)
    assert workloads.get_workloads(None) == workloads.SETS["seeds"]
    with pytest.raises(UsageError, match="unknown workload 'pagein'"):
        workloads.get_workloads("pageout,pagein")


def test_params():
    wl = workloads.get_workloads("pageout,pageout-4k")
    p = workloads.parse_params(["pageout.size_mb=64", "profile=0"], wl)
    assert p == {
        "pageout": {"size_mb": "64", "profile": "0"},
        "pageout-4k": {"profile": "0"},
    }
    for bad, msg in (
        (["size_mb"], "NAME=VALUE"),
        (["pageout.nope=1"], "no parameter 'nope'"),
        (["ksm.x=1"], "not being run"),
        (["size_mb=1;reboot"], "bad value"),
    ):
        with pytest.raises(UsageError, match=msg):
            workloads.parse_params(bad, wl)


def test_param_choices():
    w = workloads.WORKLOADS["pageout"]
    assert w.resolve({"fill": "same"})["fill"] == "same"
    assert w.resolve({})["fill"] == "pattern"
    with pytest.raises(UsageError, match="bad value 'zero' for pageout.fill"):
        w.resolve({"fill": "zero"})


def test_integer_params_are_checked_with_their_bounds():
    w = workloads.WORKLOADS["pageout"]
    assert w.resolve({"size_mb": "2048"})["size_mb"] == "2048"
    for bad in ("abc", "0", "2049", "-1", "1_000", " 12", "12.5", "\u0664"):
        with pytest.raises(UsageError, match="an integer from 1 to 2048"):
            w.resolve({"size_mb": bad})
    with pytest.raises(UsageError, match="one of: 0, 1"):
        w.resolve({"profile": "yes"})


def test_every_parameter_default_passes_its_own_check():
    for w in workloads.WORKLOADS.values():
        for name, p in w.params.items():
            assert p.check(p.default) is None, f"{w.name}.{name}"


def test_job_script_exports_params():
    w = workloads.WORKLOADS["pageout"]
    job = w.job(w.resolve({"size_mb": "32"}), 3, fault="panic")
    assert "export FL_SIZE_MB=32" in job
    assert "export FL_FAULT=panic" in job
    assert job.rstrip().endswith("fl_samples 3")


def test_derive_pageout_from_a_real_guest(data):
    g = parse.parse_records(
        (data / "pageout-results.txt").read_text().splitlines()
    )
    w = workloads.WORKLOADS["pageout"]
    d = w.derive(g.samples[0], w.resolve({}))
    assert d.invalid == []
    assert d.values["pswpout"] == 65536
    assert d.values["mthp_swpout"] == 4096
    assert d.values["try_to_unmap_one_calls"] == 4096
    assert d.values["pageout_ms"] > 0


def test_derive_pageout_stage_times(data):
    g = parse.parse_records(
        (data / "pageout-results.txt").read_text().splitlines()
    )
    s = g.samples[0]
    # two CPUs' tables, as trace_stat/function* gives them
    s.files["ftrace_time"] = (
        "  Function     Hit    Time            Avg             s^2\n"
        "  shrink_folio_list   8    900.50 us     112.5 us    1.0 us\n"
        "  try_to_unmap  4000    300.25 us     0.07 us    1.0 us\n"
        "  try_to_unmap_flush_dirty  8    10.00 us     1.2 us    1.0 us\n"
        "  Function     Hit    Time            Avg             s^2\n"
        "  try_to_unmap    96    99.75 us     1.03 us    1.0 us\n"
        "  try_to_unmap_flush  8    5.00 us     0.6 us    1.0 us\n"
        "  __contpte_try_unfold    7    1.00 us     0.1 us    1.0 us\n"
    )
    w = workloads.WORKLOADS["pageout"]
    d = w.derive(s, w.resolve({}))
    assert d.values["reclaim_ms"] == pytest.approx(0.9005)
    assert d.values["unmap_ms"] == pytest.approx(0.4)
    assert d.values["tlb_flush_ms"] == pytest.approx(0.015)
    assert d.values["writeout_ms"] == 0
    assert d.values["contpte_unfolds"] == 7
    assert {"unmap_ms", "contpte_unfolds"} <= {m.key for m in w.metrics}
    fr = {m.key for m in workloads.WORKLOADS["file-reclaim"].metrics}
    assert {"referenced_ms", "unmap_ms", "free_ms"} <= fr
    assert "writeout_ms" not in fr


def test_derive_flags_wrong_folio_size(data):
    g = parse.parse_records(
        (data / "pageout-results.txt").read_text().splitlines()
    )
    w = workloads.WORKLOADS["pageout-4k"]
    d = w.derive(g.samples[0], w.resolve({}))
    assert any("large folios allocated in a 4K run" in r for r in d.invalid)


def test_derive_flags_missing_swap_oom_and_corruption():
    s = parse.GuestSample(
        files={
            "vmstat.before": "oom_kill 0\npswpout 0\n",
            "vmstat.after": "oom_kill 2\npswpout 10\n",
            "meminfo.before": "SwapTotal:       0 kB\n",
        },
        metrics={"pageout_ms": 1.0, "verify_errors": 3, "swapped_pct": 100},
        corrupt=["3 of 10 pages read back wrong"],
    )
    w = workloads.WORKLOADS["pageout-4k"]
    d = w.derive(s, w.resolve({}))
    text = " | ".join(d.invalid)
    assert "2 OOM kill(s)" in text and "no swap" in text
    assert "data corruption" in text and "3 pages read back wrong" in text


def test_derive_pageout_lazyfree_wants_pages_dropped_not_swapped():
    def sample(dropped):
        return parse.GuestSample(
            files={
                "vmstat.before": "oom_kill 0\npswpout 0\npglazyfreed 0\n",
                "vmstat.after": "oom_kill 0\npswpout 0\npglazyfreed 4096\n",
                "meminfo.before": "SwapTotal:  524288 kB\n",
            },
            metrics={
                "pageout_ms": 1.0,
                "verify_errors": 0,
                "swapped_pct": 0,
                "dropped_pct": dropped,
            },
        )

    w = workloads.WORKLOADS["pageout-lazyfree"]
    params = w.resolve({})
    assert params["lazyfree"] == "1"
    d = w.derive(sample(100), params)
    assert not any("swapped out" in r or "dropped" in r for r in d.invalid)
    assert d.values["pglazyfreed"] == 4096
    d = w.derive(sample(40), params)
    assert "only 40% dropped" in d.invalid
    # the same sample is invalid for the swapping variant
    d = workloads.WORKLOADS["pageout"].derive(
        sample(100), params | {"lazyfree": "0"}
    )
    assert "only 0% swapped out" in d.invalid


def test_derive_empty_sample_is_invalid():
    w = workloads.WORKLOADS["pageout"]
    d = w.derive(parse.GuestSample(), w.resolve({}))
    assert "counters missing (sample did not finish)" in d.invalid


def test_derive_khugepaged_reports_both_kernels_statuses():
    line = (
        "      khugepaged-55      [000] .....     1.5835{i:02d}: "
        "mm_khugepaged_scan_pmd: mm=000000004cae397e, scan_pfn=0x10620a, "
        "writable=1, referenced=0, none_or_zero=0, status={st}, "
        "unmapped=0\n"
    )
    trace = "".join(line.format(i=i, st="page_lazyfree") for i in range(3))
    s = parse.GuestSample(
        files={
            "khugepaged": "0 32\n10 20\n",
            "ftrace_events": trace,
            "vmstat.before": "oom_kill 0\n",
            "vmstat.after": "oom_kill 0\n",
        },
        metrics={"khugepaged_cpu_s": 0.44, "hot2_collapse_s": 7.0},
    )
    w = workloads.WORKLOADS["khugepaged"]
    d = w.derive(s, w.resolve({"cold_reread": "1"}))
    assert d.values["scan_page_lazyfree"] == 3
    # absent statuses that tell vanilla from patched are zeros, not gaps
    assert d.values["scan_lack_referenced_page"] == 0
    assert d.values["scan_succeeded"] == 0
    assert d.values["khugepaged_cpu_s"] == 0.44
    assert d.values["pages_collapsed"] == 32 and d.values["full_scans"] == 10


@pytest.mark.parametrize("name", sorted(workloads.WORKLOADS))
def test_every_parameter_reaches_the_guest_script(name):
    """A workload's parameters go to the guest as FL_NAME: each must be read
    by its guest script (or the shared library), or it does nothing."""
    from foliolab.paths import GUEST_DIR

    w = workloads.WORKLOADS[name]
    guest = f"foliolab/workloads/{w.script}.sh"
    assert guest in image.workload_scripts(), (
        f"{name}: no guest script {guest}"
    )
    script = image.workload_scripts()[guest]
    import re

    code = "\n".join(
        line.split("#", 1)[0]
        for line in (
            script.read_text() + (GUEST_DIR / "lib.sh").read_text()
        ).splitlines()
    )  # comments do not count
    for param in w.params:
        assert re.search(rf"\bFL_{param.upper()}\b", code), (
            f"{name}.{param} never reaches {script.name}"
        )


def test_with_roots_counts_and_reports_the_extra_roots():
    w = workloads.WORKLOADS["khugepaged"]
    more = with_roots(w, ("collapse_file", w.count_roots[0], "collapse_file"))
    assert more.count_roots == (*w.count_roots, "collapse_file")
    keys = {m.key for m in more.metrics} - {m.key for m in w.metrics}
    assert keys == {
        "collapse_file_insns",
        "collapse_file_calls",
        "collapse_file_switches",
        "collapse_file_tlb_flush_insns",
        "collapse_file_ipis_sent",
    }
    assert all(more.metric(k).counted for k in keys)
    assert with_roots(w, ()) is w


def test_with_roots_refuses_more_roots_than_the_counter_follows():
    w = workloads.WORKLOADS["pageout"]  # 2 roots of its own
    with pytest.raises(UsageError, match="would count 9 roots"):
        with_roots(w, tuple(f"f{i}" for i in range(7)))


def test_listing_has_every_workload_with_its_params_and_metrics():
    text = workloads.listing(list(workloads.WORKLOADS.values()))
    blocks = text.split("\n\n")
    assert [b.split(":")[0] for b in blocks if b] == list(workloads.WORKLOADS)
    for block, w in zip(blocks, workloads.WORKLOADS.values()):
        for name, p in w.params.items():
            assert f" {name} " in block and f"default {p.default}:" in block
        for m in w.metrics:
            assert f" {m.key} " in block
    assert "integer 1..2048; default 256" in blocks[0]
    assert "one of 4,16,32" in blocks[0]


def test_job_exports_the_monitors_switch():
    w = workloads.WORKLOADS["pageout"]
    assert "export FL_MONITORS=1" in w.job(w.resolve({}), 1, monitors=True)
    assert "export FL_MONITORS=0" in w.job(w.resolve({}), 1)


def test_dirty_tlb_counts_zero_filled_pages_as_swapped_out():
    """7.3.4 swapped 99,373 zero-filled pages and wrote 416 in one
    dirty-tlb boot (/work/results-73-count): a per-page figure divided by
    pswpout alone was 80 times too large, and by a different factor on
    each kernel."""
    from foliolab.boot import derive
    from foliolab.guestdata import countwindows

    vmstat = (
        "pgscan_anon {0}\npgsteal_anon {0}\npswpout {1}\n"
        "swpout_zero {2}\noom_kill 0\n"
    )
    s = parse.GuestSample(
        files={
            "vmstat.before": vmstat.format(0, 0, 0),
            "vmstat.after": vmstat.format(100000, 416, 99373),
            "meminfo.before": "SwapTotal:  524288 kB\n",
            "stress-ng.yaml": "",
        },
        metrics={},
    )
    w = workloads.WORKLOADS["dirty-tlb"]
    d = w.derive(s, w.resolve({}))
    assert d.values["pswpout"] == 416
    assert d.values["swapped_out"] == 416 + 99373
    assert not any("nothing was swapped out" in r for r in d.invalid)
    # the counted per-page figures divide by the same pages
    window = countwindows.Window(w.window, 0, classes={"apic_icr_write": 997})
    reasons: list[str] = []
    v = derive.count_values(w, "x86_64", d.values, window, reasons)
    assert v["ipis_sent_per_swapout"] == 997 / (416 + 99373)


def test_each_folders_guest_script_has_a_guest_path_of_its_own():
    """Scripts go into the guest as /foliolab/workloads/<script>.sh from
    every folder: two of one name would silently be one."""

    scripts = image.workload_scripts()
    assert len(scripts) == len(list(WORKLOADS_DIR.glob("*/*.sh")))
    assert {
        f"foliolab/workloads/{w.script}.sh"
        for w in workloads.WORKLOADS.values()
    } == set(scripts)


@pytest.mark.parametrize("mode", ["always", "madvise", "never"])
def test_fl_thp_pmd_makes_the_pmd_size_follow_the_top_file(tmp_path, mode):
    """fl_anon_folio 4 writes never to every size's enabled file, the PMD
    size's too, which from 6.8 overrides the top file (a thpchallenge
    boot on 6.12 got 0 THPs of 128 faults so); fl_thp_pmd sets the top
    file and has the PMD size inherit it, the smaller sizes left off."""
    from foliolab.paths import GUEST_DIR

    thp = tmp_path / "thp"
    for kb in (16, 64, 2048):
        (thp / f"hugepages-{kb}kB").mkdir(parents=True)
        (thp / f"hugepages-{kb}kB" / "enabled").write_text("always\n")
    (thp / "enabled").write_text("always\n")
    (thp / "hpage_pmd_size").write_text("2097152\n")
    lib = (GUEST_DIR / "lib.sh").read_text()
    script = (
        f"{lib}\nTHP={thp}\n"
        'fl_invalid() { echo "invalid: $*"; }\n'
        f"fl_anon_folio 4\nfl_thp_pmd {mode}\n"
    )
    done = subprocess.run(
        ["sh", "-c", script], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0 and "invalid" not in done.stdout, done
    assert (thp / "enabled").read_text().strip() == mode
    assert (thp / "hugepages-2048kB" / "enabled").read_text().strip() == (
        "inherit"
    )
    for kb in (16, 64):
        assert (thp / f"hugepages-{kb}kB" / "enabled").read_text().strip() == (
            "never"
        )


def test_fl_thp_pmd_on_a_kernel_without_per_size_files(tmp_path):
    from foliolab.paths import GUEST_DIR

    thp = tmp_path / "thp"
    thp.mkdir()
    (thp / "enabled").write_text("never\n")
    (thp / "hpage_pmd_size").write_text("2097152\n")
    script = (
        (GUEST_DIR / "lib.sh").read_text()
        + f'\nTHP={thp}\nfl_invalid() {{ echo "invalid: $*"; }}\n'
        "fl_anon_folio 4\nfl_thp_pmd always\n"
    )
    done = subprocess.run(
        ["sh", "-c", script], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0 and "invalid" not in done.stdout, done
    assert (thp / "enabled").read_text().strip() == "always"
