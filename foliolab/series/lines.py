"""A series' added lines as they stand with the whole series applied.

Each patch's ``+`` lines are placed in the files it leaves; every later
patch then moves them (lines inserted or removed above them) or takes
them away. A line a later patch removes belongs to no patch any more, and
a line a later patch changes (removes and adds again, which is all a diff
can say) belongs to the later patch: the attribution ``git blame`` would
make within the series. The patches are applied in memory, one after
another, to the base's files (unidiff.apply: at the hunk's own line or
the nearest place its old lines match, as ``git am`` does), so a hunk
that applied at an offset still lands on the right line. Only the files
the series touches are read.

The cover letter's "Series map" (``0001-0002  S4. ...``) groups the
patches by the change they belong to, when the series has one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from foliolab.errors import FoliolabError
from foliolab.series import unidiff

# A base file's text by its path in the tree; None: the base has no such
# file.
BaseReader = Callable[[str], "str | None"]
BASE = 0  # the origin of a line the series did not add


class SeriesMapError(FoliolabError):
    """The series' lines could not be placed (a patch that does not
    apply to what the earlier ones left)."""

    exit_code = 4


@dataclass(frozen=True)
class PatchInfo:
    number: int  # 1-based, in `series` order
    name: str  # its file name
    subject: str  # without "[PATCH n/m]"


@dataclass(frozen=True)
class AddedLine:
    """A line a patch added, where it stands after the whole series."""

    patch: int  # PatchInfo.number
    path: str  # in the tree
    line: int  # 1-based, in the file after the whole series
    text: str


@dataclass
class SeriesLines:
    patches: list[PatchInfo]
    lines: list[AddedLine]  # by path, then line
    # patch -> how many of its added lines a later patch removed again
    superseded: dict[int, int] = field(default_factory=dict)
    # every file the series touched -> its lines after the series
    # (deleted files are absent)
    final: dict[str, list[str]] = field(default_factory=dict)
    touched: list[str] = field(default_factory=list)  # diffstat paths

    def of_patch(self, number: int) -> list[AddedLine]:
        return [a for a in self.lines if a.patch == number]


_SUBJECT_TAG = re.compile(r"^\[[^]]*\]\s*")


def patch_subject(text: str) -> str:
    """The Subject: header of a format-patch file, folded lines joined,
    without its ``[PATCH n/m]`` tag."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line == "":
            break  # end of the mail headers
        if line.lower().startswith("subject:"):
            subject = line[len("subject:") :].strip()
            for cont in lines[i + 1 :]:
                if cont[:1] not in (" ", "\t"):
                    break
                subject += " " + cont.strip()
            return _SUBJECT_TAG.sub("", subject)
    return ""


def map_series(patches: Sequence[Path], read_base: BaseReader) -> SeriesLines:
    """Apply ``patches`` in order to the base's files in memory and keep,
    for each line of every touched file, the patch that added it.

    SeriesMapError names the patch and file when a hunk does not apply
    to what the base and the earlier patches left.
    """
    files: dict[str, list[tuple[str, int]]] = {}  # path -> (text, origin)
    superseded: dict[int, int] = {}
    infos: list[PatchInfo] = []
    touched: list[str] = []
    for number, patch in enumerate(patches, 1):
        text = patch.read_text(errors="replace")
        infos.append(PatchInfo(number, patch.name, patch_subject(text)))
        for fd in unidiff.parse(text):
            for p in (fd.old_path, fd.new_path):
                if p and p not in touched:
                    touched.append(p)
            _apply_file(files, fd, number, patch.name, read_base, superseded)
    lines = [
        AddedLine(origin, path, n, t)
        for path in sorted(files)
        for n, (t, origin) in enumerate(files[path], 1)
        if origin != BASE
    ]
    final = {path: [t for t, _ in content] for path, content in files.items()}
    return SeriesLines(infos, lines, superseded, final, touched)


def _apply_file(
    files: dict[str, list[tuple[str, int]]],
    fd: unidiff.FileDiff,
    number: int,
    name: str,
    read_base: BaseReader,
    superseded: dict[int, int],
) -> None:
    """One file's diff of patch ``number`` applied to ``files``."""
    if fd.old_path is None:
        old: list[tuple[str, int]] = []
    elif fd.old_path in files:
        old = files[fd.old_path]
    else:
        base = read_base(fd.old_path)
        if base is None:
            raise SeriesMapError(
                f"{name} changes {fd.old_path}, which the base does not have"
            )
        old = [(t, BASE) for t in unidiff.split_lines(base)]
    if fd.old_path is not None and fd.new_path != fd.old_path:
        files.pop(fd.old_path, None)  # renamed or deleted
    if fd.new_path is None:  # deleted: its lines are gone
        for _, origin in old:
            _supersede(superseded, origin)
        return
    try:
        applied = unidiff.apply([t for t, _ in old], fd)
    except unidiff.HunkMismatch as e:
        raise SeriesMapError(
            f"{name}: its hunk {e.hunk.header} in "
            f"{fd.path} does not match what the base and "
            "the earlier patches leave"
        ) from None
    origins = _carry_origins([o for _, o in old], applied, number, superseded)
    files[fd.new_path] = list(zip(applied.lines, origins))


