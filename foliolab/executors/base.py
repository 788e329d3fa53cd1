"""What the measuring half and an executor say to each other.

The measuring half asks for boots (BootSpec: the machine and kernel;
BootRequest: one boot; BlockRequest: boots run together); an executor
answers with what it captured of each (BootCapture: console, records,
times, how the machine ended, who ran it), which outcome.judge turns into
the boot's result. Every executor, QEMU here or a LAVA lab, speaks these
types, and names itself with an ExecutorKind declared in its own module.
"""

from __future__ import annotations

import argparse
import enum
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from foliolab.arch import Arch
from foliolab.bootrecord import HostLoad
from foliolab.counting import Counter
from foliolab.errors import UsageError


@dataclass(frozen=True)
class Elsewhere:
    """Where an executor's boots run when not under QEMU here, as the
    run's manifest says it (its accelerator and emulator are not chosen
    or asked here)."""

    accel: str  # the manifest's accelerator
    emulator: str  # the manifest's QEMU
    # the report names the accelerator by the device type the boots ran
    # on (a lab's devices), e.g. "lava qemu"
    by_device: bool = False


@dataclass(frozen=True)
class ExecutorKind:
    """Who runs a run's boots. Each executor class declares its own (its
    ``kind``, in its module); the registry (executors/__init__.py) reads a
    kind back from its text, so the kinds there are the only valid ones.
    Two kinds are the same kind when their text is."""

    text: str  # as --executor and environment.json say
    # None: QEMU on this machine (the accelerator is chosen here, QEMU's
    # version asked, the boots' times kept for the estimates)
    elsewhere: Elsewhere | None = field(default=None, compare=False)
    # whom a boot's issues name as the teller ("lava: job ended"); the
    # kind's own text if empty
    speaks_as: str = field(default="", compare=False)

    def __str__(self) -> str:
        return self.text

    @property
    def boots_here(self) -> bool:
        return self.elsewhere is None

    @property
    def teller(self) -> str:
        return self.speaks_as or self.text


# The kind of a run whose manifest has no executor: they all ran QEMU here
# (the registry checks that its QEMU executor has this kind).
QEMU_HERE = ExecutorKind("qemu")


# A detail of an executor's record: what environment.json holds.
Detail = str | int | list[str]
# The keys of environment.json's ``executor`` after its ``kind``, in the
# order the first manifests wrote them, each with what a record that has
# no such detail writes: every record writes them all, so a manifest reads
# the same whoever ran its boots (and an older foliolab reads a newer one);
# a detail of another name follows them.
RECORD_KEYS: dict[str, Detail] = {
    "device_type": "",
    "tags": [],
    "lava_version": "",
    "rounds_per_block": 0,
    "server": "",
    "artifacts_url": "",
}
# The detail that names the device a run's boots ran on, for a kind whose
# report names its accelerator by it (Elsewhere.by_device).
DEVICE = "device_type"


@dataclass(init=False)
class ExecutorRecord:
    """The executor's part of a run's manifest (environment.json's
    ``executor``): its kind, and details that are its class's own. The
    class writes them (``record``), reads them back (``read_details``) and
    says them in the report (``report_note``); no other module reads
    them."""

    kind: ExecutorKind
    details: dict[str, Detail]

    def __init__(
        self, kind: ExecutorKind = QEMU_HERE, **details: Detail
    ) -> None:
        self.kind = kind
        self.details = details

    def to_json(self) -> dict[str, Detail]:
        """As environment.json holds it: the kind as its text, then every
        key of RECORD_KEYS (empty where the class has no such detail), then
        the class's other details."""
        keys = {
            k: self.details.get(k, _copy(empty))
            for k, empty in RECORD_KEYS.items()
        }
        return {"kind": self.kind.text, **keys, **self.details}

    def accel_label(self, accel: str) -> str:
        """The accelerator as the report names it: a lab's boots by the
        device type they ran on (the lab's own QEMU or a board)."""
        where = self.kind.elsewhere
        if where is not None and where.by_device:
            return f"{where.accel} {self.details.get(DEVICE, '')}"
        return accel


def _copy(value: Detail) -> Detail:
    return list(value) if isinstance(value, list) else value


