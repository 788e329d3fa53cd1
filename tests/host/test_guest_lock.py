"""One guest at a time on this machine (locks.guests_here), and what each
boot's boot.json says of it: the seconds it waited for the lock and the
other qemu-system processes running as its QEMU started.

QEMU is a shell script here (no kernel boots): it writes when it started
and ended into its console log.
"""

import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from foliolab import bootrecord, locks
from foliolab.analysis.runboots import host_line
from foliolab.arch import ARCHES
from foliolab.boot.measure import boot_once
from foliolab.bootrecord import BootJob, HostLoad, Pass, read_boot
from foliolab.errors import DamagedRunError
from foliolab.executors import qemu
from foliolab.executors.base import BootRequest
from foliolab.paths import PROJECT_ROOT

WAITING = "waiting for another foliolab guest on this machine to end"


def fake_qemu(tmp_path: Path, seconds: float) -> Path:
    """A "QEMU" that runs ``seconds`` and writes its start and end times
    (and the records of a boot that exited 0)."""
    script = tmp_path / "fake-qemu"
    script.write_text(
        "#!/bin/sh\n"
        'for a; do case $prev in -chardev) eval "$(echo $a | '
        "sed -n 's/^file,id=\\(con\\|res\\),path=\\(.*\\)/"
        "\\1=\\2/p')\";; esac; prev=$a; done\n"
        "echo start $(date +%s.%N) > $con\n"
        f"sleep {seconds}\n"
        "echo end $(date +%s.%N) >> $con\n"
        'printf "@@ exit 0\\n" > $res\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


# Boots once through qemu.capture in a process of its own, once the test
# says go (both processes ready first, so their boots do meet), and
# prints the seconds it waited for the guests' lock.
DRIVER = """
import logging, sys, time
from dataclasses import replace
from pathlib import Path
from foliolab.arch import ARCHES
from foliolab.executors import qemu
logging.basicConfig(format="%(message)s")
script, rundir, ready, go = sys.argv[1:]
arch = replace(ARCHES["x86_64"], qemu_binary=script)
rundir = Path(rundir)
rundir.mkdir(parents=True)
img = rundir / "base.cpio"
img.write_bytes(b"")
Path(ready).touch()
while not Path(go).exists():
    time.sleep(0.01)
c = qemu.capture(qemu.BootSpec(arch, rundir / "k", timeout=30), img,
                 "true\\n", rundir)
print(c.host.guest_lock_wait_s)
"""


def interval(console: Path) -> tuple[float, float]:
    words = dict(line.split() for line in console.read_text().splitlines())
    return float(words["start"]), float(words["end"])


def test_two_commands_guests_never_overlap(tmp_path, tmp_cache):
    """Two processes boot at once: one QEMU runs, the other waits for it
    to end (says so on stderr, once) and records the wait."""
    script = fake_qemu(tmp_path, 0.6)
    go = tmp_path / "go"
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    procs = []
    for name in ("a", "b"):
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    DRIVER,
                    str(script),
                    str(tmp_path / name),
                    str(tmp_path / f"{name}.ready"),
                    str(go),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
        )
    deadline = time.monotonic() + 60
    while not all((tmp_path / f"{n}.ready").exists() for n in "ab"):
        assert time.monotonic() < deadline, "the drivers did not start"
        assert all(p.poll() is None for p in procs), procs[0].stderr
        time.sleep(0.01)
    go.touch()
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    (s1, e1), (s2, e2) = sorted(
        interval(tmp_path / n / "console.log") for n in "ab"
    )
    assert e1 <= s2, f"guests overlapped: {s1}-{e1} and {s2}-{e2}"
    waits = sorted(float(out) for out, _ in outs)
    assert waits[0] < 0.5 and waits[1] >= 0.4, waits
    said = [err.count(WAITING) for _, err in outs]
    assert sorted(said) == [0, 1], outs


def hold_lock(seconds: float) -> threading.Thread:
    """Another guest's turn, held for ``seconds`` from now."""
    held = threading.Event()

    def hold():
        with locks.guests_here():
            held.set()
            time.sleep(seconds)

    t = threading.Thread(target=hold)
    t.start()
    held.wait(10)
    return t


def test_the_wait_goes_into_boot_json_and_not_into_the_timeout(
    tmp_path, tmp_cache, capsys
):
    """A boot that waits 1.5 s for the lock, with a 1 s limit of its own
    and a QEMU that runs 0.2 s, ends ok (the limit starts with QEMU), and
    its boot.json says how long it waited."""
    arch = replace(ARCHES["x86_64"], qemu_binary=str(fake_qemu(tmp_path, 0.2)))
    img = tmp_path / "base.cpio"
    img.write_bytes(b"")
    other = hold_lock(1.5)
    res = boot_once(
        qemu.QemuExecutor(),
        BootRequest(
            "run",
            qemu.BootSpec(arch, tmp_path / "k", timeout=1),
            "true\n",
            tmp_path / "run",
        ),
        img,
    )
    other.join()
    assert res.status == "ok", res.describe()
    assert res.elapsed < 1
    host = json.loads((tmp_path / "run" / "boot.json").read_text())["host"]
    assert 1.0 <= host["guest_lock_wait_s"] < 10
    assert isinstance(host["other_guests"], int) and host["other_guests"] >= 0
    back = read_boot(tmp_path / "run").host
    assert back.guest_lock_wait_s == host["guest_lock_wait_s"]
    assert back.other_guests == host["other_guests"]


