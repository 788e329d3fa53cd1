"""The robot's results, each kept under the hash of what made it.

A cell's result on a tree (its diagnostics, with the text of each line
they point at) is kept under the hash of the tree's content, the cell's
config, the compiler's and sparse's versions and what it compiled: a run
that stops is resumed by running it again, and a second series that
shares a prefix with the first compiles it once.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from foliolab import records
from foliolab.robot import diagnostics as dg

# Bumped when what a cached result holds, or how it is made, changes.
SCHEMA = 1


@dataclass(frozen=True)
class CellResult:
    """What one cell said of one tree."""

    cell: str
    tree: str
    diagnostics: tuple[dg.Diagnostic, ...]
    elapsed: float  # seconds it took when it was made
    objects: int  # objects compiled then
    log: str  # the make log
    cached: bool = False  # found in the cache by this run
    cpu_s: float = 0.0  # make's and the compilers' CPU time then

    def to_json(self) -> dict[str, Any]:
        return {
            "cell": self.cell,
            "tree": self.tree,
            "elapsed": round(self.elapsed, 1),
            "objects": self.objects,
            "cpu_s": round(self.cpu_s, 1),
            "log": self.log,
            "diagnostics": [d.to_json() for d in self.diagnostics],
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> CellResult:
        return CellResult(
            d["cell"],
            d["tree"],
            tuple(dg.Diagnostic.from_json(x) for x in d["diagnostics"]),
            float(d["elapsed"]),
            int(d["objects"]),
            d["log"],
            True,
            float(d.get("cpu_s", 0.0)),
        )


def cache_key(
    tree: str,
    cell: str,
    config: str,
    compilers: str,
    targets: list[str],
    checks: str,
) -> str:
    """The name a result is kept under: the tree's content, the cell,
    its config, the compilers' versions, what it compiled and checked."""
    h = hashlib.sha256(
        json.dumps(
            [SCHEMA, tree, cell, config, compilers, targets, checks]
        ).encode()
    )
    return h.hexdigest()[:24]


class ResultCache:
    """Results kept as one JSON file each under the robot's cache."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def get(self, key: str) -> CellResult | None:
        d = records.read_cache(self._path(key))
        if d is None:
            return None
        try:
            return CellResult.from_json(d)
        except (ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, result: CellResult) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        records.write_whole(
            self._path(key), json.dumps(result.to_json(), indent=1)
        )
