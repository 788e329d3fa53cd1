import pytest

from foliolab.guestdata import parse

INTERRUPTS = """\
           CPU0       CPU1
  0:         46          0   IO-APIC   2-edge      timer
NMI:          0          0   Non-maskable interrupts
CAL:       1200        345   Function call interrupts
TLB:        100         23   TLB shootdowns
ERR:          0
MIS:          0
"""


def test_interrupts_sums_cpus_and_keeps_names():
    irq = parse.parse_interrupts(INTERRUPTS)
    assert irq["CAL"] == 1545
    assert irq["TLB"] == 123
    assert irq["0"] == 46
    assert irq["ERR"] == 0


def test_interrupts_delta():
    after = INTERRUPTS.replace("100         23", "150         73")
    d = parse.delta(
        parse.parse_interrupts(INTERRUPTS), parse.parse_interrupts(after)
    )
    assert d["TLB"] == 100 and d["CAL"] == 0


def test_vmstat():
    vm = parse.parse_vmstat("nr_free_pages 1234\npswpout 65536\nbogus\n")
    assert vm == {"nr_free_pages": 1234, "pswpout": 65536}


def test_records_from_a_real_guest(data):
    lines = (data / "pageout-results.txt").read_text().splitlines()
    g = parse.parse_records(lines)
    assert g.exit_code == 0
    assert g.boot_s is not None
    assert len(g.samples) == 2
    s = g.samples[0]
    assert {
        "vmstat.before",
        "vmstat.after",
        "interrupts.before",
        "mthp.after",
        "ftrace_profile",
    } <= set(s.files)
    assert s.metrics["verify_errors"] == 0
    assert s.metrics["pageout_ms"] > 0
    vm = parse.delta(
        parse.parse_vmstat(s.files["vmstat.before"]),
        parse.parse_vmstat(s.files["vmstat.after"]),
    )
    assert vm["pswpout"] == 65536


def test_records_cut_off_mid_file_is_invalid():
    g = parse.parse_records(
        ["@@ sample 0", "@@ file vmstat.before", "pswpout 1"]
    )
    assert g.exit_code is None
    assert g.samples[0].invalid == ["file vmstat.before was cut off"]


def test_records_keep_job_output_apart():
    g = parse.parse_records(
        [
            "hello",
            "@@ metric x 1.5",
            "@@ invalid no swap",
            "@@ corrupt 3 pages",
            "@@ exit 1",
        ]
    )
    assert g.output == ["hello"]
    assert g.samples[0].metrics == {"x": 1.5}
    assert g.samples[0].invalid == ["no swap"]
    assert g.samples[0].corrupt == ["3 pages"]
    assert g.exit_code == 1


def test_function_profile_sums_cpus(data):
    text = """\
  Function                               Hit    Time            Avg             s^2
  --------                               ---    ----            ---             ---
  try_to_unmap_one                      4096    69085.12 us     16.866 us       90.405 us
  Function                               Hit    Time            Avg             s^2
  --------                               ---    ----            ---             ---
  try_to_unmap_one                        10    100.00 us     10.000 us       0.000 us
  folio_referenced_one                     3    3.00 us     1.000 us       0.000 us
"""
    prof = parse.parse_function_profile(text)
    assert prof["try_to_unmap_one"]["hits"] == 4106
    assert abs(prof["try_to_unmap_one"]["time_us"] - 69185.12) < 1e-6
    assert prof["folio_referenced_one"]["hits"] == 3


KTAP = """\
TAP version 13
1..4
# a diagnostic
ok 1 first test
not ok 2 second test
ok 3 skipped one # SKIP no swap
    ok 1 nested subtest is ignored
ok 4 - dash style
# Totals: pass:2 fail:1 xfail:0 xpass:0 skip:1 error:0
"""


