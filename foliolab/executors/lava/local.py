"""`--executor lava-local`: each block a LAVA job run by LAVA's own
dispatcher (`lava-run`) on this machine, which also checks a job against
a device (`--validate`).

Set up on first use, without touching the host's QEMU or Python: Debian
bookworm's lava-common, lava-dispatcher and lava-dispatcher-host packages
(and lava-server, for its device-type templates only) are unpacked into
foliolab's cache with `apt-get download` and `dpkg-deb -x`, and their
Python dependencies are installed from PyPI into a virtualenv of their own
there, pinned to the versions bookworm ships. `apt-get install
lava-dispatcher` would instead pull about 150 packages, upgrades of
systemd and perl among them.

lava-run refuses to run unless root, and keeps each job's downloads under
/var/lib/lava/dispatcher/tmp/JOB (it removes them when the job ends).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import time
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from foliolab import locks, proc
from foliolab.errors import LavaError, UsageError
from foliolab.executors.base import BlockRequest, BootCapture, ExecutorKind
from foliolab.executors.lava.debs import (
    LAVA_VERSION,
    lava_common_dir,
    unpack_debs,
)
from foliolab.executors.lava.definition import COUNTS
from foliolab.executors.lava.job import (
    JOBS_DIR,
    LAVA_HERE,
    LOGS_DIR,
    TELLER,
    LavaJobs,
    LavaOptions,
    Target,
)
from foliolab.executors.lava.log import JobLog
from foliolab.executors.lava.record import LavaRecord
from foliolab.paths import cache_root

log = logging.getLogger("foliolab")

# lava-common comes from lava.lava_common_dir(), as for checking jobs
PACKAGES = ("lava-dispatcher", "lava-dispatcher-host", "lava-server")
# lava-dispatcher's Depends, from PyPI at bookworm's versions (netifaces
# as netifaces-plus, which has wheels; python-magic uses the host's
# libmagic1, which `file` brings)
REQUIREMENTS = (
    "configobj==5.0.8",
    "jinja2==3.1.2",
    "netifaces-plus==0.12.5",
    "pexpect==4.8.0",
    "python-magic==0.4.26",
    "pytz==2022.7.1",
    "pyudev==0.24.0",
    "pyyaml==6.0.2",
    "requests==2.28.1",
    "setproctitle==1.3.1",
    "voluptuous==0.13.1",
)
# lava-dispatcher 2023.01 imports guestfs at module level, but only its
# disk-image overlays call it; foliolab's jobs never do. The real module
# is a C binding of libguestfs (Debian's python3-guestfs and its ~100
# dependencies), so a module that fails loudly if it is ever used stands in.
GUESTFS_STAND_IN = '''"""Stand-in for libguestfs's Python binding (foliolab's LAVA
dispatcher never builds disk images)."""


def __getattr__(name):
    raise ImportError("guestfs is not installed in foliolab's LAVA "
                      "dispatcher: jobs that build disk images need "
                      "Debian's python3-guestfs")
'''

# Renders a device dictionary (a Jinja2 template extending a device type)
# into the device YAML lava-run reads, with the job's context as its
# variables, as a LAVA server does when it schedules a job.
_RENDER = """
import json, sys, jinja2
req = json.load(sys.stdin)
env = jinja2.Environment(loader=jinja2.FileSystemLoader(req["templates"]),
                         autoescape=False, trim_blocks=True)
sys.stdout.write(env.from_string(req["dictionary"]).render(**req["context"]))
"""


@dataclass(frozen=True)
class Dispatcher:
    root: Path  # the unpacked packages
    venv: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def lava_run(self) -> Path:
        return self.root / "usr" / "bin" / "lava-run"

    @property
    def templates(self) -> Path:
        return self.root / "usr" / "share" / "lava-server" / "device-types"

    def environ(self) -> dict[str, str]:
        paths = [
            self.root / "usr" / "lib" / "python3" / "dist-packages",
            lava_common_dir(),
            self.root / "stand-ins",
        ]
        return {"PYTHONPATH": os.pathsep.join(str(p) for p in paths)}

    def device(self, dictionary: str, context: dict[str, Any]) -> str:
        """The device YAML for ``dictionary`` and a job's ``context``."""
        cp = proc.run(
            [self.python, "-c", _RENDER],
            check=False,
            input=json.dumps(
                {
                    "templates": str(self.templates),
                    "dictionary": dictionary,
                    "context": context,
                }
            ),
        )
        if cp.returncode:
            raise LavaError(
                "cannot render the LAVA device dictionary: "
                + (cp.stderr.strip().splitlines() or ["?"])[-1],
                hint="a foliolab bug: please report it",
            )
        return cp.stdout

    def run(
        self,
        job: Path,
        device: Path,
        log_path: Path,
        job_id: str,
        timeout: float,
        validate: bool = False,
    ) -> int:
        """lava-run ``job`` on ``device``; its log (one JSON record per
        line) goes to ``log_path``. Returns lava-run's exit code."""
        if os.geteuid() != 0:
            raise LavaError(
                "LAVA's lava-run refuses to run unless root",
                hint="run foliolab as root for --executor "
                "lava-local, or `foliolab jobs export` the "
                "jobs and run them on a LAVA worker",
            )
        work = log_path.parent / f".lava-run-{job_id}"
        argv: list[Any] = [
            self.python,
            self.lava_run,
            "--job-id",
            job_id,
            "--output-dir",
            work,
            "--device",
            device,
        ]
        argv += ["--validate"] if validate else []
        argv.append(job)
        # Out of time, or stopped: lava-run cancels its job and ends its
        # QEMU on SIGTERM (QEMU runs in a session of its own, which a
        # SIGKILL of lava-run would leave behind). The log so far is
        # kept; the boots after the cut did not run.
        try:
            done = proc.run_until(
                argv,
                output=log_path,
                timeout=timeout,
                env=self.environ(),
                grace=60,
                error=LavaError,
            )
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return -1 if done.timed_out else done.returncode


