"""Kernels as arguments: ``--kernel NAME=SPEC``, parsed, checked, built.

SPEC is one of

- ``base``: the pinned Debian 6.12 source;
- ``base+DIR``: the base with the series in DIR (a ``series`` file);
- ``base+DIR:N``: the base with the first N patches of that series;
- ``git:PATH@REF``: a commit of the user's own kernel clone;
- ``image:PATH``: a kernel image built elsewhere, with its ``.config`` (and
  ``System.map`` for ``--count``) beside it or in a directory above it;
- ``debian:VERSION``: Debian's ``linux-source-X.Y`` package, ``X.Y`` for the
  newest in the archive (sid, trixie-backports, ...) or an exact package
  version (see debian.py).

Every spec is checked before anything is built (a bad path, a series
prefix longer than the series, a ref that is not a commit), and the first
kernel is the baseline every ratio is taken against. ``--patches DIR|none``
is the two-kernel shorthand: ``vanilla=base`` and ``patched=base+DIR``
(``patched=base`` for an A/A run).
"""

from __future__ import annotations

import enum
import hashlib
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from foliolab import build, debian, kconfig, source
from foliolab.arch import Arch
from foliolab.errors import FoliolabError, UsageError
from foliolab.paths import cache_root

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")
SPEC_FORMS = ("base, base+DIR, base+DIR:N, git:PATH@REF, debian:VERSION or "
              "image:PATH")
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

    def is_base(self) -> bool:
        """Whether this kernel is the base's commit, known without building
        (a git: ref may be too; only its build finds out)."""
        return self.kind is SpecKind.BASE or (
            self.kind is SpecKind.SERIES and self.prefix == 0)

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
    if spec == "base":
        return KernelSpec(name, SpecKind.BASE, spec)
    if spec.startswith("base+"):
        rest = spec[len("base+"):]
        prefix = None
        m = re.match(r"^(.*):(\d+)$", rest)
        if m:
            rest, prefix = m.group(1), int(m.group(2))
        if not rest:
            raise UsageError(f"kernel {name}: {spec!r} names no series "
                             "directory", hint="give base+DIR or base+DIR:N")
        return KernelSpec(name, SpecKind.SERIES, spec,
                          series_dir=Path(rest), prefix=prefix)
    if spec.startswith("git:"):
        path, at, ref = spec[len("git:"):].rpartition("@")
        if not at or not path or not ref:
            raise UsageError(f"kernel {name}: {spec!r} is not git:PATH@REF",
                             hint="e.g. git:~/linux@mm-unstable")
        return KernelSpec(name, SpecKind.GIT, spec,
                          repo=Path(path).expanduser(), ref=ref)
    if spec.startswith("image:"):
        path = spec[len("image:"):]
        if not path:
            raise UsageError(f"kernel {name}: {spec!r} names no image",
                             hint="give image:PATH")
        return KernelSpec(name, SpecKind.IMAGE, spec,
                          image=Path(path).expanduser())
    if spec.startswith("debian:"):
        version = spec[len("debian:"):]
        debian.package_of(version)      # the form only; the archive later
        return KernelSpec(name, SpecKind.DEBIAN, spec, debian_version=version)
    raise UsageError(f"kernel {name}: unknown SPEC {spec!r}",
                     hint=f"SPEC is {SPEC_FORMS}")


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
    """Everything about the kernels that can be checked without building:
    at least two, distinct names, paths that exist, series that read,
    prefixes within their series, refs that are commits, images with their
    config (and System.map when counting)."""
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
    elif k.kind is SpecKind.GIT:
        source.resolve_ref(k.repo, k.ref)
    elif k.kind is SpecKind.DEBIAN:
        debian.resolve(k.debian_version)
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
    """The commit a source-built kernel is built from."""
    if k.kind is SpecKind.BASE:
        repo = source.prepare_base()
        return source.Tree(k.name, repo, source.base_commit(repo), "")
    if k.kind is SpecKind.SERIES:
        series = k.series()
        if not series.patches:
            repo = source.prepare_base()
            return source.Tree(k.name, repo, source.base_commit(repo), "")
        return source.prepare_patched(series, k.name)
    if k.kind is SpecKind.GIT:
        return source.prepare_git(k.name, k.repo, k.ref)
    if k.kind is SpecKind.DEBIAN:
        src = debian.prepare(debian.resolve(k.debian_version))
        return source.Tree(k.name, src.tree, src.commit, "", src.describe())
    raise ValueError(k.kind)


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
    return build_slot(k.is_base())


