"""Unified diffs as data: the files and hunks of a ``git format-patch``
file or of ``git diff`` output, and a hunk applied to a file's lines in
memory, keeping where each of its lines lands.

The stable-history check reads a series one patch at a time on top of the
files the earlier patches left; applying in memory keeps that to the
touched files (seconds), where ``git am`` needs a checkout of the tree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    lines: tuple[tuple[str, str], ...]  # (" " | "-" | "+", text)

    @property
    def header(self) -> str:
        return (
            f"@@ -{self.old_start},{self.old_len} "
            f"+{self.new_start},{self.new_len} @@"
        )

    def old_lines(self) -> list[str]:
        return [t for k, t in self.lines if k != "+"]

    def new_lines(self) -> list[str]:
        return [t for k, t in self.lines if k != "-"]


@dataclass(frozen=True)
class FileDiff:
    old_path: str | None  # None: the diff creates the file
    new_path: str | None  # None: the diff deletes it
    hunks: tuple[Hunk, ...]

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""


def _strip_prefix(name: str) -> str | None:
    name = name.split("\t", 1)[0].strip()
    if name == "/dev/null":
        return None
    return name[2:] if name[:2] in ("a/", "b/") else name


def parse(text: str) -> list[FileDiff]:
    """Every file of a patch or diff; the commit message before the first
    ``diff --git`` and the signature after the last hunk are skipped (a
    hunk ends when its line counts are used up)."""
    lines = text.split("\n")
    files: list[FileDiff] = []
    old = new = None
    hunks: list[Hunk] = []
    started = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            if started:
                files.append(FileDiff(old, new, tuple(hunks)))
            started, hunks = True, []
            m = re.match(r"diff --git (\S+) (\S+)$", line)
            old, new = (
                (_strip_prefix(m.group(1)), _strip_prefix(m.group(2)))
                if m
                else (None, None)
            )
        elif (
            started
            and line.startswith("--- ")
            and i + 1 < len(lines)
            and lines[i + 1].startswith("+++ ")
        ):
            old, new = _strip_prefix(line[4:]), _strip_prefix(lines[i + 1][4:])
            i += 1
        elif started and _HUNK.match(line):
            hunk, i = _read_hunk(lines, i)
            hunks.append(hunk)
            continue
        i += 1
    if started:
        files.append(FileDiff(old, new, tuple(hunks)))
    return files


def _read_hunk(lines: list[str], i: int) -> tuple[Hunk, int]:
    m = _HUNK.match(lines[i])
    assert m is not None  # the caller saw the hunk's header
    old_start, new_start = int(m.group(1)), int(m.group(3))
    old_len = int(m.group(2)) if m.group(2) is not None else 1
    new_len = int(m.group(4)) if m.group(4) is not None else 1
    body: list[tuple[str, str]] = []
    old_left, new_left = old_len, new_len
    i += 1
    while (old_left or new_left) and i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith("\\"):  # "\ No newline at end of file"
            continue
        kind = line[:1] or " "  # a mailer may eat a lone space
        if kind not in " -+":
            break
        body.append((kind, line[1:]))
        old_left -= kind != "+"
        new_left -= kind != "-"
    while i < len(lines) and lines[i].startswith("\\"):
        i += 1
    return Hunk(old_start, old_len, new_start, new_len, tuple(body)), i


class HunkMismatch(Exception):
    """A hunk's old lines are not in the file."""

    def __init__(self, hunk: Hunk) -> None:
        super().__init__(hunk.header)
        self.hunk = hunk


@dataclass(frozen=True)
class PlacedLine:
    kind: str  # " ", "-" or "+"
    text: str
    old_no: int | None  # its line before the hunk (not for "+")
    new_no: int | None  # its line after it (not for "-")


@dataclass(frozen=True)
class Applied:
    """A file after a diff: its lines, and each hunk's lines placed."""

    lines: list[str]
    hunks: tuple[tuple[PlacedLine, ...], ...]


def apply(old: list[str], diff: FileDiff) -> Applied:
    """``old`` with the diff's hunks applied, as ``git apply`` would: at
    the hunk's own line, or the nearest place its old lines match."""
    out: list[str] = []
    placed = []
    pos = 0
    for hunk in diff.hunks:
        want = hunk.old_lines()
        at = _locate(old, want, _expected_index(hunk), pos)
        if at is None:
            raise HunkMismatch(hunk)
        out.extend(old[pos:at])
        placed.append(_place(hunk, at + 1, len(out) + 1))
        out.extend(hunk.new_lines())
        pos = at + len(want)
    out.extend(old[pos:])
    return Applied(out, tuple(placed))


def _expected_index(hunk: Hunk) -> int:
    # a hunk without old lines inserts after line old_start
    return hunk.old_start - 1 if hunk.old_len else hunk.old_start


def _locate(
    old: list[str], want: list[str], expected: int, lowest: int
) -> int | None:
    last = len(old) - len(want)
    for delta in range(0, max(last, 0) + len(old) + 1):
        for at in (expected - delta, expected + delta):
            if lowest <= at <= last and _matches(old, want, at):
                return at
    return None


def _matches(old: list[str], want: list[str], at: int) -> bool:
    return all(old[at + k].rstrip() == w.rstrip() for k, w in enumerate(want))


def _place(hunk: Hunk, old_no: int, new_no: int) -> tuple[PlacedLine, ...]:
    out = []
    for kind, text in hunk.lines:
        out.append(
            PlacedLine(
                kind,
                text,
                old_no if kind != "+" else None,
                new_no if kind != "-" else None,
            )
        )
        old_no += kind != "+"
        new_no += kind != "-"
    return tuple(out)


def split_lines(text: str) -> list[str]:
    """A file's lines without their newlines (no empty last line)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines
