"""Debian's kernels as kernels: versions, the archive, the unpacked tree.

The tests marked ``archive`` read Debian's archive (package lists, one
download of linux-source-7.3, kept in the real cache for later runs);
the others build a small .deb of their own.
"""

import hashlib
import subprocess

import pytest

from foliolab.errors import UsageError
from foliolab.kernel import (
    build,
    debian,
    kconfig,
    source,
)
from foliolab.kernel import (
    specs as kernels,
)


@pytest.mark.parametrize(
    "spec, package, exact",
    [
        ("7.3", "linux-source-7.3", None),
        ("6.12", "linux-source-6.12", None),
        ("7.3.4-1~bpo13+1", "linux-source-7.3", "7.3.4-1~bpo13+1"),
        ("7.2.13-1", "linux-source-7.2", "7.2.13-1"),
    ],
)
def test_a_version_names_its_package(spec, package, exact):
    assert debian.package_of(spec) == (package, exact)


@pytest.mark.parametrize("spec", ["", "7", "latest", "7.3;rm", "v7.3"])
def test_a_bad_version_is_named(spec):
    with pytest.raises(UsageError, match=f"debian:{spec} is not a kernel"):
        debian.package_of(spec)


@pytest.mark.parametrize(
    "exact, picked",
    [
        (None, "6.12.118-1"),
        ("6.12.107", "6.12.107-1"),  # the newest revision of it
        ("6.12.107-1~deb12u1", "6.12.107-1~deb12u1"),
        ("6.12.108", None),
        ("6.12.107-2", None),
    ],
)
def test_an_upstream_release_picks_its_newest_debian_revision(exact, picked):
    have = ["6.12.118-1", "6.12.107-1", "6.12.107-1~deb12u1"]
    assert debian.pick_version(exact, have) == picked


def test_the_private_sources_name_the_suites_and_the_hosts_keyring():
    text = debian.sources_list()
    for _, suite in debian.SUITES:
        assert f" {suite} main\n" in text
    assert text.count(f"signed-by={debian.KEYRING}") == len(debian.SUITES)
    opts = " ".join(debian._apt_options())
    # the host's own sources, lists and dpkg status are never read
    assert "Dir::Etc::SourceParts=/dev/null" in opts
    assert "Dir::State::status=/dev/null" in opts


def test_a_newer_kernel_has_its_own_build_slot():
    assert build.slot_name(True, (6, 12)) == "base"
    assert build.slot_name(False, (6, 12)) == "linux-6.12"
    assert build.slot_name(True, (7, 3)) == "linux-7.3"
    assert build.slot_name(False, (7, 3)) == "linux-7.3"
    up = kernels.parse_kernel("up=debian:7.3.4-1~bpo13+1")
    assert up.source.slot() == "linux-7.3"


def test_a_since_fragment_applies_from_its_version_on(tmp_path):
    for name, text in {
        "base.config": "CONFIG_A=y\nCONFIG_OLD=y\n",
        "arch-x86_64.config": "CONFIG_X86=y\n",
        "perf.config": "CONFIG_P=y\n",
        "since-7.1.config": "# CONFIG_OLD is gone: renamed CONFIG_NEW\n"
        "CONFIG_NEW=y\n",
        "since-7.5.config": "# CONFIG_A is gone: removed\n",
    }.items():
        (tmp_path / name).write_text(text)
    base = kconfig.merge("perf", "x86_64", tmp_path)
    assert "CONFIG_OLD" in base.options and not base.gone
    up = kconfig.merge("perf", "x86_64", tmp_path, version=(7, 3))
    assert "CONFIG_OLD" not in up.options and up.options["CONFIG_NEW"] == "y"
    assert up.gone == {"CONFIG_OLD": "since-7.1.config"}
    assert "CONFIG_OLD" not in up.text() and "CONFIG_A=y" in up.text()
    # the check holds the rest to what was asked
    config = "CONFIG_A=y\nCONFIG_X86=y\nCONFIG_P=y\n"
    assert kconfig.dropped(up, config) == [
        "CONFIG_NEW=y (since-7.1.config; got n)"
    ]


