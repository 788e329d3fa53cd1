"""Kernels as arguments: ``--kernel NAME=SPEC``, parsed, checked, built.

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
"""

from __future__ import annotations

import enum
import hashlib
import re
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from foliolab.kernel import build, debian, kconfig, source
from foliolab.arch import Arch
from foliolab.errors import FoliolabError, UsageError
from foliolab.paths import cache_root

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")
SPEC_FORMS = ("base, git:PATH@REF, debian:VERSION, any of these +DIR or "
              "+DIR:N (a series on it), or image:PATH")
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
    text: str                           # SPEC as given, for the report
    series_dir: Path | None = None      # SERIES
    prefix: int | None = None           # SERIES: the first N patches
    repo: Path | None = None            # GIT
    ref: str = ""                       # GIT
    image: Path | None = None           # IMAGE
    debian_version: str = ""            # DEBIAN: X.Y or a package version
    # SERIES: the GIT or DEBIAN spec the series applies to; None: the base
    onto: KernelSpec | None = None

    def is_base(self) -> bool:
        """Whether this kernel is the base's commit, known without building
        (a git: ref may be too; only its build finds out)."""
        return self.kind is SpecKind.BASE or (
            self.kind is SpecKind.SERIES and self.prefix == 0
            and self.onto is None)

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
            raise UsageError(f"kernel {self.name}: {self.text} asks for "
                             f"{self.prefix} patches, the series has "
                             f"{len(s.patches)}",
                             hint=f"give N from 0 to {len(s.patches)}")
        return source.Series(s.directory, s.patches[:self.prefix])


def parse_kernel(arg: str) -> KernelSpec:
    """``NAME=SPEC`` -> KernelSpec; a UsageError says what is wrong."""
    name, eq, spec = arg.partition("=")
    if not eq or not spec:
        raise UsageError(f"--kernel {arg!r} is not NAME=SPEC",
                         hint=f"e.g. --kernel base=base; SPEC is {SPEC_FORMS}")
    if not _NAME.match(name):
        raise UsageError(f"--kernel name {name!r} is not a short name",
                         hint="letters, digits, '.', '_' and '-', up to 32")
    return parse_spec(name, spec)


def parse_spec(name: str, spec: str) -> KernelSpec:
    if spec.startswith("base+"):
        # "base" holds no '+': the rest is DIR[:N], whatever DIR holds
        return _series_spec(name, spec, None, spec[len("base+"):])
    if spec.startswith(("git:", "debian:")):
        source_text, rest = split_series(name, spec)
        onto = _source_spec(name, source_text)
        return onto if rest is None else _series_spec(name, spec, onto, rest)
    if spec.startswith("image:"):
        path = spec[len("image:"):]
        if not path:
            raise UsageError(f"kernel {name}: {spec!r} names no image",
                             hint="give image:PATH")
        return KernelSpec(name, SpecKind.IMAGE, spec,
                          image=Path(path).expanduser())
    return _source_spec(name, spec)


def _source_spec(name: str, spec: str) -> KernelSpec:
    """``base``, ``git:PATH@REF`` or ``debian:VERSION``, without a series."""
    if spec == "base":
        return KernelSpec(name, SpecKind.BASE, spec)
    if spec.startswith("git:"):
        path, at, ref = spec[len("git:"):].rpartition("@")
        if not at or not path or not ref:
            raise UsageError(f"kernel {name}: {spec!r} is not git:PATH@REF",
                             hint="e.g. git:~/linux@mm-unstable")
        return KernelSpec(name, SpecKind.GIT, spec,
                          repo=Path(path).expanduser(), ref=ref)
    if spec.startswith("debian:"):
        version = spec[len("debian:"):]
        debian.package_of(version)      # the form only; the archive later
        return KernelSpec(name, SpecKind.DEBIAN, spec, debian_version=version)
    raise UsageError(f"kernel {name}: unknown SPEC {spec!r}",
                     hint=f"SPEC is {SPEC_FORMS}")


