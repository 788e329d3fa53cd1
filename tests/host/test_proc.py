"""proc.py: the one runner of external commands."""

import signal
import time

import pytest

from foliolab import proc
from foliolab.errors import BootError, Stop


def _alive(marker: str) -> bool:
    import os

    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    return True
        except OSError:
            pass
    return False


def test_run_until_ends_a_command_out_of_time(tmp_path):
    done = proc.run_until(
        ["sleep", "30.25"], output=tmp_path / "o", timeout=0.5
    )
    assert done.timed_out and done.elapsed < 10
    assert not _alive("30.25")


def test_run_until_ends_its_command_when_the_run_is_stopped(tmp_path):
    def stop(signum, frame):
        raise Stop("SIGALRM")

    old = signal.signal(signal.SIGALRM, stop)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        t0 = time.monotonic()
        with pytest.raises(Stop):
            proc.run_until(
                ["sh", "-c", "trap '' TERM; sleep 30.5"],
                output=tmp_path / "o",
                timeout=60,
                grace=0.5,
            )
        assert time.monotonic() - t0 < 10
    finally:
        signal.signal(signal.SIGALRM, old)
    assert not _alive("sleep 30.5")


def test_run_until_names_a_missing_command(tmp_path):
    with pytest.raises(BootError, match="command not found: nosuch"):
        proc.run_until(
            ["nosuch"], output=tmp_path / "o", timeout=1, error=BootError
        )


def test_run_until_keeps_the_output_and_the_exit_code(tmp_path):
    done = proc.run_until(
        ["sh", "-c", "echo hi; echo err >&2; exit 3"],
        output=tmp_path / "o",
        timeout=10,
    )
    assert done.returncode == 3 and not done.timed_out
    assert (tmp_path / "o").read_text() == "hi\nerr\n"


def test_run_lines_hands_each_line_over_and_logs_them(tmp_path):
    lines = []
    rc = proc.run_lines(
        ["sh", "-c", 'echo "$WORD"; echo err >&2; exit 2'],
        log_path=tmp_path / "build" / "log",
        on_line=lines.append,
        env={"WORD": "hi"},
    )
    assert rc == 2 and lines == ["hi\n", "err\n"]
    assert (tmp_path / "build" / "log").read_text().endswith("hi\nerr\n")


def test_run_lines_names_a_missing_command(tmp_path):
    with pytest.raises(BootError, match="command not found: nosuch"):
        proc.run_lines(
            ["nosuch"],
            log_path=tmp_path / "log",
            on_line=print,
            error=BootError,
        )
