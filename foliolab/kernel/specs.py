"""Kernels as arguments: ``--kernel NAME=SPEC``, parsed and checked.

SPEC is one of

- ``base``: the pinned Debian 6.12 source;
- ``git:PATH@REF``: a commit of the user's own kernel clone;
- ``debian:VERSION``: Debian's ``linux-source-X.Y`` package, ``X.Y`` for the
  newest in the archive (sid, trixie-backports, ...) or an exact package
  version (see debian.py); ``debian:VERSION@orig``: that package's orig
  tarball, the upstream release without Debian's patches (debian_orig.py);
- ``SOURCE+DIR``: one of the three above with the series in DIR (a
  ``series`` file) applied, ``SOURCE+DIR:N`` with its first N patches
  (``base+DIR``, ``debian:7.3+patches/7.3``, ``git:~/linux@v7.3+p:4``);
- ``image:PATH``: a kernel image built elsewhere, with its ``.config`` (and
  ``System.map`` for ``--count``) beside it or in a directory above it.

Each source, and each form of a series, is a class of sources/ (its
registries); a spec is a source, and with a series the series applied to
it. Every spec is checked before anything is built (a bad path, a series
prefix longer than the series, a ref that is not a commit, a series that
does not apply to its tree), and the first kernel is the baseline every
ratio is taken against. ``--patches DIR|none`` is the two-kernel
shorthand: ``vanilla=base`` and ``patched=base+DIR`` (``patched=base``
for an A/A run).

Only the spec itself is here, what can be known of it without fetching,
unpacking or applying anything: its tree (and whether its series applies)
is trees.py's, its build and keeping store.py's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from foliolab.errors import UsageError
from foliolab.kernel import sources
from foliolab.kernel.source import Series
from foliolab.kernel.sources.base import (
    EMPTY_SERIES,
    Source,
    SourceRecord,
    written,
)
from foliolab.kernel.sources.pinned import PinnedBase
from foliolab.kernel.sources.series import SERIES_KIND, AppliedSeries

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")


def forms(registered: tuple[type[Source], ...]) -> tuple[str, str]:
    """How help and refusals name the specs of ``registered``: every
    form, and those a series goes on."""
    onto = [cls.form for cls in registered if cls.takes_series]
    alone = [cls.form for cls in registered if not cls.takes_series]
    return (
        f"{', '.join(onto)}, any of these +DIR or "
        f"+DIR:N (a series on it), or {' or '.join(alone)}",
        f"{', '.join(onto[:-1])} or {onto[-1]}",
    )


SPEC_FORMS, SOURCE_FORMS = forms(sources.REGISTERED)


@dataclass(frozen=True)
class KernelSpec:
    """One ``--kernel NAME=SPEC``, parsed: its source, and the series
    applied to it if SPEC is SOURCE+INPUT[:N]."""

    name: str
    text: str  # SPEC as given, for the report
    source: Source
    applied: AppliedSeries | None = None

    @property
    def kind(self) -> str:
        """As environment.json names it: the source's, or a series'."""
        return self.source.kind if self.applied is None else SERIES_KIND

    def source_spec(self) -> KernelSpec:
        """The spec of the tree this kernel starts from: itself, or for a
        series the source it applies to."""
        if self.applied is None:
            return self
        return KernelSpec(self.name, self.source.text, self.source)

    def series(self) -> Series:
        """The (prefix of the) series this kernel applies to its source;
        the empty series for a kernel without one."""
        if self.applied is None:
            return EMPTY_SERIES
        return self.applied.read(self.name, self.text)

    def with_prefix(self, prefix: int) -> KernelSpec:
        """This series kernel with only its first ``prefix`` patches."""
        assert self.applied is not None  # only a series has a prefix
        return replace(self, applied=replace(self.applied, prefix=prefix))

    def known_commit(self) -> tuple[Path, str] | None:
        """(a repository holding it, its commit) if that can be had
        without fetching, applying or unpacking anything (for --dry-run):
        None, or a FoliolabError, if not."""
        if self.applied is None:
            return self.source.known_commit()
        return self.source.known_series_commit(self.series())

    def record(self) -> SourceRecord:
        """What the run's manifest keeps of the spec."""
        if self.applied is None:
            return self.source.record()
        return SourceRecord(
            SERIES_KIND,
            self.text,
            written(**self.applied.fields()),
            self.source.record_under_series(),
        )