def _series_spec(name: str, spec: str, onto: KernelSpec | None,
                 rest: str) -> KernelSpec:
    """``spec`` = ONTO+REST, REST being DIR or DIR:N."""
    directory, prefix = _dir_and_prefix(rest)
    if not directory:
        raise UsageError(f"kernel {name}: {spec!r} names no series "
                         "directory", hint="give SOURCE+DIR or SOURCE+DIR:N")
    return KernelSpec(name, SpecKind.SERIES, spec, series_dir=Path(directory),
                      prefix=prefix, onto=onto)


def _dir_and_prefix(rest: str) -> tuple[str, int | None]:
    """``DIR:N`` -> (DIR, N); ``DIR`` -> (DIR, None)."""
    m = re.match(r"^(.*):(\d+)$", rest)
    return (m.group(1), int(m.group(2))) if m else (rest, None)


def with_series(onto: KernelSpec, name: str, directory: Path,
                prefix: int | None = None) -> KernelSpec:
    """The kernel ``onto`` + the series in ``directory`` (its first
    ``prefix`` patches), as ``ONTO+DIR[:N]`` would parse (``base+DIR``
    exactly as it always was)."""
    text = f"{onto.text}+{directory}" + (f":{prefix}" if prefix is not None
                                         else "")
    under = None if onto.kind is SpecKind.BASE else replace(onto, name=name)
    return KernelSpec(name, SpecKind.SERIES, text, series_dir=Path(directory),
                      prefix=prefix, onto=under)


def parse_base(text: str, option: str = "--base") -> KernelSpec:
    """A source spec a series is put on (``check --base``, ``attribute
    --base``): base, git:PATH@REF or debian:VERSION."""
    k = parse_spec("base", text)
    if k.kind not in (SpecKind.BASE, SpecKind.GIT, SpecKind.DEBIAN):
        raise UsageError(f"{option} {text}: a series is put on "
                         f"{SOURCE_FORMS}",
                         hint="give the series itself as its own option")
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
    found = [i for i in cuts if _is_series_dir(spec[i + 1:])]
    if len(found) > 1:
        readings = " or ".join(f"{spec[:i]} + {spec[i + 1:]}" for i in found)
        raise UsageError(f"kernel {name}: {spec!r} is ambiguous: {readings}",
                         hint="rename one of the series directories")
    if found:
        return spec[:found[0]], spec[found[0] + 1:]
    if spec.startswith("debian:") and cuts and not _is_source_form(spec):
        rest = spec[cuts[-1] + 1:]
        raise UsageError(f"kernel {name}: {spec!r}: "
                         f"{not_a_series_dir(rest)}",
                         hint="give SOURCE+DIR with DIR holding a `series` "
                              "file")
    return spec, None


def _cuts(spec: str) -> list[int]:
    """Where ``spec`` could be SOURCE+REST: each '+' after a source spec."""
    return [i for i, c in enumerate(spec)
            if c == "+" and _is_source_form(spec[:i])]


def _is_source_form(text: str) -> bool:
    """Whether ``text`` reads as git:PATH@REF or debian:VERSION (nothing
    looked up)."""
    try:
        return _source_spec("x", text).kind in (SpecKind.GIT,
                                                SpecKind.DEBIAN)
    except UsageError:
        return False


def _is_series_dir(rest: str) -> bool:
    d = Path(_dir_and_prefix(rest)[0] or "/nonexistent")
    return d.is_dir() and ((d / "series").is_file()
                           or any(d.glob("*.patch")))


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
    return [vanilla, KernelSpec("patched", SpecKind.SERIES, f"base+{patches}",
                                series_dir=Path(patches))]


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


def check_specs(specs: list[KernelSpec], count: bool = False) -> None:
    """Everything about the kernels that can be checked without building
    or applying: at least two, distinct names, paths that exist, series
    that read, prefixes within their series, refs that are commits,
    versions the archive has, images with their config (and System.map
    when counting). Whether each series applies: series_trees()."""
    if len(specs) < 2:
        raise UsageError(f"{len(specs)} kernel given; a comparison needs two "
                         "or more", hint="repeat --kernel NAME=SPEC")
    seen: set[str] = set()
    for k in specs:
        if k.name in seen:
            raise UsageError(f"kernel name {k.name!r} given twice",
                             hint="give each --kernel its own NAME")
        seen.add(k.name)
        check_spec(k, count)


