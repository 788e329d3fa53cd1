"""The series of ``SOURCE+INPUT[:N]``: where its patches come from (a
SeriesInput: DirSeries, a folder with a `series` file) and the series
applied to a source (AppliedSeries: the input and N). A folder may also
say how its series goes to the list, as one or more postings
(`postings.toml`, DirSeries.postings())."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from foliolab.errors import UsageError
from foliolab.kernel import source
from foliolab.kernel.sources.base import SeriesInput, SpecValue

# The kind environment.json gives a kernel with a series, whatever its
# source and input
SERIES_KIND = "series"

# The file of a series folder that splits its series into postings
POSTINGS_FILE = "postings.toml"
# The branches of linux-mm's tree (akpm's mm.git) a posting is meant for:
# fixes for this release go to mm-hotfixes, features to mm-new (which
# feeds mm-unstable)
MM_TREES = ("mm-hotfixes-unstable", "mm-new", "mm-unstable")
# b4's change-id: the day it was made, a name, 12 hex digits
_CHANGE_ID = re.compile(r"^\d{8}-[a-z0-9][a-z0-9-]*-[0-9a-f]{12}$")
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


@dataclass(frozen=True)
class Credit:
    """Someone whose design a posting carries: Cc'd, with their posting
    linked in the cover letter."""

    name: str
    email: str
    design: str  # their series' title, as they posted it
    link: str  # where their posting can be read


@dataclass(frozen=True)
class Posting:
    """One posting of a series: the patches that go to the list as one
    thread, under one cover letter."""

    name: str
    tree: str  # one of MM_TREES
    prefix: str  # the subject prefix: "PATCH mm-new" -> [PATCH mm-new 1/4]
    change_id: str  # b4's, the same for every revision of the posting
    patches: tuple[Path, ...]  # in the series' order
    title: str  # the cover letter's subject, after its prefix
    cover: Path | None  # the cover letter's text; None: the series'
    credits: tuple[Credit, ...] = ()
    revision: int = 1
    # the postings it goes on top of (by name, each before it in the
    # file): it applies to the base with theirs applied first
    requires: tuple[str, ...] = ()


@dataclass(frozen=True)
class DirSeries(SeriesInput):
    """A folder whose `series` file lists its patches, in order, one a
    line (``#`` starts a comment)."""

    directory: Path

    @classmethod
    def parse(cls, text: str) -> DirSeries:
        return cls(Path(text))

    @classmethod
    def is_there(cls, text: str) -> bool:
        # a folder of .patch files is taken too: reading it then says its
        # `series` file is missing
        d = Path(text or "/nonexistent")
        return d.is_dir() and (
            (d / "series").is_file() or any(d.glob("*.patch"))
        )

    @classmethod
    def why_not(cls, text: str) -> str:
        if not text:
            return "no series directory after its '+'"
        if not Path(text).is_dir():
            return f"{text} is not a directory"
        return f"{text} holds no `series` file or .patch files"

    @property
    def given(self) -> str:
        return str(self.directory)

    def read(self) -> source.Series:
        # absolute: git am runs in a scratch worktree, not here
        try:
            directory = self.directory.resolve()
        except (RuntimeError, OSError) as e:  # a loop of symlinks
            raise UsageError(
                f"patch directory {self.directory}: cannot be followed ({e})",
                hint="give --patches DIR (with a `series` file) or "
                "--patches none",
            ) from None
        if not directory.is_dir():
            raise UsageError(
                f"patch directory {directory} "
                + (
                    "is not a directory"
                    if directory.exists()
                    else "does not exist"
                ),
                hint="give --patches DIR (with a `series` file) or "
                "--patches none",
            )
        series_file = directory / "series"
        text = _small_text(series_file, "the series file")
        patches: list[Path] = []
        for line in text.splitlines():
            name = line.split("#", 1)[0].strip()
            if not name:
                continue
            p = directory / name
            _check_patch(series_file, directory, name, p, patches)
            patches.append(p)
        if not patches:
            raise UsageError(
                f"{series_file}: the series is empty",
                hint="list the patches in order, one per line; for no "
                "patches give --patches none",
            )
        return source.Series(directory, tuple(patches))

    def fields(self) -> dict[str, SpecValue]:
        return {"series_dir": self.given}

    def postings(self) -> tuple[Posting, ...]:
        """How the series goes to the list (its POSTINGS_FILE): each
        patch of `series` in exactly one posting. A UsageError of one
        line says what is wrong with the file."""
        series = self.read()
        where = series.directory / POSTINGS_FILE
        if not where.is_file():
            raise UsageError(
                f"{where} is missing",
                hint="say how the series splits into postings "
                '(docs/manual.md, "Posting a series")',
            )
        try:
            data = tomllib.loads(where.read_text())
        except tomllib.TOMLDecodeError as e:
            raise UsageError(f"{where}: {e}") from None
        entries = data.get("posting")
        if not isinstance(entries, list) or not entries:
            raise UsageError(
                f"{where} has no [[posting]]",
                hint="give each posting as a [[posting]] table",
            )
        in_series = {p.name: p for p in series.patches}
        owner: dict[str, str] = {}
        postings: list[Posting] = []
        for entry in entries:
            posting = _posting(where, entry, in_series, owner)
            if any(q.name == posting.name for q in postings):
                raise UsageError(
                    f"{where}: two postings are called {posting.name}"
                )
            postings.append(posting)
        left = [p.name for p in series.patches if p.name not in owner]
        if left:
            raise UsageError(
                f"{where}: {left[0]} is in no posting"
                + (f" ({len(left) - 1} more)" if len(left) > 1 else ""),
                hint="every patch of `series` goes in one posting",
            )
        return tuple(postings)


def _text(where: Path, name: str, entry: dict[str, object], key: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise UsageError(
            f"{where}: posting {name} has no {key} (a string)",
        )
    return value.strip()


def _posting(
    where: Path,
    entry: object,
    in_series: dict[str, Path],
    owner: dict[str, str],
) -> Posting:
    """One [[posting]] of ``where``, its patches checked against the
    series (``in_series``) and the postings before it (``owner``: which
    posting took each patch)."""
    if not isinstance(entry, dict):
        raise UsageError(f"{where}: a posting is a [[posting]] table")
    name = entry.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise UsageError(
            f"{where}: a posting has no name, or not one of a-z, 0-9 "
            f"and '-' ({name!r})"
        )
    known = {"name", "tree", "prefix", "change-id", "patches", "title"}
    known |= {"cover", "credit", "revision", "requires"}
    unknown = sorted(set(entry) - known)
    if unknown:
        raise UsageError(
            f"{where}: posting {name} has an unknown key {unknown[0]}",
            hint="keys: " + ", ".join(sorted(known)),
        )
    tree = _text(where, name, entry, "tree")
    if tree not in MM_TREES:
        raise UsageError(
            f"{where}: posting {name} goes to {tree}, not a branch of "
            "linux-mm's tree",
            hint="tree is one of " + ", ".join(MM_TREES),
        )
    change_id = _text(where, name, entry, "change-id")
    if not _CHANGE_ID.match(change_id):
        raise UsageError(
            f"{where}: posting {name}'s change-id {change_id} is not "
            "YYYYMMDD-NAME-<12 hex digits>",
            hint="b4 makes one the day a series starts and keeps it "
            "for every revision",
        )
    names = entry.get("patches")
    if not isinstance(names, list) or not names:
        raise UsageError(
            f"{where}: posting {name} has no patches",
            hint="list its patches by file name, as `series` does",
        )
    patches = []
    for patch in names:
        if not isinstance(patch, str) or patch not in in_series:
            raise UsageError(
                f"{where}: posting {name} names {patch}, which is not "
                "a patch of `series`",
            )
        if patch in owner:
            raise UsageError(
                f"{where}: {patch} is in two postings, {owner[patch]} "
                f"and {name}",
            )
        owner[patch] = name
        patches.append(in_series[patch])
    order = list(in_series)
    patches.sort(key=lambda p: order.index(p.name))
    cover = entry.get("cover")
    if cover is not None and (
        not isinstance(cover, str) or not (where.parent / cover).is_file()
    ):
        raise UsageError(
            f"{where}: posting {name}'s cover {cover} is not a file of "
            f"{where.parent}",
        )
    revision = entry.get("revision", 1)
    if not isinstance(revision, int) or revision < 1:
        raise UsageError(
            f"{where}: posting {name}'s revision is not a number from 1"
        )
    requires = entry.get("requires", [])
    if not isinstance(requires, list) or not all(
        isinstance(r, str) and r != name and r in owner.values()
        for r in requires
    ):
        raise UsageError(
            f"{where}: posting {name} requires {requires}, not postings "
            "before it",
            hint="requires = [NAME, ...] names postings above it",
        )
    return Posting(
        name=name,
        tree=tree,
        prefix=_text(where, name, entry, "prefix"),
        change_id=change_id,
        patches=tuple(patches),
        title=_text(where, name, entry, "title"),
        cover=where.parent / cover if isinstance(cover, str) else None,
        credits=_credits(where, name, entry.get("credit", [])),
        revision=revision,
        requires=tuple(requires),
    )


def _credits(where: Path, name: str, entries: object) -> tuple[Credit, ...]:
    if not isinstance(entries, list):
        raise UsageError(
            f"{where}: posting {name}'s credit is not a [[posting.credit]]"
        )
    out = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise UsageError(
                f"{where}: posting {name}'s credit is not a table"
            )
        fields = [
            _text(where, f"{name}'s credit", entry, key)
            for key in ("name", "email", "design", "link")
        ]
        if "@" not in fields[1]:
            raise UsageError(
                f"{where}: posting {name} credits {fields[0]} with "
                f"{fields[1]}, not an address"
            )
        out.append(Credit(*fields))
    return tuple(out)


@dataclass(frozen=True)
class AppliedSeries:
    """The series of ``SOURCE+INPUT[:N]``: its input, and N (its first N
    patches; None: all)."""

    input: SeriesInput
    prefix: int | None = None

    def read(self, name: str, text: str) -> source.Series:
        """The (prefix of the) series of kernel ``name`` (``text``: its
        spec, for the refusal)."""
        s = self.input.read()
        if self.prefix is None:
            return s
        if self.prefix > len(s.patches):
            raise UsageError(
                f"kernel {name}: {text} asks for "
                f"{self.prefix} patches, the series has "
                f"{len(s.patches)}",
                hint=f"give N from 0 to {len(s.patches)}",
            )
        return source.Series(s.directory, s.patches[: self.prefix])

    def fields(self) -> dict[str, SpecValue]:
        return {**self.input.fields(), "prefix": self.prefix}


# A series file or a patch larger than this is not one (a symlink to
# /dev/zero was read until memory ran out).
MAX_SERIES_BYTES = 1 << 20
MAX_PATCH_BYTES = 64 << 20


def _small_text(path: Path, what: str) -> str:
    """The text of ``path``, a regular file of at most MAX_SERIES_BYTES,
    or a UsageError naming what it is instead."""
    if not path.exists():
        raise UsageError(
            f"{path} is missing",
            hint="list the patches in order, one per line",
        )
    if not path.is_file():
        raise UsageError(
            f"{path}: {what} is not a regular file",
            hint="list the patches in order, one per line, in a file",
        )
    if path.stat().st_size > MAX_SERIES_BYTES:
        raise UsageError(
            f"{path}: {what} is over {MAX_SERIES_BYTES >> 20} MiB",
            hint="list the patches in order, one per line",
        )
    try:
        return path.read_text()
    except UnicodeDecodeError:
        raise UsageError(
            f"{path}: {what} is not text",
            hint="list the patches in order, one per line",
        ) from None


def _check_patch(
    series_file: Path,
    directory: Path,
    name: str,
    p: Path,
    before: list[Path],
) -> None:
    """A series entry is a patch file of the series folder, named once,
    and a text patch: refused here, before any source is unpacked."""

    def refuse(why: str) -> UsageError:
        return UsageError(
            f"{series_file} names {name}, {why}",
            hint="list the series' own patch files, each once",
        )

    if not p.is_file():
        if p.exists():
            raise refuse("which is not a regular file")
        raise refuse(f"which does not exist in {directory}")
    try:
        p.resolve().relative_to(directory)
    except (ValueError, RuntimeError):
        raise refuse(f"which is outside {directory}") from None
    if p in before:
        raise refuse("a second time")
    if p.stat().st_size > MAX_PATCH_BYTES:
        raise refuse(f"which is over {MAX_PATCH_BYTES >> 20} MiB")
    data = p.read_bytes()
    if b"\0" in data or b"GIT binary patch" in data:
        raise refuse("a binary patch (the lab applies text patches)")