def read_detail(d: dict[str, Any], key: str) -> Detail:
    """Detail ``key`` of an executor record's JSON ``d``, of the type
    RECORD_KEYS gives it (its empty value if ``d`` lacks it); for a
    class's ``read_details``."""
    empty = RECORD_KEYS[key]
    value = d.get(key, empty)
    if isinstance(empty, list):
        return [str(v) for v in value] if isinstance(value, list) else []
    return type(empty)(value)


@dataclass(frozen=True)
class BootSpec:
    """How to boot: machine shape and kernel arguments."""

    arch: Arch
    kernel: Path
    accel: str = "tcg"  # "tcg" or "kvm"
    vcpus: int = 2
    memory_mb: int = 3072
    numa_nodes: int = 1
    timeout: float = 300.0
    cmdline: tuple[str, ...] = ()
    cpu: str = ""  # TCG CPU model; "" = the arch's default
    counter: Counter | None = None  # count with the plugin (TCG only)
    # The records on the console, framed, as on a board or in a LAVA job
    # (guest/frame.awk), instead of on the results port.
    console_results: bool = False


def check_numa(spec: BootSpec) -> None:
    """The machine's vCPUs and memory must split evenly into its nodes."""
    n = spec.numa_nodes
    if n > 1 and (spec.vcpus % n or spec.memory_mb % n):
        raise UsageError(
            f"cannot split {spec.vcpus} vCPUs and "
            f"{spec.memory_mb} MiB into {n} NUMA nodes",
            hint="use vCPU and memory counts divisible by the node count",
        )


@dataclass(frozen=True)
class BootRequest:
    """One boot the measuring half asks an executor for."""

    boot_id: str  # WORKLOAD/NAME: its directory under raw/
    spec: BootSpec
    job: str  # the guest's job script
    rundir: Path
    # files added to the guest's PATH (`foliolab run --add`)
    extra: tuple[Path, ...] = ()


@dataclass(frozen=True)
class BlockRequest:
    """Boots an executor runs together, in this order: one boot under
    QEMU here, or a workload's interleaved rounds as one LAVA job (so a
    lab that runs jobs anywhere, in any order, keeps the pairing)."""

    name: str  # e.g. pageout-0
    workload: str
    boots: tuple[BootRequest, ...]


class Ended(str, enum.Enum):
    """How the machine of a boot ended, as its executor saw it."""

    EXITED = "exited"  # it stopped by itself (QEMU exited; the
    # boot's console in a LAVA log ended)
    TIMEOUT = "timeout"  # the executor's limit stopped it
    QEMU_ERROR = "qemu-error"  # QEMU failed with an error of its own
    NOT_RUN = "not-run"  # its executor never ran it


class NotRun(str, enum.Enum):
    """Why an executor never ran a boot."""

    JOB_ENDED = "job-ended"  # its LAVA job ended before it
    LOG_LOST = "log-lost"  # the lab could not give its job's log
    LOG_UNPLACED = "log-unplaced"  # its job's log shows other boots


class JobEnd(str, enum.Enum):
    """How a LAVA job ended, as its log says."""

    COMPLETE = "complete"
    TIMEOUT = "timeout"  # LAVA's limit of a boot or the job
    ERROR = "error"  # an error of the job, test or lab
    CUT = "cut"  # the log has no end of job


@dataclass
class BootCapture:
    """What an executor captured of one boot."""

    rundir: Path
    ended: Ended
    console: bytes = b""
    records: str | None = None  # the results port; None: framed on
    # the console
    elapsed: float = 0.0
    cpu_s: float | None = None  # QEMU's CPU time, when it ran here
    host: HostLoad = field(default_factory=HostLoad)
    executor: ExecutorKind = QEMU_HERE
    log: str = ""  # the LAVA log it was read from
    error: str = ""  # QEMU's last line (QEMU_ERROR)
    not_run: NotRun | None = None
    why: str = ""  # the lab's or the job's own words
    job_end: JobEnd = JobEnd.COMPLETE  # its job's end (the last boot)


@dataclass(frozen=True)
class Flag:
    """A command-line option an executor takes: its class lists it, the
    command line is built from the classes (executors.add_flags), and
    giving it to another executor is refused (executors.make_executor)."""

    name: str  # e.g. --lava-url
    group: str  # its section of --help
    options: dict[str, Any] = field(
        default_factory=dict, compare=False, hash=False
    )

    @property
    def dest(self) -> str:
        return self.name.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Settled:
    """How a run's boots will run, as its executor settles it when the run
    starts (its class's ``settle``): the manifest's accelerator and
    emulator, and the machine the boots are asked for."""

    accel: str
    emulator: str
    spec: BootSpec