def test_ktap_counts():
    rep = parse.parse_ktap(KTAP.splitlines())
    assert rep.counts == {
        "pass": 2,
        "fail": 1,
        "skip": 1,
        "xfail": 0,
        "error": 0,
    }
    assert [r.name for r in rep.results] == [
        "first test",
        "second test",
        "skipped one",
        "dash style",
    ]
    assert not rep.ok


def test_ktap_plan_not_met_and_bail_out():
    rep = parse.parse_ktap(["1..3", "ok 1 a", "Bail out! no memory"])
    assert rep.bailed_out == "no memory"
    assert rep.errors == ["planned 3 tests, saw 1"]
    assert not rep.ok


def test_ktap_all_pass_is_ok():
    rep = parse.parse_ktap(
        ["KTAP version 1", "1..2", "ok 1 a", "ok 2 b # SKIP nothing to do"]
    )
    assert rep.ok


def test_ktap_plan_last_like_run_vmtests():
    rep = parse.parse_ktap(
        [
            "ok 1 x",
            "not ok 2 y # exit=1",
            "SUMMARY: PASS=1 SKIP=0 FAIL=1",
            "1..2",
        ]
    )
    assert rep.counts["fail"] == 1 and rep.planned == 2 and not rep.errors


def test_stress_ng_yaml(data):
    m = parse.parse_stress_ng_yaml((data / "stress-ng.yaml").read_text())
    assert set(m) == {"vm"}
    assert m["vm"]["bogo-ops-per-second-real-time"] > 0
    assert m["vm"]["bogo-ops"] > 0
    assert "wall-clock-time" in m["vm"]


def test_stress_ng_yaml_without_metrics():
    assert parse.parse_stress_ng_yaml("---\nsystem-info:\n  a: 1\n") == {}


def test_graph_durations(data):
    text = (data / "rmap_walk_ksm.graph").read_text()
    walks = parse.parse_graph_durations(text, "rmap_walk_ksm")
    assert len(walks) == 16
    assert walks[0] == 334.198
    assert max(walks) > 600  # 20,000 VMAs on vanilla
    assert parse.parse_graph_durations(text, "try_to_unmap_one") == []


def test_graph_durations_units_and_markers():
    text = (
        " 0)   12.500 us    |  rmap_walk_ksm();\n"
        " 1) $ 1234.5 ms |  rmap_walk_ksm();\n"
        " 1)               |  rmap_walk_ksm() {\n"
    )
    assert parse.parse_graph_durations(text, "rmap_walk_ksm") == [
        0.0125,
        1234.5,
    ]


def test_khugepaged_trace(data):
    text = (data / "khugepaged.trace").read_text()
    hist = parse.parse_trace_field(text, "mm_khugepaged_scan_pmd", "status")
    assert hist == {
        "succeeded": 85,
        "lack_referenced_page": 64,
        "page_pmd_mapped": 43,
    }
    mms = parse.khugepaged_scans_by_mm(text)
    assert [m.count for m in mms] == [107, 64, 21]
    hot1, cold, hot2 = mms
    assert cold.statuses == {"lack_referenced_page": 64}
    assert hot1.first_s < cold.first_s < hot2.first_s
    assert cold.last_s - cold.first_s == pytest.approx(0.184674)


def test_scans_before(data):
    text = (data / "khugepaged.trace").read_text()
    hot1, cold, hot2 = parse.khugepaged_scans_by_mm(text)
    assert parse.scans_before(text, cold.mm, hot2.first_s) == 64
    assert parse.scans_before(text, cold.mm, cold.first_s) == 0


# Records on a console shared with the kernel: framed by the guest's own
# frame.awk under busybox (the guest's awk), recovered by the host.
def _frame(records: bytes) -> bytes:
    import shutil
    import subprocess

    from foliolab.paths import GUEST_DIR

    busybox = shutil.which("busybox")
    assert busybox, "busybox is missing: make setup installs it"
    return subprocess.run(
        [busybox, "awk", "-f", str(GUEST_DIR / "frame.awk")],
        input=records,
        capture_output=True,
        check=True,
    ).stdout