def parse_kernel(arg: str) -> KernelSpec:
    """``NAME=SPEC`` -> KernelSpec; a UsageError says what is wrong."""
    name, eq, spec = arg.partition("=")
    if not eq or not spec:
        raise UsageError(
            f"--kernel {arg!r} is not NAME=SPEC",
            hint=f"e.g. --kernel base=base; SPEC is {SPEC_FORMS}",
        )
    if not _NAME.match(name):
        raise UsageError(
            f"--kernel name {name!r} is not a short name",
            hint="letters, digits, '.', '_' and '-', up to 32",
        )
    return parse_spec(name, spec)


def parse_spec(name: str, spec: str) -> KernelSpec:
    cls = sources.source_class(spec)
    if cls is None:
        raise UsageError(
            f"kernel {name}: unknown SPEC {spec!r}",
            hint=f"SPEC is {SPEC_FORMS}",
        )
    if not cls.takes_series:
        return KernelSpec(name, spec, cls.parse(name, spec))
    if cls.plus_starts_series:
        # its text holds no '+': the rest is INPUT[:N], whatever it holds
        head, plus, rest = spec.partition("+")
        onto = cls.parse(name, head)
        if not plus:
            return KernelSpec(name, spec, onto)
        return _series_spec(name, spec, onto, rest)
    source_text, series_text = split_series(name, spec)
    onto = cls.parse(name, source_text)
    if series_text is None:
        return KernelSpec(name, spec, onto)
    return _series_spec(name, spec, onto, series_text)


def _series_spec(name: str, spec: str, onto: Source, rest: str) -> KernelSpec:
    """``spec`` = ONTO+REST, REST being INPUT or INPUT:N."""
    text, prefix = _dir_and_prefix(rest)
    if not text:
        raise UsageError(
            f"kernel {name}: {spec!r} names no series directory",
            hint="give SOURCE+DIR or SOURCE+DIR:N",
        )
    given = sources.input_class(text).parse(text)
    return KernelSpec(name, spec, onto, AppliedSeries(given, prefix))


def _dir_and_prefix(rest: str) -> tuple[str, int | None]:
    """``DIR:N`` -> (DIR, N); ``DIR`` -> (DIR, None)."""
    m = re.match(r"^(.*):(\d+)$", rest)
    return (m.group(1), int(m.group(2))) if m else (rest, None)


def with_series(
    onto: KernelSpec, name: str, directory: Path, prefix: int | None = None
) -> KernelSpec:
    """The kernel ``onto`` + the series in ``directory`` (its first
    ``prefix`` patches), as ``ONTO+DIR[:N]`` would parse (``base+DIR``
    exactly as it always was)."""
    text = f"{onto.text}+{directory}" + (
        f":{prefix}" if prefix is not None else ""
    )
    given = sources.input_class(str(directory)).parse(str(directory))
    return KernelSpec(name, text, onto.source, AppliedSeries(given, prefix))


def parse_base(text: str, option: str = "--base") -> KernelSpec:
    """A source spec a series is put on (``check --base``, ``attribute
    --base``): base, git:PATH@REF or debian:VERSION."""
    k = parse_spec("base", text)
    if k.applied is not None or not k.source.takes_series:
        raise UsageError(
            f"{option} {text}: a series is put on {SOURCE_FORMS}",
            hint="give the series itself as its own option",
        )
    return k


# ---- SOURCE+DIR: where the series starts -----------------------------------
#
# Git refs and paths may hold '+', and so do Debian versions
# (7.3.4-1~bpo13+1), so neither the first nor the last '+' of a spec is
# the one before its series. The one that is: the '+' whose right side
# names a series input that is there (a directory with a `series` file or
# .patch files) and whose left side is a source spec of the right form.
# What follows a '+' is then a directory only if there is one, and the
# ref or version before it is never cut short by a directory that is not
# there. Two such places (directories `a+b` and `b`, both series) are
# refused as ambiguous rather than guessed. No such place: the spec has
# no series, and its '+' is its ref's or version's own; when that cannot
# be (debian: with a version of the wrong form) or the ref is no commit
# (git:, found by check_spec), the one line says the directory is not
# there either.


def split_series(name: str, spec: str) -> tuple[str, str | None]:
    """``SOURCE+DIR[:N]`` -> (SOURCE, DIR[:N]); (spec, None) when the spec
    has no series. A UsageError when that cannot be told."""
    cuts = _cuts(spec)
    found = [i for i in cuts if _is_series(spec[i + 1 :])]
    if len(found) > 1:
        readings = " or ".join(f"{spec[:i]} + {spec[i + 1 :]}" for i in found)
        raise UsageError(
            f"kernel {name}: {spec!r} is ambiguous: {readings}",
            hint="rename one of the series directories",
        )
    if found:
        return spec[: found[0]], spec[found[0] + 1 :]
    cls = sources.source_class(spec)
    strict = cls is not None and cls.plus_in_its_form
    if strict and cuts and not _is_source_form(spec):
        rest = spec[cuts[-1] + 1 :]
        raise UsageError(
            f"kernel {name}: {spec!r}: {not_a_series_dir(rest)}",
            hint="give SOURCE+DIR with DIR holding a `series` file",
        )
    return spec, None


