"""The one reader of the records the lab reads back (environment.json,
results.json, samples.jsonl, outcomes.json, boot.json and job.json,
bisect.json, robot.json, coverage.json, suite.json, rundir.json,
mmci-request.json).

A record is read only if it is a regular file (a FIFO would block the
open, a symlink to /dev/zero would be read without end, a directory is
not a record) no larger than its kind's bound, decoded as UTF-8 and
parsed as JSON without NaN or Infinity (Python's json takes them by
default; no other JSON reader does, and no measured value is one).
Fields are taken through typed accessors, so a string where a number
goes, a negative count or a list that is a string is refused. Whatever
is wrong is one DamagedRunError (exit 11) naming the file and the field,
never a traceback and never a plausible result from a damaged record.
The records a reader may meet half-written (those rewritten in place, or
read by another run) are written by one function, write_whole: whole or
not at all.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import os
import stat
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from foliolab.errors import DamagedRunError

MiB = 1 << 20


class RecordKind(enum.Enum):
    """A record the lab reads back, and the most bytes it may have: far
    above any real run's (a two-hour compare's results.json is a few MB),
    far below what would exhaust the host."""

    MANIFEST = ("environment.json", 16 * MiB)
    RESULTS = ("results.json", 512 * MiB)
    SAMPLES = ("samples.jsonl", 512 * MiB)
    OUTCOMES = ("outcomes.json", 128 * MiB)
    BOOT = ("boot.json", 1 * MiB)
    JOB = ("job.json", 1 * MiB)
    BISECT = ("bisect.json", 16 * MiB)
    ROBOT = ("robot.json", 128 * MiB)
    COVERAGE = ("coverage.json", 512 * MiB)
    SUITE = ("suite.json", 64 * MiB)
    MARKER = ("rundir.json", 1 * MiB)
    MMCI_REQUEST = ("mmci-request.json", 1 * MiB)  # test --mm-ci's options
    CACHE = ("a cache record", 16 * MiB)
    # a boot's raw output (the guest's @@ records), read as text
    GUEST_OUTPUT = ("results.txt", 256 * MiB)
    COUNTS = ("counts.txt", 1024 * MiB)  # the counting plugin's output
    MONITOR = ("a monitor's file", 256 * MiB)  # per-second vmstat etc.
    LAVA_JOB = ("LAVA job", 16 * MiB)  # jobs export's YAML
    LAVA_LOG = ("LAVA log", 1024 * MiB)  # a job's log, for jobs collect

    def __init__(self, file_name: str, bound: int) -> None:
        self.file_name = file_name
        self.bound = bound


BY_NAME = {k.file_name: k for k in RecordKind}


def kind_of(path: Path) -> RecordKind:
    """The kind of a record by its file's name (a JSON file of no known
    name is bounded as a cache record)."""
    return BY_NAME.get(path.name, RecordKind.CACHE)


def damaged(path: Path, what: str, hint: str = "") -> NoReturn:
    raise DamagedRunError(f"{path}: {what}", hint=hint or None)


def _file_type(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_bytes(path: Path, kind: RecordKind, hint: str = "") -> bytes:
    """The record's bytes: refused before it is opened if it is missing,
    not a regular file (after symlinks) or larger than its bound."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        damaged(path, "missing", hint)
    except OSError as e:
        damaged(path, f"cannot be read ({e.strerror})", hint)
    if not stat.S_ISREG(st.st_mode):
        damaged(path, f"{_file_type(st.st_mode)}, not a record", hint)
    if st.st_size > kind.bound:
        damaged(
            path,
            f"{st.st_size} bytes, more than a {kind.file_name} can "
            f"hold ({kind.bound})",
            hint,
        )
    try:
        # O_NONBLOCK: a FIFO put in its place since the stat must not
        # block the open
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        damaged(path, f"cannot be opened ({e.strerror})", hint)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            damaged(path, "no longer a regular file", hint)
        data = f.read(kind.bound + 1)
    if len(data) > kind.bound:
        damaged(path, f"more than {kind.bound} bytes", hint)
    return data


