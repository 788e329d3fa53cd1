"""Who runs the boots: QEMU here, LAVA's dispatcher here, or a LAVA lab.

The measuring half (boot/measure.py) plans the boots, writes each one's
job.json and hands an executor blocks of boot requests; the executor
gives back, for every boot, what it captured (base.BootCapture), and
boot/outcome.py's judge makes each the boot's result. Samples, statistics and
reports are the same whoever ran the boots.

- ``qemu`` (qemu.py): one boot at a time, here.
- ``lava-local`` (lava/local.py): each block (a workload's two interleaved
  rounds, ABBA) is one LAVA job, run by LAVA's own dispatcher on this
  machine, QEMU device type; the records come back on the console.
- ``lava`` (lava/server.py): the same jobs submitted to a LAVA server, all
  at once, each job's log fetched as it finishes.
- ``jobs export`` (lava/export.py): the same jobs written, nothing run.

Each executor class (base.ExecutorClass) owns all that is its own, in
its module: its
``kind`` (an ExecutorKind: its name, and where its boots run), its
``summary`` for --help and whether ``--executor`` offers it
(``chosen_by_flag``), ``rounds_per_block`` and ``run``; its command-line
``flags`` and the ``options`` it reads from them; their ``check`` (before
anything is built); ``make``; ``record``, its part of the run's manifest
(its kind and details of its own), ``read_details``, those details read
back, and ``report_note``, how a report says its boots ran; and
``dry_run_note``, how a dry run describes its boots. Adding an executor
is one module with such a class and its line in REGISTERED: every command
that boots (compare, attribute, run, test, check, bisect) takes it with
--executor.

This module is the only one outside executors/ that names an executor:
the rest of foliolab asks the registry for what it needs, by role (HERE,
the executor that boots QEMU on this machine; EXPORTER, `jobs export`'s),
never by module, and makes an executor only through make_executor.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from foliolab.errors import UsageError
from foliolab.executors.base import (
    QEMU_HERE,
    BootsHereClass,
    Executor,
    ExecutorClass,
    ExecutorKind,
    ExecutorRecord,
    ExporterClass,
    Flag,
)
from foliolab.executors.lava.export import LavaExport
from foliolab.executors.lava.local import LavaLocalExecutor
from foliolab.executors.lava.server import LavaServerExecutor
from foliolab.executors.qemu import QemuExecutor

# Every executor, a line each; the first is the default (the order of
# --help's choices and of the executors named in an error).
REGISTERED: tuple[ExecutorClass, ...] = (
    QemuExecutor,
    LavaServerExecutor,
    LavaLocalExecutor,
    LavaExport,
)
# ... by the kind that names it
EXECUTORS = {cls.kind: cls for cls in REGISTERED}
DEFAULT = REGISTERED[0]
# a manifest without an executor ran the default, QEMU here
assert DEFAULT.kind == QEMU_HERE and DEFAULT.kind.boots_here
# The executor that boots QEMU on this machine: whose machine options
# every run checks, whose command lines a dry run says, and who runs the
# KVM probe (which asks this machine, whoever runs the boots).
HERE: BootsHereClass = QemuExecutor
# `jobs export`'s executor: the jobs written, nothing run; `jobs collect`
# reads their logs back.
EXPORTER: ExporterClass = LavaExport


def kind_named(text: str) -> ExecutorKind:
    """The kind whose text this is (as --executor and environment.json
    write it); ValueError for a text no executor has."""
    for kind in EXECUTORS:
        if kind.text == text:
            return kind
    raise ValueError(
        f"no executor {text!r} (known: {', '.join(k.text for k in EXECUTORS)})"
    )


@dataclass(frozen=True)
class ExecutorOptions:
    """Who runs the boots, as the command line says: the executor's class
    and its own options (what its ``options`` read from its flags)."""

    executor: ExecutorClass = DEFAULT
    own: object = field(
        default_factory=lambda: DEFAULT.options(argparse.Namespace())
    )
    # executor options the user gave (flag names), for refusing them
    # where the executor does not take them
    given: tuple[str, ...] = ()

    @property
    def kind(self) -> ExecutorKind:
        return self.executor.kind

    @classmethod
    def of(cls, executor: ExecutorClass) -> ExecutorOptions:
        """``executor`` with its options' defaults (no flag given)."""
        return cls(executor, executor.options(argparse.Namespace()))


