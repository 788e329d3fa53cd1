"""Who runs the boots: QEMU here, LAVA's dispatcher here, or a LAVA lab.

The measuring half (run.py) plans the boots, writes each one's job.json
and hands an executor blocks of boot requests; the executor gives back,
for every boot, a BootResult with the boot's files (console.log,
results.txt, boot.json) in its directory. Samples, statistics and reports
are the same whoever ran the boots.

- ``qemu``: one boot at a time, as foliolab always did (boot.py).
- ``lava-local``: each block (a workload's two interleaved rounds, ABBA)
  is one LAVA job, run by LAVA's own dispatcher on this machine
  (lavalocal.py), QEMU device type; the records come back on the console.
- ``lava``: the same jobs submitted to a LAVA server, all at once (a lab
  runs them on as many devices as it has: the run's blocks come as one
  stream over all its workloads), and each job's log fetched as it
  finishes. The lab's workers fetch the artifacts by URL.

Every job, its log and how long it took stay under OUT/lava/.
"""

from __future__ import annotations

import enum
import json
import logging
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol

from foliolab import boot as boot_mod
from foliolab import lava
from foliolab.boot import BlockRequest
from foliolab.bootrecord import BootResult

log = logging.getLogger("foliolab")

JOBS_DIR = "lava/jobs"
LOGS_DIR = "lava/logs"
ARTIFACTS_DIR = "lava/artifacts"
JOURNAL = "lava/jobs.jsonl"
# A LAVA job is a workload's two rounds: each kernel once in the order
# given and once reversed (ABBA), so a job alone keeps the pairing.
LAVA_ROUNDS_PER_BLOCK = 2


class ExecutorKind(str, enum.Enum):
    QEMU = "qemu"
    LAVA_LOCAL = "lava-local"
    LAVA = "lava"

    def __str__(self) -> str:
        return self.value

    @property
    def is_lava(self) -> bool:
        return self is not ExecutorKind.QEMU


class Executor(Protocol):
    kind: ExecutorKind
    # rounds per block: 0 hands the executor one boot at a time (and lets
    # the measuring half stop booting a kernel that keeps failing)
    rounds_per_block: int

    def run(self, blocks: Iterable[BlockRequest]
            ) -> Iterator[tuple[BlockRequest, list[BootResult]]]:
        """Run ``blocks``, taken from the iterable as the executor is ready
        for them; yield each with its boots' results, in boot order."""
        ...


class QemuExecutor:
    kind = ExecutorKind.QEMU
    rounds_per_block = 0

    def __init__(self, image: Path) -> None:
        self.image = image

    def run(self, blocks: Iterable[BlockRequest]
            ) -> Iterator[tuple[BlockRequest, list[BootResult]]]:
        for block in blocks:
            yield block, [boot_mod.boot(b.spec, self.image, b.job, b.rundir)
                          for b in block.boots]


class _LavaJobs:
    """What both LAVA executors do: a block as a checked job on disk, and
    its log read back into the boots' directories."""

    rounds_per_block = LAVA_ROUNDS_PER_BLOCK

    def __init__(self, kind: ExecutorKind, image: Path, out: Path,
                 target: lava.Target, artifacts_dir: Path | None = None,
                 artifacts_url: str = "") -> None:
        self.kind = kind
        self.image = image
        self.out = out
        self.target = target
        directory = artifacts_dir or out / ARTIFACTS_DIR
        self.store = lava.Artifacts(
            directory, artifacts_url or directory.resolve().as_uri())

    def job(self, block: BlockRequest) -> tuple[dict, Path]:
        job = lava.block_job(block, self.target, self.store, self.image)
        lava.validate(job)
        path = self.out / JOBS_DIR / f"{block.name}.yaml"
        lava.write_job(path, job)
        return job, path

    def results(self, block: BlockRequest, log_path: Path,
                text: str | None = None) -> list[BootResult]:
        """The block's boots from its job's log (``text``: the log at
        ``log_path``, if already read)."""
        if text is None:
            text = log_path.read_text(errors="replace")
        try:
            return lava.block_results(text, [b.boot_id for b in block.boots],
                                      [b.rundir for b in block.boots],
                                      str(log_path), self.kind.value)
        except lava.LavaError as e:
            # a log foliolab cannot place loses its own boots only
            return self.not_run(block, e.message, str(log_path))

    def not_run(self, block: BlockRequest, why: str, source: str
                ) -> list[BootResult]:
        return [lava.not_run(b.rundir, why, source, self.kind.value)
                for b in block.boots]

    def journal(self, entry: dict) -> None:
        with open(self.out / JOURNAL, "a") as f:
            f.write(json.dumps(entry) + "\n")


