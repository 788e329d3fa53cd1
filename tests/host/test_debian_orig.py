"""``debian:VERSION@orig``: a Debian kernel package's orig tarball as the
tree the list knows, how Debian's tree differs from it file by file, and
a series checked on both.

A small source package of its own stands for Debian's: an orig tarball
(made by tar, or by git archive, which records its commit), a
debian.tar.xz with a patch series and a copyright's Files-Excluded, and
the linux-source .deb of the tree with that series applied. Nothing is
fetched; the test marked ``archive`` reads Debian's source lists (no
download of a source package).
"""

from __future__ import annotations

import io
import logging
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from foliolab.errors import SourceError, UsageError
from foliolab.kernel import debian, debian_orig, source
from foliolab.kernel import specs as kernels
from foliolab.kernel.sources.debian import DebianSource
from foliolab.series import post

PKG = debian.Package("linux-source-9.9", "9.9.1-1")
UPSTREAM = {
    "Makefile": "VERSION = 9\nPATCHLEVEL = 9\nSUBLEVEL = 1\n",
    "mm/rmap.c": "int rmap = 0;\n",
    "mm/memory.c": "int memory = 0;\n",
    "drivers/x.c": "int x = 0;\n",
}
# Debian's patches: one changes mm/memory.c, one adds a file
DEBIAN_PATCHES = {
    "bugfix/all/mm-memory.patch": (
        "From: Debian <debian@example.com>\nSubject: mm: memory\n\n"
        "---\n"
        "--- a/mm/memory.c\n+++ b/mm/memory.c\n"
        "@@ -1 +1 @@\n-int memory = 0;\n+int memory = 1;\n"
    ),
    "features/all/new-file.patch": (
        "Subject: a new file\n\n"
        "diff --git a/drivers/new.c b/drivers/new.c\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/drivers/new.c\n@@ -0,0 +1 @@\n+int y;\n"
    ),
}
DEBIAN_TREE = {
    **UPSTREAM,
    "mm/memory.c": "int memory = 1;\n",
    "drivers/new.c": "int y;\n",
}
COPYRIGHT = (
    "Format: https://www.debian.org/doc/packaging-manuals/copyright-"
    "format/1.0/\nUpstream-Name: Linux kernel\n"
    "Files-Excluded: drivers/blob.h\n arch/foo/micro.c\n"
    "Comment:\n something\n"
)


def _write(top: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (top / name).parent.mkdir(parents=True, exist_ok=True)
        (top / name).write_text(text)


def _tar(path: Path, top: Path, mode: str = "w:xz") -> Path:
    with tarfile.open(path, mode) as tf:
        tf.add(top, arcname=top.name)
    return path


def _orig(tmp_path: Path, by_git_archive: bool = False) -> tuple[Path, str]:
    """The orig tarball, and the commit git archive recorded ("" for
    one made by tar)."""
    top = tmp_path / "mk-orig" / "linux-9.9.1"
    top.mkdir(parents=True)
    _write(top, UPSTREAM)
    out = tmp_path / "linux_9.9.1.orig.tar.xz"
    if not by_git_archive:
        return _tar(out, top), ""
    env = {**os.environ, **source.IDENTITY}
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "commit.gpgsign=false", "commit", "-q", "-m", "Linux 9.9.1"],
    ):
        subprocess.run(["git", *args], cwd=top, env=env, check=True)
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"],
        cwd=top,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    tar = subprocess.run(
        ["git", "archive", "--prefix=linux-9.9.1/", "HEAD"],
        cwd=top,
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["xz", "-c"], input=tar, stdout=out.open("wb"), check=True)
    return out, commit


def _debian_tar(tmp_path: Path) -> Path:
    out = tmp_path / "linux_9.9.1-1.debian.tar.xz"
    with tarfile.open(out, "w:xz") as tf:
        files = {
            "debian/copyright": COPYRIGHT,
            "debian/patches/series": "# Debian's\n"
            + "".join(f"{n}\n" for n in DEBIAN_PATCHES),
            **{f"debian/patches/{n}": t for n, t in DEBIAN_PATCHES.items()},
        }
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return out


def _deb(tmp_path: Path) -> Path:
    """linux-source-9.9's .deb: the tree with Debian's patches."""
    top = tmp_path / "mk-deb" / PKG.name
    top.mkdir(parents=True)
    _write(top, DEBIAN_TREE)
    root = tmp_path / "pkg"
    (root / "usr" / "src").mkdir(parents=True)
    _tar(root / "usr" / "src" / f"{PKG.name}.tar.xz", top)
    (root / "DEBIAN").mkdir()
    (root / "DEBIAN" / "control").write_text(
        f"Package: {PKG.name}\nVersion: {PKG.version}\nArchitecture: all\n"
        "Maintainer: foliolab <foliolab@example.org>\nDescription: test\n"
    )
    deb = tmp_path / f"{PKG.name}_{PKG.version}_all.deb"
    subprocess.run(
        ["dpkg-deb", "-b", "-Zxz", root, deb], check=True, capture_output=True
    )
    return deb


