"""Kernels as arguments: ``--kernel NAME=SPEC``, parsed and checked.

SPEC is one of

- ``base``: the pinned Debian 6.12 source;
- ``git:PATH@REF``: a commit of the user's own kernel clone;
- ``debian:VERSION``: Debian's ``linux-source-X.Y`` package, ``X.Y`` for the
  newest in the archive (sid, trixie-backports, ...) or an exact package
  version (see debian.py);
- ``SOURCE+DIR``: one of the three above with the series in DIR (a
  ``series`` file) applied, ``SOURCE+DIR:N`` with its first N patches
  (``base+DIR``, ``debian:7.3+patches/7.3``, ``git:~/linux@v7.3+p:4``);
- ``image:PATH``: a kernel image built elsewhere, with its ``.config`` (and
  ``System.map`` for ``--count``) beside it or in a directory above it.

Every spec is checked before anything is built (a bad path, a series
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

import enum
import logging
import re
from dataclasses import dataclass, replace
from pathlib import Path

from foliolab.kernel import debian, source
from foliolab.errors import UsageError

log = logging.getLogger("foliolab")

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")
SPEC_FORMS = (
    "base, git:PATH@REF, debian:VERSION, any of these +DIR or "
    "+DIR:N (a series on it), or image:PATH"
)
SOURCE_FORMS = "base, git:PATH@REF or debian:VERSION"
# How far above an image its .config and System.map are looked for: a
# build directory keeps bzImage three levels down (arch/x86/boot).
_IMAGE_PARENTS = 4


class SpecKind(enum.Enum):
    BASE = "base"
    SERIES = "series"
    GIT = "git"
    IMAGE = "image"
    DEBIAN = "debian"


@dataclass(frozen=True)
class KernelSpec:
    """One ``--kernel NAME=SPEC``, parsed."""

    name: str
    kind: SpecKind
    text: str  # SPEC as given, for the report
    series_dir: Path | None = None  # SERIES
    prefix: int | None = None  # SERIES: the first N patches
    repo: Path | None = None  # GIT
    ref: str = ""  # GIT
    image: Path | None = None  # IMAGE
    debian_version: str = ""  # DEBIAN: X.Y or a package version
    # SERIES: the GIT or DEBIAN spec the series applies to; None: the base
    onto: KernelSpec | None = None

    def is_base(self) -> bool:
        """Whether this kernel is the base's commit, known without building
        (a git: ref may be too; only its build finds out)."""
        return self.kind is SpecKind.BASE or (
            self.kind is SpecKind.SERIES
            and self.prefix == 0
            and self.onto is None
        )

    def source_spec(self) -> KernelSpec:
        """The spec of the tree this kernel starts from: itself, or for a
        series the spec it applies to."""
        if self.kind is not SpecKind.SERIES:
            return self
        return self.onto or KernelSpec(self.name, SpecKind.BASE, "base")

    def series(self) -> source.Series:
        """The (prefix of the) series this kernel applies to the base."""
        s = source.read_series(self.series_dir)
        if self.prefix is None:
            return s
        if self.prefix > len(s.patches):
            raise UsageError(
                f"kernel {self.name}: {self.text} asks for "
                f"{self.prefix} patches, the series has "
                f"{len(s.patches)}",
                hint=f"give N from 0 to {len(s.patches)}",
            )
        return source.Series(s.directory, s.patches[: self.prefix])


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
    if spec.startswith("base+"):
        # "base" holds no '+': the rest is DIR[:N], whatever DIR holds
        return _series_spec(name, spec, None, spec[len("base+") :])
    if spec.startswith(("git:", "debian:")):
        source_text, rest = split_series(name, spec)
        onto = _source_spec(name, source_text)
        return onto if rest is None else _series_spec(name, spec, onto, rest)
    if spec.startswith("image:"):
        path = spec[len("image:") :]
        if not path:
            raise UsageError(
                f"kernel {name}: {spec!r} names no image",
                hint="give image:PATH",
            )
        return KernelSpec(
            name, SpecKind.IMAGE, spec, image=Path(path).expanduser()
        )
    return _source_spec(name, spec)


def _source_spec(name: str, spec: str) -> KernelSpec:
    """``base``, ``git:PATH@REF`` or ``debian:VERSION``, without a series."""
    if spec == "base":
        return KernelSpec(name, SpecKind.BASE, spec)
    if spec.startswith("git:"):
        path, at, ref = spec[len("git:") :].rpartition("@")
        if not at or not path or not ref:
            raise UsageError(
                f"kernel {name}: {spec!r} is not git:PATH@REF",
                hint="e.g. git:~/linux@mm-unstable",
            )
        return KernelSpec(
            name, SpecKind.GIT, spec, repo=Path(path).expanduser(), ref=ref
        )
    if spec.startswith("debian:"):
        version = spec[len("debian:") :]
        debian.package_of(version)  # the form only; the archive later
        return KernelSpec(name, SpecKind.DEBIAN, spec, debian_version=version)
    raise UsageError(
        f"kernel {name}: unknown SPEC {spec!r}", hint=f"SPEC is {SPEC_FORMS}"
    )


def _series_spec(
    name: str, spec: str, onto: KernelSpec | None, rest: str
) -> KernelSpec:
    """``spec`` = ONTO+REST, REST being DIR or DIR:N."""
    directory, prefix = _dir_and_prefix(rest)
    if not directory:
        raise UsageError(
            f"kernel {name}: {spec!r} names no series directory",
            hint="give SOURCE+DIR or SOURCE+DIR:N",
        )
    return KernelSpec(
        name,
        SpecKind.SERIES,
        spec,
        series_dir=Path(directory),
        prefix=prefix,
        onto=onto,
    )


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
    under = None if onto.kind is SpecKind.BASE else replace(onto, name=name)
    return KernelSpec(
        name,
        SpecKind.SERIES,
        text,
        series_dir=Path(directory),
        prefix=prefix,
        onto=under,
    )


def parse_base(text: str, option: str = "--base") -> KernelSpec:
    """A source spec a series is put on (``check --base``, ``attribute
    --base``): base, git:PATH@REF or debian:VERSION."""
    k = parse_spec("base", text)
    if k.kind not in (SpecKind.BASE, SpecKind.GIT, SpecKind.DEBIAN):
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
# names a series directory (it exists, with a `series` file or .patch
# files) and whose left side is a source spec of the right form. What
# follows a '+' is then a directory only if there is one, and the ref or
# version before it is never cut short by a directory that is not there.
# Two such places (directories `a+b` and `b`, both series) are refused as
# ambiguous rather than guessed. No such place: the spec has no series,
# and its '+' is its ref's or version's own; when that cannot be (debian:
# with a version of the wrong form) or the ref is no commit (git:, found
# by check_spec), the one line says the directory is not there either.


def split_series(name: str, spec: str) -> tuple[str, str | None]:
    """``SOURCE+DIR[:N]`` -> (SOURCE, DIR[:N]); (spec, None) when the spec
    has no series. A UsageError when that cannot be told."""
    cuts = _cuts(spec)
    found = [i for i in cuts if _is_series_dir(spec[i + 1 :])]
    if len(found) > 1:
        readings = " or ".join(f"{spec[:i]} + {spec[i + 1 :]}" for i in found)
        raise UsageError(
            f"kernel {name}: {spec!r} is ambiguous: {readings}",
            hint="rename one of the series directories",
        )
    if found:
        return spec[: found[0]], spec[found[0] + 1 :]
    if spec.startswith("debian:") and cuts and not _is_source_form(spec):
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
    """Whether ``text`` reads as git:PATH@REF or debian:VERSION (nothing
    looked up)."""
    try:
        return _source_spec("x", text).kind in (SpecKind.GIT, SpecKind.DEBIAN)
    except UsageError:
        return False


def _is_series_dir(rest: str) -> bool:
    d = Path(_dir_and_prefix(rest)[0] or "/nonexistent")
    return d.is_dir() and ((d / "series").is_file() or any(d.glob("*.patch")))


def not_a_series_dir(rest: str) -> str:
    """Why DIR (of ``DIR[:N]``) is not a series directory, in a few words."""
    d = _dir_and_prefix(rest)[0]
    if not d:
        return "no series directory after its '+'"
    if not Path(d).is_dir():
        return f"{d} is not a directory"
    return f"{d} holds no `series` file or .patch files"


def from_patches(patches: Path | None) -> list[KernelSpec]:
    """``--patches DIR|none`` as kernels: vanilla=base, patched=base+DIR."""
    vanilla = KernelSpec("vanilla", SpecKind.BASE, "base")
    if patches is None:
        return [vanilla, KernelSpec("patched", SpecKind.BASE, "base")]
    return [
        vanilla,
        KernelSpec(
            "patched",
            SpecKind.SERIES,
            f"base+{patches}",
            series_dir=Path(patches),
        ),
    ]


def find_beside(image: Path, name: str) -> Path | None:
    """``name`` in the image's directory or one of the few above it."""
    d = image.resolve().parent
    for _ in range(_IMAGE_PARENTS):
        if (d / name).is_file():
            return d / name
        if d.parent == d:
            break
        d = d.parent
    return None


