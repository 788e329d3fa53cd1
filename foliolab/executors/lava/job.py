"""What every LAVA executor shares: the flags of the device its jobs run
on, its options, and LavaJobs, which writes a block as a checked job on
disk (definition.py) and reads its log back into captures of its boots
(log.py).

A job is one interleaved block of one workload: two rounds, each kernel
once in the given order and once reversed (ABBA for two kernels), so the
pairing the statistics rely on survives a lab that runs jobs on any device
in any order.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from foliolab.errors import LavaError, UsageError
from foliolab.executors.base import (
    BlockRequest,
    BootCapture,
    BootSpec,
    Elsewhere,
    ExecutorKind,
    ExecutorRecord,
    Flag,
    NotRun,
    Settled,
)
from foliolab.executors.lava.debs import LAVA_VERSION
from foliolab.executors.lava.definition import (
    Artifacts,
    block_job,
    validate,
    write_job,
)

# the executors (local.py, server.py, export.py) take it from here, with
# the options it is part of
from foliolab.executors.lava.definition import Target as Target
from foliolab.executors.lava.log import JobLog, captures, not_run

JOBS_GROUP = "LAVA jobs"
# The flags of every LAVA executor: the device its jobs run on.
TARGET_FLAGS = (
    Flag(
        "--lava-device-type",
        JOBS_GROUP,
        dict(
            default="qemu",
            metavar="TYPE",
            help="LAVA device type to run on (default qemu; a board type such "
            "as bcm2711-rpi-4-b boots by u-boot from TFTP)",
        ),
    ),
    Flag(
        "--lava-tags",
        JOBS_GROUP,
        dict(
            default="",
            metavar="TAG,...",
            help="device tags the jobs ask for (e.g. one board, so that all "
            "blocks run on one device)",
        ),
    ),
    Flag(
        "--lava-dtb",
        JOBS_GROUP,
        dict(type=Path, metavar="FILE", help="a board's device tree blob"),
    ),
)
# The executors whose jobs a lab runs: where its workers fetch artifacts.
ARTIFACTS_URL_FLAG = Flag(
    "--artifacts-url",
    JOBS_GROUP,
    dict(
        default="",
        metavar="URL",
        help="where the lab's workers fetch the artifacts (kernels, ramdisk, "
        "job archives) from (default: their file:// URL, for a "
        "dispatcher on this machine)",
    ),
)


# Where every LAVA executor's boots run, as the manifest says it: LAVA's
# own QEMU (its version is in each job's log) or a lab's board. A lab's
# boots are named in the report by their device type ("lava qemu").
LAVA_HERE = Elsewhere("lava", "LAVA's (see each job's log)")
LAVA_LAB = Elsewhere("lava", "LAVA's (see each job's log)", by_device=True)
TELLER = "lava"  # who a LAVA boot's issues say told them


@dataclass(frozen=True)
class LavaOptions:
    """The options of the LAVA executors, from their flags (this module's
    and server.py's); a flag a command lacks keeps its default."""

    target: Target = field(default_factory=Target)
    url: str = ""  # --lava-url ("": lavacli's identity)
    identity: str = "default"  # lavacli's identity
    poll: float = 30.0  # seconds between asking the server
    artifacts_url: str = ""  # where a lab's workers fetch them
    artifacts_dir: Path | None = None  # default OUT/lava/artifacts

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> LavaOptions:
        d = cls()
        tags = getattr(args, "lava_tags", "")
        return cls(
            Target(
                getattr(args, "lava_device_type", d.target.device_type),
                tuple(t for t in tags.split(",") if t),
                getattr(args, "lava_dtb", None),
            ),
            url=getattr(args, "lava_url", d.url),
            identity=getattr(args, "lava_identity", d.identity),
            poll=getattr(args, "lava_poll", d.poll),
            artifacts_url=getattr(args, "artifacts_url", d.artifacts_url),
            artifacts_dir=getattr(args, "artifacts_dir", d.artifacts_dir),
        )


JOBS_DIR = "lava/jobs"
LOGS_DIR = "lava/logs"
ARTIFACTS_DIR = "lava/artifacts"
JOURNAL = "lava/jobs.jsonl"
# A LAVA job is a workload's two rounds: each kernel once in the order
# given and once reversed (ABBA), so a job alone keeps the pairing.
LAVA_ROUNDS_PER_BLOCK = 2


class LavaJobs:
    """What every LAVA executor does: a block as a checked job on disk, and
    its log read back into captures of its boots."""

    kind: ClassVar[ExecutorKind]
    chosen_by_flag = True
    rounds_per_block = LAVA_ROUNDS_PER_BLOCK
    flags: ClassVar[tuple[Flag, ...]] = TARGET_FLAGS
    results_port = False  # a LAVA job's records are on the
    # console
    # the kind its manifest names: who runs the jobs
    record_kind: ClassVar[ExecutorKind | None] = None
    # Whether its jobs' QEMU can load foliolab's counting plugin and
    # write the counts on this machine (lava-local's: LAVA's dispatcher
    # here runs this machine's QEMU); a lab's QEMU is elsewhere.
    counts: ClassVar[bool] = False

    @classmethod
    def options(cls, args: argparse.Namespace) -> LavaOptions:
        return LavaOptions.from_args(args)

    @classmethod
    def check(cls, opts: LavaOptions, count: bool) -> None:
        """What every LAVA executor needs of its options."""
        if count and not cls.counts:
            raise UsageError(
                f"--count needs foliolab's QEMU plugin in the "
                f"QEMU that runs the guest; --executor "
                f"{cls.kind} runs LAVA's",
                hint="count with --executor qemu",
            )
        opts.target.check()

    @classmethod
    def record(cls, opts: LavaOptions) -> ExecutorRecord:
        """Its part of the run's manifest."""
        return ExecutorRecord(
            cls.record_kind or cls.kind,
            device_type=opts.target.device_type,
            tags=list(opts.target.tags),
            lava_version=LAVA_VERSION,
            rounds_per_block=LAVA_ROUNDS_PER_BLOCK,
        )

    @classmethod
    def settle(
        cls, want: str, spec: BootSpec, image: Path, count: bool
    ) -> Settled:
        """Nothing chosen here: the lab's QEMU, or its board, runs the
        boots as LAVA's device type says."""
        where = cls.kind.elsewhere
        assert where is not None  # a LAVA kind's boots run elsewhere
        return Settled(where.accel, where.emulator, spec)

    @classmethod
    def dry_run_note(cls, opts: LavaOptions) -> str:
        return (
            f"# executor {cls.kind}: each workload's two rounds are one "
            f"LAVA job (device type {opts.target.device_type}); the QEMU "
            "lines below are what the qemu executor would run for the "
            "same boots"
        )

    def __init__(
        self,
        out: Path,
        target: Target,
        artifacts_dir: Path | None = None,
        artifacts_url: str = "",
    ) -> None:
        self.out = out
        self.target = target
        directory = artifacts_dir or out / ARTIFACTS_DIR
        self.artifacts_dir = directory
        self.base_url = artifacts_url or directory.resolve().as_uri()
        self._store: Artifacts | None = None

    @property
    def store(self) -> Artifacts:
        """The artifacts' directory, made when the first job needs it."""
        if self._store is None:
            self._store = Artifacts(self.artifacts_dir, self.base_url)
        return self._store

    def job(
        self, image: Path, block: BlockRequest
    ) -> tuple[dict[str, Any], Path]:
        job = block_job(block, self.target, self.store, image)
        validate(job)
        path = self.out / JOBS_DIR / f"{block.name}.yaml"
        write_job(path, job)
        return job, path

    def captures(
        self, block: BlockRequest, log_path: Path, log: JobLog | None = None
    ) -> list[BootCapture]:
        """The block's boots from its job's log (``log``: the log at
        ``log_path``, if already read)."""
        if log is None:
            log = JobLog.read(log_path.read_text(errors="replace"))
        try:
            return captures(
                log,
                [b.boot_id for b in block.boots],
                [b.rundir for b in block.boots],
                str(log_path),
                self.kind,
            )
        except LavaError as e:
            # a log foliolab cannot place loses its own boots only
            return self.not_run(
                block, NotRun.LOG_UNPLACED, e.message, str(log_path)
            )

    def not_run(
        self, block: BlockRequest, reason: NotRun, why: str, source: str
    ) -> list[BootCapture]:
        return not_run(
            [b.rundir for b in block.boots], reason, why, source, self.kind
        )

    def journal(self, entry: dict[str, Any]) -> None:
        with open(self.out / JOURNAL, "a") as f:
            f.write(json.dumps(entry) + "\n")