@pytest.fixture
def package(tmp_path, tmp_cache, monkeypatch):
    """The small source package, served in place of Debian's archive:
    (its files, the commit its orig records). Nothing is fetched."""

    def make(by_git_archive: bool = False):
        orig, commit = _orig(tmp_path, by_git_archive)
        files = debian_orig.SourceFiles(
            tmp_path / "linux_9.9.1-1.dsc",
            orig,
            _debian_tar(tmp_path),
            debian.sha256_of(orig),
        )
        deb = _deb(tmp_path)
        fetched: list[str] = []

        def fetch_source(pkg):
            assert pkg == PKG
            fetched.append(pkg.version)
            return files

        monkeypatch.setattr(debian_orig, "fetch_source", fetch_source)
        monkeypatch.setattr(debian, "fetch_deb", lambda pkg: deb)
        monkeypatch.setattr(debian, "resolve", lambda spec: PKG)
        monkeypatch.setattr(debian, "resolve_known", lambda spec: PKG)
        return files, commit, fetched

    return make


def test_an_orig_is_one_commit_of_upstreams_files(package, tmp_path):
    files, _, fetched = package()
    orig = debian_orig.prepare(PKG)
    listed = source.git(orig.tree, "ls-files").stdout.split()
    assert sorted(listed) == sorted(UPSTREAM)
    for name, text in UPSTREAM.items():
        shown = source.git(orig.tree, "show", f"{orig.commit}:{name}")
        assert shown.stdout == text  # upstream's, not Debian's
    assert orig.sha256 == files.orig_sha256
    assert orig.tarball == "linux_9.9.1.orig.tar.xz"
    assert orig.release_commit == ""  # made by tar: none recorded
    assert orig.upstream == "9.9.1"
    # found again by what its commit records: not fetched again
    again = debian_orig.prepare(PKG)
    assert again == orig and fetched == ["9.9.1-1"]
    # the same tarball gives the same commit (fixed identity and date)
    debian_orig.unpack_orig(PKG, files)
    remade = debian_orig.known(PKG)
    assert remade is not None and remade.commit == orig.commit


def test_a_git_archive_tarball_names_its_commit(package):
    _, commit, _ = package(by_git_archive=True)
    assert len(commit) == 40
    orig = debian_orig.prepare(PKG)
    assert orig.release_commit == commit
    assert "Release-Commit: " + commit in (
        source.git(orig.tree, "log", "-1", "--format=%B").stdout
    )


def test_debians_tree_differs_by_file_with_the_patches_that_make_it(
    package,
):
    _, _, fetched = package()
    orig = debian_orig.prepare(PKG)
    diff, where = debian_orig.measured_differences(orig)
    assert {(f.path, f.status, f.patches) for f in diff.files} == {
        ("mm/memory.c", "modified", ("bugfix/all/mm-memory.patch",)),
        ("drivers/new.c", "added", ("features/all/new-file.patch",)),
    }
    assert diff.patches == 2
    assert diff.excluded == ("drivers/blob.h", "arch/foo/micro.c")
    assert diff.debian_version == PKG.version
    assert diff.orig_commit == orig.commit
    assert diff.debian_commit == debian.prepare(PKG).commit
    # written beside the orig's tree, as JSON
    assert where.parent == orig.tree.parent
    assert '"mm/memory.c"' in where.read_text()
    # found again beside the tree: nothing fetched or compared again
    fetched.clear()
    assert debian_orig.measured_differences(orig) == (diff, where)
    assert fetched == []
    # the Debian tree's repository is only read
    measured = debian.prepare(PKG).tree
    assert source.git(measured, "status", "--porcelain").stdout == ""
    refs = source.git(measured, "for-each-ref").stdout
    assert len(refs.splitlines()) == 1


def _patch(name: str, path: str, old: str, new: str) -> str:
    return (
        "From 0 Mon Sep 17 00:00:00 2001\nFrom: A U <au@example.com>\n"
        "Date: Thu, 1 Jan 2026 00:00:00 +0000\n"
        f"Subject: [PATCH] {name}\n\n{name}\n---\n"
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -1 +1 @@\n-{old}+{new}"
    )


