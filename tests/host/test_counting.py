"""The counting pass: the plugin's decoders on hand-assembled bytes, its
output parser on captured output, the metrics and the determinism rules,
and the marker contract between common.h, the windows and the workloads."""

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from foliolab import counting, errors
from foliolab.analysis import countanalysis
from foliolab.boot.derive import Sample
from foliolab.guestdata import countwindows
from foliolab.kernel import image
from foliolab.paths import WORKLOADS_DIR
from foliolab.render import text
from foliolab.workloads import WORKLOADS, windows
from foliolab.workloads.model import Window, Workload

ROOT = Path(__file__).resolve().parents[2]
KTEXT = 0xFFFFFFFF81000000
ARM_KTEXT = 0xFFFF800080010000


@pytest.fixture(scope="module")
def decode(tmp_path_factory):
    """decode(arch, vaddr, hexbytes) -> (class, marker, flow, target,
    kernel) through the plugin's own decode.h, compiled for the host."""
    exe = tmp_path_factory.mktemp("decode") / "decode_harness"
    subprocess.run(
        [
            "gcc",
            "-O2",
            "-Wall",
            "-Werror",
            "-I",
            str(ROOT / "foliolab" / "plugin"),
            "-o",
            str(exe),
            str(ROOT / "tests" / "host" / "c" / "decode_harness.c"),
        ],
        check=True,
    )

    def run(arch, vaddr, hexbytes):
        cp = subprocess.run(
            [str(exe)],
            input=f"{arch} {vaddr:x} {hexbytes}\n",
            capture_output=True,
            text=True,
            check=True,
        )
        cls, marker, flow, target, kernel = cp.stdout.split()
        return cls, int(marker), flow, int(target, 16), kernel == "1"

    return run


@pytest.mark.parametrize(
    "hexbytes, cls",
    [
        ("0f0138", "invlpg"),  # invlpg (%rax)
        ("0f013f", "invlpg"),  # invlpg (%rdi)
        ("0f01bc2400100000", "invlpg"),  # invlpg 0x1000(%rsp) (mod 10, SIB)
        ("0f01f8", "none"),  # swapgs: /7 with a register operand
        ("0f01d0", "none"),  # xgetbv: group 7, /2
        ("660f388208", "invpcid"),  # invpcid (%rax),%rcx
        ("0f388208", "none"),  # no 66 prefix: not invpcid
        ("0f22df", "cr3_write"),  # mov %rdi,%cr3
        ("0f22e0", "cr4_write"),  # mov %rax,%cr4
        ("440f22c0", "none"),  # mov %rax,%cr8 (REX.R)
        ("0f20d8", "none"),  # mov %cr3,%rax: a read
        ("0f30", "wrmsr"),
        ("0f32", "none"),  # rdmsr
        ("4889c7", "none"),  # mov %rax,%rdi
    ],
)
def test_x86_classes(decode, hexbytes, cls):
    assert decode("x86_64", KTEXT, hexbytes)[0] == cls


@pytest.mark.parametrize(
    "insn, cls",
    [
        (0xD50883A0, "tlbi_is"),  # tlbi vale1is, x0
        (0xD508831F, "tlbi_is"),  # tlbi vmalle1is
        (0xD5088720, "tlbi_local"),  # tlbi vae1, x0
        (0xD5088120, "tlbi_os"),  # tlbi vae1os, x0
        (0xD5088220, "tlbi_range"),  # tlbi rvae1is, x0
        (0xD5088620, "tlbi_range"),  # tlbi rvae1, x0
        (0xD50B7E20, "none"),  # dc civac, x0: SYS, but CRn 7
        (0xD5033B9F, "dsb_ish"),
        (0xD5033A9F, "none"),  # dsb ishst
        (0xD5033F9F, "none"),  # dsb sy
        (0xD518CBA1, "sgi1r_write"),  # msr icc_sgi1r_el1, x1
        (0xD538CBA0, "none"),  # mrs x0, icc_sgi1r_el1: a read
        (0xD503201F, "none"),  # nop
    ],
)
def test_arm64_classes(decode, insn, cls):
    assert (
        decode("arm64", ARM_KTEXT, insn.to_bytes(4, "little").hex())[0] == cls
    )


