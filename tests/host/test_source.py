import subprocess
from pathlib import Path

import pytest

from foliolab.errors import PatchApplyError, UsageError
from foliolab.kernel import source, sources
from foliolab.kernel.sources.series import DirSeries


def sh(cwd, *argv):
    subprocess.run(
        argv,
        cwd=cwd,
        check=True,
        capture_output=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@x",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@x",
            "PATH": "/usr/bin:/bin",
            "HOME": str(cwd),
        },
    )


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "repo"
    r.mkdir()
    sh(r, "git", "init", "-q", "-b", "main")
    (r / "rmap.c").write_text("int a;\nint b;\nint c;\n")
    sh(r, "git", "add", ".")
    sh(r, "git", "commit", "-q", "-m", "base")
    return r


def make_series(repo, tmp_path, new_text, name="0001-x.patch"):
    (repo / "rmap.c").write_text(new_text)
    sh(repo, "git", "commit", "-q", "-am", "mm: change b")
    d = tmp_path / "series"
    d.mkdir(exist_ok=True)
    out = subprocess.run(
        ["git", "format-patch", "-1", "--stdout"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (d / name).write_text(out)
    (d / "series").write_text(f"# comment\n{name}\n")
    sh(repo, "git", "reset", "-q", "--hard", "HEAD~1")
    return d


def test_a_series_folder_reads_in_order_with_its_digest(repo, tmp_path):
    d = make_series(repo, tmp_path, "int a;\nint B;\nint c;\n")
    s = DirSeries(d).read()
    assert [p.name for p in s.patches] == ["0001-x.patch"]
    assert len(s.digest) == 16
    assert sources.read_patches(d) == s
    assert sources.read_patches(None).patches == ()  # --patches none


def test_a_series_folder_that_cannot_be_read_says_why(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        DirSeries(tmp_path / "nope").read()
    (tmp_path / "s").mkdir()
    with pytest.raises(UsageError, match="series is missing"):
        DirSeries(tmp_path / "s").read()
    (tmp_path / "s" / "series").write_text("0001-gone.patch\n")
    with pytest.raises(UsageError, match="0001-gone.patch"):
        DirSeries(tmp_path / "s").read()


def test_apply_series_ok(repo, tmp_path, tmp_cache):
    d = make_series(repo, tmp_path, "int a;\nint B;\nint c;\n")
    source.apply_series(repo, sources.read_patches(d), "6.12.117-1~deb12u1")
    assert (repo / "rmap.c").read_text() == "int a;\nint B;\nint c;\n"


def test_patch_that_does_not_apply_names_patch_and_base(
    repo, tmp_path, tmp_cache
):
    d = make_series(repo, tmp_path, "int a;\nint B;\nint c;\n")
    (repo / "rmap.c").write_text("int a;\nint other;\nint c;\n")
    sh(repo, "git", "commit", "-q", "-am", "diverge")
    onto = "base (linux-source-6.12 6.12.117-1~deb12u1)"
    with pytest.raises(PatchApplyError) as e:
        source.apply_series(repo, sources.read_patches(d), onto)
    msg = e.value.one_line()
    assert msg.startswith(
        f"{d}/0001-x.patch does not apply to rmap.c on "
        f"{onto}: its hunk at line 1 does not match; log: "
    )
    assert "\n" not in msg
    # nothing half-applied, no am in progress
    assert (repo / "rmap.c").read_text() == "int a;\nint other;\nint c;\n"
    assert not (repo / ".git" / "rebase-apply").exists()


def test_cover_letter_keeps_its_subject_and_blurb_across_exports():
    old = (
        "From 0000 Mon Sep 17 00:00:00 2001\nFrom: f <f@e.org>\n"
        "Subject: [PATCH 00/02] mm: a long subject that git\n"
        " folded\n\nWhy.\n\nfoliolab (2):\n  a\n  b\n\n 1 file changed\n"
    )
    new = (
        "From 0000 Mon Sep 17 00:00:00 2001\nFrom: f <f@e.org>\n"
        "Subject: [PATCH 00/03] *** SUBJECT HERE ***\n\n"
        "*** BLURB HERE ***\n\nfoliolab (3):\n  a\n  b\n  c\n"
    )
    got = source.carry_cover_letter(old, new)
    assert "Subject: [PATCH 00/03] mm: a long subject that git folded\n" in got
    assert "\n\nWhy.\n\nfoliolab (3):\n  a\n  b\n  c\n" in got


def test_cover_letter_without_a_shortlog_is_a_clear_error():
    with pytest.raises(UsageError, match="subject and blurb"):
        source.carry_cover_letter(
            "Subject: [PATCH 0/1] x\n\nno shortlog\n", ""
        )


def test_a_relative_series_directory_reads_as_absolute(tmp_path, monkeypatch):
    """git am runs in a scratch worktree: the patches' paths must not
    depend on the directory foliolab was started in."""
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "0001-a.patch").write_text("x\n")
    (tmp_path / "s" / "series").write_text("0001-a.patch\n")
    monkeypatch.chdir(tmp_path)
    series = sources.read_patches(Path("s"))
    assert all(p.is_absolute() for p in series.patches)


def test_the_failing_patch_is_named_as_the_user_gave_its_directory(
    repo, tmp_path, tmp_cache, monkeypatch
):
    """Relative to where foliolab runs, like `patches/7.3/0003-foo.patch`;
    a patch adding a file the tree has is named by that file."""
    (repo / "new.c").write_text("int n;\n")
    sh(repo, "git", "add", "new.c")
    sh(repo, "git", "commit", "-q", "-m", "add new.c")
    d = tmp_path / "series"
    d.mkdir()
    out = subprocess.run(
        ["git", "format-patch", "-1", "--stdout"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (d / "0001-add.patch").write_text(out)
    (d / "series").write_text("0001-add.patch\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PatchApplyError) as e:
        source.apply_series(repo, sources.read_patches(Path("series")), "X")
    assert e.value.message == (
        "series/0001-add.patch does not apply to "
        "new.c on X: already exists in index"
    )


def based(repo):
    """``repo`` as the cache's base: tagged as foliolab tags the base."""
    sh(repo, "git", "tag", source.BASE_TAG)
    return repo


def test_a_series_on_the_base_is_kept_under_the_ref_it_always_was(
    repo, tmp_path, tmp_cache, monkeypatch
):
    """base+DIR's commit is refs/foliolab/series/DIGEST, so series applied
    (and kernels built and kept by commit) before this change are found
    again: a ref already there is taken as it is, nothing applied."""
    monkeypatch.setattr(source, "prepare_base", lambda: based(repo))
    d = make_series(repo, tmp_path, "int a;\nint B;\nint c;\n")
    series = sources.read_patches(d)
    t = source.prepare_patched(series)
    assert (
        source.series_ref(series.digest)
        == f"refs/foliolab/series/{series.digest}"
    )
    assert (
        source.git(
            repo, "rev-parse", source.series_ref(series.digest)
        ).stdout.strip()
        == t.commit
    )
    assert t.onto.spec == "base" and t.onto.commit == source.base_commit(repo)
    assert t.series_digest == series.digest
    monkeypatch.setattr(source, "prepare_base", lambda: repo)
    source.git(
        repo,
        "update-ref",
        source.series_ref(series.digest),
        source.base_commit(repo),
    )  # as an older run left it
    assert source.prepare_patched(series).commit == source.base_commit(repo)


def test_a_series_on_another_tree_is_kept_per_tree_and_content(
    repo, tmp_path, tmp_cache
):
    d = make_series(repo, tmp_path, "int a;\nint B;\nint c;\n")
    series = sources.read_patches(d)
    head = source.git(repo, "rev-parse", "HEAD").stdout.strip()
    under = source.Tree("x", repo, head, "")
    onto = source.Onto("git:r@HEAD", f"{repo} {head[:12]}", head)
    t = source.prepare_series(under, onto, series, "next")
    assert (t.variant, t.path, t.series_digest, t.onto) == (
        "next",
        repo,
        series.digest,
        onto,
    )
    assert (
        source.git(repo, "show", f"{t.commit}:rmap.c").stdout
        == "int a;\nint B;\nint c;\n"
    )
    assert (
        source.git(
            repo, "rev-parse", f"refs/foliolab/series/{head}/{series.digest}"
        ).stdout.strip()
        == t.commit
    )
    assert source.prepare_series(under, onto, series, "n").commit == t.commit
    # the user's checkout was never touched: applied in a scratch worktree
    assert (repo / "rmap.c").read_text() == "int a;\nint b;\nint c;\n"
    assert not (tmp_cache / "worktrees" / "apply").exists()


def test_a_checkout_is_built_by_one_command_at_a_time(tmp_path, monkeypatch):
    """Two builds from one checkout: the second waits until the first
    releases it, so make never compiles another command's commit."""
    import threading
    import time

    from foliolab.kernel import source

    monkeypatch.setenv("FOLIOLAB_CACHE", str(tmp_path / "cache"))
    tree = tmp_path / "linux"
    tree.mkdir()
    order = []

    def build(name, hold):
        with source.checkout_lock(tree):
            order.append(f"{name} in")
            time.sleep(hold)
            order.append(f"{name} out")

    first = threading.Thread(target=build, args=("first", 0.5))
    first.start()
    time.sleep(0.1)
    build("second", 0)
    first.join()
    assert order == ["first in", "first out", "second in", "second out"]