def test_a_configs_header_names_its_version():
    assert kconfig.version_of(
        "#\n# Linux/x86 7.3.4 Kernel Configuration\n"
    ) == (7, 3)
    assert kconfig.version_of(
        "# Linux/arm64 6.12.117 Kernel Configuration"
    ) == (6, 12)
    assert kconfig.version_of("CONFIG_A=y\n") == kconfig.BASE_VERSION


def _small_deb(tmp_path, name="linux-source-9.9", version="9.9.1-1"):
    """A .deb shaped like Debian's linux-source: a tarball in usr/src whose
    tree has Debian's top-level .gitignore (everything ignored)."""
    tree = tmp_path / "mk" / name
    tree.mkdir(parents=True)
    (tree / "Makefile").write_text(
        "VERSION = 9\nPATCHLEVEL = 9\nSUBLEVEL = 1\n"
    )
    (tree / ".gitignore").write_text("/*\n!/debian/\n")
    (tree / "mm").mkdir()
    (tree / "mm" / "rmap.c").write_text("/* rmap */\n")
    root = tmp_path / "pkg"
    (root / "usr" / "src").mkdir(parents=True)
    subprocess.run(
        [
            "tar",
            "-cJf",
            root / "usr" / "src" / f"{name}.tar.xz",
            "-C",
            tree.parent,
            name,
        ],
        check=True,
    )
    (root / "DEBIAN").mkdir()
    (root / "DEBIAN" / "control").write_text(
        f"Package: {name}\nVersion: {version}\nArchitecture: all\n"
        "Maintainer: foliolab <foliolab@example.org>\n"
        "Description: test\n"
    )
    deb = tmp_path / f"{name}_{version}_all.deb"
    subprocess.run(
        ["dpkg-deb", "-b", "-Zxz", root, deb], check=True, capture_output=True
    )
    return deb


def test_an_unpacked_source_is_one_commit_of_the_whole_tree(
    tmp_path, tmp_cache
):
    deb = _small_deb(tmp_path)
    pkg = debian.Package("linux-source-9.9", "9.9.1-1")
    digest = hashlib.sha256(deb.read_bytes()).hexdigest()
    tree = debian.unpack(pkg, deb, digest)
    files = source.git(tree, "ls-files").stdout.split()
    # Debian's .gitignore ignores the top level: all of it is committed
    assert sorted(files) == [".gitignore", "Makefile", "mm/rmap.c"]
    assert source.makefile_version(tree, "HEAD") == (9, 9)
    assert debian._recorded(tree) == {
        "Debian-Version": "9.9.1-1",
        "Deb-SHA256": digest,
    }
    # the same .deb gives the same commit (fixed identity and date)
    first = source.git(tree, "rev-parse", "HEAD").stdout
    again = debian.unpack(pkg, deb, digest)
    assert source.git(again, "rev-parse", "HEAD").stdout == first


def test_an_unpacked_source_is_found_again_under_a_series(
    tmp_path, tmp_cache, monkeypatch
):
    """A series on the package's tree (debian:X.Y+DIR) is checked out
    there to build it: the source is still found by its own commit, not
    unpacked again (which would drop the series' commits)."""
    deb = _small_deb(tmp_path)
    pkg = debian.Package("linux-source-9.9", "9.9.1-1")
    tree = debian.unpack(
        pkg, deb, hashlib.sha256(deb.read_bytes()).hexdigest()
    )
    commit = source.git(tree, "rev-parse", "HEAD").stdout.strip()
    source.git(tree, "checkout", "-q", "--detach")
    (tree / "mm" / "rmap.c").write_text("/* patched */\n")
    source.git(tree, "commit", "-q", "-am", "mm/rmap: a patch")
    monkeypatch.setattr(
        debian, "fetch_deb", lambda p: pytest.fail("fetched the .deb again")
    )
    src = debian.prepare(pkg)
    assert (src.tree, src.commit) == (tree, commit)