def _venv(venv: Path) -> None:
    _run(
        [sys.executable, "-m", "venv", str(venv)],
        venv.parent,
        "the host's Python needs its venv module (apt-get install "
        "python3-venv)",
    )
    _run(
        [
            str(venv / "bin" / "pip"),
            "install",
            "-q",
            "--disable-pip-version-check",
            *REQUIREMENTS,
        ],
        venv.parent,
        "pip needs PyPI",
    )


def _run(argv: list[str], cwd: Path, hint: str) -> None:
    try:
        proc.run(
            argv,
            cwd=cwd,
            error=LavaError,
            what=f"setting up LAVA's dispatcher: {argv[0]}",
        )
    except LavaError as e:
        raise LavaError(e.message, hint=hint) from e


def dispatcher() -> Dispatcher:
    """LAVA's dispatcher in foliolab's cache, set up on first use."""
    base = cache_root() / "lava" / LAVA_VERSION / "dispatcher"
    d = Dispatcher(base / "root", base / "venv")
    ready = base / "ready"
    if ready.exists():
        return d
    t0 = time.monotonic()
    log.info(
        "setting up LAVA's dispatcher %s in %s (once)", LAVA_VERSION, base
    )
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    unpack_debs(PACKAGES, d.root)
    stand_ins = d.root / "stand-ins"
    stand_ins.mkdir()
    (stand_ins / "guestfs.py").write_text(GUESTFS_STAND_IN)
    _venv(d.venv)
    cp = proc.run(
        [d.python, d.lava_run, "--help"], env=d.environ(), check=False
    )
    if cp.returncode:
        raise LavaError(
            "LAVA's dispatcher does not start: "
            + (cp.stderr.strip().splitlines() or ["?"])[-1],
            hint=f"remove {base} and try again",
        )
    ready.write_text(f"{time.monotonic() - t0:.1f} s\n")
    return d


def qemu_device(d: Dispatcher, context: dict[str, Any], kvm: bool) -> str:
    """The device YAML of a QEMU device on this machine for a job's
    ``context``; without KVM the template must not add -enable-kvm."""
    dictionary = "{% extends 'qemu.jinja2' %}"
    if not kvm:
        dictionary += "{% set no_kvm = True %}"
    return d.device(dictionary, context)


class LavaLocalExecutor(LavaRecord, LavaJobs):
    """Each block a LAVA job, run by lava-run on this machine (KVM when
    the run's boots ask for it)."""

    kind = ExecutorKind("lava-local", LAVA_HERE, TELLER)
    summary = "LAVA's dispatcher here"
    # lava-run here runs this machine's QEMU (the one the plugin is built
    # against), and a boot's counts can be written to its run directory:
    # each counting boot's QEMU loads the plugin (definition.counting_args)
    counts = True

    def __init__(self, out: Path) -> None:
        super().__init__(out, Target())

    @classmethod
    def check(cls, opts: LavaOptions, count: bool) -> None:
        super().check(opts, count)
        if not opts.target.is_qemu:
            raise UsageError(
                f"--executor lava-local runs LAVA's qemu device "
                f"type on this machine, not a "
                f"{opts.target.device_type}",
                hint="boards run with --executor lava on a lab",
            )
        if os.geteuid() != 0:
            raise UsageError(
                "--executor lava-local needs root: LAVA's "
                "lava-run refuses to run otherwise",
                hint="run as root, or `foliolab jobs export` "
                "the jobs for a LAVA worker",
            )

    @classmethod
    def make(cls, opts: LavaOptions, out: Path) -> LavaLocalExecutor:
        return cls(out)

    def run(
        self, image: Path, blocks: Iterable[BlockRequest]
    ) -> Generator[tuple[BlockRequest, list[BootCapture]], None, None]:
        d = dispatcher()
        for n, block in enumerate(blocks):
            job, path = self.job(image, block)
            for boot in block.boots:
                if boot.spec.counter:
                    # the plugin opens its file in the boot's directory;
                    # an earlier boot's counts must not pass for its own
                    boot.rundir.mkdir(parents=True, exist_ok=True)
                    (boot.rundir / COUNTS).unlink(missing_ok=True)
            device = self.out / JOBS_DIR / f"{block.name}.device.yaml"
            kvm = block.boots[0].spec.accel == "kvm"
            device.write_text(qemu_device(d, job["context"], kvm))
            log_path = self.out / LOGS_DIR / f"{block.name}.log"
            log_path.parent.mkdir(parents=True, exist_ok=True)
            limit = job["timeouts"]["job"]["minutes"] * 60 + 60
            # its QEMU runs on this machine, as QEMU here's boots do: the
            # machine's guests' lock for the job, its limit counted once
            # held (its boots' records do not say the wait: a job's boots
            # are not QEMU's one by one)
            with locks.guests_here():
                t0 = time.monotonic()
                rc = d.run(
                    path, device, log_path, f"{os.getpid()}{n:04d}", limit
                )
                wall = time.monotonic() - t0
            log = JobLog.read(log_path.read_text(errors="replace"))
            captured = self.captures(block, log_path, log)
            self.journal(
                {
                    "block": block.name,
                    "lava_run_rc": rc,
                    "seconds": round(wall, 2),
                    "boot_seconds": [round(c.elapsed, 2) for c in captured],
                    "outcome": log.why or "complete",
                }
            )
            yield block, captured