def write_whole(path: Path, data: str | bytes) -> Path:
    """Write ``data`` to ``path`` whole or not at all: into a part file
    beside it, named for this process so two writers never share one,
    then renamed over ``path``. A reader sees the old file or the new one,
    never a part of either; a writer that fails leaves no part behind
    (one killed outright leaves at most its own part file)."""
    part = path.with_name(f"{path.name}.part{os.getpid()}")
    try:
        if isinstance(data, bytes):
            part.write_bytes(data)
        else:
            part.write_text(data)
        part.replace(path)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return path


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a number JSON has")


def parse(path: Path, text: str, hint: str = "", line: int = 0) -> Any:
    """JSON text of ``path`` (``line``: its line in a JSON-lines file)."""
    where = f"line {line}: " if line else ""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        at = f"line {e.lineno}" if not line else f"column {e.colno}"
        what = "empty" if not text.strip() else f"not JSON ({e.msg} at {at})"
        damaged(
            path,
            where + what + ("" if what == "empty" else ": cut short?"),
            hint,
        )
    except ValueError as e:  # NaN, Infinity
        damaged(path, f"{where}{e}", hint)
    except RecursionError:
        damaged(path, f"{where}nested too deep", hint)


def _text(path: Path, data: bytes, hint: str) -> str:
    try:
        return data.decode()
    except UnicodeDecodeError as e:
        damaged(path, f"not UTF-8 text (byte {e.start})", hint)


def read_text(path: Path, kind: RecordKind, hint: str = "") -> str:
    """A raw text record (a boot's output), bounded as a record; bytes
    that are not UTF-8 are replaced, as a console writes them."""
    return read_bytes(path, kind, hint).decode(errors="replace")


def read_json(path: Path, kind: RecordKind, hint: str = "") -> Any:
    return parse(path, _text(path, read_bytes(path, kind, hint), hint), hint)


def read_object(
    path: Path,
    kind: RecordKind,
    keys: Sequence[str] = (),
    hint: str = "",
) -> dict[str, Any]:
    """The record's JSON object, with at least ``keys``."""
    d = read_json(path, kind, hint)
    if not isinstance(d, dict):
        damaged(path, f"not a JSON object but {_shape(d)}", hint)
    missing = [k for k in keys if k not in d]
    if missing:
        damaged(path, "no " + ", ".join(missing), hint)
    return d


def read_cache(path: Path, keys: Sequence[str] = ()) -> dict[str, Any] | None:
    """A cache's record as an object, or None when it is missing or
    damaged in any way above (a cache entry that cannot be read is one
    that is not there: it is made again)."""
    try:
        return read_object(path, RecordKind.CACHE, keys)
    except DamagedRunError:
        return None


def read_lines(
    path: Path, kind: RecordKind, hint: str = ""
) -> list[tuple[int, dict[str, Any]]]:
    """A JSON-lines record's objects, each with its line number (blank
    lines passed over)."""
    text = _text(path, read_bytes(path, kind, hint), hint)
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        d = parse(path, line, hint, line=n)
        if not isinstance(d, dict):
            damaged(path, f"line {n}: not a JSON object", hint)
        rows.append((n, d))
    return rows