def test_a_dry_run_knows_an_unpacked_package_and_its_series_applied(
    tmp_path, tmp_cache, monkeypatch
):
    """debian:X.Y's tree is at hand for a dry run once an earlier command
    unpacked it (the version resolved against the lists fetched before),
    and its series once applied; nothing is fetched or unpacked to say
    so, and a package not unpacked is not at hand."""
    from foliolab.kernel import specs

    pkg = debian.Package("linux-source-9.9", "9.9.1-1")
    monkeypatch.setattr(debian, "resolve_known", lambda spec: pkg)
    monkeypatch.setattr(debian, "resolve", lambda spec: pkg)
    monkeypatch.setattr(debian, "_lists_age", lambda: 60.0)
    monkeypatch.setattr(
        debian, "fetch_deb", lambda p: pytest.fail("fetched a .deb")
    )
    up = specs.parse_kernel("up=debian:9.9")
    assert up.known_commit() is None  # not unpacked yet
    deb = _small_deb(tmp_path)
    tree = debian.unpack(
        pkg, deb, hashlib.sha256(deb.read_bytes()).hexdigest()
    )
    commit = source.git(tree, "rev-parse", "HEAD").stdout.strip()
    assert up.known_commit() == (tree, commit)
    patches = tmp_path / "series"
    patches.mkdir()
    (patches / "0001-mm-rmap-a-patch.patch").write_text(
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        "From: foliolab <foliolab@example.org>\n"
        "Date: Mon, 30 Nov 2026 00:00:00 +0000\n"
        "Subject: [PATCH] mm/rmap: a patch\n\n"
        "Signed-off-by: foliolab <foliolab@example.org>\n---\n"
        " mm/rmap.c | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n\n"
        "diff --git a/mm/rmap.c b/mm/rmap.c\n"
        "--- a/mm/rmap.c\n+++ b/mm/rmap.c\n"
        "@@ -1 +1 @@\n-/* rmap */\n+/* patched */\n"
    )
    (patches / "series").write_text("0001-mm-rmap-a-patch.patch\n")
    nxt = specs.parse_kernel(f"next=debian:9.9+{patches}")
    assert nxt.known_commit() is None  # not applied yet
    applied = nxt.source.series_tree("next", nxt.series())
    assert nxt.known_commit() == (tree, applied.commit) != (tree, commit)
    # lists the run would fetch again first: it may resolve another
    # package than they name
    monkeypatch.setattr(debian, "_lists_age", lambda: debian.LISTS_MAX_AGE_S)
    assert up.known_commit() is None
    monkeypatch.setattr(debian, "_lists_age", lambda: None)
    assert up.known_commit() is None  # no package lists fetched yet


@pytest.mark.archive
def test_the_archive_names_7_3_and_refuses_a_version_it_lacks():
    pkg = debian.resolve("7.3")
    assert pkg.name == "linux-source-7.3" and pkg.version.startswith("7.3.")
    assert debian.resolve(pkg.version) == pkg
    with pytest.raises(UsageError) as e:
        debian.resolve("7.3.999-1")
    assert "7.3.999-1 is not in Debian's archive" in str(e.value)
    assert pkg.version in str(e.value)  # the versions that are
    with pytest.raises(UsageError, match="kernels there: .*debian:7.3"):
        debian.resolve("99.1")


