"""The guest's coverage record: its .gcda files as one checked record.

At the end of a coverage boot the guest (lib.sh, fl_gcov_ship) copies
every data file under /sys/kernel/debug/gcov, packs them in a gzip'd tar
and sends one record, ``coverage.gcda``: a first line ``sha256 HEX
BYTES`` and then the archive in base64. The records travel as every
other does (the results port, or framed and checked line by line on a
console); the digest and length check the archive as a whole, so a record
cut short by a dying guest, or with a line lost, is refused in one line
(CoverageRecordError) and never read as zero counts.

In the guest the data files sit under the build directory's absolute
path (the kernel names them by where they were compiled); the host puts
each beside its notes file (.gcno) from the build, matched by the
longest path ending they share, where gcov reads the pair.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import re
import tarfile
from pathlib import Path, PurePosixPath

from foliolab.errors import FoliolabError

RECORD = "coverage.gcda"
_HEAD = re.compile(r"^sha256 ([0-9a-f]{64})\s+(\d+)\s*$")


class CoverageRecordError(FoliolabError):
    """A boot's coverage record is missing or damaged."""


def decode(text: str | None) -> bytes:
    """The archive a coverage record holds, checked against its digest and
    length; CoverageRecordError says in one line why not."""
    if text is None:
        raise CoverageRecordError(
            "no coverage record: the guest sent none "
            "(the boot ended before the suite did?)"
        )
    lines = text.splitlines()
    head = lines[0].strip() if lines else ""
    if head.startswith("error:"):
        raise CoverageRecordError(
            "the guest sent no coverage data: " + head[len("error:") :].strip()
        )
    m = _HEAD.match(head)
    if not m:
        raise CoverageRecordError(
            "coverage record damaged: it does not "
            "start with 'sha256 HEX BYTES'"
        )
    want = int(m.group(2))
    body = "".join(x.strip() for x in lines[1:])
    chars = 4 * ((want + 2) // 3)  # base64's length of want bytes
    if len(body) < chars:
        raise CoverageRecordError(
            f"coverage record cut off: {len(body)} of "
            f"{chars} base64 characters ({want} bytes)"
        )
    try:
        data = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise CoverageRecordError(
            "coverage record damaged: its body is not base64"
        ) from None
    if len(data) != want:
        raise CoverageRecordError(
            f"coverage record damaged: {len(data)} bytes where it says {want}"
        )
    if hashlib.sha256(data).hexdigest() != m.group(1):
        raise CoverageRecordError(
            "coverage record damaged: its sha256 does not match"
        )
    return data


def unpack(data: bytes) -> dict[str, bytes]:
    """{the guest's path of a data file: its bytes} from the archive;
    anything but regular .gcda files under relative paths is ignored."""
    out: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for member in tar:
                name = PurePosixPath(member.name)
                if (
                    not member.isfile()
                    or name.suffix != ".gcda"
                    or name.is_absolute()
                    or ".." in name.parts
                ):
                    continue
                f = tar.extractfile(member)
                if f is not None:
                    out[
                        str(
                            PurePosixPath(*[p for p in name.parts if p != "."])
                        )
                    ] = f.read()
    except (tarfile.TarError, OSError, EOFError) as e:
        raise CoverageRecordError(
            f"coverage record damaged: not a gzip'd tar ({e})"
        ) from None
    return out


def place(
    files: dict[str, bytes], notes: dict[str, Path], dest: Path
) -> tuple[dict[str, Path], list[str]]:
    """Write each data file to ``dest``, named by its object's source
    ("mm/rmap.c" -> DEST/mm/rmap.gcda), with a link to that object's notes
    file beside it (``notes``: source -> .gcno). Returns ({source: placed
    .gcda}, the guest paths that match no notes file of the build)."""
    placed: dict[str, Path] = {}
    unmatched: list[str] = []
    for guest_path, blob in sorted(files.items()):
        source = _source_of(guest_path, notes)
        if source is None:
            unmatched.append(guest_path)
            continue
        gcda = dest / Path(source).with_suffix(".gcda")
        gcda.parent.mkdir(parents=True, exist_ok=True)
        gcda.write_bytes(blob)
        gcno = gcda.with_suffix(".gcno")
        gcno.unlink(missing_ok=True)
        gcno.symlink_to(notes[source].resolve())
        placed[source] = gcda
    return placed, unmatched


def _source_of(guest_path: str, notes: dict[str, Path]) -> str | None:
    """The source whose notes file shares the longest path ending with
    ``guest_path`` (".../build/x86_64-coverage-patched/mm/rmap.gcda" ->
    "mm/rmap.c")."""
    parts = PurePosixPath(guest_path).with_suffix(".c").parts
    for i in range(len(parts)):
        candidate = "/".join(parts[i:])
        if candidate in notes:
            return candidate
    return None