def _series(tmp_path: Path, *patches: tuple[str, str, str, str]) -> Path:
    d = tmp_path / "series"
    d.mkdir()
    names = []
    for k, p in enumerate(patches, start=1):
        name = f"{k:04d}-{p[0]}.patch"
        (d / name).write_text(_patch(*p))
        names.append(name)
    (d / "series").write_text("".join(n + "\n" for n in names))
    return d


def test_a_series_on_files_debian_left_alone_is_said_identical(
    package, tmp_path, caplog
):
    package()
    folder = _series(
        tmp_path, ("rmap", "mm/rmap.c", "int rmap = 0;\n", "int rmap = 2;\n")
    )
    k = kernels.parse_kernel(f"s=debian:9.9.1-1@orig+{folder}")
    caplog.set_level(logging.INFO, logger="foliolab")
    tree = k.source.series_tree("s", k.series())
    got = source.git(tree.path, "show", f"{tree.commit}:mm/rmap.c").stdout
    assert got == "int rmap = 2;\n"  # git am applied it on the orig
    # the kernel's record names the file of Debian's differences
    orig = debian_orig.prepare(PKG)
    assert str(debian_orig.differences_file(orig)) in tree.origin
    assert tree.onto is not None and tree.onto.commit == orig.commit
    lines = [r.getMessage() for r in caplog.records if "touches" in r.message]
    assert lines == [
        "kernel s's series touches 1 file(s), all identical on "
        "debian:9.9.1-1 and its orig"
    ]


def test_a_series_on_a_file_debian_patched_names_it(package, tmp_path, caplog):
    package()
    diff, _ = debian_orig.measured_differences(debian_orig.prepare(PKG))
    folder = _series(
        tmp_path,
        ("rmap", "mm/rmap.c", "int rmap = 0;\n", "int rmap = 2;\n"),
        ("mem", "mm/memory.c", "int memory = 0;\n", "int memory = 2;\n"),
    )
    patches = sorted(folder.glob("*.patch"))
    caplog.set_level(logging.INFO, logger="foliolab")
    assert debian_orig.say_series_on_both(diff, patches, "the series") == [
        "mm/memory.c"
    ]
    (line,) = [r.getMessage() for r in caplog.records if "touch" in r.message]
    assert line == (
        "WARNING: the series touches 1 file(s) that differ between "
        "debian:9.9.1-1 and its orig: mm/memory.c"
    )


def test_post_takes_the_commit_the_tarball_records(package):
    _, commit, _ = package(by_git_archive=True)
    spec = DebianSource.parse("base", "debian:9.9.1-1@orig")
    base = post.base_tree(spec, None)
    assert base.upstream == commit
    assert base.commit == debian_orig.prepare(PKG).commit
    assert base.differences is not None
    with pytest.raises(UsageError) as e:
        post.base_tree(spec, "b" * 40)
    assert f"is not the commit linux_9.9.1.orig.tar.xz records ({commit})" in (
        e.value.message
    )
    assert post.base_tree(spec, commit.upper()).upstream == commit


def test_post_needs_the_release_commit_when_the_tarball_has_none(package):
    package()
    spec = DebianSource.parse("base", "debian:9.9.1-1@orig")
    with pytest.raises(UsageError) as e:
        post.base_tree(spec, None)
    assert "records no upstream commit" in e.value.message
    assert "give --base-commit SHA" in e.value.one_line()
    assert post.base_tree(spec, "c" * 40).upstream == "c" * 40


@pytest.mark.parametrize(
    "text, version, orig",
    [
        ("debian:7.3.4-1~bpo13+1@orig", "7.3.4-1~bpo13+1", True),
        ("debian:7.3@orig", "7.3", True),
        ("debian:7.3.4-1~bpo13+1", "7.3.4-1~bpo13+1", False),
    ],
)
def test_an_orig_spec_names_its_package(text, version, orig):
    k = kernels.parse_kernel(f"k={text}")
    assert isinstance(k.source, DebianSource)
    assert (k.source.version, k.source.orig) == (version, orig)
    fields = k.record().fields
    assert fields["debian_version"] == version
    assert fields.get("debian_part") == ("orig" if orig else None)
    # the orig and Debian's tree build in the same slot (one series)
    assert k.source.slot() == DebianSource.parse("k", "debian:7.3").slot()


def test_an_orig_spec_takes_a_series_after_it(tmp_path):
    folder = _series(tmp_path, ("rmap", "mm/rmap.c", "a\n", "b\n"))
    k = kernels.parse_kernel(f"k=debian:7.3.4-1~bpo13+1@orig+{folder}:1")
    assert isinstance(k.source, DebianSource) and k.source.orig
    assert k.applied is not None and k.applied.prefix == 1