class LavaLocalExecutor(_LavaJobs):
    """Each block a LAVA job, run by lava-run on this machine."""

    def __init__(self, image: Path, out: Path, kvm: bool) -> None:
        super().__init__(ExecutorKind.LAVA_LOCAL, image, out, lava.Target())
        self.kvm = kvm

    def run(self, blocks: Iterable[BlockRequest]
            ) -> Iterator[tuple[BlockRequest, list[BootResult]]]:
        from foliolab import lavalocal
        dispatcher = lavalocal.dispatcher()
        for n, block in enumerate(blocks):
            job, path = self.job(block)
            device = self.out / JOBS_DIR / f"{block.name}.device.yaml"
            device.write_text(lavalocal.qemu_device(
                dispatcher, job["context"], self.kvm))
            log_path = self.out / LOGS_DIR / f"{block.name}.log"
            log_path.parent.mkdir(parents=True, exist_ok=True)
            limit = job["timeouts"]["job"]["minutes"] * 60 + 60
            t0 = time.monotonic()
            rc = dispatcher.run(path, device, log_path,
                                f"{os.getpid()}{n:04d}", limit)
            wall = time.monotonic() - t0
            text = log_path.read_text(errors="replace")
            results = self.results(block, log_path, text)
            self.journal({"block": block.name, "lava_run_rc": rc,
                          "seconds": round(wall, 2),
                          "boot_seconds": [round(r.elapsed, 2)
                                           for r in results],
                          "outcome": lava.job_outcome(text) or "complete"})
            yield block, results


class LavaServerExecutor(_LavaJobs):
    """Each block a LAVA job on a lab: all submitted at once, collected as
    they finish; cancelled if foliolab is interrupted."""

    def __init__(self, image: Path, out: Path, target: lava.Target,
                 server, artifacts_dir: Path | None,
                 artifacts_url: str) -> None:
        # compare.check_executor() has made sure of an artifacts URL
        super().__init__(ExecutorKind.LAVA, image, out, target,
                         artifacts_dir, artifacts_url)
        self.server = server

    def run(self, blocks: Iterable[BlockRequest]
            ) -> Iterator[tuple[BlockRequest, list[BootResult]]]:
        import yaml
        by_id: dict[int, BlockRequest] = {}
        done: set[int] = set()
        try:
            for block in blocks:
                job, path = self.job(block)
                job_id = self.server.submit(yaml.safe_dump(
                    job, sort_keys=False, width=1000))
                by_id[job_id] = block
                self.journal({"block": block.name, "job_id": job_id,
                              "submitted": time.time()})
                log.info("submitted %s as LAVA job %d", block.name, job_id)
            for job_id, state in self.server.wait(list(by_id)):
                done.add(job_id)
                block = by_id[job_id]
                log_path = self.out / LOGS_DIR / f"{block.name}.log"
                log_path.parent.mkdir(parents=True, exist_ok=True)
                self.journal({"block": block.name, "job_id": job_id,
                              "health": state.get("health"),
                              "device": state.get("actual_device"),
                              "finished": time.time()})
                try:
                    log_path.write_text(self.server.log(job_id))
                except lava.LavaError as e:
                    # one lost log loses that job's boots, not the run
                    yield block, self.not_run(
                        block, f"job {job_id} ({state.get('health')}) "
                        f"has no log: {e.message}", self.server.creds.url)
                    continue
                yield block, self.results(block, log_path)
        finally:
            for job_id in set(by_id) - done:
                # a well-behaved submitter frees the lab's devices
                try:
                    self.server.cancel(job_id)
                    log.warning("cancelled LAVA job %d", job_id)
                except lava.LavaError as e:
                    log.warning("could not cancel LAVA job %d: %s",
                                job_id, e)


class LavaExport(_LavaJobs):
    """Writes each block's job (`foliolab jobs export`) and runs nothing:
    the boots' directories keep their job.json only, until `jobs collect`
    reads the jobs' logs into them."""

    def __init__(self, image: Path, out: Path, target: lava.Target,
                 artifacts_url: str) -> None:
        super().__init__(ExecutorKind.LAVA, image, out, target,
                         None, artifacts_url)
        self.written: list[Path] = []

    def run(self, blocks: Iterable[BlockRequest]
            ) -> Iterator[tuple[BlockRequest, list[BootResult]]]:
        for block in blocks:
            self.written.append(self.job(block)[1])
        yield from ()
