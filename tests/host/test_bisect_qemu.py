"""`foliolab bisect` for real: a scratch repository made of the pinned
6.12 base and the patches of patches/6.12 as commits, bisected for
pageout's try_to_unmap_insns_per_folio falling below half of the base's;
the answer must be S0's last patch (0025 since round 6), the one that
unmaps a swap-backed anonymous large folio in one batch.

Marked ``bisect`` (besides ``qemu``): it builds seven kernels and boots
each once with the counting plugin, 43 minutes with cold builds on a
shared two-core machine, so `make test` leaves it out (pyproject.toml's
addopts); run it with ``pytest -m bisect``. Builds are kept in the kernel
store, so a second run only boots (100 s).

The same bisect over the series' last three commits runs each counting
boot as a job of LAVA's own dispatcher here (--executor lava-local):
218 s of bisect with the three kernels in the store, 3 jobs of 64-78 s.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from foliolab import cli
from foliolab.bisect import record as bisectrecord
from foliolab.executors.lava import job as lavajob
from foliolab.kernel import source, sources
from foliolab.paths import DEFAULT_PATCHES

pytestmark = [pytest.mark.qemu, pytest.mark.bisect]

METRIC = "try_to_unmap_insns_per_folio"


def _git(
    repo: Path, *args: str, env: dict | None = None, stdin: bytes | None = None
) -> str:
    full = {**os.environ, **source.IDENTITY, **(env or {})}
    return (
        subprocess.run(
            ["git", "-C", str(repo), *args],
            check=True,
            env=full,
            input=stdin,
            capture_output=True,
        )
        .stdout.decode()
        .strip()
    )


def series_repo(dest: Path, series: source.Series) -> Path:
    """``dest``: a clone of the cache's base (sharing its objects, no
    checkout) with each patch of ``series`` a commit on branch `series`,
    made from the patch's own author, date and message with a fixed
    committer date, so the commits, and the kernels kept for them, are
    the same in every run."""
    base = source.prepare_base()
    # The base's objects borrowed, not copied (what clone --shared does,
    # but also when the cache's repository is shallow, where clone would
    # copy every object).
    subprocess.run(["git", "init", "-q", str(dest)], check=True)
    (dest / ".git" / "objects" / "info" / "alternates").write_text(
        f"{base / '.git' / 'objects'}\n"
    )
    parent = _git(base, "rev-parse", f"{source.BASE_TAG}^{{commit}}")
    _git(dest, "update-ref", f"refs/tags/{source.BASE_TAG}", parent)
    index = dest / ".git" / "series-index"
    env = {"GIT_INDEX_FILE": str(index)}
    _git(dest, "read-tree", parent, env=env)
    for patch in series.patches:
        _git(dest, "apply", "--cached", str(patch), env=env)
        tree = _git(dest, "write-tree", env=env)
        info = _git(
            dest,
            "mailinfo",
            str(index) + ".msg",
            "/dev/null",
            stdin=patch.read_bytes(),
        )
        head = dict(
            line.split(": ", 1) for line in info.splitlines() if ": " in line
        )
        body = Path(str(index) + ".msg").read_text()
        message = head["Subject"] + "\n\n" + body
        parent = _git(
            dest,
            "commit-tree",
            tree,
            "-p",
            parent,
            env={
                **env,
                "GIT_AUTHOR_NAME": head["Author"],
                "GIT_AUTHOR_EMAIL": head["Email"],
                "GIT_AUTHOR_DATE": head["Date"],
                "GIT_COMMITTER_DATE": source.FIXED_DATE,
            },
            stdin=message.encode(),
        )
    _git(dest, "branch", "-f", "series", parent)
    return dest


def _bisect(repo: Path, out: Path, good: str, *more: str) -> None:
    argv = [
        *("bisect", "--repo", str(repo), "--good", good, "--bad", "series"),
        *("--workload", "pageout", "--metric", METRIC, "--below", "0.5x"),
        *("--param", "size_mb=32", "--out", str(out), *more),
    ]
    assert cli.main(argv) == 0


def _is_the_batched_unmap(
    repo: Path, series: source.Series, record: bisectrecord.Record
) -> None:
    """The bisect's one first bad commit is S0's last patch (the change
    itself), known by the patch's own subject line."""
    (first,) = record.first_bad
    n = len(series.patches)
    want = series.patches[-1]
    assert "-mm-rmap-unmap-swap-backed-anonymous" in want.name
    subject = _git(repo, "log", "-1", "--format=%s", first)
    assert f"Subject: [PATCH {n}/{n}] {subject}" in " ".join(
        want.read_text().split("\n\n", 1)[0].split()
    )


def test_bisect_finds_the_batched_anonymous_unmap(tmp_path):
    series = sources.read_patches(DEFAULT_PATCHES)
    repo = series_repo(tmp_path / "linux", series)
    out = tmp_path / "bisect"
    _bisect(repo, out, source.BASE_TAG)
    record = bisectrecord.Record.read(out)
    _is_the_batched_unmap(repo, series, record)
    counted = [s for s in record.steps if s.count is not None]
    assert len(counted) >= 3 and all(s.count > 0 for s in counted)


@pytest.mark.skipif(
    os.geteuid() != 0, reason="--executor lava-local needs root"
)
def test_bisect_over_lava_local(tmp_path):
    """The same answer when every counting boot is a job of LAVA's own
    dispatcher here (lava-run), over the series' last three commits: the
    two ends and one step between them, each counted by a QEMU that LAVA
    started with foliolab's plugin in its kernel image_arg."""
    series = sources.read_patches(DEFAULT_PATCHES)
    repo = series_repo(tmp_path / "linux", series)
    out = tmp_path / "bisect"
    _bisect(repo, out, "series~2", "--executor", "lava-local")
    record = bisectrecord.Record.read(out)
    _is_the_batched_unmap(repo, series, record)
    counted = [s for s in record.steps if s.count is not None]
    assert len(counted) == 3 and all(s.count > 0 for s in counted)
    # each count came from a job lava-run ran to its end, not from a QEMU
    # started here
    jobs = [
        json.loads(line)
        for line in (out / lavajob.JOURNAL).read_text().splitlines()
    ]
    assert len(jobs) == 3
    assert all(j["lava_run_rc"] == 0 for j in jobs), jobs
    assert all(j["outcome"] == "complete" for j in jobs), jobs