def check_spec(k: KernelSpec, count: bool = False) -> None:
    """One kernel's spec, checked without building."""
    if k.kind is SpecKind.SERIES:
        k.series()
        if k.onto is not None:
            check_spec(k.onto, count)
    elif k.kind in (SpecKind.GIT, SpecKind.DEBIAN):
        _check_source(k)
    elif k.kind is SpecKind.IMAGE:
        if not k.image.is_file():
            raise UsageError(f"kernel {k.name}: image {k.image} does not "
                             "exist", hint="give image:PATH of a bzImage "
                                           "or Image")
        if find_beside(k.image, ".config") is None:
            raise UsageError(
                f"kernel {k.name}: no .config beside {k.image}",
                hint="copy the kernel's .config next to the image: the "
                     "lab checks it has what the workloads need")
        if count and find_beside(k.image, "System.map") is None:
            raise UsageError(
                f"kernel {k.name}: --count needs System.map beside "
                f"{k.image}", hint="copy it next to the image")


def _check_source(k: KernelSpec) -> None:
    """A git: ref that is a commit, a debian: version the archive has; when
    neither and the spec holds a '+', one line says it is no SOURCE+DIR
    either (split_series() found no series directory there)."""
    try:
        if k.kind is SpecKind.GIT:
            source.resolve_ref(k.repo, k.ref)
        else:
            debian.resolve(k.debian_version)
    except UsageError as e:
        cuts = _cuts(k.text)
        if not cuts:
            raise
        raise UsageError(
            f"kernel {k.name}: {k.text!r} is neither a source ({e.message}) "
            f"nor SOURCE+DIR ({not_a_series_dir(k.text[cuts[-1] + 1:])})",
            hint=e.hint) from None


def image_kernel(k: KernelSpec, arch: Arch, purpose: str) -> build.Kernel:
    """A prebuilt image as a Kernel, after checking that its .config has
    every option of the lab's fragment for ``purpose``."""
    config = find_beside(k.image, ".config")
    kconfig.check(kconfig.merge(purpose, arch.name, version=kconfig.version_of(
        config.read_text())), config)
    digest = hashlib.sha256(k.image.read_bytes()).hexdigest()[:12]
    system_map = find_beside(k.image, "System.map")
    return build.Kernel(k.name, purpose, arch.name,
                        system_map.parent if system_map else config.parent,
                        k.image.resolve(), f"image:{digest}",
                        hashlib.sha256(config.read_bytes()).hexdigest()[:12],
                        0.0)


def tree_of(k: KernelSpec) -> source.Tree:
    """The commit a source-built kernel is built from (a series applied,
    or found applied)."""
    if k.kind is SpecKind.SERIES:
        return _series_tree(k)
    return _source_tree(k)[0]


def _source_tree(k: KernelSpec) -> tuple[source.Tree, source.Onto]:
    """The tree of a base, git: or debian: spec, and what it is."""
    if k.kind is SpecKind.BASE:
        repo = source.prepare_base()
        onto = source.base_onto(repo)
        return source.Tree(k.name, repo, onto.commit, ""), onto
    if k.kind is SpecKind.GIT:
        tree = source.prepare_git(k.name, k.repo, k.ref)
        return tree, source.Onto(k.text, f"{k.repo.resolve()} "
                                         f"{tree.commit[:12]}", tree.commit)
    if k.kind is SpecKind.DEBIAN:
        src = debian.prepare(debian.resolve(k.debian_version))
        pkg = src.package
        return (source.Tree(k.name, src.tree, src.commit, "", src.describe()),
                source.Onto(k.text, f"{pkg.name} {pkg.version}", src.commit))
    raise ValueError(k.kind)


def _series_tree(k: KernelSpec) -> source.Tree:
    series = k.series()
    if k.onto is None and series.patches:
        return source.prepare_patched(series, k.name)
    under, onto = _source_tree(k.source_spec())
    return source.prepare_series(under, onto, series, k.name)


