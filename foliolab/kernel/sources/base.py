"""What a kernel source and a series input are: the two classes every
SPEC form and every ``+INPUT`` form of ``--kernel NAME=SPEC`` is one of.

A Source is what a spec names (``base``, ``git:PATH@REF``, ...): parsed
from its text, checked without building, resolved to the tree it builds
from (or, prebuilt, taken as it is), recorded in the run's manifest. A
SeriesInput is where the patches of ``SOURCE+INPUT[:N]`` come from (a
folder with a `series` file, ...). A series applied to a source is their
composition (specs.KernelSpec), no source of its own.
"""

from __future__ import annotations

import abc
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from foliolab.arch import Arch
from foliolab.errors import UsageError
from foliolab.kernel import build, source

# A value of a spec's record in environment.json
SpecValue = str | int | None

# The fields every spec of the first sources (base, git:, debian:, image:
# and a series on them) writes, whatever its kind, with what it writes
# when it has none: environment.json keeps them so, and a run recorded
# before keeps reading back as it was written. A later source writes its
# own fields (``written(path=...)``) after these.
_WRITTEN: dict[str, SpecValue] = {
    "series_dir": None,
    "prefix": None,
    "repo": None,
    "ref": "",
    "image": None,
    "debian_version": "",
}

# The series of a kernel with none (and of ``--patches none``)
EMPTY_SERIES = source.Series(Path("/dev/null"), ())


def written(**own: SpecValue) -> dict[str, SpecValue]:
    """A spec's fields as its record writes them: its ``own`` in their
    places among the first sources' fields, any new one after them."""
    return {**_WRITTEN, **own}


@dataclass(frozen=True)
class SourceRecord:
    """A kernel's spec as the run's manifest keeps it: its kind, the text
    given and its fields (``written()``), and for a series the source it
    goes on (None on the pinned base, as it always was)."""

    kind: str
    text: str
    fields: dict[str, SpecValue] = field(default_factory=dict)
    onto: SourceRecord | None = None


@dataclass(frozen=True)
class NamesAt:
    """Where a kernel's function names can be read without fetching or
    building anything: the C sources of a commit of a repository, or the
    System.map beside a prebuilt image."""

    repo: Path | None = None
    commit: str = ""
    system_map: Path | None = None


