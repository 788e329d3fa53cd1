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
        directory = self.directory.resolve()
        if not directory.is_dir():
            raise UsageError(
                f"patch directory {directory} does not exist",
                hint="give --patches DIR (with a `series` file) or "
                "--patches none",
            )
        series_file = directory / "series"
        if not series_file.exists():
            raise UsageError(
                f"{series_file} is missing",
                hint="list the patches in order, one per line",
            )
        patches = []
        for line in series_file.read_text().splitlines():
            name = line.split("#", 1)[0].strip()
            if not name:
                continue
            p = directory / name
            if not p.is_file():
                raise UsageError(
                    f"{series_file} names {name}, which does not "
                    f"exist in {directory}"
                )
            patches.append(p)
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