def check_specs(
    specs: list[KernelSpec], count: bool = False, offline: bool = False
) -> None:
    """Everything about the kernels that can be checked without building
    or applying: at least two, distinct names, paths that exist, series
    that read, prefixes within their series, refs that are commits,
    versions the archive has, images with their config (and System.map
    when counting). Whether each series applies: trees.series_trees().
    ``offline`` (a dry run): Debian's archive is not asked, a debian:
    version is checked against the package lists fetched before, if any."""
    if len(specs) < 2:
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
        check_spec(k, count, offline)


def check_spec(
    k: KernelSpec, count: bool = False, offline: bool = False
) -> None:
    """One kernel's spec, checked without building."""
    if k.kind is SpecKind.SERIES:
        k.series()
        if k.onto is not None:
            check_spec(k.onto, count, offline)
    elif k.kind in (SpecKind.GIT, SpecKind.DEBIAN):
        _check_source(k, offline)
    elif k.kind is SpecKind.IMAGE:
        assert k.image is not None  # an image: spec names its image
        if not k.image.is_file():
            raise UsageError(
                f"kernel {k.name}: image {k.image} does not exist",
                hint="give image:PATH of a bzImage or Image",
            )
        if find_beside(k.image, ".config") is None:
            raise UsageError(
                f"kernel {k.name}: no .config beside {k.image}",
                hint="copy the kernel's .config next to the image: the "
                "lab checks it has what the workloads need",
            )
        if count and find_beside(k.image, "System.map") is None:
            raise UsageError(
                f"kernel {k.name}: --count needs System.map beside {k.image}",
                hint="copy it next to the image",
            )