class Source(abc.ABC):
    """A kernel source as a spec names it (without a series): each SPEC
    form is one subclass, a frozen dataclass whose first field is
    ``text``, the spec as given, with a line in sources.REGISTERED."""

    # as environment.json names the kind
    kind: ClassVar[str]
    # how help and refusals write the form: "git:PATH@REF"
    form: ClassVar[str]
    # what its specs start with
    prefix: ClassVar[str]
    # SOURCE+DIR puts a series on it
    takes_series: ClassVar[bool] = True
    # its own text holds no '+': the first '+' starts the series, whatever
    # follows (base+DIR, refused later if DIR is no series)
    plus_starts_series: ClassVar[bool] = False
    # its form says where a '+' of its own may stand (a Debian version's):
    # a text of the wrong form that holds a '+' is refused as SOURCE+DIR
    # with no series there, not as a wrong form
    plus_in_its_form: ClassVar[bool] = False
    # a kernel built elsewhere, booted as it is: no tree, no build
    prebuilt: ClassVar[bool] = False

    text: str

    @classmethod
    def names(cls, text: str) -> bool:
        """Whether ``text`` is a spec of this source (of its form or not:
        parse() says what is wrong)."""
        return text.startswith(cls.prefix)

    @classmethod
    @abc.abstractmethod
    def parse(cls, name: str, text: str) -> Source:
        """The source ``text`` names, its form checked (nothing looked
        up); a UsageError naming kernel ``name`` says what is wrong."""

    @classmethod
    def is_form(cls, text: str) -> bool:
        """Whether ``text`` reads as this source (nothing looked up)."""
        try:
            cls.parse("x", text)
        except UsageError:
            return False
        return True

    def check(self, name: str, count: bool, offline: bool) -> None:
        """Checked without building: it exists (a ref that is a commit, a
        version the archive has, an image with its config). ``offline``:
        nothing asked of the network."""

    def check_tree(self, name: str) -> None:
        """What its tree must be, said before anything is fetched or
        built."""

    @abc.abstractmethod
    def start(self, name: str) -> tuple[source.Tree, source.Onto]:
        """Its tree (fetched, unpacked), and what it is as a series'
        tree."""

    def tree(self, name: str) -> source.Tree:
        """The tree kernel ``name`` builds from."""
        return self.start(name)[0]

    def series_tree(self, name: str, series: source.Series) -> source.Tree:
        """The tree with ``series`` applied (or found applied), kept in
        its repository per tree and content."""
        under, onto = self.start(name)
        return source.prepare_series(under, onto, series, name)

    @abc.abstractmethod
    def slot(self) -> str:
        """The build directory its kernels build in (build.slot_name()),
        known before anything is fetched (for --dry-run)."""

    def known_commit(self) -> tuple[Path, str] | None:
        """(a repository holding it, its commit) if that can be had
        without fetching or unpacking anything; FoliolabError or None if
        not."""
        return None

    def known_series_commit(
        self, series: source.Series
    ) -> tuple[Path, str] | None:
        """The same for ``series`` on it, if applied before."""
        return None

    def names_at(self) -> NamesAt | None:
        """Where its function names can be read without fetching; None
        when only its tree or build can say."""
        return None

    @abc.abstractmethod
    def record(self) -> SourceRecord:
        """What the run's manifest keeps of it."""

    def record_under_series(self) -> SourceRecord | None:
        """What the manifest keeps of it under a series."""
        return self.record()

    def prebuilt_image(self) -> Path | None:
        """A prebuilt kernel's image; None for one built from its tree."""
        return None

    def prebuilt_symbols(self) -> Path | None:
        """The directory of a prebuilt kernel's System.map, if any."""
        return None

    def prebuilt_kernel(
        self, name: str, arch: Arch, purpose: str
    ) -> build.Kernel:
        """A prebuilt kernel as a Kernel, checked against the fragment of
        ``purpose``."""
        raise TypeError(f"{self.text} is built from its tree")

    def dry_run(
        self, name: str, text: str, arch: Arch, purpose: str
    ) -> tuple[Path, list[str]]:
        """The image a dry run boots for kernel ``name`` (``text``: its
        spec), and what it says of its build."""
        out = build.build_dir(arch, purpose, self.slot())
        make = build.make_argv(Path("<tree>"), out, arch, arch.make_target)
        return out / arch.kernel_image, [
            f"# kernel {name} = {text}: unless already kept "
            "in the cache, checkout, then",
            shlex.join(make),
        ]


class SeriesInput(abc.ABC):
    """Where the patches of ``SOURCE+INPUT[:N]`` come from: each form of
    INPUT is one subclass, a frozen dataclass, with a line in
    sources.SERIES_INPUTS. INPUT is whatever follows the '+' (and comes
    before ``:N``)."""

    # what its INPUT starts with; "" for the one that takes any text
    prefix: ClassVar[str] = ""

    @classmethod
    @abc.abstractmethod
    def parse(cls, text: str) -> SeriesInput:
        """The input ``text`` names (not read yet)."""

    @classmethod
    @abc.abstractmethod
    def is_there(cls, text: str) -> bool:
        """Whether ``text`` names an input of this form that is there:
        what tells the '+' before a series from one of a ref or
        version."""

    @classmethod
    @abc.abstractmethod
    def why_not(cls, text: str) -> str:
        """Why ``text`` is not such an input, in a few words."""

    @property
    @abc.abstractmethod
    def given(self) -> str:
        """INPUT as the spec gave it (the manifest's `directory`)."""

    @abc.abstractmethod
    def read(self) -> source.Series:
        """Its patches, in order; a UsageError when they cannot be read."""

    @abc.abstractmethod
    def fields(self) -> dict[str, SpecValue]:
        """Its fields in the spec's record."""


def kept_commit(repo: Path, ref: str) -> tuple[Path, str] | None:
    """(``repo``, the commit ``ref`` keeps there), None if it keeps none."""
    cp = source.git(
        repo, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False
    )
    return (repo, cp.stdout.strip()) if cp.returncode == 0 else None
