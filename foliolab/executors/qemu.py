"""The default executor: each boot under QEMU on this machine, in turn."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from foliolab import boot
from foliolab.boot import BlockRequest
from foliolab.executors import ExecutorKind
from foliolab.outcome import BootCapture


class QemuExecutor:
    kind = ExecutorKind.QEMU
    rounds_per_block = 0

    def run(self, image: Path, blocks: Iterable[BlockRequest]
            ) -> Iterator[tuple[BlockRequest, list[BootCapture]]]:
        for block in blocks:
            yield block, [boot.capture(b.spec, image, b.job, b.rundir)
                          for b in block.boots]