@pytest.mark.parametrize(
    "spec",
    [
        "debian:7.3@src",
        "debian:7.3.4-1~bpo13+1@src",
        "debian:7.3.4-1~bpo13+1@src+SERIES",
    ],
)
def test_a_part_other_than_orig_is_refused(spec, tmp_path):
    folder = _series(tmp_path, ("rmap", "mm/rmap.c", "a\n", "b\n"))
    with pytest.raises(UsageError, match="@src is not a part"):
        kernels.parse_kernel("k=" + spec.replace("SERIES", str(folder)))


def test_touched_files_of_quilt_and_git_patches():
    assert debian_orig.touched(
        [
            DEBIAN_PATCHES["bugfix/all/mm-memory.patch"],
            DEBIAN_PATCHES["features/all/new-file.patch"],
            "--- a/x.c\t2026-01-01\n+++ b/x.c\t2026-01-01\n",
            "--- not a diff line\nnor this\n",
        ]
    ) == {"mm/memory.c", "drivers/new.c", "x.c"}


SHOWSRC = """\
Package: linux
Version: 9.9.0-1
Checksums-Sha256:
 aa 10 linux_9.9.0-1.dsc
 bb 20 linux_9.9.0.orig.tar.xz

Package: linux
Version: 9.9.1-1
Format: 3.0 (quilt)
Checksums-Sha256:
 11 10 linux_9.9.1-1.dsc
 22 20 linux_9.9.1.orig.tar.xz
 33 30 linux_9.9.1-1.debian.tar.xz
Directory: pool/main/l/linux
"""


def test_the_source_index_gives_each_files_sha256():
    assert debian_orig.files_of(SHOWSRC, "9.9.1-1") == {
        "linux_9.9.1-1.dsc": "11",
        "linux_9.9.1.orig.tar.xz": "22",
        "linux_9.9.1-1.debian.tar.xz": "33",
    }
    assert debian_orig.files_of(SHOWSRC, "9.9.2-1") == {}


def test_a_mirror_without_source_packages_is_named(tmp_path):
    log = tmp_path / "source.log"
    log.write_text(
        "Need to get 167 MB of source archives.\n"
        "E: Failed to fetch http://deb.debian.org/debian/pool/main/l/linux/"
        "linux_9.9.1.orig.tar.xz  404  Not Found [IP: 192.0.2.1 80]\n"
        "E: Failed to fetch some archives.\n"
    )
    assert debian_orig.not_fetched(log) == (
        "the archive answers 404 Not Found for 1 file(s) of it "
        "(linux_9.9.1.orig.tar.xz, ...): this mirror serves no source "
        "packages"
    )
    log.write_text("E: Unable to find a source package for linux\n")
    assert debian_orig.not_fetched(log) == (
        "Unable to find a source package for linux"
    )


def test_a_fetch_that_fails_is_one_line(tmp_cache, monkeypatch, capsys):
    """The archive's 404 for the source package reaches the user as one
    line naming it, through the command that asked for the orig."""

    def run(argv, **kw):
        if "source" in argv:
            kw["log_path"].parent.mkdir(parents=True, exist_ok=True)
            kw["log_path"].write_text(
                "E: Failed to fetch http://m/pool/main/l/linux/"
                "linux_9.9.1.orig.tar.xz  404  Not Found\n"
            )
            return subprocess.CompletedProcess(argv, 100, "", "")
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(debian_orig, "update_source_lists", lambda pkg: None)
    monkeypatch.setattr(
        debian_orig,
        "index_files",
        lambda pkg: {"linux_9.9.1.orig.tar.xz": "22"},
    )
    monkeypatch.setattr(debian_orig.proc, "run", run)
    with pytest.raises(SourceError) as e:
        debian_orig.fetch_source(PKG)
    assert "this mirror serves no source packages" in e.value.message
    assert "\n" not in e.value.message


@pytest.mark.archive
def test_the_archive_lists_the_orig_of_the_7_3_package():
    """Debian's source index names the orig tarball of the linux-source
    package's version (its lists only: nothing is downloaded)."""
    pkg = debian.resolve("7.3")
    debian_orig.update_source_lists(pkg)
    files = debian_orig.index_files(pkg)
    upstream = debian.upstream_of(pkg.version)
    assert f"linux_{upstream}.orig.tar.xz" in files
    assert f"linux_{pkg.version}.dsc" in files
    assert all(len(sha) == 64 for sha in files.values())
