"""What a run tested, as rows every command gives alike (OUT/outcomes.json).

Each command's result (a compare's boots, the suite's checks, the robot's
cells, a bisect's steps) says what it tested as ``TestOutcome`` rows: a
dotted path naming the test, its status, how long it took, the log that
shows it and the facts of its own (``misc``), on a kernel named by its
KernelRecord. One writer puts the kernels and the rows of any run into
one file, so that one reader can turn any run into another format (the
words are KernelCI's: a test's path, its status, its log, its misc)
without knowing which command wrote it.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from foliolab import records
from foliolab.bootrecord import read_json
from foliolab.errors import DamagedRunError
from foliolab.kernelrecord import KernelRecord, check_json

OUTCOMES = "outcomes.json"
# the version of the file's shape; a reader refuses a later one
SCHEMA = 1
HINT = "run the command that made it again (a compare: foliolab report DIR)"

Misc = Mapping[str, str | int | float | bool]


class TestStatus(str, enum.Enum):
    """A test's status, in KernelCI's words (lower case, as the suite's
    KTAP has always written them)."""

    __test__ = False  # a name pytest would otherwise collect

    PASS = "pass"  # it ran and held
    FAIL = "fail"  # it ran and did not hold
    SKIP = "skip"  # it did not run, for a reason it gives
    ERROR = "error"  # it could not run to an end (a panic, a timeout)
    MISS = "miss"  # it was to run and left no result
    DONE = "done"  # it ran and gives a value, not a verdict

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class TestOutcome:
    """One test of a run: ``path`` dotted from the command down
    (``suite.lru_gen-on.vmscan.case``), ``kernel`` the name of the
    kernel it ran on (a key of the run's kernels), ``log`` the file that
    shows it (relative to the run directory, "" when there is none)."""

    __test__ = False

    path: str
    status: TestStatus
    kernel: str = ""
    duration_s: float | None = None
    log: str = ""
    misc: Misc = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.path or any(not part for part in self.path.split(".")):
            raise ValueError(f"a test's path has an empty part: {self.path!r}")
        d = self.duration_s
        if d is not None and (not math.isfinite(d) or d < 0):
            raise ValueError(f"{self.path}: duration {d!r} is not a time")

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"path": self.path, "status": self.status.value}
        if self.kernel:
            d["kernel"] = self.kernel
        if self.duration_s is not None:
            d["duration_s"] = round(self.duration_s, 3)
        if self.log:
            d["log"] = self.log
        if self.misc:
            d["misc"] = dict(self.misc)
        return d

    @classmethod
    def from_json(cls, d: Any) -> TestOutcome:
        """ValueError (with what is wrong) for a row that is not one."""
        if not isinstance(d, dict):
            raise ValueError(f"a test is an object, not {d!r}")
        duration = d.get("duration_s")
        if duration is not None and (
            isinstance(duration, bool)
            or not isinstance(duration, (int, float))
        ):
            raise ValueError(f"duration_s {duration!r} is not a number")
        misc = d.get("misc", {})
        if not isinstance(misc, dict) or not all(
            isinstance(v, (str, int, float, bool)) for v in misc.values()
        ):
            raise ValueError(f"misc {misc!r} is not a flat object")
        for key in ("path", "kernel", "log"):
            if not isinstance(d.get(key, ""), str):
                raise ValueError(f"{key} {d[key]!r} is not a string")
        return cls(
            path=d.get("path", ""),
            status=TestStatus(d.get("status")),
            kernel=d.get("kernel", ""),
            duration_s=None if duration is None else float(duration),
            log=d.get("log", ""),
            misc=misc,
        )


@dataclass(frozen=True)
class Outcomes:
    """A run's tests and the kernels they ran on: what any command gives
    the one writer. ``command`` is the command that ran (compare, test,
    check, bisect, coverage); a test's ``kernel`` names one of
    ``kernels``."""

    command: str
    kernels: Sequence[KernelRecord]
    tests: Sequence[TestOutcome]
    # False: the rows so far of a run still going (or stopped before its
    # end), written as it goes so that a stop keeps what was tested; a
    # reader that takes the rows for the run's whole answer refuses it
    finished: bool = True

    def __post_init__(self) -> None:
        names = [k.name for k in self.kernels]
        for t in self.tests:
            if t.kernel and t.kernel not in names:
                raise ValueError(
                    f"{t.path}: kernel {t.kernel!r} is not one of the run's "
                    f"({', '.join(names) or 'none'})"
                )

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"schema": SCHEMA, "command": self.command}
        if not self.finished:
            # absent in a finished run's file, as in every file written
            # before runs wrote their rows as they went
            d["finished"] = False
        d["kernels"] = [k.to_json() for k in self.kernels]
        d["tests"] = [t.to_json() for t in self.tests]
        return d

    def write(self, out: Path) -> Path:
        """OUT/outcomes.json, whole or not at all (written beside, then
        renamed over)."""
        return records.write_whole(
            out / OUTCOMES, json.dumps(self.to_json(), indent=1) + "\n"
        )

    @classmethod
    def read(cls, out: Path) -> Outcomes:
        """The outcomes of the run in ``out``; DamagedRunError naming the
        file and what is wrong with it."""
        path = out / OUTCOMES
        if not path.exists() and not path.is_symlink():
            raise DamagedRunError(
                f"{path}: missing", hint="the run did not finish writing it"
            )
        d = read_json(path, ("schema", "command", "kernels", "tests"), HINT)
        try:
            if d.get("schema") != SCHEMA:
                raise ValueError(
                    f"schema {d.get('schema')!r}, this version reads {SCHEMA}"
                )
            kernels = d.get("kernels")
            if not isinstance(kernels, list) or not all(
                isinstance(k, dict) for k in kernels
            ):
                raise ValueError("kernels is not a list of records")
            tests = d.get("tests")
            if not isinstance(tests, list):
                raise ValueError("tests is not a list")
            command = d.get("command")
            if not isinstance(command, str) or not command:
                raise ValueError("it names no command")
            finished = d.get("finished", True)
            if not isinstance(finished, bool):
                raise ValueError(f"finished {finished!r} is not true or false")
            for i, k in enumerate(kernels):
                check_json(path, k, HINT, f"kernels[{i}]")
            return cls(
                command,
                [KernelRecord.from_json(k) for k in kernels],
                [TestOutcome.from_json(t) for t in tests],
                finished,
            )
        except (ValueError, KeyError, TypeError) as e:
            raise DamagedRunError(f"{path}: {e}", hint=HINT) from e