def _supersede(superseded: dict[int, int], origin: int) -> None:
    if origin != BASE:
        superseded[origin] = superseded.get(origin, 0) + 1


def _carry_origins(
    old: list[int],
    applied: unidiff.Applied,
    number: int,
    superseded: dict[int, int],
) -> list[int]:
    """The origin of each line of ``applied``: lines outside the hunks
    and context lines keep theirs, ``+`` lines are patch ``number``'s,
    ``-`` lines take theirs away."""
    out: list[int] = []
    old_pos = 0  # next old line not yet carried over
    for hunk in applied.hunks:
        at = _hunk_old_index(hunk, old_pos, len(out))
        out.extend(old[old_pos:at])
        for placed in hunk:
            if placed.kind == " ":
                assert placed.old_no is not None  # an old line has its number
                out.append(old[placed.old_no - 1])
            elif placed.kind == "+":
                out.append(number)
            else:
                assert placed.old_no is not None  # an old line has its number
                _supersede(superseded, old[placed.old_no - 1])
        old_pos = at + sum(p.kind != "+" for p in hunk)
    out.extend(old[old_pos:])
    if len(out) != len(applied.lines):  # unidiff.apply's own invariant
        raise AssertionError("origins out of step with the applied lines")
    return out


def _hunk_old_index(
    hunk: tuple[unidiff.PlacedLine, ...], old_pos: int, new_len: int
) -> int:
    """The 0-based old line a placed hunk starts at. Its first old (" "
    or "-") line says so; a hunk of ``+`` lines only starts as far past
    the last hunk in the old file as its first line is in the new one."""
    for p in hunk:
        if p.old_no is not None:
            return p.old_no - 1
    first_new = hunk[0].new_no if hunk else new_len + 1
    assert first_new is not None  # only + lines here: each has its number
    return old_pos + (first_new - 1 - new_len)


# ---- the cover letter's series map -----------------------------------------

# "  0001-0002  S4.  0001 records ..." / "  0017       S2 itself.": an entry
# starts two spaces in; its own sub-lines are indented further.
_MAP_ENTRY = re.compile(r"^  (\d{4})(?:-(\d{4}))?\s+(\S.*)$")
_SEED_ID = re.compile(r"\bS\d+\b")


@dataclass(frozen=True)
class SeriesGroup:
    """The patches of one entry of the cover letter's series map."""

    label: str  # "S4", or the entry's first phrase
    first: int
    last: int


def cover_letter(directory: Path) -> Path | None:
    """The series' cover letter (format-patch's ``0000-cover-letter``)."""
    found = sorted(directory.glob("*cover-letter*.patch"))
    return found[0] if found else None


def series_map(text: str) -> list[SeriesGroup]:
    """The entries of a cover letter's "Series map" section. An entry that
    names exactly one change (``S4``) is labelled with it; one naming
    several or none with its first phrase ("Prerequisites shared by S2
    and S0"). Empty when the letter has no such section."""
    lines = text.split("\n")
    try:
        start = next(
            i
            for i, line in enumerate(lines)
            if line.strip().lower() == "series map"
        )
    except StopIteration:
        return []
    groups: list[SeriesGroup] = []
    for line in lines[start + 2 :]:  # after the underline
        if line and not line.startswith(" "):
            break  # the next section
        m = _MAP_ENTRY.match(line)
        if not m:
            continue
        first = int(m.group(1))
        last = int(m.group(2) or first)
        words = m.group(3)
        seeds = list(dict.fromkeys(_SEED_ID.findall(words)))
        label = (
            seeds[0]
            if len(seeds) == 1
            else re.split(r"[.:]\s", words + " ", maxsplit=1)[0].strip()
        )
        groups.append(SeriesGroup(label, first, last))
    return groups


def group_of(groups: list[SeriesGroup], number: int) -> str | None:
    for g in groups:
        if g.first <= number <= g.last:
            return g.label
    return None