@pytest.mark.archive
def test_the_fetched_deb_is_the_archives_and_its_hash_is_recorded():
    pkg = debian.resolve("7.3")
    deb = debian.fetch_deb(pkg)
    shown = subprocess.run(
        [
            "apt-cache",
            *debian._apt_options(),
            "show",
            f"{pkg.name}={pkg.version}",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    index_sha = [
        line.split()[1]
        for line in shown.splitlines()
        if line.startswith("SHA256:")
    ]
    assert debian.sha256_of(deb) in index_sha
    assert debian.fetch_deb(pkg) == deb  # kept, not fetched again


def _no_apt(monkeypatch):
    from foliolab import proc

    monkeypatch.setattr(
        debian.proc, "run", lambda argv, **kw: pytest.fail(f"ran {argv[0]}")
    )
    return proc


@pytest.mark.parametrize(
    "spec, says",
    [
        ("9.99", "debian:9.99: Linux has no 9.99"),
        ("7.31", "debian:7.31: Linux has no 7.31"),
        ("6.99.1-1", "debian:6.99.1-1: Linux has no 6.99"),
    ],
)
def test_a_version_linux_never_had_is_refused_offline(
    monkeypatch, tmp_cache, spec, says
):
    _no_apt(monkeypatch)
    with pytest.raises(UsageError, match=says) as e:
        debian.resolve(spec)
    assert "give debian:X.Y of a kernel Debian ships" in str(e.value)
    assert not tmp_cache.exists()


def test_a_major_far_past_the_cached_lists_is_refused_offline(
    monkeypatch, tmp_cache
):
    _no_apt(monkeypatch)
    monkeypatch.setattr(
        debian, "_known_series", lambda: ["6.1", "6.12", "7.2", "7.3"]
    )
    with pytest.raises(UsageError) as e:
        debian.resolve("9.2")
    assert str(e.value) == (
        "debian:9.2: Linux 9.x is not out: the newest kernel in Debian's "
        "archive is 7.3; kernels there: debian:6.1, debian:6.12, "
        "debian:7.2, debian:7.3"
    )


class _FakeApt:
    """apt-get update succeeds; the archive has linux-source-6.1 and 7.3."""

    def __init__(self):
        self.argv = []

    def __call__(self, argv, **kw):
        from types import SimpleNamespace

        self.argv.append(argv)
        out = ""
        if "pkgnames" in argv:
            out = "linux-source-6.1\nlinux-source-7.3\n"
        return SimpleNamespace(returncode=0, stdout=out, stderr="")


def test_a_lookup_says_it_runs_apt_then_refuses_clearly(
    monkeypatch, tmp_cache, caplog
):
    import logging

    apt = _FakeApt()
    monkeypatch.setattr(debian.proc, "run", apt)
    with caplog.at_level(logging.INFO, logger="foliolab"):
        with pytest.raises(UsageError) as e:
            debian.resolve("8.1")
    assert (
        "looking up linux-source-8.1 in Debian's archive (apt update)"
        in caplog.messages
    )
    assert str(e.value) == (
        "debian:8.1: Debian's archive has no "
        "linux-source-8.1; kernels there: debian:6.1, "
        "debian:7.3"
    )
    assert any("update" in a for a in apt.argv)


class _OfflineApt(_FakeApt):
    """apt-get update as without a network: exit 0, every list failed (or
    only ``failing`` of them)."""

    def __init__(self, fetched: bool = False):
        super().__init__()
        self.fetched = fetched

    def __call__(self, argv, **kw):
        if "update" in argv:
            kw["log_path"].write_text(
                (
                    "Hit:1 http://deb.debian.org/debian bookworm InRelease\n"
                    if self.fetched
                    else ""
                )
                + "Err:2 http://deb.debian.org/debian sid InRelease\n"
                "  Temporary failure resolving 'deb.debian.org'\n"
                "W: Failed to fetch http://deb.debian.org/debian/dists/sid/"
                "InRelease  Temporary failure resolving 'deb.debian.org'\n"
                "W: Some index files failed to download. They have been "
                "ignored, or old ones used instead.\n"
            )
        return super().__call__(argv, **kw)


def test_an_archive_out_of_reach_is_said_not_taken_for_a_missing_kernel(
    monkeypatch, tmp_cache
):
    """apt exits 0 when it reaches no mirror: the lookup said 'Debian's
    archive has no linux-source-7.3', and kept the empty lists a day."""
    from foliolab.errors import SourceError

    monkeypatch.setattr(debian.proc, "run", _OfflineApt())
    with pytest.raises(SourceError) as e:
        debian.resolve("7.3")
    assert e.value.one_line() == (
        "Debian's archive could not be read (Temporary failure resolving "
        f"'deb.debian.org'); log: {debian.apt_dir() / 'update.log'}; check "
        "this machine's network and proxy, then run the command again"
    )
    assert debian._lists_age() is None  # tried again next time


def test_lists_fetched_in_part_are_used_and_fetched_again_next_time(
    monkeypatch, tmp_cache, caplog
):
    import logging

    monkeypatch.setattr(debian.proc, "run", _OfflineApt(fetched=True))
    with caplog.at_level(logging.INFO, logger="foliolab"):
        debian.update_lists()
    assert (
        "WARNING: some of Debian's package lists could not be fetched "
        "(Temporary failure resolving 'deb.debian.org'); the others are "
        "used"
    ) in caplog.messages
    assert debian._lists_age() is None