def test_x86_flow(decode):
    assert decode("x86_64", KTEXT, "c3")[2] == "ret"
    assert decode("x86_64", KTEXT, "c20800")[2] == "ret"
    _, _, flow, target, _ = decode("x86_64", KTEXT, "e810000000")
    assert (flow, target) == ("call", KTEXT + 5 + 0x10)
    _, _, flow, target, _ = decode("x86_64", KTEXT, "e8fbffffff")
    assert (flow, target) == ("call", KTEXT)  # call to itself
    _, _, flow, target, _ = decode("x86_64", KTEXT, "e9f0ffffff")
    assert (flow, target) == ("jump", KTEXT + 5 - 0x10)
    assert decode("x86_64", KTEXT, "ffd0")[2] == "none"  # indirect call


def test_arm64_flow(decode):
    def d(insn):
        return decode("arm64", ARM_KTEXT, insn.to_bytes(4, "little").hex())

    assert d(0xD65F03C0)[2] == "ret"  # ret
    assert d(0xD65F0020)[2] == "ret"  # ret x1
    assert d(0xD65F0BFF)[2] == "ret"  # retaa
    assert d(0x94000002)[2:4] == ("call", ARM_KTEXT + 8)  # bl .+8
    assert d(0x97FFFFFF)[2:4] == ("call", ARM_KTEXT - 4)  # bl .-4
    assert d(0x14000004)[2:4] == ("jump", ARM_KTEXT + 16)  # b .+16
    assert d(0xD63F0020)[2] == "none"  # blr x1


@pytest.mark.parametrize(
    "hexbytes, marker",
    [
        ("0f1f8001f14c46", 0xF101),  # begin, tag 1
        ("0f1f8081f14c46", 0xF181),  # end, tag 1
        ("0f1f807ff14c46", 0xF17F),  # begin, tag 127
        ("0f1f8000000000", -1),  # nopl 0x0(%rax): the compiler's nop
        ("0f1f8001f24c46", -1),  # wrong magic
        ("660f1f8001f14c46", -1),  # prefixed: not the marker
    ],
)
def test_x86_marker(decode, hexbytes, marker):
    assert decode("x86_64", 0x401000, hexbytes)[1] == marker


@pytest.mark.parametrize(
    "insn, marker",
    [
        (0xD2FE203F, 0xF101),  # movz xzr, #0xf101, lsl #48
        (0xD2FE303F, 0xF181),  # movz xzr, #0xf181, lsl #48
        (0xD2FE2020, -1),  # movz x0: writes a register
        (0xD2E2469F, -1),  # movz xzr, #0x1234, lsl #48
        (0xD2BE203F, -1),  # movz xzr, #0xf101, lsl #32
    ],
)
def test_arm64_marker(decode, insn, marker):
    assert (
        decode("arm64", 0x400000, insn.to_bytes(4, "little").hex())[1]
        == marker
    )


def test_kernel_address(decode):
    assert decode("x86_64", KTEXT, "90")[4]
    assert not decode("x86_64", 0x7FFFFFFFE000, "90")[4]
    assert decode("arm64", ARM_KTEXT, "1f2003d5")[4]
    assert not decode("arm64", 0x0000FFFFA0000000, "1f2003d5")[4]


def _common_h():
    return (WORKLOADS_DIR / "common" / "common.h").read_text()