# What a kernel needs besides its image: its config (checked, hashed), its
# symbols (for --count) and its version string.
_KEPT = (".config", "System.map", "kernel.release")
_KEPT_FROM = {"kernel.release": "include/config/kernel.release"}


def store_dir(arch: Arch, purpose: str, tree: source.Tree) -> Path:
    """Where the built kernel of ``tree`` is kept, per fragment: a
    changed config fragment is another kernel."""
    frag = kconfig.merge(purpose, arch.name, version=tree.version()).text()
    key = hashlib.sha256(f"{tree.commit}\0{frag}".encode()).hexdigest()[:16]
    return cache_root() / "kernels" / f"{arch.name}-{purpose}-{key}"


def _known_commit(k: KernelSpec) -> str | None:
    """``k``'s commit if it can be had without fetching, applying or
    unpacking anything (for --dry-run), else None."""
    repo = source.base_repo()
    try:
        if k.kind is SpecKind.GIT:
            return source.resolve_ref(k.repo, k.ref)
        if not (repo / ".git").exists():
            return None
        if k.kind is SpecKind.BASE or (k.kind is SpecKind.SERIES
                                        and not k.series().patches):
            return source.base_commit(repo)
        if k.kind is SpecKind.SERIES:
            cp = source.git(repo, "rev-parse", "--verify", "-q",
                            f"refs/foliolab/series/{k.series().digest}"
                            "^{commit}", check=False)
            return cp.stdout.strip() if cp.returncode == 0 else None
    except FoliolabError:
        return None
    return None


def kept_kernel(k: KernelSpec, arch: Arch, purpose: str
                ) -> tuple[Path | None, str | None]:
    """(its store directory if ``k`` is built and kept there, its commit
    if known): what --dry-run says of a kernel, with nothing changed."""
    if k.kind is SpecKind.IMAGE:
        return k.image, None
    commit = _known_commit(k)
    if commit is None:
        return None, None
    repo = k.repo if k.kind is SpecKind.GIT else source.base_repo()
    kept = store_dir(arch, purpose, source.Tree(k.name, Path(repo), commit,
                                                ""))
    image = kept / Path(arch.kernel_image).name
    if image.exists() and all((kept / f).exists() for f in _KEPT):
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
    if image.exists() and all((kept / f).exists() for f in _KEPT):
        return build.Kernel(tree.variant, purpose, arch.name, kept, image,
                            tree.commit, build.config_digest(kept / ".config"),
                            0.0, tree.origin,
                            (kept / "kernel.release").read_text().strip())
    repo = source.prepare_base()
    slot = build_slot(tree.commit == source.base_commit(repo), tree.version())
    k = build.build_kernel(tree, arch, purpose, slot)
    tmp = kept.with_name(kept.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    shutil.copy2(k.image, tmp / image.name)
    for f in _KEPT:
        shutil.copy2(k.build_dir / _KEPT_FROM.get(f, f), tmp / f)
    shutil.rmtree(kept, ignore_errors=True)
    tmp.rename(kept)
    return build.Kernel(tree.variant, purpose, arch.name, kept, image,
                        tree.commit, k.config_sha, k.elapsed, tree.origin,
                        k.release)


def prepare(specs: list[KernelSpec], arch: Arch, purpose: str
            ) -> dict[str, build.Kernel]:
    """Build (or find) every kernel, in order; kernels of one commit share
    one image, so an A/A run boots one image under two names."""
    built: dict[str, build.Kernel] = {}
    by_commit: dict[str, build.Kernel] = {}
    for k in specs:
        if k.kind is SpecKind.IMAGE:
            built[k.name] = image_kernel(k, arch, purpose)
            continue
        tree = tree_of(k)
        if tree.commit not in by_commit:
            by_commit[tree.commit] = build_and_keep(tree, arch, purpose)
        built[k.name] = by_commit[tree.commit]
    return built


def describe(specs: list[KernelSpec]) -> str:
    """``base=base, s1=base+patches/6.12:10, ...`` for a report header."""
    return ", ".join(f"{k.name}={k.text}" for k in specs)
