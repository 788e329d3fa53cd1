"""`jobs export` and `jobs collect`: a run's LAVA jobs written for a lab
without foliolab, and their logs read back into the run directory.

export writes, instead of booting, one LAVA job per interleaved block and
the artifacts the jobs fetch; the boots' directories keep their job.json
only. collect reads the logs of those jobs, from lava-run or downloaded
from a lab, into their boots as any executor's captures, which the
orchestrator judges (boot/outcome.py), as it judges every executor's.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import ClassVar

import yaml

from foliolab import records
from foliolab.errors import DamagedRunError, LavaError, UsageError
from foliolab.executors.base import (
    BlockRequest,
    BootCapture,
    Ended,
    ExecutorKind,
    ExecutorRecord,
    Flag,
)
from foliolab.executors.lava.debs import LAVA_VERSION
from foliolab.executors.lava.job import (
    ARTIFACTS_URL_FLAG,
    JOBS_DIR,
    LAVA_LAB,
    TARGET_FLAGS,
    TELLER,
    LavaJobs,
    LavaOptions,
    Target,
)
from foliolab.executors.lava.log import JobLog, captures
from foliolab.executors.lava.record import LavaRecord
from foliolab.executors.lava.server import LavaServerExecutor


class LavaExport(LavaRecord, LavaJobs):
    """Writes each block's job and runs nothing."""

    kind = ExecutorKind("lava-export", LAVA_LAB, TELLER)
    summary = "the LAVA jobs written, nothing run (jobs export)"
    chosen_by_flag = False  # `jobs export` is its command
    record_kind = LavaServerExecutor.kind  # exported jobs are run by a lab
    flags: ClassVar[tuple[Flag, ...]] = (*TARGET_FLAGS, ARTIFACTS_URL_FLAG)

    def __init__(self, out: Path, target: Target, artifacts_url: str) -> None:
        super().__init__(out, target, None, artifacts_url)
        self.written: list[Path] = []

    @classmethod
    def make(cls, opts: LavaOptions, out: Path) -> LavaExport:
        return cls(out, opts.target, opts.artifacts_url)

    @classmethod
    def record(cls, opts: LavaOptions) -> ExecutorRecord:
        rec = super().record(opts)
        rec.details["artifacts_url"] = opts.artifacts_url
        return rec

    def run(
        self, image: Path, blocks: Iterable[BlockRequest]
    ) -> Generator[tuple[BlockRequest, list[BootCapture]], None, None]:
        for block in blocks:
            self.written.append(self.job(image, block)[1])
        yield from ()

    def record_into(self, rec: ExecutorRecord) -> None:
        rec.details["artifacts_url"] = self.base_url

    def summary_of(self, boots: int) -> str:
        """What was written, for the user (``boots``: the run's)."""
        return (
            f"{len(self.written)} LAVA jobs ({boots} boots) in "
            f"{self.out / JOBS_DIR}, valid for LAVA {LAVA_VERSION}\n"
            f"artifacts: {self.store.directory} (the jobs fetch them "
            f"from {self.base_url})\n"
            f"then: foliolab jobs collect {self.out} LOG...\n"
        )

    @classmethod
    def collect(
        cls, out: Path, logs: list[Path]
    ) -> Iterator[tuple[list[BootCapture], str]]:
        return collect(out, logs)


def _planned_blocks(out: Path) -> dict[str, list[str]]:
    """Each exported job's boots, in order (from its metadata)."""
    blocks = {}
    for path in sorted((out / JOBS_DIR).glob("*.yaml")):
        if path.name.endswith(".device.yaml"):
            continue  # lava-local's rendered device, not a job
        hint = "export the jobs again with `foliolab jobs export`"
        text = records.read_text(path, records.RecordKind.LAVA_JOB, hint)
        try:
            job = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise DamagedRunError(
                f"{path}: not YAML ({str(e).splitlines()[0]})", hint=hint
            ) from None
        if not isinstance(job, dict):
            raise DamagedRunError(f"{path}: not a LAVA job", hint=hint)
        meta = job.get("metadata", {})
        boots = meta.get("foliolab.boots", "") if isinstance(meta, dict) else 0
        if not isinstance(boots, str):
            raise DamagedRunError(
                f"{path}: field 'metadata.foliolab.boots' is not a "
                "comma-separated list of boots",
                hint=hint,
            )
        blocks[path.stem] = boots.split(",")
    return blocks


def collect(
    out: Path, logs: list[Path]
) -> Iterator[tuple[list[BootCapture], str]]:
    """Read LAVA logs into the run directory ``out``: for each log, its
    job's boots' captures (to be judged, in order), and a note on the
    boots the job never ran ("" if none)."""
    if not (out / JOBS_DIR).is_dir():
        raise UsageError(
            f"{out} holds no exported jobs",
            hint="give the --out directory of `foliolab jobs export`",
        )
    blocks = _planned_blocks(out)
    block_of = {bid: name for name, ids in blocks.items() for bid in ids}
    for path in logs:
        if not path.is_file():
            raise UsageError(f"{path}: no such log file")
        log = JobLog.read(records.read_text(path, records.RecordKind.LAVA_LOG))
        if not log.named:
            raise UsageError(
                f"{path}: no boot of a foliolab job in it",
                hint="give the log of a job that `jobs export` "
                "wrote (its console shows foliolab.boot=)",
            )
        if log.named[0] not in block_of:
            raise UsageError(
                f"{path}: boot {log.named[0]} is not one {out} planned",
                hint="collect into the directory its jobs were exported to",
            )
        block = block_of[log.named[0]]
        ids = blocks[block]
        try:
            caps = captures(
                log,
                ids,
                [out / "raw" / i for i in ids],
                str(path),
                LavaServerExecutor.kind,
            )
        except LavaError as e:
            raise UsageError(
                e.message.replace(f"{path}: ", f"{path}: job {block}: ", 1),
                hint=e.hint,
            ) from e
        # a capture the job never ran is judged not run (outcome.py)
        missing = [i for i, c in zip(ids, caps) if c.ended is Ended.NOT_RUN]
        yield (
            caps,
            (
                f"{path.name}: job {block} ended before {', '.join(missing)}"
                if missing
                else ""
            ),
        )
