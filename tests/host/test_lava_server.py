"""`--executor lava` against a real LAVA server: Debian's lava-server and
lava-dispatcher 2023.01 on this machine, started by scripts/lava-server-local
(which installs them on first use: root, apt). The stand-in server of
test_executors_lava.py keeps the faults a real one will not make on demand
(a refused token, a flaky server).
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from samerun import assert_same_run

from foliolab import cli
from foliolab.executors.lava import server as lavaserver

pytestmark = [
    pytest.mark.qemu,
    pytest.mark.skipif(
        os.geteuid() != 0, reason="a LAVA lab here needs root (apt, lava-run)"
    ),
]

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "lava-server-local"
SMALL = [
    "--workloads",
    "pageout",
    "--patches",
    "none",
    "--param",
    "size_mb=32",
    "--accel",
    "tcg",
]


@pytest.fixture(scope="module")
def lab():
    """The local lab's settings; stopped afterwards if started here."""
    status = subprocess.run(
        [SCRIPT, "status"], capture_output=True, text=True
    ).stdout
    started_here = "gunicorn: running" not in status
    t0 = time.monotonic()
    try:
        cp = subprocess.run(
            [SCRIPT, "start"], capture_output=True, text=True, timeout=1800
        )
        assert cp.returncode == 0, cp.stderr
        print(
            f"\nlava-server-local start: {time.monotonic() - t0:.1f} s",
            file=sys.stderr,
        )
        env = dict(re.findall(r"^export (\w+)=(.*)$", cp.stdout, re.M))
        assert env["LAVA_TOKEN"] and env["LAVA_URL"].startswith("http://127.")
        yield env
    finally:
        # also when start failed half way: nothing it started stays
        if started_here:
            subprocess.run([SCRIPT, "stop"], check=True)


def lava_argv(lab):
    return [
        "--executor",
        "lava",
        "--lava-url",
        lab["LAVA_URL"],
        "--artifacts-dir",
        lab["FOLIOLAB_ARTIFACTS_DIR"],
        "--artifacts-url",
        lab["FOLIOLAB_ARTIFACTS_URL"],
        "--lava-poll",
        "2",
    ]


def server(lab):
    return lavaserver.Server(
        lavaserver.Credentials(lab["LAVA_URL"], lab["LAVA_TOKEN"])
    )


def journal(out):
    path = out / "lava" / "jobs.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def load(out):
    return json.loads((out / "results.json").read_text())


def test_one_abba_block_through_a_lava_server_gives_what_qemu_gives(
    tmp_path, lab, monkeypatch
):
    """One ABBA block as a job of the real server (scheduled, run by its
    worker, its log fetched through the REST API), and the same boots by
    foliolab's QEMU: the same samples, all valid, and the same report."""
    monkeypatch.setenv("LAVA_TOKEN", lab["LAVA_TOKEN"])
    runs = {}
    for executor, extra in (
        ("lava", lava_argv(lab)),
        ("qemu", ["--executor", "qemu"]),
    ):
        out = tmp_path / executor
        t0 = time.monotonic()
        assert (
            cli.main(
                ["compare", *SMALL, "--runs", "2", *extra, "--out", str(out)]
            )
            == 0
        )
        print(f"{executor}: {time.monotonic() - t0:.1f} s", file=sys.stderr)
        runs[executor] = out
    assert_same_run(runs["lava"], runs["qemu"], samples=4)
    env = load(runs["lava"])["environment"]
    assert env["executor"]["kind"] == "lava"
    assert env["executor"]["server"] == lab["LAVA_URL"]
    # the server's own account of the job: finished, complete, its log
    # (as served) the one foliolab read
    (job_id,) = {e["job_id"] for e in journal(runs["lava"])}
    state = server(lab).job(job_id)
    assert (state["state"], state["health"]) == ("Finished", "Complete")
    assert state["actual_device"] == "qemu01"
    log = (runs["lava"] / "lava" / "logs" / "pageout-0.log").read_text()
    assert log == server(lab).log(job_id) and "@@=end" in log


def test_a_stopped_run_leaves_no_job_on_the_server(tmp_path, lab):
    """SIGTERM while the server runs the first job: foliolab cancels every
    job it submitted, and the server ends them (nothing runs, nothing
    waits, the device is idle again)."""
    out = tmp_path / "stopped"
    argv = [
        sys.executable,
        "-m",
        "foliolab",
        "compare",
        *SMALL,
        "--runs",
        "4",
        *lava_argv(lab),
        "--out",
        str(out),
    ]
    # stderr to a file: a pipe nobody reads while we wait could fill
    err_path = tmp_path / "stderr.txt"
    err_file = err_path.open("w")
    run = subprocess.Popen(
        argv,
        env={**os.environ, "LAVA_TOKEN": lab["LAVA_TOKEN"]},
        stderr=err_file,
        text=True,
        cwd=SCRIPT.parents[1],
    )
    lab_server = server(lab)
    try:
        first = _wait(
            lambda: [e["job_id"] for e in journal(out) if "submitted" in e][
                :1
            ],
            600,
            "a submission",
        )
        _wait(
            lambda: lab_server.job(first[0])["state"] == "Running",
            600,
            f"job {first[0]} running",
        )
        run.send_signal(signal.SIGTERM)
        run.wait(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
        err_file.close()
    err = err_path.read_text()
    assert run.returncode != 0
    submitted = {e["job_id"] for e in journal(out) if "submitted" in e}
    assert len(submitted) == 2  # --runs 4: two ABBA blocks
    for job_id in submitted:
        assert f"cancelled LAVA job {job_id}" in err

    def all_ended():
        states = [lab_server.job(j) for j in submitted]
        return all(s["state"] == "Finished" for s in states) and states

    states = _wait(all_ended, 300, "the cancelled jobs to end")
    assert {s["health"] for s in states} == {"Canceled"}
    for state in (
        "Submitted",
        "Scheduling",
        "Scheduled",
        "Running",
        "Canceling",
    ):
        assert lab_server._call("GET", f"jobs/?state={state}")["count"] == 0
    assert _wait(
        lambda: lab_server._call("GET", "devices/qemu01/")["state"] == "Idle",
        120,
        "qemu01 idle",
    )


def _wait(check, seconds, what):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        got = check()
        if got:
            return got
        time.sleep(1)
    raise AssertionError(f"waited {seconds} s for {what}")