def series_trees(specs: list[KernelSpec]) -> dict[str, source.Tree]:
    """Every series of ``specs`` applied to its tree (or found applied),
    before any kernel is built: a patch that does not apply stops the
    whole request here, with one line naming the patch, the file and the
    tree (PatchApplyError)."""
    return {k.name: tree_of(k) for k in specs if k.kind is SpecKind.SERIES}


def source_trees(specs: list[KernelSpec]) -> dict[str, source.Tree]:
    """The tree of every source-built kernel of ``specs``."""
    return {k.name: tree_of(k) for k in specs if k.kind is not SpecKind.IMAGE}


def build_slot(is_base: bool, version: tuple[int, int] = kconfig.BASE_VERSION
               ) -> str:
    """The build directory a kernel compiles in: the base has its own
    (`vanilla`), so going back to it after any other kernel rebuilds
    nothing; every other commit of the base's version shares `patched`,
    where a series' prefixes, a user's commits and the series itself are
    incremental builds of each other; a kernel of another version (7.3)
    has a directory per version, `linux-7.3`, and never takes over
    `patched`."""
    return build.slot_for("vanilla" if is_base else "patched", version)


def slot_of(k: KernelSpec) -> str:
    """The build directory build_and_keep() will use for ``k``, known
    before anything is fetched or built (for --dry-run)."""
    if k.kind is SpecKind.DEBIAN:
        name, _ = debian.package_of(k.debian_version)
        major, minor = name[len("linux-source-"):].split(".")
        return build_slot(False, (int(major), int(minor)))
    if k.kind is SpecKind.GIT:
        return build_slot(False, source.makefile_version(
            k.repo, source.resolve_ref(k.repo, k.ref)))
    if k.kind is SpecKind.SERIES and k.onto is not None:
        return slot_of(k.onto)
    return build_slot(k.is_base())


# What a kernel needs besides its image: its config (checked, hashed), its
# symbols (for --count) and its version string.


def store_dir(arch: Arch, purpose: str, tree: source.Tree) -> Path:
    """Where the built kernel of ``tree`` is kept, per fragment: a
    changed config fragment is another kernel."""
    frag = kconfig.merge(purpose, arch.name, version=tree.version()).text()
    key = hashlib.sha256(f"{tree.commit}\0{frag}".encode()).hexdigest()[:16]
    return cache_root() / "kernels" / f"{arch.name}-{purpose}-{key}"


def _known_commit(k: KernelSpec) -> tuple[Path, str] | None:
    """(a repository holding it, ``k``'s commit) if it can be had without
    fetching, applying or unpacking anything (for --dry-run), else None."""
    repo = source.base_repo()
    try:
        if k.kind is SpecKind.GIT:
            return k.repo, source.resolve_ref(k.repo, k.ref)
        if k.kind is SpecKind.SERIES and k.onto is not None:
            return _known_series_commit(k)
        if not (repo / ".git").exists():
            return None
        if k.kind is SpecKind.BASE or (k.kind is SpecKind.SERIES
                                        and not k.series().patches):
            return repo, source.base_commit(repo)
        if k.kind is SpecKind.SERIES:
            return _kept_ref(repo, source.series_ref(k.series().digest))
    except FoliolabError:
        return None
    return None


def _known_series_commit(k: KernelSpec) -> tuple[Path, str] | None:
    """A series on a git: tree: its commit if applied before (in the
    cache's repository, where git: commits are fetched); on a debian:
    tree it is not known without asking the archive which version."""
    if k.onto.kind is not SpecKind.GIT:
        return None
    under = source.resolve_ref(k.onto.repo, k.onto.ref)
    series = k.series()
    if not series.patches:
        return k.onto.repo, under
    repo = source.base_repo()
    if not (repo / ".git").exists():
        return None
    return _kept_ref(repo, source.series_ref(series.digest, under))