def test_marker_bytes_from_common_h(tmp_path):
    """What the x86 compiler emits from FL_MARK_BEGIN/END is what the
    decoder matches (found in the object's bytes)."""
    src = tmp_path / "m.c"
    src.write_text(
        '#include "common.h"\nvoid f(void)\n{\n'
        "\tFL_MARK_BEGIN(5);\n\tFL_MARK_END(5);\n}\n"
    )
    obj = tmp_path / "m.o"
    subprocess.run(
        [
            "gcc",
            "-O2",
            "-c",
            "-I",
            str(WORKLOADS_DIR / "common"),
            "-o",
            str(obj),
            str(src),
        ],
        check=True,
    )
    data = obj.read_bytes()
    assert bytes.fromhex("0f1f8005f14c46") in data
    assert bytes.fromhex("0f1f8085f14c46") in data


def test_arm64_marker_formula_in_common_h():
    """The .inst expression of common.h gives the decoder's encoding."""
    m = re.search(r"\.inst (0x[0-9a-f]+) \+ \(\(%c0\) << (\d+)\)", _common_h())
    assert m, "arm64 FL_MARK in common.h changed shape"
    base, shift = int(m.group(1), 16), int(m.group(2))
    assert base + (0xF101 << shift) == 0xD2FE203F


def _marks(text: str, name: str) -> tuple[int, int]:
    """The begin and end marks of window ``name`` in a C source or guest
    script: FL_MARK_BEGIN/END(name) or ``flmark begin|end $name``."""
    begins, ends = (
        text.count(f"FL_MARK_{how.upper()}({name})")
        + len(re.findall(rf"flmark {how} \${name}\b", text))
        for how in ("begin", "end")
    )
    return begins, ends


# Workloads that mark no window, on purpose (as
# test_general_workloads.UNCOUNTED, which says why at length). stutterp:
# a window is the machine's, so it would hold mostly the work of the
# tasks that keep the measured one's memcg in reclaim, and no root tells
# the measured task's faults and reclaim from theirs.
UNCOUNTED = {"stutterp"}


def test_window_tags_match_workloads():
    """Every workload's window, the seeds' and the general ones' (but
    UNCOUNTED's), is a Window its own folder's C program or guest script
    marks, by the
    generated name (FL_WIN_*), never by number, and every file that
    begins it ends it as often."""
    scripts = {f.name: f for f in image.workload_scripts().values()}
    for w in WORKLOADS.values():
        window = w.window
        if w.name in UNCOUNTED:
            assert window == -1, f"{w.name} counts after all"
            continue
        assert isinstance(window, Window), f"{w.name} declares no window"
        folder = scripts[f"{w.script}.sh"].parent
        name = f"FL_WIN_{window.name}"
        marks = {
            f.name: _marks(f.read_text(), name)
            for f in (*folder.glob("*.c"), *folder.glob("*.sh"))
        }
        assert any(begins for begins, _ in marks.values()), (
            f"{w.name}: nothing in {folder} marks {name}"
        )
        for file, (begins, ends) in marks.items():
            assert begins == ends, (
                f"{w.name}: {file} begins {name} {begins} times and "
                f"ends it {ends} times"
            )
    for f in (
        *WORKLOADS_DIR.glob("*/*.sh"),
        *(ROOT / "foliolab" / "guest").rglob("*.sh"),
    ):
        assert not re.search(r"flmark (begin|end) [0-9]", f.read_text()), (
            f"{f}: a window by number; use its FL_WIN_* name"
        )


def test_marks_are_counted_in_c_and_shell():
    """What the test above counts, on made-up text: a missing or extra
    end shows."""
    c = "FL_MARK_BEGIN(FL_WIN_X);\nwork();\nFL_MARK_END(FL_WIN_X);\n"
    sh = "flmark begin $FL_WIN_X\nrun\nflmark end $FL_WIN_XY\n"
    assert _marks(c, "FL_WIN_X") == (1, 1)
    assert _marks(c.replace("END", "BEGIN"), "FL_WIN_X") == (2, 0)
    assert _marks(sh, "FL_WIN_X") == (1, 0)  # FL_WIN_XY is another


