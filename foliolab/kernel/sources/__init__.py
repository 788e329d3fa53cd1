"""The kernel sources a ``--kernel NAME=SPEC`` names, and the series
inputs a ``SOURCE+INPUT[:N]`` puts on them, as classes in two registries
(as executors/ keeps its executors).

- ``base`` (pinned.py, PinnedBase): the pinned Debian 6.12 source;
- ``git:PATH@REF`` (git.py, GitSource): a commit of the user's clone;
- ``debian:VERSION[@orig]`` (debian.py, DebianSource): Debian's
  linux-source, or with @orig its orig tarball without Debian's patches;
- ``image:PATH`` (image.py, ImageSource): a kernel built elsewhere;
- ``+DIR`` (series.py, DirSeries): a folder with a `series` file.

Each source class (base.Source) owns all that is its own: its form
(``prefix``, ``form``, ``parse``), its ``check`` before anything is
built, its tree (``start``, ``series_tree``), its build directory
(``slot``), what a dry run knows of it (``known_commit``, ``dry_run``),
where its function names are at hand (``names_at``) and its ``record`` in
the run's manifest. Each series input class (base.SeriesInput) says
whether a text after a '+' is one (``is_there``, ``why_not``) and
``read``s its patches. A series on a source is their composition
(specs.KernelSpec, series.AppliedSeries), no class of its own. Adding a
source or an input is one module with such a class and its line below;
specs.py parses a spec by asking these registries.
"""

from __future__ import annotations

from pathlib import Path

from foliolab.kernel import source
from foliolab.kernel.sources.base import (
    EMPTY_SERIES,
    SeriesInput,
    Source,
)
from foliolab.kernel.sources.debian import DebianSource
from foliolab.kernel.sources.git import GitSource
from foliolab.kernel.sources.image import ImageSource
from foliolab.kernel.sources.pinned import PinnedBase
from foliolab.kernel.sources.series import DirSeries

# Every source, a line each, in the order help and refusals name them
REGISTERED: tuple[type[Source], ...] = (
    PinnedBase,
    GitSource,
    DebianSource,
    ImageSource,
)
# Every series input, a line each; the last takes any text (a folder)
SERIES_INPUTS: tuple[type[SeriesInput], ...] = (DirSeries,)
assert SERIES_INPUTS[-1].prefix == ""


def source_class(text: str) -> type[Source] | None:
    """The source whose specs ``text`` is one of; None for none."""
    return next((cls for cls in REGISTERED if cls.names(text)), None)


def input_class(text: str) -> type[SeriesInput]:
    """The series input INPUT (``text``) is one of: the one whose prefix
    it has, else the folder."""
    return next(
        cls
        for cls in SERIES_INPUTS
        if not cls.prefix or text.startswith(cls.prefix)
    )


def read_patches(patches: Path | None) -> source.Series:
    """``--patches DIR|none`` (``--series``): the series in DIR, the
    empty series for none."""
    if patches is None:
        return EMPTY_SERIES
    return input_class(str(patches)).parse(str(patches)).read()
