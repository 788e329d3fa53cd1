"""A kernel as every command records it: the spec it was given, the
build that made it, the series applied (KernelRecord and its parts).

compare keeps its kernels in the run's manifest (environment.json's
``kernel_records``); test, check --robot, bisect and coverage keep theirs
in the run's outcomes (testrecord.py): the same record, made by the same
functions from the same stage objects (a KernelSpec, the Tree it gave,
the build.Kernel built), so a reader of one command's run reads any.
The JSON keeps the names environment.json has always had.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from foliolab import records
from foliolab.kernel import build, source
from foliolab.kernel import specs as specs_mod
from foliolab.kernel.sources.base import SourceRecord

T = TypeVar("T")


def plain(value: Any) -> Any:
    """A dataclass's fields as JSON-ready values, whatever they are (paths
    and enums as their text): a record of a kernel follows the fields its
    classes have, whatever fields they gain."""
    if dataclasses.is_dataclass(value):
        return {
            f.name: plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
        }
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


@dataclass
class SeriesRecord:
    """A ``SOURCE+DIR[:N]`` kernel's series and the tree it was applied to
    (the spec as given is its KernelRecord's ``spec``)."""

    directory: str  # DIR as given
    patches: int  # how many were applied (N, else all)
    sha: str  # the series' digest (source.Series)
    onto: str  # SOURCE as given: base, debian:7.3, ...
    tree: str  # a package and version, or a clone
    commit: str  # the commit it was applied to
    # each applied patch's sha256, in order (KCIDB's patchset_hash is
    # made of them); empty in a record from before they were kept
    patch_sha256: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> SeriesRecord | None:
        if not d:
            return None
        return cls(
            **{
                f.name: d[f.name]
                for f in dataclasses.fields(cls)
                if f.name != "patch_sha256"
            },
            patch_sha256=list(d.get("patch_sha256", [])),
        )


def known_fields(
    cls: type[Any], d: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``d`` split into the fields ``cls`` has and the rest."""
    names = {f.name for f in dataclasses.fields(cls)}
    return (
        {k: v for k, v in d.items() if k in names},
        {k: v for k, v in d.items() if k not in names},
    )


def _open_record(cls: type[T], d: dict[str, Any], **typed: Any) -> T:
    """A record whose class follows another's fields (BuildRecord) from
    its JSON: the fields it has (``typed``: those read into records of
    their own), and the keys of a later version in its ``more``."""
    known, more = known_fields(cls, d)
    known.pop("more", None)
    return cls(**{**known, **typed, "more": more})


def _open_json(record: object) -> dict[str, Any]:
    """Such a record's JSON: its fields, then the keys in its ``more``."""
    d: dict[str, Any] = plain(record)
    more = d.pop("more")
    return {**d, **more}


@dataclass
class SpecRecord:
    """A kernel's spec as parsed (kernel.sources' SourceRecord with the
    kernel's name): its kind, the text given, the fields its kind has (as
    written, paths as text: each source class writes its own), the
    source a series goes on, and a series' digest (the report's
    reproduce line names it)."""

    name: str = ""
    kind: str = ""
    text: str = ""
    fields: dict[str, Any] = field(default_factory=dict)
    onto: SpecRecord | None = None
    series_sha: str = ""  # a series: its patches' digest

    # what environment.json holds besides the fields, in this order
    _OWN: ClassVar[tuple[str, ...]] = (
        "name",
        "kind",
        "text",
        "onto",
        "series_sha",
    )

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> SpecRecord | None:
        if not d:
            return None
        return cls(
            d.get("name", ""),
            d.get("kind", ""),
            d.get("text", ""),
            {k: v for k, v in d.items() if k not in cls._OWN},
            cls.from_json(d.get("onto")),
            d.get("series_sha", ""),
        )

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "text": self.text,
        }
        d.update(self.fields)
        d["onto"] = self.onto.to_json() if self.onto else None
        if self.series_sha:
            d["series_sha"] = self.series_sha
        return d


@dataclass
class BuildRecord:
    """A kernel's build as the run recorded it: kernel.build.Kernel's
    fields, paths as text; a field a later Kernel gains is kept in
    ``more`` and written beside the others."""

    variant: str = ""
    purpose: str = ""
    arch: str = ""
    build_dir: str = ""
    image: str = ""
    commit: str = ""
    config_sha: str = ""
    elapsed: float = 0.0
    origin: str = ""  # e.g. a Debian package's version
    release: str = ""  # make kernelrelease
    more: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> BuildRecord | None:
        return _open_record(cls, d) if d else None

    def to_json(self) -> dict[str, Any]:
        return _open_json(self)


@dataclass
class KernelRecord:
    """One kernel of the run, by the name the user gave it."""

    name: str
    spec: str  # SPEC as given
    given: SpecRecord | None = None  # its KernelSpec
    built: BuildRecord | None = None  # its build, once built
    series: SeriesRecord | None = None  # SOURCE+DIR: what applied

    @property
    def commit(self) -> str:
        return self.built.commit if self.built else ""

    @property
    def config_sha(self) -> str:
        return self.built.config_sha if self.built else ""

    @property
    def series_sha(self) -> str:
        return self.given.series_sha if self.given else ""

    @property
    def build_hash(self) -> tuple[str, str]:
        """What makes two builds the same kernel."""
        return self.commit, self.config_sha

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "spec": self.spec,
            "given": self.given.to_json() if self.given else {},
            "built": self.built.to_json() if self.built else {},
            "series": plain(self.series),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> KernelRecord:
        """A record as to_json() wrote it."""
        return cls(
            d["name"],
            d["spec"],
            SpecRecord.from_json(d.get("given")),
            BuildRecord.from_json(d.get("built")),
            SeriesRecord.from_json(d.get("series")),
        )


def check_json(path: Path, d: dict[str, Any], hint: str, where: str) -> None:
    """A kernel's record as a file holds it (``where`` in it), each field
    of its type: DamagedRunError naming the file and the field (a build's
    elapsed time that is a string would otherwise reach the report)."""
    f = records.Fields(path, d, hint, where)
    f.string("name", "")
    f.string("spec", "")
    for key, cls in (("built", BuildRecord), ("series", SeriesRecord)):
        if f.has(key):
            records.Fields(path, f.object(key), hint, f"{where}.{key}").like(
                cls
            )
    _check_given(path, f.object("given"), hint, f"{where}.given")


def _check_given(
    path: Path, given: dict[str, Any], hint: str, where: str
) -> None:
    """A spec's record (SpecRecord's JSON) and the one it goes on, each
    field of its type: the spec's own fields (SpecValue: text, a number
    or null), and the source under a series, checked as one (a kind that
    was a number reached the KCIDB document as one)."""
    g = records.Fields(path, given, hint, where)
    for key in ("name", "kind", "text", "series_sha"):
        # text when there (to_json writes no null: a null series_sha was
        # read as none, and the series' digest left out of what was made)
        if key in given:
            g.string(key)
    for key, value in given.items():
        if key in SpecRecord._OWN:
            continue
        if not (
            value is None
            or isinstance(value, str)
            or (isinstance(value, int) and not isinstance(value, bool))
        ):
            g.wrong(key, "text, a whole number or null", value)
    onto = g.object("onto")
    if onto:
        _check_given(path, onto, hint, f"{where}.onto")


def given_record(k: specs_mod.KernelSpec) -> SpecRecord:
    """A kernel's spec as the records keep it; a series with the sha of
    its patches (the report's reproduce line names it)."""
    given = _spec_record(k.name, k.record())
    if k.applied is not None:
        given.series_sha = k.series().digest
    return given


def _spec_record(name: str, r: SourceRecord) -> SpecRecord:
    return SpecRecord(
        name,
        r.kind,
        r.text,
        dict(r.fields),
        _spec_record(name, r.onto) if r.onto else None,
    )


def series_record(k: specs_mod.KernelSpec, tree: source.Tree) -> SeriesRecord:
    """A series kernel's series and the tree it was applied to."""
    series = k.series()
    assert k.applied is not None  # only a series kernel has one
    assert tree.onto is not None  # a series' tree has the tree it is on
    return SeriesRecord(
        k.applied.input.given,
        len(series.patches),
        series.digest,
        tree.onto.spec,
        tree.onto.tree,
        tree.onto.commit,
        [hashlib.sha256(p.read_bytes()).hexdigest() for p in series.patches],
    )


def build_record(kernel: build.Kernel) -> BuildRecord:
    """A build as the records keep it (its fields, paths as text)."""
    built = BuildRecord.from_json(plain(kernel))
    assert built is not None  # a Kernel has fields
    return built


def kernel_record(
    k: specs_mod.KernelSpec,
    tree: source.Tree | None = None,
    built: build.Kernel | None = None,
) -> KernelRecord:
    """Everything known of one kernel: its spec, the series on the tree
    it was applied to (``tree``, once made) and its build (once built)."""
    return KernelRecord(
        k.name,
        k.text,
        given_record(k),
        build_record(built) if built else None,
        series_record(k, tree) if tree and k.applied is not None else None,
    )