def test_windows_are_generated_for_c_and_shell_from_one_list():
    """fl_windows.h (as the Makefile runs windows.py) and windows.sh have
    every window the workloads declare, with its number, and flmark can
    mark each."""
    header = subprocess.run(
        [sys.executable, "-m", "foliolab.workloads.windows", "c"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert header == windows.c_header()
    c_tags = dict(re.findall(r"#define (FL_WIN_\w+)\s+(\d+)", header))
    sh_tags = dict(re.findall(r"^(FL_WIN_\w+)=(\d+)$", windows.shell(), re.M))
    want = {f"FL_WIN_{w.name}": str(int(w)) for w in windows.WINDOWS}
    assert c_tags == sh_tags == want
    assert {w.window for w in WORKLOADS.values() if w.window != -1} <= set(
        windows.WINDOWS
    )
    assert windows.RUN == 0  # foliolab run and test --count's window
    assert all(0 <= w < windows.FLMARK_TAGS for w in windows.WINDOWS)


def _claiming(tag: int, name: str) -> Workload:
    w = next(iter(WORKLOADS.values()))
    return dataclasses.replace(
        w, name=name.lower(), window=Window(tag, name, "a test's")
    )


def test_two_workloads_cannot_claim_one_window_number():
    """A new workload's window of a number another's has is refused; one
    window shared by a folder's workloads is one window."""
    pageout = WORKLOADS["pageout"]
    assert windows.gather([pageout, WORKLOADS["pageout-4k"]]) == [
        windows.RUN,
        pageout.window,
    ]
    with pytest.raises(ValueError, match="claim tag 1"):
        windows.gather([pageout, _claiming(int(pageout.window), "NOOP")])
    with pytest.raises(ValueError, match="claim tag 0"):
        windows.gather([_claiming(0, "NOOP")])
    with pytest.raises(ValueError, match="one name"):
        windows.gather([_claiming(9, "PAGEOUT"), pageout])
    with pytest.raises(ValueError, match="0-15"):
        windows.gather([_claiming(16, "NOOP")])
    assert "CASE(15)" in (WORKLOADS_DIR / "common" / "flmark.c").read_text()


CAPTURED = """\
# foliolab counter target=x86_64 vcpus=2 symbols=3 mode=per-vcpu-callback
window 1 0
kernel_insns 1000
class invlpg 48
class invpcid 0
class cr3_write 2
class apic_icr_write 3
root try_to_unmap 400 3
rootclass try_to_unmap invlpg 48
rootclass try_to_unmap apic_icr_write 1
fn try_to_unmap_one 300 3
fn native_flush_tlb_one_user 96 48
fn read_tsc 20 4
end
window 2 0
kernel_insns 5
end
window 1 1
kernel_insns 1010
class invlpg 48
class cr3_write 2
root try_to_unmap 400 3
fn try_to_unmap_one 300 3
fn native_flush_tlb_one_user 96 48
fn read_tsc 30 6
end
window 1 2
kernel_insns 77
"""


def test_parse_counts():
    out = countwindows.parse_counts(CAPTURED)
    assert [(w.tag, w.seq) for w in out.windows] == [(1, 0), (2, 0), (1, 1)]
    w = out.windows[0]
    assert w.kernel_insns == 1000
    assert w.classes["invlpg"] == 48
    assert w.roots["try_to_unmap"] == (400, 3)
    assert w.functions["read_tsc"] == (20, 4)
    assert w.root_classes == {
        "try_to_unmap": {"invlpg": 48, "apic_icr_write": 1}
    }
    assert any("cut off" in n for n in out.notes)
    assert any("vcpus=2" in n for n in out.notes)


def test_parse_counts_malformed_lines_are_notes():
    out = countwindows.parse_counts(
        "window 1 0\nclass invlpg x\nbogus 1\nend\n"
    )
    assert len(out.windows) == 1
    assert len(out.notes) == 2


def test_parse_counts_without_switch_tracking_line_is_untracked():
    """Output of a plugin from before roots followed tasks: per vCPU, and
    no switch counts are made up for it."""
    out = countwindows.parse_counts(CAPTURED)
    assert out.switch_tracking == countwindows.UNTRACKED_OLD_PLUGIN
    assert not out.switch_tracking.tracked
    assert out.windows[0].root_switches == {}
    v = countwindows.window_metrics(
        out.windows[0], "x86_64", None, ("try_to_unmap",)
    )
    assert "try_to_unmap_switches" not in v


TRACKED = """# foliolab counter target=x86_64 vcpus=2 symbols=9 mode=per-vcpu-callback
switch_tracking on __switch_to_asm ffffffff81001130
window 4 0
kernel_insns 900
root hpage_collapse_scan_pmd 600 3 2
root khugepaged 800 1 0
end
"""


def test_parse_counts_switches_per_root():
    out = countwindows.parse_counts(TRACKED)
    assert out.switch_tracking == countwindows.SwitchTracking(
        True, "__switch_to_asm ffffffff81001130"
    )
    assert out.notes == [
        "foliolab counter target=x86_64 vcpus=2 symbols=9 "
        "mode=per-vcpu-callback"
    ]
    w = out.windows[0]
    assert w.roots["hpage_collapse_scan_pmd"] == (600, 3)
    assert w.root_switches == {"hpage_collapse_scan_pmd": 2, "khugepaged": 0}
    v = countwindows.window_metrics(
        w, "x86_64", None, ("hpage_collapse_scan_pmd", "khugepaged")
    )
    assert v["hpage_collapse_scan_pmd_switches"] == 2
    assert v["khugepaged_switches"] == 0
    text = "\n".join(
        countwindows.stat_lines(w, "x86_64", 5, out.switch_tracking)
    )
    assert "(3 calls, switched out inside 2 times)" in text
    assert "not switch-tracked" not in text


@pytest.mark.parametrize(
    "line, detail",
    [
        (
            "switch_tracking off no symbol __switch_to_asm",
            "no symbol __switch_to_asm",
        ),
        (
            "switch_tracking off arm64: roots are per vCPU",
            "arm64: roots are per vCPU",
        ),
    ],
)
def test_parse_counts_untracked_switches(line, detail):
    out = countwindows.parse_counts(
        f"{line}\nwindow 4 0\nroot khugepaged 800 1\nend\n"
    )
    assert out.switch_tracking == countwindows.SwitchTracking(False, detail)
    w = out.windows[0]
    text = "\n".join(
        countwindows.stat_lines(w, "x86_64", 5, out.switch_tracking)
    )
    assert "(1 calls, per vCPU)" in text
    assert f"roots not switch-tracked: {detail}" in text


def test_a_later_off_line_wins_over_on():
    """The plugin says off later when __switch_to_asm had no push/pop
    %rbp to instrument: the whole output is untracked then."""
    text = TRACKED + (
        "switch_tracking off no push %rbp (55) and pop %rbp "
        "(5d) in __switch_to_asm\n"
    )
    out = countwindows.parse_counts(text + "switch_tracking on x 1\n")
    assert not out.switch_tracking.tracked
    assert "no push %rbp" in out.switch_tracking.detail


def test_parse_counts_bad_switch_tracking_line_is_a_note():
    out = countwindows.parse_counts("switch_tracking maybe\n")
    assert out.switch_tracking == countwindows.UNTRACKED_OLD_PLUGIN
    assert out.notes == ["line 1 malformed: switch_tracking maybe"]


def test_window_metrics_x86():
    w = countwindows.parse_counts(CAPTURED).windows[0]
    unit = countwindows.CountUnit("folio", "try_to_unmap")
    v = countwindows.window_metrics(w, "x86_64", unit, ("try_to_unmap",))
    assert v["tlb_flush_insns"] == 50  # invlpg + CR3 writes
    assert v["ipis_sent"] == 3
    assert v["folios_counted"] == 3
    assert v["tlb_flush_insns_per_folio"] == pytest.approx(50 / 3)
    assert v["try_to_unmap_insns_per_folio"] == pytest.approx(400 / 3)
    assert v["try_to_unmap_calls"] == 3
    assert v["try_to_unmap_tlb_flush_insns"] == 48  # no CR3 write inside
    assert v["try_to_unmap_ipis_sent"] == 1
    assert "dsb_ish_insns" not in v


def test_window_metrics_arm64_and_walk_unit():
    w = countwindows.Window(
        5,
        0,
        900,
        {"tlbi_is": 4, "tlbi_local": 1, "dsb_ish": 4, "sgi1r_write": 2},
        {"rmap_walk_ksm": (600, 3)},
    )
    unit = countwindows.CountUnit("walk", "rmap_walk_ksm", whole_window=False)
    v = countwindows.window_metrics(w, "arm64", unit)
    assert v["tlb_flush_insns"] == 5
    assert v["ipis_sent"] == 2
    assert v["dsb_ish_insns"] == 4
    assert v["kernel_insns_per_walk"] == 200  # the root's own work
    assert "tlb_flush_insns_per_walk" not in v


def test_nondeterministic_functions():
    ws = [
        x.insns()
        for x in countwindows.parse_counts(CAPTURED).windows
        if x.tag == 1
    ]
    flagged = countwindows.nondeterministic_functions({"a": ws})
    assert flagged == {"read_tsc"}
    # One window per kernel decides nothing.
    assert (
        countwindows.nondeterministic_functions({"a": ws[:1], "b": ws[1:]})
        == set()
    )
    # Missing from one repeat counts as 0 there.
    assert countwindows.nondeterministic_functions({"a": [{"f": 1}, {}]}) == {
        "f"
    }
    # A path function that background work calls too jitters by little.
    jitter = {"a": [{"memset": 1_000_000}, {"memset": 1_000_079}]}
    assert countwindows.nondeterministic_functions(jitter) == set()
    assert countwindows.nondeterministic_functions(jitter, spread=0) == {
        "memset"
    }
    assert countwindows.deterministic_insns(ws[0], 1000, flagged) == 980


def test_differential_profile():
    a = countwindows.Window(
        1, 0, 0, functions={"f": (100, 1), "g": (5, 1), "h": (7, 7)}
    )
    b = countwindows.Window(
        1, 0, 0, functions={"f": (40, 1), "g": (5, 1), "k": (30, 2)}
    )
    rows = countwindows.differential_profile(
        {"vanilla": [a], "patched": [b]}, "vanilla", "patched", {"k"}
    )
    assert [r.function for r in rows] == ["f", "k", "h"]  # g unchanged
    assert rows[0].delta("vanilla", "patched") == -60
    assert rows[1].nondeterministic and not rows[0].nondeterministic
    assert rows[2].calls == {"vanilla": 7, "patched": 0}


def _counting_sample(tmp_path, variant, run, text):
    raw = tmp_path / "raw" / "pageout" / f"{variant}-{run:03d}-count"
    raw.mkdir(parents=True)
    (raw / "counts.txt").write_text(text)
    return Sample(
        "pageout",
        variant,
        run,
        {},
        True,
        [],
        "ok",
        str(raw),
        counts=str((raw / "counts.txt").relative_to(tmp_path)),
        count_window=0,
    )


def _window(total, tsc, unmap):
    return (
        f"window 1 0\nkernel_insns {total}\n"
        f"fn try_to_unmap_one {unmap} 4\nfn read_tsc {tsc} 1\nend\n"
    )


def test_analyse_counts_flags_and_profiles(tmp_path):
    samples = [
        _counting_sample(tmp_path, "vanilla", 0, _window(1000, 10, 500)),
        _counting_sample(tmp_path, "vanilla", 1, _window(1005, 15, 500)),
        _counting_sample(tmp_path, "patched", 0, _window(800, 10, 300)),
        _counting_sample(tmp_path, "patched", 1, _window(800, 10, 300)),
    ]
    a = countanalysis.analyse_counts(tmp_path, samples)["pageout"]
    assert a.known and a.flagged == {"read_tsc"}
    assert [s.values["kernel_insns_deterministic"] for s in samples] == [
        990,
        990,
        790,
        790,
    ]
    assert samples[1].values["nondeterministic_pct"] == pytest.approx(
        100 * 15 / 1005
    )
    assert a.profile[0].function == "try_to_unmap_one"
    assert "2/2" in a.summary_line()
    assert any("try_to_unmap_one" in line for line in text.profile_lines(a))


@pytest.mark.parametrize(
    "head, follows",
    [
        ("switch_tracking on __switch_to_asm ffffffff81001130\n", True),
        ("switch_tracking off no symbol __switch_to_asm\n", False),
        ("", False),  # a plugin from before the tracking
    ],
)
def test_a_counting_sample_records_whether_roots_followed_tasks(
    tmp_path, head, follows
):
    from foliolab.boot import derive
    from foliolab.bootrecord import BootResult

    w = WORKLOADS["khugepaged"]
    (tmp_path / "counts.txt").write_text(
        head + f"window {w.window} 0\nkernel_insns 10\n"
        "root hpage_collapse_scan_pmd 6 2"
        + (" 1" if follows else "")
        + "\nend\n"
    )
    res = BootResult(
        "ok", 0, [], tmp_path / "console.log", tmp_path / "results.txt", 1.0
    )
    [s] = derive.samples_from_boot(w, {}, "up", 0, res, 1, "x86_64")
    assert s.roots_follow_tasks is follows
    assert s.values["hpage_collapse_scan_pmd_insns"] == 6
    assert ("hpage_collapse_scan_pmd_switches" in s.values) is follows
    [timed] = derive.samples_from_boot(w, {}, "up", 0, res, 1)
    assert timed.roots_follow_tasks is None


def test_analyse_counts_names_kernels_whose_roots_were_per_vcpu(tmp_path):
    samples = [
        _counting_sample(tmp_path, "vanilla", 0, _window(1000, 10, 5)),
        _counting_sample(tmp_path, "patched", 0, _window(900, 10, 5)),
    ]
    samples[0].roots_follow_tasks = True
    samples[1].roots_follow_tasks = False
    a = countanalysis.analyse_counts(tmp_path, samples)["pageout"]
    assert a.untracked == ["patched"]
    assert (
        "roots counted per vCPU, not following their task across "
        "context switches, on patched" in a.summary_line()
    )
    assert a.as_dict()["roots_per_vcpu_on"] == ["patched"]


@pytest.mark.parametrize(
    "releases, summed",
    [
        ({"vanilla": "6.12.117+", "patched": "6.12.117+"}, True),
        (None, True),  # a run recorded before releases were
        ({"vanilla": "6.12.117+", "patched": "7.3.4+"}, False),
    ],
)
def test_kernels_of_two_releases_get_no_deterministic_sum(
    tmp_path, releases, summed
):
    """Two trees' deterministic sums are over different functions: no
    figure, and the summary says why; one release's kernels keep it."""
    samples = [
        _counting_sample(tmp_path, "vanilla", 0, _window(1000, 10, 500)),
        _counting_sample(tmp_path, "vanilla", 1, _window(1005, 15, 500)),
        _counting_sample(tmp_path, "patched", 0, _window(800, 10, 300)),
        _counting_sample(tmp_path, "patched", 1, _window(800, 10, 300)),
    ]
    a = countanalysis.analyse_counts(
        tmp_path, samples, ["vanilla", "patched"], releases
    )["pageout"]
    assert all(
        ("kernel_insns_deterministic" in s.values) is summed for s in samples
    )
    assert (
        "kernels of 2 releases (6.12.117+, 7.3.4+)" in a.summary_line()
    ) is not summed
    assert a.profile[0].function == "try_to_unmap_one"  # kept either way


def test_analyse_counts_one_repeat_is_unknown(tmp_path):
    samples = [
        _counting_sample(tmp_path, "vanilla", 0, _window(1000, 10, 5)),
        _counting_sample(tmp_path, "patched", 0, _window(900, 10, 5)),
    ]
    a = countanalysis.analyse_counts(tmp_path, samples)["pageout"]
    assert not a.known
    assert "kernel_insns_deterministic" not in samples[0].values
    assert a.summary_line().startswith("determinism unknown")


def test_a_renamed_function_is_counted_under_the_labs_name(tmp_path):
    from foliolab.kernel import symbols

    sysmap = (
        "ffffffff81000000 T _stext\n"
        "ffffffff81200000 t collapse_single_pmd\n"
        "ffffffff81300000 T folio_alloc_swap\n"
        "ffffffff81400000 T rmap_walk_ksm\n"
    )
    for version, scan, swap in (
        ("7.3.4", "hpage_collapse_scan_pmd", "add_to_swap"),
        ("6.12.117", "collapse_single_pmd", "folio_alloc_swap"),
    ):
        d = tmp_path / version
        d.mkdir()
        (d / "System.map").write_text(sysmap)
        (d / ".config").write_text(
            f"# Linux/x86 {version} Kernel Configuration\nCONFIG_X=y\n"
        )
        have = counting.functions_in(counting.symbol_file(d))
        assert {scan, swap, "rmap_walk_ksm"} <= have
    assert "collapse_single_pmd" not in symbols.lab_names((6, 12))
    assert (
        symbols.lab_names((7, 3))["collapse_single_pmd"]
        == "hpage_collapse_scan_pmd"
    )


def test_a_root_no_kernel_has_stops_the_run_before_it_boots():
    functions = {
        "a": {"try_to_unmap", "shrink_folio_list"},
        "b": {"try_to_unmap"},
    }
    # shrink_folio_list only in a: counted where it exists
    counting.check_roots([WORKLOADS["pageout"]], functions)
    with pytest.raises(
        errors.UsageError,
        match="counting root rmap_walk_ksm is a function of "
        "none of the kernels",
    ):
        counting.check_roots([WORKLOADS["ksm-rmap"]], functions)
    with pytest.raises(
        errors.UsageError,
        match=r"--root no_such_fn: no kernel of the run has "
        r"this function \(a, b\)",
    ):
        counting.check_roots(
            [WORKLOADS["pageout"]], functions, ("no_such_fn",)
        )


@pytest.mark.parametrize("root", ["no such", "-x", "f()", "a..b", "1abc", ""])
def test_a_root_that_is_no_function_name_is_refused(root):
    with pytest.raises(errors.UsageError, match="is not a kernel function"):
        counting.check_root_option((root,), True)


def test_root_names_as_system_map_has_them_are_taken():
    counting.check_root_option(
        ("try_to_unmap", "shrink_folio_list.isra.0", "_raw_spin_lock"), True
    )


def test_map_functions_reads_without_writing(tmp_path):
    (tmp_path / "System.map").write_text(
        "ffffffff81000000 T _stext\nffffffff81200000 t collapse_single_pmd\n"
        "ffffffff81300000 D some_data\n"
    )
    (tmp_path / ".config").write_text(
        "# Linux/x86 7.3.4 Kernel Configuration\n"
    )
    assert counting.map_functions(tmp_path) == {
        "_stext",
        "hpage_collapse_scan_pmd",
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".config",
        "System.map",
    ]