def _kept_ref(repo: Path, ref: str) -> tuple[Path, str] | None:
    cp = source.git(repo, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}",
                    check=False)
    return (repo, cp.stdout.strip()) if cp.returncode == 0 else None


def kept_kernel(k: KernelSpec, arch: Arch, purpose: str
                ) -> tuple[Path | None, str | None]:
    """(its store directory if ``k`` is built and kept there, its commit
    if known): what --dry-run says of a kernel, with nothing changed."""
    if k.kind is SpecKind.IMAGE:
        return k.image, None
    known = _known_commit(k)
    if known is None:
        return None, None
    repo, commit = known
    kept = store_dir(arch, purpose, source.Tree(k.name, Path(repo), commit,
                                                ""))
    image = kept / Path(arch.kernel_image).name
    if image.exists() and all((kept / f).exists() for f in build.KEPT_FILES):
        return kept, commit
    return None, commit


def build_and_keep(tree: source.Tree, arch: Arch, purpose: str
                   ) -> build.Kernel:
    """The kernel of ``tree``: found in the store, or built and stored.

    It builds in the directory build_slot() names (all from one
    checkout); the image, .config and System.map are then copied to a
    store directory per commit and fragment, which the run boots from and
    the next run finds again without building.
    """
    kept = store_dir(arch, purpose, tree)
    image = kept / Path(arch.kernel_image).name
    if image.exists() and all((kept / f).exists() for f in build.KEPT_FILES):
        return build.Kernel(tree.variant, purpose, arch.name, kept, image,
                            tree.commit, build.config_digest(kept / ".config"),
                            0.0, tree.origin,
                            (kept / "kernel.release").read_text().strip())
    repo = source.prepare_base()
    slot = build_slot(tree.commit == source.base_commit(repo), tree.version())
    tmp = kept.with_name(kept.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    # copied before the build lock is let go: another kernel of the slot
    # may be built into the same directory right after
    k = build.build_kernel(tree, arch, purpose, slot, keep=tmp,
                           keep_files=build.KEPT_FILES)
    shutil.rmtree(kept, ignore_errors=True)
    tmp.rename(kept)
    return build.Kernel(tree.variant, purpose, arch.name, kept, image,
                        tree.commit, k.config_sha, k.elapsed, tree.origin,
                        k.release)


def prepare(specs: list[KernelSpec], arch: Arch, purpose: str,
            trees: dict[str, source.Tree] | None = None
            ) -> dict[str, build.Kernel]:
    """Build (or find) every kernel, in order, from ``trees`` (by default
    source_trees()); kernels of one commit share one image, so an A/A run
    boots one image under two names."""
    trees = source_trees(specs) if trees is None else trees
    built: dict[str, build.Kernel] = {}
    by_commit: dict[str, build.Kernel] = {}
    for k in specs:
        if k.kind is SpecKind.IMAGE:
            built[k.name] = image_kernel(k, arch, purpose)
            continue
        tree = trees[k.name]
        if tree.commit not in by_commit:
            by_commit[tree.commit] = build_and_keep(tree, arch, purpose)
        built[k.name] = by_commit[tree.commit]
    return built


def describe(specs: list[KernelSpec]) -> str:
    """``base=base, s1=base+patches/6.12:10, ...`` for a report header."""
    return ", ".join(f"{k.name}={k.text}" for k in specs)


def variant_tree(variant: str, patches: Path | None, kernel: str = ""
                 ) -> source.Tree:
    """The source tree of ``variant`` (patched: the base with ``patches``),
    or of ``kernel`` (``NAME=SPEC``, any source spec) when given; a bad
    spec is refused before anything is built."""
    if kernel:
        k = parse_kernel(kernel)
        if k.kind is SpecKind.IMAGE:
            raise UsageError(f"--kernel {kernel}: this command builds the "
                             "kernel it boots", hint="give a source spec: "
                             f"{SOURCE_FORMS}, each with "
                             "+DIR[:N] or without")
        check_spec(k)
        return tree_of(k)
    if variant == "vanilla" or patches is None:
        return source.prepare_vanilla()
    return source.prepare_patched(source.read_series(patches))

