"""``image:PATH``: a kernel image built elsewhere, booted as it is, with
its ``.config`` (and ``System.map`` for --count) beside it or in a
directory above it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from foliolab.arch import Arch
from foliolab.errors import UsageError
from foliolab.kernel import build, kconfig, source
from foliolab.kernel.sources.base import (
    NamesAt,
    Source,
    SourceRecord,
    written,
)
from foliolab.paths import user_path

# How far above an image its .config and System.map are looked for: a
# build directory keeps bzImage three levels down (arch/x86/boot).
_IMAGE_PARENTS = 4


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


@dataclass(frozen=True)
class ImageSource(Source):
    """A prebuilt kernel: no tree, no build, no series on it."""

    kind = "image"
    form = "image:PATH"
    prefix = "image:"
    takes_series = False
    prebuilt = True

    text: str
    image: Path

    @classmethod
    def parse(cls, name: str, text: str) -> ImageSource:
        path = text[len(cls.prefix) :]
        if not path:
            raise UsageError(
                f"kernel {name}: {text!r} names no image",
                hint="give image:PATH",
            )
        return cls(text, user_path(path, f"kernel {name}: image"))

    def check(self, name: str, count: bool, offline: bool) -> None:
        if not self.image.is_file():
            raise UsageError(
                f"kernel {name}: image {self.image} does not exist",
                hint="give image:PATH of a bzImage or Image",
            )
        if find_beside(self.image, ".config") is None:
            raise UsageError(
                f"kernel {name}: no .config beside {self.image}",
                hint="copy the kernel's .config next to the image: the "
                "lab checks it has what the workloads need",
            )
        if count and find_beside(self.image, "System.map") is None:
            raise UsageError(
                f"kernel {name}: --count needs System.map beside {self.image}",
                hint="copy it next to the image",
            )

    def start(self, name: str) -> tuple[source.Tree, source.Onto]:
        raise TypeError(f"{self.text}: a prebuilt kernel has no tree")

    def slot(self) -> str:
        raise TypeError(f"{self.text}: a prebuilt kernel is not built")

    def names_at(self) -> NamesAt | None:
        system_map = find_beside(self.image, "System.map")
        return NamesAt(system_map=system_map) if system_map else None

    def record(self) -> SourceRecord:
        return SourceRecord(
            self.kind, self.text, written(image=str(self.image))
        )

    def prebuilt_image(self) -> Path | None:
        return self.image

    def prebuilt_symbols(self) -> Path | None:
        system_map = find_beside(self.image, "System.map")
        return system_map.parent if system_map else None

    def dry_run(
        self, name: str, text: str, arch: Arch, purpose: str
    ) -> tuple[Path, list[str]]:
        return self.image, [
            f"# kernel {name} = {text}: prebuilt, its "
            ".config checked against the fragment"
        ]

    def prebuilt_kernel(
        self, name: str, arch: Arch, purpose: str
    ) -> build.Kernel:
        """After checking that its .config has every option of the lab's
        fragment for ``purpose``."""
        config = find_beside(self.image, ".config")
        assert config is not None  # check() found it
        kconfig.check(
            kconfig.merge(
                purpose,
                arch.name,
                version=kconfig.version_of(config.read_text()),
            ),
            config,
        )
        digest = hashlib.sha256(self.image.read_bytes()).hexdigest()[:12]
        system_map = find_beside(self.image, "System.map")
        return build.Kernel(
            variant=name,
            purpose=purpose,
            arch=arch.name,
            build_dir=system_map.parent if system_map else config.parent,
            image=self.image.resolve(),
            commit=f"image:{digest}",
            config_sha=hashlib.sha256(config.read_bytes()).hexdigest()[:12],
            elapsed=0.0,
        )
