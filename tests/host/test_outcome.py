"""outcome.py: the one judge of a boot, whoever ran it."""

import json

import pytest

from foliolab.boot import outcome
from foliolab.boot.outcome import IssueKind
from foliolab.bootrecord import BootStatus, HostLoad, read_boot
from foliolab.executors import EXECUTORS
from foliolab.executors.base import (
    BootCapture,
    Ended,
    ExecutorKind,
    JobEnd,
    NotRun,
)
from foliolab.executors.lava.local import LavaLocalExecutor
from foliolab.executors.lava.server import LavaServerExecutor


@pytest.mark.parametrize(
    "line,kind",
    [
        (
            "[    3.1] Kernel panic - not syncing: sysrq triggered crash",
            "panic",
        ),
        (
            "[    2.0] WARNING: CPU: 1 PID: 1 at mm/rmap.c:100 foo+0x1/0x2",
            "warning",
        ),
        ("[    2.0] BUG: Bad page state in process x  pfn:1234", "bug"),
        ("[    2.0] BUG: Bad page map in process x", "bad-page"),
        ("[    2.0] kernel BUG at mm/swapfile.c:1234!", "bug"),
        ("[    2.0] Oops: 0000 [#1] PREEMPT SMP", "oops"),
        ("[   30.0] rcu: INFO: rcu_sched self-detected stall on CPU", "stall"),
        (
            "[    4.0] Huh VM_FAULT_OOM leaked out to the #PF handler. Retrying PF",
            "fault-loop",
        ),
        (
            "[    5.0] swap_free: Unused swap offset entry 00000123",
            "swap-corruption",
        ),
    ],
)
def test_scan_console_finds_issues(tmp_path, line, kind):
    text = "[ 0.0] Linux version 6.12\n" + line + "\n"
    assert IssueKind(kind) in {k for k, _ in outcome.scan(text)}
    # as boot.json lists them: the kind, then its line
    issues = judge_console(tmp_path, text.encode()).issues
    assert any(i.startswith(kind + ":") for i in issues), issues


def test_scan_console_clean_boot(tmp_path, data):
    console = (data / "console-ok.log").read_bytes()
    assert judge_console(tmp_path, console).issues == []


def judge(tmp_path, **kw):
    return outcome.judge(BootCapture(tmp_path / "b", **kw))


def judge_console(tmp_path, console):
    """A boot that exited 0 on the results port, judged on its console:
    its issues are the console's only."""
    return judge(
        tmp_path, ended=Ended.EXITED, console=console, records="@@ exit 0\n"
    )


@pytest.mark.parametrize(
    "capture, status",
    [
        (dict(ended=Ended.EXITED, records="@@ exit 0\n"), BootStatus.OK),
        (dict(ended=Ended.EXITED, records=""), BootStatus.NO_EXIT),
        (dict(ended=Ended.TIMEOUT, records="@@ exit 0\n"), BootStatus.TIMEOUT),
        (
            dict(
                ended=Ended.EXITED,
                console=b"Kernel panic - not syncing: x\n",
                records="@@ exit 0\n",
            ),
            BootStatus.PANIC,
        ),
        (
            dict(ended=Ended.QEMU_ERROR, records="", error="no such device"),
            BootStatus.QEMU_ERROR,
        ),
        (
            dict(
                ended=Ended.NOT_RUN,
                executor=LavaServerExecutor.kind,
                not_run=NotRun.JOB_ENDED,
                why="Job: cancelled",
            ),
            BootStatus.NOT_RUN,
        ),
        # the boot a LAVA job ended in: timed out, or cut by an error
        (
            dict(
                ended=Ended.EXITED,
                records="",
                executor=LavaServerExecutor.kind,
                job_end=JobEnd.TIMEOUT,
                why="Test: monitor timed out",
            ),
            BootStatus.TIMEOUT,
        ),
        (
            dict(
                ended=Ended.EXITED,
                records="",
                executor=LavaServerExecutor.kind,
                job_end=JobEnd.ERROR,
                why="Infrastructure: gone",
            ),
            BootStatus.NO_EXIT,
        ),
        (
            dict(
                ended=Ended.EXITED,
                records="@@ exit 0\n",
                executor=LavaServerExecutor.kind,
                job_end=JobEnd.TIMEOUT,
                why="Test: later",
            ),
            BootStatus.OK,
        ),
    ],
)
def test_judge_decides_the_status_from_the_capture(tmp_path, capture, status):
    res = judge(tmp_path, **capture)
    assert res.status is status
    assert read_boot(tmp_path / "b").status is status
    if capture.get("why") and status is not BootStatus.OK:
        assert any(capture["why"] in i for i in res.issues), res.issues
        assert res.why_ended.endswith(": " + capture["why"])
    elif capture.get("error"):
        assert res.issues == ["qemu: no such device"]
        assert res.why_ended == "qemu: no such device"
    else:
        assert res.why_ended == ""