def _check_source(k: KernelSpec, offline: bool = False) -> None:
    """A git: ref that is a commit, a debian: version the archive has; when
    neither and the spec holds a '+', one line says it is no SOURCE+DIR
    either (split_series() found no series directory there)."""
    try:
        if k.kind is SpecKind.GIT:
            assert k.repo is not None  # a git: spec names its repository
            source.resolve_ref(k.repo, k.ref)
        elif offline:
            if debian.resolve_known(k.debian_version) is None:
                log.info(
                    "# kernel %s: debian:%s is looked up in Debian's "
                    "archive when the run starts (a dry run fetches "
                    "nothing)",
                    k.name,
                    k.debian_version,
                )
        else:
            debian.resolve(k.debian_version)
    except UsageError as e:
        cuts = _cuts(k.text)
        if not cuts:
            raise
        raise UsageError(
            f"kernel {k.name}: {k.text!r} is neither a source ({e.message}) "
            f"nor SOURCE+DIR ({not_a_series_dir(k.text[cuts[-1] + 1 :])})",
            hint=e.hint,
        ) from None


def describe(specs: list[KernelSpec]) -> str:
    """``base=base, s1=base+patches/6.12:10, ...`` for a report header."""
    return ", ".join(f"{k.name}={k.text}" for k in specs)