def _shape(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        short = value if len(value) <= 20 else value[:17] + "..."
        return f"the string {short!r}"
    if isinstance(value, list):
        return "a list"
    return "an object"


class Fields:
    """The fields of one JSON object of a record, each taken as its type
    or refused naming the file and the field (``where``: the object's
    place in the file, e.g. "line 3" or "steps[2]")."""

    def __init__(
        self,
        path: Path,
        d: Mapping[str, Any],
        hint: str = "",
        where: str = "",
    ) -> None:
        self.path, self.d, self.hint, self.where = path, d, hint, where

    def wrong(self, key: str, want: str, *value: object) -> NoReturn:
        """Refuse field ``key`` (its value: ``value`` if given)."""
        at = f"{self.where}: " if self.where else ""
        got = value[0] if value else self.d.get(key)
        damaged(
            self.path,
            f"{at}field {key!r} is {_shape(got)}, not {want}",
            self.hint,
        )

    def has(self, key: str) -> bool:
        return self.d.get(key) is not None

    def number(
        self,
        key: str,
        *,
        minimum: float | None = None,
        default: float | None = None,
    ) -> float:
        v = self.d.get(key)
        if v is None and default is not None:
            return default
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self.wrong(key, "a number")
        if not math.isfinite(v):
            self.wrong(key, "a finite number")
        if minimum is not None and v < minimum:
            self.wrong(key, f"a number of at least {minimum:g}")
        return float(v)

    def optional_number(
        self, key: str, *, minimum: float | None = None
    ) -> float | None:
        return (
            None
            if self.d.get(key) is None
            else self.number(key, minimum=minimum)
        )

    def integer(
        self,
        key: str,
        *,
        minimum: int | None = None,
        default: int | None = None,
    ) -> int:
        v = self.d.get(key)
        if v is None and default is not None:
            return default
        if isinstance(v, bool) or not isinstance(v, int):
            self.wrong(key, "a whole number")
        if minimum is not None and v < minimum:
            self.wrong(key, f"a whole number of at least {minimum}")
        return v

    def optional_integer(
        self, key: str, *, minimum: int | None = None
    ) -> int | None:
        return (
            None
            if self.d.get(key) is None
            else self.integer(key, minimum=minimum)
        )

    def string(self, key: str, default: str | None = None) -> str:
        v = self.d.get(key)
        if v is None and default is not None:
            return default
        if not isinstance(v, str):
            self.wrong(key, "a string")
        return v

    def boolean(self, key: str, default: bool | None = None) -> bool:
        v = self.d.get(key)
        if v is None and default is not None:
            return default
        if not isinstance(v, bool):
            self.wrong(key, "true or false")
        return v

    def strings(self, key: str, default: bool = True) -> list[str]:
        """A list of strings (an absent one empty, if ``default``)."""
        v = self.d.get(key)
        if v is None and default:
            return []
        if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
            self.wrong(key, "a list of strings")
        return list(v)

    def numbers(self, key: str) -> dict[str, float]:
        """An object of finite numbers (a sample's values)."""
        v = self.d.get(key)
        if not isinstance(v, dict):
            self.wrong(key, "an object of numbers")
        for k, x in v.items():
            if (
                isinstance(x, bool)
                or not isinstance(x, (int, float))
                or not math.isfinite(x)
            ):
                at = f"{self.where}: " if self.where else ""
                damaged(
                    self.path,
                    f"{at}field {key}.{k} is {_shape(x)}, not a finite number",
                    self.hint,
                )
        return {k: float(x) for k, x in v.items()}

    def like(self, cls: type[Any]) -> None:
        """Each field of dataclass ``cls`` that the object has, of the
        type ``cls`` declares for it, where that is a plain one (str,
        int, float, bool, each or None, a list of strings); others are
        the class's own to read."""
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if f.name not in self.d:
                continue
            want = hints[f.name]
            args = set(typing.get_args(want))
            optional = type(None) in args
            base = (args - {type(None)}).pop() if optional else want
            if optional and len(args) != 2:
                continue
            if optional and self.d[f.name] is None:
                continue
            if base is str:
                self.string(f.name)
            elif base is bool:
                self.boolean(f.name)
            elif base is int:
                self.integer(f.name)
            elif base is float:
                self.number(f.name)
            elif base == list[str]:
                self.strings(f.name, default=False)

    def object(self, key: str, default: bool = True) -> dict[str, Any]:
        v = self.d.get(key)
        if v is None and default:
            return {}
        if not isinstance(v, dict):
            self.wrong(key, "an object")
        return v

    def objects(self, key: str, default: bool = True) -> list[dict[str, Any]]:
        v = self.d.get(key)
        if v is None and default:
            return []
        if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
            self.wrong(key, "a list of objects")
        return list(v)