def test_console_records_survive_a_shared_console(data):
    """A real results stream framed on a console that the kernel also
    writes to: lines before, between and after the frames, a frame sharing
    its line with firmware text, a pty's \\r\\r\\n, a byte above 127."""
    records = (
        data / "pageout-results.txt"
    ).read_bytes() + b"@@ metric caf\xc3\xa9 1\n"
    framed = _frame(records)
    lines = framed.split(b"\n")
    noisy = [b"U-Boot 2024.01", b"[    0.000000] Linux version 6.12"]
    for i, line in enumerate(lines):
        if i % 97 == 5:
            noisy.append(b"[   12.5] WARNING: a kernel line between frames")
        if i == 40:
            line = b"\x1b[0mfirmware" + line  # shares the frame's line
        noisy.append(line)
    noisy.append(b"[   99.0] reboot: Power down")
    console = b"\r\r\n".join(noisy)
    stream = parse.console_records(console)
    assert stream.complete and not stream.damaged, stream.problems()
    assert "".join(x + "\n" for x in stream.lines) == records.decode()
    # the kernel's text keeps its own lines and none of the records
    assert stream.kernel_text.count("WARNING: a kernel line") == sum(
        1 for i in range(len(lines)) if i % 97 == 5
    )
    assert "@@ metric" not in stream.kernel_text
    assert "reboot: Power down" in stream.kernel_text


def test_a_frame_broken_by_kernel_text_is_found_and_not_parsed():
    records = b"".join(b"@@ metric m%d %d\n" % (i, i) for i in range(20))
    framed = _frame(records)
    at = framed.index(b"@@ metric m7 7")
    # a printk that lands in the middle of a frame, on the same line
    inline = framed[: at + 5] + b"[ 3.1] oom" + framed[at + 5 :]
    s = parse.console_records(inline)
    assert s.damaged == [8] and s.missing == [8] and not s.complete
    assert len(s.lines) == 7  # kept only up to the first gap
    assert "8 record line(s) lost" not in " ".join(s.problems())
    assert "1 record line(s) lost (8), 1 of them damaged" in " ".join(
        s.problems()
    )
    # one that splits it onto two lines
    split = framed[: at + 5] + b"\r\n[ 3.1] oom\r\n" + framed[at + 5 :]
    s = parse.console_records(split)
    assert s.missing == [8] and s.damaged == [8]
    # an intact copy of a damaged frame (a console replayed) heals it
    s = parse.console_records(inline + framed)
    assert s.complete and len(s.lines) == 20


def test_console_records_cut_off():
    framed = _frame(b"@@ boot 1.0\n@@ metric a 1\n@@ exit 0\n")
    s = parse.console_records(framed[: framed.index(b"@@=end")])
    assert not s.complete and s.count is None and len(s.lines) == 3
    assert s.problems() == ["the records on the console end without @@=end"]
    s = parse.console_records(b"[ 1.0] Kernel panic - not syncing\n")
    assert s.lines == [] and s.problems() == [
        "no records on the console (no @@=begin)"
    ]
    # the trailer may be lost with the line a log's end pattern matched
    assert parse.console_records(framed.replace(b"@@=done", b"")).complete
    assert s.boot_id == ""


def test_console_records_name_their_boot():
    import shutil
    import subprocess

    from foliolab.paths import GUEST_DIR

    framed = subprocess.run(
        [
            shutil.which("busybox"),
            "awk",
            "-v",
            "id=pageout/base-000",
            "-f",
            str(GUEST_DIR / "frame.awk"),
        ],
        input=b"@@ exit 0\n",
        capture_output=True,
        check=True,
    ).stdout
    # a kernel line that lands on the begin line does not join the name
    s = parse.console_records(framed.replace(b"000\n", b"000[ 2.0] x\n", 1))
    assert s.boot_id == "pageout/base-000" and s.complete
