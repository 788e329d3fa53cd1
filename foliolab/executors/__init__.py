"""Who runs the boots: QEMU here, LAVA's dispatcher here, or a LAVA lab.

The measuring half (measure.py) plans the boots, writes each one's
job.json and hands an executor blocks of boot requests; the executor
gives back, for every boot, what it captured (outcome.BootCapture), and
outcome.judge makes each the boot's result. Samples, statistics and
reports are the same whoever ran the boots.

- ``qemu`` (qemu.py): one boot at a time, here.
- ``lava-local`` (lava/local.py): each block (a workload's two interleaved
  rounds, ABBA) is one LAVA job, run by LAVA's own dispatcher on this
  machine, QEMU device type; the records come back on the console.
- ``lava`` (lava/server.py): the same jobs submitted to a LAVA server, all
  at once, each job's log fetched as it finishes.
- ``jobs export`` (lava/export.py): the same jobs written, nothing run.

Adding an executor is one module here with a class that has ``kind``,
``rounds_per_block`` and ``run``, one ExecutorKind value, and its line in
``make_executor``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from foliolab.boot import BlockRequest
from foliolab.errors import UsageError
from foliolab.executors.lava.job import Target
from foliolab.outcome import BootCapture, ExecutorKind


class Executor(Protocol):
    kind: ExecutorKind
    # rounds per block: 0 hands the executor one boot at a time (and lets
    # the measuring half stop booting a kernel that keeps failing)
    rounds_per_block: int

    def run(self, image: Path, blocks: Iterable[BlockRequest]
            ) -> Iterator[tuple[BlockRequest, list[BootCapture]]]:
        """Run ``blocks`` on the base ramdisk ``image``, taken from the
        iterable as the executor is ready for them; yield each with what
        was captured of its boots, in boot order."""
        ...


@dataclass(frozen=True)
class ExecutorOptions:
    """Who runs the boots, as the command line says."""

    kind: ExecutorKind = ExecutorKind.QEMU
    target: Target = field(default_factory=Target)
    url: str = ""                   # --lava-url ("": lavacli's identity)
    identity: str = "default"       # lavacli's identity
    poll: float = 30.0              # seconds between asking the server
    artifacts_url: str = ""         # where a lab's workers fetch them
    artifacts_dir: Path | None = None   # default OUT/lava/artifacts
    # LAVA options the user gave (flag names), for refusing them elsewhere
    given: tuple[str, ...] = ()


# LAVA options and the executors that use them.
_LAVA_ONLY = {"--lava-url": (ExecutorKind.LAVA,),
              "--lava-identity": (ExecutorKind.LAVA,),
              "--artifacts-dir": (ExecutorKind.LAVA,),
              "--lava-poll": (ExecutorKind.LAVA,),
              "--lava-device-type": (ExecutorKind.LAVA,
                                     ExecutorKind.LAVA_LOCAL,
                                     ExecutorKind.LAVA_EXPORT),
              "--lava-tags": (ExecutorKind.LAVA, ExecutorKind.LAVA_LOCAL,
                              ExecutorKind.LAVA_EXPORT),
              "--lava-dtb": (ExecutorKind.LAVA, ExecutorKind.LAVA_LOCAL,
                             ExecutorKind.LAVA_EXPORT),
              "--artifacts-url": (ExecutorKind.LAVA,
                                  ExecutorKind.LAVA_EXPORT)}


def _check(opts: ExecutorOptions, count: bool) -> None:
    """Bad combinations of executor and options."""
    for flag in opts.given:
        if opts.kind not in _LAVA_ONLY.get(flag, (opts.kind,)):
            kinds = [str(k) for k in _LAVA_ONLY[flag]
                     if k is not ExecutorKind.LAVA_EXPORT]
            raise UsageError(f"{flag} is an option of --executor "
                             f"{' or '.join(kinds)}, not of --executor "
                             f"{opts.kind}",
                             hint=f"drop {flag}, or give the executor")
    if not opts.kind.is_lava:
        return
    if count:
        raise UsageError(f"--count needs foliolab's QEMU plugin in the QEMU "
                         f"that runs the guest; --executor {opts.kind} "
                         "runs LAVA's", hint="count with --executor qemu")
    opts.target.check()
    if opts.kind is ExecutorKind.LAVA_LOCAL:
        if not opts.target.is_qemu:
            raise UsageError(f"--executor lava-local runs LAVA's qemu device "
                             f"type on this machine, not a "
                             f"{opts.target.device_type}",
                             hint="boards run with --executor lava on a lab")
        if os.geteuid() != 0:
            raise UsageError("--executor lava-local needs root: LAVA's "
                             "lava-run refuses to run otherwise",
                             hint="run as root, or `foliolab jobs export` "
                                  "the jobs for a LAVA worker")
    if opts.kind is ExecutorKind.LAVA and not opts.poll >= 1:
        raise UsageError(f"--lava-poll {opts.poll:g}: under a second "
                         "between questions floods the server",
                         hint="give 1 or more (default 30)")
    if opts.kind is ExecutorKind.LAVA and not opts.artifacts_url:
        raise UsageError("--executor lava needs --artifacts-url: the "
                         "lab's workers fetch kernels, ramdisk and job "
                         "archives from it",
                         hint="serve --artifacts-dir over HTTP and give "
                              "its URL")


def make_executor(opts: ExecutorOptions, out: Path, count: bool = False
                  ) -> Executor:
    """The executor ``opts`` name, checked (before anything is built) and
    made in one place: a lab's credentials are read here, once."""
    _check(opts, count)
    if opts.kind is ExecutorKind.QEMU:
        from foliolab.executors.qemu import QemuExecutor
        return QemuExecutor()
    if opts.kind is ExecutorKind.LAVA_LOCAL:
        from foliolab.executors.lava.local import LavaLocalExecutor
        return LavaLocalExecutor(out)
    if opts.kind is ExecutorKind.LAVA_EXPORT:
        from foliolab.executors.lava.export import LavaExport
        return LavaExport(out, opts.target, opts.artifacts_url)
    from foliolab.executors.lava import server
    creds = server.credentials(opts.url, opts.identity)
    return server.LavaServerExecutor(out, opts.target,
                                     server.Server(creds, opts.poll),
                                     opts.artifacts_dir, opts.artifacts_url)
