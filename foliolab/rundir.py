"""Who owns a run directory: what it holds, whether it is finished, and
which command may write into it.

Every command that writes a directory (compare's --out, the suite's, a
series or robot check's, a bisect's, a report set written elsewhere)
claims it before any work: a directory is written only if it is new,
empty, or of the command's own kind and unfinished with --resume (or
replaced with --force, where the command has it). Anything else is
refused in one line naming the directory, what it holds and what to do.
A claimed directory is held until the command ends (a lock on the
directory, locks.held_for_the_command; a new one from when it is made):
a second command that would write it meanwhile is refused, naming the
process that holds it.

What a directory holds is read from the record its run keeps already:
a compare's manifest (environment.json: finished, stopped, errors), a
bisect's record (bisect.json: its result, stopped). A command whose own
record is written only at its end (the suite, the checks, a report set)
marks its directory with rundir.json (``Marker``: its kind, finished or
not, and for a report set the run it reports) when it first writes
there, and marks it finished at its end. Directories from before the
marker are known by their records (suite.json, robot.json,
coverage.json, outcomes.json).

A report set (``staged``) is written into a staging directory inside
the destination, then each file renamed into place: an interrupted
report leaves the old set whole.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import shutil
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from foliolab import locks, records
from foliolab.errors import DamagedRunError, UsageError

MARKER = "rundir.json"
# a report set being written (``staged``); a killed report's is removed
# by the next
STAGING = ".report-part"
# how bisect.json's result begins for a bisect an error ended (unfinished:
# --resume goes on with it)
BISECT_ERROR = "ended by an error"


class RunKind(str, enum.Enum):
    """What a run directory holds (rundir.json's ``kind``)."""

    COMPARE = "compare"  # compare, attribute, jobs export
    SUITE = "suite"  # foliolab test (with --coverage too)
    MMCI = "mm-ci"  # foliolab test --mm-ci
    ROBOT = "robot"  # check --robot
    SERIES_CHECK = "series-check"  # check
    BISECT = "bisect"
    COVERAGE = "coverage"  # coverage-reasons --out: a coverage report
    REPORT = "report"  # report --out: a run's report set elsewhere

    def __str__(self) -> str:
        return str(self.value)

    @property
    def words(self) -> str:
        return {
            RunKind.COMPARE: "compare run",
            RunKind.SUITE: "suite run (foliolab test)",
            RunKind.MMCI: "mm CI run (foliolab test --mm-ci)",
            RunKind.ROBOT: "robot check (check --robot)",
            RunKind.SERIES_CHECK: "series check (foliolab check)",
            RunKind.BISECT: "bisect",
            RunKind.COVERAGE: "coverage report (coverage-reasons)",
            RunKind.REPORT: "report set (report --out)",
        }[self]


# written from another run, so replaced by that run's again (``of``)
REPORT_SETS = (RunKind.REPORT, RunKind.COVERAGE)


@dataclass(frozen=True)
class Held:
    """What a directory holds: a run of ``kind`` (None: files that are no
    foliolab run's), finished or not; ``of``: a report set's run."""

    kind: RunKind | None
    finished: bool
    of: str = ""
    detail: str = ""  # for kind None: what the files are

    def describe(self) -> str:
        if self.kind is None:
            return self.detail
        state = "a finished" if self.finished else "an unfinished"
        what = f"{state} {self.kind.words}"
        if self.kind in REPORT_SETS and self.of:
            what = f"the {self.kind.words} of {self.of}"
        return what + (f" ({self.detail})" if self.detail else "")


@dataclass(frozen=True)
class Marker:
    """rundir.json: the kind of run a directory holds and whether it is
    finished (for a report set, the run it reports)."""

    kind: RunKind
    finished: bool = False
    of: str = ""

    def write(self, out: Path) -> None:
        """Whole or not at all (written beside, then renamed over)."""
        out.mkdir(parents=True, exist_ok=True)
        d = {"kind": self.kind.value, "finished": self.finished}
        if self.of:
            d["of"] = self.of
        records.write_whole(out / MARKER, json.dumps(d, indent=1) + "\n")

    @classmethod
    def read(cls, out: Path) -> Marker:
        path = out / MARKER
        hint = "remove the directory if it holds nothing you need"
        d = records.read_object(
            path, records.RecordKind.MARKER, ("kind", "finished"), hint
        )
        f = records.Fields(path, d, hint)
        try:
            kind = RunKind(f.string("kind"))
        except ValueError:
            f.wrong("kind", "a kind of run")
        return cls(kind, f.boolean("finished"), f.string("of", ""))


def mark(
    out: Path, kind: RunKind, finished: bool = False, of: str = ""
) -> None:
    """Mark ``out`` as ``kind``'s (claimed first), finished or not; held
    from then on (hold)."""
    out.mkdir(parents=True, exist_ok=True)
    hold(out)
    Marker(kind, finished, of).write(out)


def _record(out: Path, name: str) -> dict[str, object] | None:
    """A run's own record as an object, or None if it cannot be read."""
    try:
        return records.read_object(out / name, records.kind_of(out / name))
    except DamagedRunError:
        return None


def _compare(out: Path) -> Held:
    """A compare run, from its manifest: finished if it ended with
    nothing left to boot (not stopped, no error)."""
    if not (out / "environment.json").exists():
        # a run from before the manifest, or one whose manifest is lost
        done = (out / "results.json").exists()
        return Held(RunKind.COMPARE, done, detail="no environment.json")
    d = _record(out, "environment.json")
    if d is None:
        return Held(
            RunKind.COMPARE, False, detail="its manifest cannot be read"
        )
    boots = sum(1 for _ in (out / "raw").glob("*/*/boot.json"))
    finished = bool(d.get("finished")) and not d.get("stopped")
    finished = finished and not d.get("errors")
    return Held(
        RunKind.COMPARE,
        finished,
        detail=f"{boots} boot{'s' if boots != 1 else ''} recorded",
    )


def identify(out: Path) -> Held | None:
    """What ``out`` holds; None if it is new or empty."""
    if not out.exists() and not out.is_symlink():
        return None
    if not out.is_dir():
        return Held(None, False, detail="a file, not a directory")
    entries = sorted(p.name for p in out.iterdir() if p.name != STAGING)
    if not entries or entries == [MARKER]:
        # a run that stopped before it wrote anything left nothing to keep
        return None
    if MARKER in entries:
        try:
            m = Marker.read(out)
        except DamagedRunError as e:
            return Held(None, False, detail=f"a damaged {MARKER} ({e})")
        return Held(m.kind, m.finished, m.of)
    have = set(entries)
    if have & {"environment.json", "raw", "samples.jsonl"}:
        return _compare(out)
    if "bisect.json" in have:
        d = _record(out, "bisect.json") or {}
        result = str(d.get("result") or "")
        done = bool(result) and not d.get("stopped")
        ended_by_error = result.startswith(BISECT_ERROR)
        return Held(RunKind.BISECT, done and not ended_by_error)
    for name, kind in (
        ("suite.json", RunKind.SUITE),
        ("robot.json", RunKind.ROBOT),
        ("coverage.json", RunKind.COVERAGE),
    ):
        if name in have:
            return Held(kind, True)
    if "outcomes.json" in have:
        d = _record(out, "outcomes.json") or {}
        if d.get("command") == "check":
            return Held(RunKind.SERIES_CHECK, True)
    shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
    return Held(
        None,
        False,
        detail=f"{len(entries)} file(s) of no foliolab run ({shown})",
    )


def claim(
    out: Path,
    kind: RunKind,
    *,
    resume: bool = False,
    force: bool = False,
    resumable: bool = False,
    forceable: bool = False,
    of: str = "",
    dry_run: bool = False,
) -> Held | None:
    """Check, before any work, that a command of ``kind`` may write
    ``out``; what it holds (None: new or empty). ``resumable`` and
    ``forceable``: the command has --resume, --force. A report set
    (REPORT_SETS; ``of``: the run it reports) may replace the set of the
    same run. Anything else: UsageError naming the directory, what it holds
    and what to do.

    The directory, if it exists, is held for the rest of the command
    (hold): a second command that would write it meanwhile, a --resume
    of a run still going among them, is refused, as two writers of one
    run's records lose each other's."""
    held = _claimed(out, kind, resume, force, resumable, forceable, of)
    if out.is_dir():
        hold(out, keep=not dry_run)
    elif held is None and not dry_run:
        # nothing to lock yet: checked again when it is made (hold)
        _CLAIMED_NEW.add(str(out.resolve()))
    return held


def let_go() -> None:
    """The command's end: every directory it holds let go, and its
    claims forgotten."""
    locks.let_go()
    _CLAIMED_NEW.clear()
    _OURS.clear()


# the directories this process claimed new or empty: hold() checks they
# still are when it first takes one, as another command may have made
# and written it in between (a compare's checks fetch and apply first)
_CLAIMED_NEW: set[str] = set()
# the directories this command holds, or has checked as its own where
# the file system locks none (NFS): what removed_if_it_fails may remove
_OURS: set[str] = set()


def hold(out: Path, keep: bool = True) -> None:
    """Hold the run directory ``out`` for the rest of the command:
    claim() holds one that exists, and whatever makes a new one holds it
    once made (mark(), a compare's and a bisect's start), so a second
    command is refused from the moment the first could write. ``keep``
    False (a dry run): only refused if another holds it. A path that is
    no directory is left to the caller's own checks, which say what it
    is."""
    if not out.is_dir():
        return
    key = str(out.resolve())
    holder = locks.held_for_the_command(out, keep)
    if holder is not None:
        raise UsageError(
            f"--out {out} is being written by another foliolab command "
            f"now ({holder})",
            hint="wait for it to end, or give another --out",
        )
    if not keep:
        return
    if key in _CLAIMED_NEW:
        now = identify(out)
        if now is not None:
            locks.let_go_of(out)
            raise UsageError(
                f"--out {out} was new when this command claimed it, and "
                f"holds {now.describe()} now: another command wrote it",
                hint="give another --out",
            )
        _CLAIMED_NEW.discard(key)
    _OURS.add(key)


def _claimed(
    out: Path,
    kind: RunKind,
    resume: bool,
    force: bool,
    resumable: bool,
    forceable: bool,
    of: str,
) -> Held | None:
    """claim's answer by what ``out`` holds, before the lock is asked:
    a refused claim holds nothing."""
    held = identify(out)
    other = "give a new or empty --out directory"
    if held is None:
        if resume:
            raise UsageError(
                f"--resume: {out} holds no {kind.words} to finish",
                hint="give the --out of the run to finish, or drop --resume",
            )
        return None
    if held.kind is None:
        raise UsageError(
            f"--out {out} holds {held.describe()}, not a {kind.words}",
            hint=other,
        )
    if held.kind is not kind:
        raise UsageError(
            f"--out {out} holds {held.describe()}, not a {kind.words}",
            hint=f"{other}: a command writes only a directory of its own kind",
        )
    if kind in REPORT_SETS:
        if held.of != of:
            raise UsageError(
                f"--out {out} holds {held.describe()}", hint=other
            )
        return held
    if resume or force:
        return held
    hints = []
    if resumable and not held.finished:
        hints.append("finish it with --resume")
    hints.append("give another --out")
    if forceable:
        hints.append("replace it with --force")
    raise UsageError(
        f"--out {out} holds {held.describe()}",
        hint=", ".join(hints[:-1]) + " or " + hints[-1]
        if len(hints) > 1
        else hints[0],
    )


# ---- a report set, written whole -------------------------------------------


@contextlib.contextmanager
def removed_if_it_fails(out: Path) -> Iterator[None]:
    """A directory the block makes is removed again if the block raises:
    a refused or failed report leaves no half-made --out behind. One that
    was there before is left to staged() and the command's claim, and
    so is one this command does not hold: another command made it
    meanwhile, and this one was refused it (hold)."""
    made = not out.exists() and not out.is_symlink()
    try:
        yield
    except BaseException:
        if made and str(out.resolve()) in _OURS:
            shutil.rmtree(out, ignore_errors=True)
        raise


@contextlib.contextmanager
def staged(out: Path) -> Iterator[Path]:
    """A directory to write a set of files into; when the block ends
    well, each file is renamed into ``out`` at its place (the files of
    the set's subdirectories that the new set does not have are removed),
    and the staging directory removed. If the block raises, ``out`` is
    as it was. The staging directory is inside ``out``, so that every
    rename stays on one filesystem."""
    out.mkdir(parents=True, exist_ok=True)
    stage = out / STAGING
    shutil.rmtree(stage, ignore_errors=True)  # a killed report's
    stage.mkdir()
    try:
        yield stage
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    with signals_held():
        move_in(stage, out)
    shutil.rmtree(stage, ignore_errors=True)


# What a user or a lab worker's shutdown sends; held while a set is moved
# in, so that one never leaves half a new set beside half the old one
# (the renames take microseconds; a signal waits for them, then acts).
HELD_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT}


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """HELD_SIGNALS wait for the block: their handlers are replaced by
    one that notes them, and those that came are raised again when it
    ends. (Blocking them with a signal mask would hold them only from
    this thread; Python runs its handlers in the main thread whichever
    thread took the signal.) Off the main thread, where handlers cannot
    be set, the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []

    def note(signum: int, frame: object) -> None:
        came.append(signum)

    before = {s: signal.signal(s, note) for s in HELD_SIGNALS}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
        for signum in dict.fromkeys(came):
            signal.raise_signal(signum)


def move_in(stage: Path, out: Path) -> None:
    """Every file under ``stage`` renamed to its place in ``out``."""
    new = sorted(p for p in stage.rglob("*") if not p.is_dir())
    subdirs = {p.relative_to(stage).parts[0] for p in new if p.parent != stage}
    for p in new:
        target = out / p.relative_to(stage)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(p, target)
    kept = {out / p.relative_to(stage) for p in new}
    for d in subdirs:
        for old in (out / d).rglob("*"):
            if old.is_file() and old not in kept:
                old.unlink()