@dataclass(frozen=True)
class NoOptions:
    """The options of an executor that takes none (its ``options``)."""


class ExecutorClass(Protocol):
    """What the registry (executors/__init__.py) and the orchestrator ask
    of an executor's class, all of it declared in the executor's own
    module (the class itself is what satisfies it: its class attributes
    and class methods); ``opts`` is the executor's own options, as
    ``options`` made them (NoOptions, or a dataclass of its module)."""

    kind: ExecutorKind
    summary: str  # its words in --executor's help
    chosen_by_flag: bool  # whether --executor offers it
    flags: tuple[Flag, ...]  # its command-line options
    results_port: bool  # records on a port of their own
    # it puts a boot's extra files (`run --add`) in the guest
    carries_files: bool

    def options(self, args: argparse.Namespace) -> object:
        """Its own options, read from its flags (a flag a command does
        not have keeps its default)."""
        ...

    def check(self, opts: Any, count: bool) -> None:
        """Its options checked, before anything is built."""
        ...

    def make(self, opts: Any, out: Path) -> Executor:
        """The executor, made for the run in ``out``."""
        ...

    def record(self, opts: Any) -> ExecutorRecord:
        """Its part of the run's manifest."""
        ...

    def read_details(self, d: dict[str, Any]) -> dict[str, Detail]:
        """The details ``record`` wrote, read back from environment.json's
        ``executor`` (a key it does not know is passed over)."""
        ...

    def report_note(self, rec: ExecutorRecord) -> str:
        """How the report says the boots of ``rec`` ran, after the guest's
        machine ("": as foliolab's QEMU here runs them)."""
        ...

    def settle(
        self, want: str, spec: BootSpec, image: Path, count: bool
    ) -> Settled:
        """The accelerator and emulator of the run's boots, as the run
        starts (``want``: the accelerator asked for)."""
        ...

    def dry_run_note(self, opts: Any) -> str:
        """What a dry run says of its boots ("": nothing more than the
        QEMU lines)."""
        ...


class BootsHereClass(ExecutorClass, Protocol):
    """The executor class that boots QEMU on this machine (the registry's
    HERE): what every booting command (its machine's options), a dry run
    (its command lines) and the KVM probe ask of it besides an
    ExecutorClass's."""

    def check_machine(self, spec: BootSpec) -> None:
        """The machine's options (``--cpu``) checked, before anything is
        built."""
        ...

    def boot_argv(self, spec: BootSpec, rundir: Path) -> list[str]:
        """The command line a boot in ``rundir`` runs (a dry run's
        line)."""
        ...


class ExporterClass(ExecutorClass, Protocol):
    """The executor class that writes a run's jobs and runs nothing (`jobs
    export`), and reads the logs of those jobs back (`jobs collect`)."""

    def collect(
        self, out: Path, logs: list[Path]
    ) -> Iterator[tuple[list[BootCapture], str]]:
        """Each log read into the captures of its job's boots in ``out``,
        with a note on the boots the job never ran ("" if none)."""
        ...


class Exporter(Protocol):
    """An exporter, made: what it wrote, for the user."""

    def summary_of(self, boots: int) -> str: ...

    def record_into(self, rec: ExecutorRecord) -> None:
        """Where the jobs fetch their artifacts, in the manifest's
        record."""
        ...


class Executor(Protocol):
    """An executor, made: who runs the boots of one run."""

    @property
    def kind(self) -> ExecutorKind: ...

    # rounds per block: 0 hands the executor one boot at a time (and lets
    # the measuring half stop booting a kernel that keeps failing)
    @property
    def rounds_per_block(self) -> int: ...

    # records on a port of their own (else framed on the console)
    @property
    def results_port(self) -> bool: ...

    def run(
        self, image: Path, blocks: Iterable[BlockRequest]
    ) -> Generator[tuple[BlockRequest, list[BootCapture]], None, None]:
        """Run ``blocks`` on the base ramdisk ``image``, taken from the
        iterable as the executor is ready for them; yield each with what
        was captured of its boots, in boot order."""
        ...