def _cuts(spec: str) -> list[int]:
    """Where ``spec`` could be SOURCE+REST: each '+' after a source spec."""
    return [
        i for i, c in enumerate(spec) if c == "+" and _is_source_form(spec[:i])
    ]


def _is_source_form(text: str) -> bool:
    """Whether ``text`` reads as a source a series goes on whose text may
    hold a '+' (git:PATH@REF, debian:VERSION; nothing looked up)."""
    cls = sources.source_class(text)
    return (
        cls is not None
        and cls.takes_series
        and not cls.plus_starts_series
        and cls.is_form(text)
    )


def _is_series(rest: str) -> bool:
    text = _dir_and_prefix(rest)[0]
    return sources.input_class(text).is_there(text)


def not_a_series_dir(rest: str) -> str:
    """Why DIR (of ``DIR[:N]``) is not a series directory, in a few words."""
    text = _dir_and_prefix(rest)[0]
    return sources.input_class(text).why_not(text)


def from_patches(patches: Path | None) -> list[KernelSpec]:
    """``--patches DIR|none`` as kernels: vanilla=base, patched=base+DIR."""
    vanilla = KernelSpec("vanilla", "base", PinnedBase())
    if patches is None:
        return [vanilla, KernelSpec("patched", "base", PinnedBase())]
    return [vanilla, with_series(vanilla, "patched", patches)]


def check_specs(
    specs: list[KernelSpec],
    count: bool = False,
    offline: bool = False,
    at_least: int = 2,
) -> None:
    """Everything about the kernels that can be checked without building
    or applying: at least ``at_least`` (a comparison's two), distinct
    names, paths that exist, series that read, prefixes within their
    series, refs that are commits of a kernel tree, versions the lab's
    config fragments serve and the archive has, images with their config
    (and System.map when counting). Every kernel's own checks come before
    the first that may ask the network (Debian's archive), so a wrong
    series is refused before any package list is fetched. Whether each
    series applies: trees.series_trees(). ``offline`` (a dry run):
    Debian's archive is not asked, a debian: version is checked against
    the package lists fetched before, if any."""
    if len(specs) < at_least:
        raise UsageError(
            f"{len(specs)} kernel given; a comparison needs two or more",
            hint="repeat --kernel NAME=SPEC",
        )
    seen: set[str] = set()
    for k in specs:  # the names first: a spec's check may ask apt
        if k.name in seen:
            raise UsageError(
                f"kernel name {k.name!r} given twice",
                hint="give each --kernel its own NAME",
            )
        seen.add(k.name)
    for k in specs:
        check_local(k)
    for k in specs:
        _check_source(k, count, offline)


def check_spec(
    k: KernelSpec, count: bool = False, offline: bool = False
) -> None:
    """One kernel's spec, checked without building: check_local(), then
    its source checked (which may ask Debian's archive unless
    ``offline``)."""
    check_local(k)
    _check_source(k, count, offline)


def _check_source(k: KernelSpec, count: bool, offline: bool) -> None:
    _as_spec(k, lambda: k.source.check(k.name, count, offline))


def check_local(k: KernelSpec) -> None:
    """What can be said of one kernel's spec from this host alone, before
    anything is fetched: its series read, and what its tree must be (a
    git: commit's a kernel tree, a debian: version one the config
    fragments serve)."""
    if k.applied is not None:
        k.series()
    _as_spec(k, lambda: k.source.check_tree(k.name))


def _as_spec(k: KernelSpec, check: Callable[[], None]) -> None:
    """``check()`` of ``k``'s source; when the source is not there and
    its text holds a '+', one line says it is no SOURCE+DIR either
    (split_series() found no series directory there)."""
    try:
        check()
    except UsageError as e:
        text = k.source.text
        cuts = _cuts(text)
        if not cuts:
            raise
        raise UsageError(
            f"kernel {k.name}: {text!r} is neither a source ({e.message}) "
            f"nor SOURCE+DIR ({not_a_series_dir(text[cuts[-1] + 1 :])})",
            hint=e.hint,
        ) from None


def describe(specs: list[KernelSpec]) -> str:
    """``base=base, s1=base+patches/6.12:10, ...`` for a report header."""
    return ", ".join(f"{k.name}={k.text}" for k in specs)
