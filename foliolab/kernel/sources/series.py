"""The series of ``SOURCE+INPUT[:N]``: where its patches come from (a
SeriesInput: DirSeries, a folder with a `series` file) and the series
applied to a source (AppliedSeries: the input and N)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from foliolab.errors import UsageError
from foliolab.kernel import source
from foliolab.kernel.sources.base import SeriesInput, SpecValue

# The kind environment.json gives a kernel with a series, whatever its
# source and input
SERIES_KIND = "series"


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