def test_a_boot_that_did_not_wait_records_no_wait(tmp_path, tmp_cache):
    arch = replace(ARCHES["x86_64"], qemu_binary=str(fake_qemu(tmp_path, 0)))
    img = tmp_path / "base.cpio"
    img.write_bytes(b"")
    c = qemu.capture(
        qemu.BootSpec(arch, tmp_path / "k", timeout=10), img, "", tmp_path
    )
    assert c.host.guest_lock_wait_s is not None
    assert c.host.guest_lock_wait_s < 0.5


@pytest.fixture
def started():
    """Starts a process under a name and stops it after the test."""
    procs = []

    def start(argv, comm):
        p = subprocess.Popen(argv)
        procs.append(p)
        # until it runs as itself: neither the fork of this Python nor
        # the shell before its exec
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                now = Path(f"/proc/{p.pid}/comm").read_text().strip()
            except OSError:
                break
            if now == comm:
                break
            time.sleep(0.01)
        return p.pid

    yield start
    for p in procs:
        p.kill()
        p.wait()


def test_a_guest_started_under_qemus_name_is_seen(started):
    """A process started as qemu-system-x86_64 (argv[0], what ``exec -a``
    sets; its comm stays sleep's) counts as a guest."""
    pid = started(
        ["bash", "-c", "exec -a qemu-system-x86_64 sleep 30"], "sleep"
    )
    assert Path(f"/proc/{pid}/comm").read_text().strip() == "sleep"
    assert pid in bootrecord.qemu_processes()


def test_a_guest_of_a_binary_named_qemu_is_seen(tmp_path, started):
    """A binary named qemu-system-x86_64 started under another name: the
    kernel's comm (cut to 15 characters) still says qemu-system."""
    binary = tmp_path / "qemu-system-x86_64"
    shutil.copy(shutil.which("sleep"), binary)
    pid = started(
        ["bash", "-c", f"exec -a not-a-guest {binary} 30"], "qemu-system-x86"
    )
    assert Path(f"/proc/{pid}/comm").read_text().strip() == "qemu-system-x86"
    assert pid in bootrecord.qemu_processes()


def test_other_processes_are_not_guests(started):
    pid = started(["sleep", "30"], "sleep")
    assert pid not in bootrecord.qemu_processes()
    assert os.getpid() not in bootrecord.qemu_processes()


def write_boot(rundir: Path, host: dict) -> None:
    rundir.mkdir(parents=True)
    (rundir / "boot.json").write_text(
        json.dumps(
            {
                "status": "ok",
                "exit_code": 0,
                "issues": [],
                "console": "console.log",
                "results": "results.txt",
                "elapsed": 10.0,
                "host": host,
            }
        )
    )


def test_an_older_boot_json_without_the_fields_still_reads(tmp_path):
    write_boot(tmp_path / "b", {"loadavg_1m": 0.5, "governor": "schedutil"})
    host = read_boot(tmp_path / "b").host
    assert host == HostLoad(0.5, "schedutil")
    assert host.guest_lock_wait_s is None and host.other_guests is None


@pytest.mark.parametrize(
    "host",
    [{"other_guests": -1}, {"other_guests": 1.5}, {"guest_lock_wait_s": -2}],
)
def test_a_bad_count_or_wait_is_a_damaged_record(tmp_path, host):
    write_boot(tmp_path / "b", host)
    with pytest.raises(DamagedRunError, match="boot.json"):
        read_boot(tmp_path / "b")


def run_with_boots(out: Path, hosts: list[dict]) -> Path:
    for i, host in enumerate(hosts):
        d = out / "raw" / "pageout" / f"vanilla-{i:03d}"
        write_boot(d, host)
        BootJob(i, "pageout", "vanilla", Pass.TIMED, i, 1).write(d)
    return out


def test_the_reports_host_line_says_the_other_guests(tmp_path):
    out = run_with_boots(
        tmp_path / "run",
        [
            {"loadavg_1m": 0.5, "other_guests": 0},
            {"loadavg_1m": 1.5, "other_guests": 2},
            {"loadavg_1m": 1.0},  # an older foliolab's boot
        ],
    )
    line = host_line(out)
    assert "other guests as a boot started: up to 2, in 1 of 2 boots" in line
    quiet = run_with_boots(
        tmp_path / "quiet", [{"loadavg_1m": 0.5, "other_guests": 0}]
    )
    assert "other guests as a boot started: none (in 1 boots)" in host_line(
        quiet
    )
    older = run_with_boots(tmp_path / "older", [{"loadavg_1m": 0.5}])
    assert "guest" not in host_line(older)