def add_flags(
    p: argparse.ArgumentParser, only: ExecutorClass | None = None
) -> None:
    """``--executor`` and the flags of every executor, each section of
    --help once; ``only``: the one executor a command runs, its flags
    alone and no ``--executor``."""
    if only is None:
        offered = [cls for cls in EXECUTORS.values() if cls.chosen_by_flag]
        p.add_argument(
            "--executor",
            default=DEFAULT.kind.text,
            choices=[cls.kind.text for cls in offered],
            help="who runs the boots: "
            + "; ".join(f"{cls.kind}: {cls.summary}" for cls in offered)
            + " (default "
            + DEFAULT.kind.text
            + "; see README)",
        )
    else:
        p.set_defaults(executor=only.kind.text)
    groups: dict[str, argparse._ArgumentGroup] = {}
    for flag in _flags(only):
        if flag.group not in groups:
            groups[flag.group] = p.add_argument_group(flag.group)
        groups[flag.group].add_argument(flag.name, **flag.options)


def _flags(only: ExecutorClass | None = None) -> list[Flag]:
    """The executors' flags, each once, in the executors' order."""
    seen: dict[str, Flag] = {}
    for cls in EXECUTORS.values():
        if only is None or cls is only:
            for flag in cls.flags:
                seen.setdefault(flag.name, flag)
    return list(seen.values())


def options(args: argparse.Namespace, argv: list[str]) -> ExecutorOptions:
    """The executor options of a parsed command line (``argv``: what the
    user typed, for the options given)."""
    cls = EXECUTORS[kind_named(getattr(args, "executor", DEFAULT.kind.text))]
    return ExecutorOptions(
        cls,
        cls.options(args),
        given=_given(argv, tuple(f.name for f in _flags())),
    )


def _given(argv: list[str], flags: tuple[str, ...]) -> tuple[str, ...]:
    """The ``flags`` that ``argv`` gives, also as the abbreviations argparse
    accepts (``--lava-u URL``), which it has already refused if ambiguous."""
    names = [a.split("=", 1)[0] for a in argv if a.startswith("--")]
    return tuple(
        f for f in flags if any(len(n) > 2 and f.startswith(n) for n in names)
    )


def _check_given(opts: ExecutorOptions) -> None:
    """A flag of one executor given to another is bad input."""
    for name in opts.given:
        takers = [
            cls
            for cls in EXECUTORS.values()
            if any(f.name == name for f in cls.flags)
        ]
        if opts.executor in takers:
            continue
        named = [str(cls.kind) for cls in takers if cls.chosen_by_flag]
        raise UsageError(
            f"{name} is an option of --executor "
            f"{' or '.join(named)}, not of --executor "
            f"{opts.kind}",
            hint=f"drop {name}, or give the executor",
        )


def check_executor(opts: ExecutorOptions, count: bool = False) -> None:
    """The executor ``opts`` name checked, before anything is built: its
    flags, and whether it can run the boots asked for (``count``: with
    foliolab's counting plugin); one UsageError if not."""
    _check_given(opts)
    opts.executor.check(opts.own, count)


def make_executor(
    opts: ExecutorOptions, out: Path, count: bool = False
) -> Executor:
    """The executor ``opts`` name, checked (before anything is built) and
    made in one place; its files (a LAVA job's, its logs) go in ``out``."""
    check_executor(opts, count)
    return opts.executor.make(opts.own, out)


def check_files(opts: ExecutorOptions, files: tuple[Path, ...]) -> None:
    """Files to put in the guest (`run --add`) need an executor that
    carries them; one UsageError before anything is built if not."""
    if files and not opts.executor.carries_files:
        raise UsageError(
            f"--add {files[0]}: --executor {opts.kind} puts only the "
            "job in the guest, not files of its own",
            hint="add files with --executor qemu",
        )


def record(opts: ExecutorOptions) -> ExecutorRecord:
    """The executor's part of the run's manifest."""
    return opts.executor.record(opts.own)


def read_record(d: dict[str, Any] | None) -> ExecutorRecord:
    """environment.json's ``executor``, of a manifest of any version, read
    back by the class of its kind: one from before the executor was
    recorded ran QEMU here; a kind no executor has is a ValueError (the
    manifest's reader names the file)."""
    if not d:
        return ExecutorRecord()
    kind = kind_named(d.get("kind", DEFAULT.kind.text))
    return ExecutorRecord(kind, **EXECUTORS[kind].read_details(d))


def report_note(rec: ExecutorRecord) -> str:
    """How the report says the boots ran, in the words of the class that
    ran them ("": by foliolab's QEMU here)."""
    return EXECUTORS[rec.kind].report_note(rec)


def dry_run_note(opts: ExecutorOptions) -> str:
    """How a dry run describes the executor's boots ("": as the QEMU
    lines it prints)."""
    return opts.executor.dry_run_note(opts.own)
