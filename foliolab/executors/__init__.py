"""Who runs the boots: QEMU here, LAVA's dispatcher here, or a LAVA lab.

The measuring half (measure.py) plans the boots, writes each one's
job.json and hands an executor blocks of boot requests; the executor
gives back, for every boot, what it captured (base.BootCapture), and
outcome.judge makes each the boot's result. Samples, statistics and
reports are the same whoever ran the boots.

- ``qemu`` (qemu.py): one boot at a time, here.
- ``lava-local`` (lava/local.py): each block (a workload's two interleaved
  rounds, ABBA) is one LAVA job, run by LAVA's own dispatcher on this
  machine, QEMU device type; the records come back on the console.
- ``lava`` (lava/server.py): the same jobs submitted to a LAVA server, all
  at once, each job's log fetched as it finishes.
- ``jobs export`` (lava/export.py): the same jobs written, nothing run.

Each executor class owns what is its own: ``kind``, ``rounds_per_block``
and ``run``; its command-line ``flags``; ``check`` of its options (before
anything is built); ``make``; and ``record``, its part of the run's
manifest. Adding an executor is one module with such a class, one
ExecutorKind value (base.py) and its line in EXECUTORS.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from foliolab.errors import UsageError
from foliolab.executors.base import (Executor, ExecutorKind, ExecutorRecord,
                                     Flag)
from foliolab.executors.lava.export import LavaExport
from foliolab.executors.lava.job import Target
from foliolab.executors.lava.local import LavaLocalExecutor
from foliolab.executors.lava.server import LavaServerExecutor
from foliolab.executors.qemu import QemuExecutor

# Every executor, by the kind that names it (the order of --help's
# choices and of the executors named in an error).
EXECUTORS = {cls.kind: cls for cls in (
    QemuExecutor, LavaServerExecutor, LavaLocalExecutor, LavaExport)}


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
    # executor options the user gave (flag names), for refusing them
    # where the executor does not take them
    given: tuple[str, ...] = ()

    @property
    def executor(self):
        """The class of the executor these options name."""
        return EXECUTORS[self.kind]


def add_flags(p: argparse.ArgumentParser,
              kinds: tuple[ExecutorKind, ...] | None = None) -> None:
    """``--executor`` (unless ``kinds`` names the executors) and the flags
    of the executors, each section of --help once."""
    if kinds is None:
        p.add_argument("--executor", default="qemu",
                       choices=[k.value for k in ExecutorKind
                                if k in EXECUTORS
                                and k is not ExecutorKind.LAVA_EXPORT],
                       help="who runs the boots: QEMU here (default), "
                            "LAVA's dispatcher here (lava-local), or a LAVA "
                            "lab (lava); see README")
    groups: dict[str, argparse._ArgumentGroup] = {}
    for flag in _flags(kinds):
        if flag.group not in groups:
            groups[flag.group] = p.add_argument_group(flag.group)
        groups[flag.group].add_argument(flag.name, **flag.options)


def _flags(kinds: tuple[ExecutorKind, ...] | None = None) -> list[Flag]:
    """The executors' flags, each once, in the executors' order."""
    seen: dict[str, Flag] = {}
    for kind, cls in EXECUTORS.items():
        if kinds is None or kind in kinds:
            for flag in cls.flags:
                seen.setdefault(flag.name, flag)
    return list(seen.values())


def options(args: argparse.Namespace, argv: list[str]) -> ExecutorOptions:
    """The executor options of a parsed command line (``argv``: what the
    user typed, for the options given)."""
    values = {f.dest: getattr(args, f.dest, f.options.get("default"))
              for f in _flags()}
    tags = tuple(t for t in values["lava_tags"].split(",") if t)
    return ExecutorOptions(
        ExecutorKind(getattr(args, "executor", "qemu")),
        Target(values["lava_device_type"], tags, values["lava_dtb"]),
        url=values["lava_url"], identity=values["lava_identity"],
        poll=values["lava_poll"], artifacts_url=values["artifacts_url"],
        artifacts_dir=values["artifacts_dir"],
        given=_given(argv, tuple(f.name for f in _flags())))


def _given(argv: list[str], flags: tuple[str, ...]) -> tuple[str, ...]:
    """The ``flags`` that ``argv`` gives, also as the abbreviations argparse
    accepts (``--lava-u URL``), which it has already refused if ambiguous."""
    names = [a.split("=", 1)[0] for a in argv if a.startswith("--")]
    return tuple(f for f in flags
                 if any(len(n) > 2 and f.startswith(n) for n in names))


def _check_given(opts: ExecutorOptions) -> None:
    """A flag of one executor given to another is bad input."""
    for name in opts.given:
        kinds = [k for k, cls in EXECUTORS.items()
                 if any(f.name == name for f in cls.flags)]
        if opts.kind in kinds:
            continue
        named = [str(k) for k in kinds if k is not ExecutorKind.LAVA_EXPORT]
        raise UsageError(f"{name} is an option of --executor "
                         f"{' or '.join(named)}, not of --executor "
                         f"{opts.kind}",
                         hint=f"drop {name}, or give the executor")


def make_executor(opts: ExecutorOptions, out: Path, count: bool = False
                  ) -> Executor:
    """The executor ``opts`` name, checked (before anything is built) and
    made in one place."""
    _check_given(opts)
    cls = opts.executor
    cls.check(opts, count)
    return cls.make(opts, out)


def record(opts: ExecutorOptions) -> ExecutorRecord:
    """The executor's part of the run's manifest."""
    return opts.executor.record(opts)