def test_why_a_boot_ended_is_the_executors_word_not_a_kernel_warning(
    tmp_path,
):
    """A LAVA job cut by an error, whose console also has a WARNING: the
    boot's issues list both, the warning first; why it ended is LAVA's."""
    res = judge(
        tmp_path,
        ended=Ended.EXITED,
        console=b"[ 2.0] WARNING: CPU: 1 PID: 1 at mm/rmap.c:100 foo\n",
        records="",
        executor=LavaServerExecutor.kind,
        job_end=JobEnd.ERROR,
        why="Infrastructure: gone",
    )
    assert res.status is BootStatus.NO_EXIT
    assert res.issues[0].startswith("warning:")
    assert res.why_ended.endswith(": Infrastructure: gone")
    assert res.why_ended == res.issues[-1]


def _framed(records: str, boot_id: str) -> bytes:
    import shutil
    import subprocess

    from foliolab.paths import GUEST_DIR

    return subprocess.run(
        [
            shutil.which("busybox"),
            "awk",
            "-v",
            f"id={boot_id}",
            "-f",
            str(GUEST_DIR / "frame.awk"),
        ],
        input=records.encode(),
        capture_output=True,
        check=True,
    ).stdout


def test_records_framed_on_the_console_are_taken_from_it(tmp_path):
    framed = _framed("@@ sample 0\n@@ exit 3\n", "pageout/a-000")
    console = b"[ 1.0] Linux version 6.12\n" + framed
    res = judge(tmp_path, ended=Ended.EXITED, console=console)
    assert res.status is BootStatus.OK and res.exit_code == 3
    assert (tmp_path / "b" / "results.txt").read_text() == (
        "@@ sample 0\n@@ exit 3\n"
    )
    # a frame damaged on the way is named, never misread
    bad = console.replace(b"@@ exit 3", b"@@ exit 4")
    res = judge(tmp_path, ended=Ended.EXITED, console=bad)
    assert (
        res.exit_code != 4
        and res.status is not BootStatus.OK
        or any("console-records" in i for i in res.issues)
    )


def test_boot_json_says_how_and_where_the_boot_ended(tmp_path):
    judge(
        tmp_path,
        ended=Ended.NOT_RUN,
        executor=LavaLocalExecutor.kind,
        log="/x/pageout-0.log",
        not_run=NotRun.LOG_LOST,
        why="gone",
    )
    d = json.loads((tmp_path / "b" / "boot.json").read_text())
    assert d["status"] == "not-run" and d["ended"] == "not-run"
    assert d["not_run"] == "log-lost"
    assert d["executor"] == {"kind": "lava-local", "log": "/x/pageout-0.log"}
    assert d["issues"] == ["lava: gone"]


@pytest.mark.parametrize(
    "host",
    [
        {
            "loadavg_1m": 1.61,
            "governor": "none (no cpufreq)",
            "steal_pct": 1.3,
        },
        {"loadavg_1m": 0.5, "governor": "performance"},
        {
            "loadavg_1m": 2.1,
            "governor": "performance",
            "steal_pct": 0.0,
            "guest_lock_wait_s": 312.4,
            "other_guests": 1,
        },
        {},
    ],
)
def test_the_host_of_a_boot_goes_into_boot_json_and_back(tmp_path, host):
    """boot.json's ``host`` as it has always been written, read into its
    record (the report's host line) and written again key for key."""
    judge(tmp_path, ended=Ended.EXITED, host=HostLoad.from_json(host))
    assert (
        json.loads((tmp_path / "b" / "boot.json").read_text())["host"] == host
    )
    assert read_boot(tmp_path / "b").host == HostLoad.from_json(host)


def test_each_executor_kind_names_who_tells_its_boots_issues():
    """A LAVA executor's boots speak as "lava"; any other kind as itself
    (a kind added later is not taken for LAVA because it is not QEMU)."""
    assert {k.text: k.teller for k in EXECUTORS} == {
        "qemu": "qemu",
        "lava": "lava",
        "lava-local": "lava",
        "lava-export": "lava",
    }
    assert ExecutorKind("stub").teller == "stub"
