"""`foliolab post`: a series folder's postings file, read through its
series input class, and the postings written as b4 sends them, read back
by b4 (from PyPI, offline) and applied by git am on the base. A small git
tree of three files stands for the kernel; its get_maintainer.pl is a
small one of its own that answers from its MAINTAINERS, as the kernel's
does."""

from __future__ import annotations

import email
import email.policy
import email.utils
import mailbox
import os
import subprocess
import sys
from pathlib import Path

import pytest

from foliolab import cli
from foliolab.errors import UsageError
from foliolab.kernel import source
from foliolab.kernel.sources.series import DirSeries

PLACEHOLDER = "foliolab <foliolab@example.org>"
SENDER = ("Ada Sender", "ada@example.net")
# files of the tree: who maintains each, and the list every patch goes to
MAINTAINERS = """\
a.c: Alice Maint <alice@example.com>
b.c: Bob Maint <bob@example.com>
c.c: Carol Maint <carol@example.com>
list: tree-list@example.com
"""
# answers like scripts/get_maintainer.pl: --nol the people of the files
# the patches touch, --nom the list; it must run at the top of the tree
GET_MAINTAINER = r"""#!/usr/bin/perl
use strict;
my (%who, $list, @files);
open(my $m, '<', 'MAINTAINERS') or die "not at the top of a tree\n";
while (<$m>) {
    if (/^list: (.*)$/) { $list = $1; } elsif (/^(\S+): (.*)$/) { $who{$1} = $2; }
}
my $people = grep { $_ eq '--nol' } @ARGV;
for my $f (grep { !/^--/ } @ARGV) {
    open(my $p, '<', $f) or die "no patch $f\n";
    while (<$p>) { push @files, $1 if m{^diff --git a/(\S+) }; }
}
if ($people) { my %seen; print "$who{$_}\n" for grep { !$seen{$_}++ } @files; }
else { print "$list\n"; }
"""
POSTINGS = """\
[[posting]]
name = "one"
tree = "mm-hotfixes-unstable"
prefix = "PATCH mm-hotfixes"
change-id = "20261129-one-0123456789ab"
title = "fix a and c"
patches = ["0001-a-fix-a.patch", "0003-c-fix-c.patch"]

[[posting.credit]]
name = "Dee Signer"
email = "dee@example.com"
design = "the design of a (v3)"
link = "https://lore.example/dee-v3"

[[posting]]
name = "two"
tree = "mm-new"
prefix = "PATCH mm-new"
change-id = "20261129-two-ba9876543210"
title = "b, in one patch"
patches = ["0002-b-change-b.patch"]
"""


def _git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(
        ["git", "-c", "commit.gpgsign=false", *args],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _lab_env() -> dict[str, str]:
    return {**os.environ, **source.IDENTITY}


@pytest.fixture
def world(tmp_path, monkeypatch):
    """(the tree, its base commit, the series folder); the user's git
    identity is SENDER, in a HOME of its own."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        f"[user]\n\tname = {SENDER[0]}\n\temail = {SENDER[1]}\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    tree = tmp_path / "tree"
    (tree / "scripts").mkdir(parents=True)
    for name in ("a.c", "b.c", "c.c"):
        (tree / name).write_text(f"int {name[0]} = 0;\n")
    (tree / "MAINTAINERS").write_text(MAINTAINERS)
    (tree / "scripts" / "get_maintainer.pl").write_text(GET_MAINTAINER)
    _git(tree, "init", "-q", "-b", "main")
    _git(tree, "add", "-A")
    _git(tree, "commit", "-q", "-m", "base", env=_lab_env())
    base = _git(tree, "rev-parse", "HEAD").strip()
    # the lab's series: from and signed off by its placeholder
    work = tmp_path / "work"
    _git(tmp_path, "clone", "-q", str(tree), str(work))
    messages = {
        "a.c": "a: fix a\n\nSuggested-by: Sue Gest <sue@example.com>\n"
        "Cc: stable@vger.kernel.org\n",
        "b.c": "b: change b\n",
        "c.c": "c: fix c\n",
    }
    for name, msg in messages.items():
        (work / name).write_text(f"int {name[0]} = 1;\n")
        _git(work, "commit", "-q", "-a", "-s", "-m", msg, env=_lab_env())
    folder = tmp_path / "series"
    _git(work, "format-patch", "-q", "-o", str(folder), f"{base}..HEAD")
    names = sorted(p.name for p in folder.glob("*.patch"))
    (folder / "series").write_text("".join(n + "\n" for n in names))
    (folder / "postings.toml").write_text(POSTINGS)
    (folder / "0000-cover-letter.patch").write_text(
        "From 0 Mon Sep 17 00:00:00 2001\nSubject: [PATCH 0/3] three\n\n"
        "Three small changes.\n\nfoliolab (3):\n  a: fix a\n"
    )
    monkeypatch.chdir(tmp_path)
    return tree, base, folder


def _post(
    tree: Path, base: str, folder: Path, out: Path, upstream: str = "a" * 40
) -> int:
    given = ["--base-commit", upstream] if upstream else []
    return cli.main(
        [
            "post",
            str(folder),
            "--base",
            f"git:{tree}@main",
            *given,
            "--out",
            str(out),
        ]
    )


def _messages(mbox: Path) -> list[email.message.Message]:
    return list(mailbox.mbox(str(mbox), create=False))


def test_postings_split_the_series(world):
    _, _, folder = world
    one, two = DirSeries(folder).postings()
    assert [p.name for p in one.patches] == [
        "0001-a-fix-a.patch",
        "0003-c-fix-c.patch",
    ]
    assert (two.name, two.tree, len(two.patches)) == ("two", "mm-new", 1)
    assert one.credits[0].email == "dee@example.com"


@pytest.mark.parametrize(
    ("change", "says"),
    [
        # a patch in two postings
        (
            (
                'patches = ["0002-b-change-b.patch"]',
                'patches = ["0001-a-fix-a.patch"]',
            ),
            "0001-a-fix-a.patch is in two postings, one and two",
        ),
        # a patch in none
        (
            (
                '"0001-a-fix-a.patch", "0003-c-fix-c.patch"',
                '"0001-a-fix-a.patch"',
            ),
            "0003-c-fix-c.patch is in no posting",
        ),
        # an unknown name
        (
            ('"0003-c-fix-c.patch"]', '"0004-d.patch"]'),
            "posting one names 0004-d.patch, which is not a patch of `series`",
        ),
        # an empty posting
        (
            ('patches = ["0002-b-change-b.patch"]', "patches = []"),
            "posting two has no patches",
        ),
        (
            ('tree = "mm-new"', 'tree = "linux-next"'),
            "posting two goes to linux-next, not a branch",
        ),
        (
            ('name = "two"', 'name = "two"\nrequires = ["three"]'),
            "posting two requires ['three'], not postings before it",
        ),
    ],
)
def test_postings_refused_in_one_line(world, change, says):
    _, _, folder = world
    f = folder / "postings.toml"
    f.write_text(f.read_text().replace(*change))
    with pytest.raises(UsageError) as e:
        DirSeries(folder).postings()
    assert says in e.value.message
    assert "\n" not in e.value.one_line()


def test_post_writes_what_b4_and_git_am_take(world, tmp_path):
    tree, base, folder = world
    out = tmp_path / "out"
    assert _post(tree, base, folder, out) == 0
    one, two = out / "one.mbox", out / "two.mbox"
    assert sorted(p.name for p in out.iterdir()) == ["one.mbox", "two.mbox"]
    for mbox in (one, two):
        text = mbox.read_text()
        assert "foliolab" not in text and "example.org" not in text
        assert "Suggested-by: Sue Gest <sue@example.com>" in text or (
            mbox == two
        )
    sender = f"{SENDER[0]} <{SENDER[1]}>"

    cover, *patches = _messages(one)
    assert cover["Subject"] == "[PATCH mm-hotfixes 0/2] fix a and c"
    assert [p["Subject"] for p in patches] == [
        "[PATCH mm-hotfixes 1/2] a: fix a",
        "[PATCH mm-hotfixes 2/2] c: fix c",
    ]
    for m in (cover, *patches):
        assert m["From"] == sender
        assert "Alice Maint <alice@example.com>" in m["To"]
        assert "Carol Maint <carol@example.com>" in m["To"]
        assert "bob@example.com" not in m["To"] + m["Cc"]
        assert "tree-list@example.com" in m["Cc"]
        assert "Dee Signer <dee@example.com>" in m["Cc"]
    for p in patches:
        assert p["In-Reply-To"] == cover["Message-Id"]
        assert p["References"] == cover["Message-Id"]
        body = p.get_payload()
        assert f"Signed-off-by: {sender}" in body
    # the patch's own trailers: Cc'd on it and on the cover
    assert "stable@vger.kernel.org" in patches[0]["Cc"]
    assert "stable@vger.kernel.org" in cover["Cc"]
    assert "sue@example.com" in cover["Cc"]
    body = cover.get_payload()
    assert f"base-commit: {'a' * 40}\n" in body
    assert "change-id: 20261129-one-0123456789ab\n" in body
    assert "https://lore.example/dee-v3" in body
    assert cover["X-Change-ID"] == "20261129-one-0123456789ab"
    assert cover["Message-Id"].startswith("<")
    assert "-one-v1-0-" in cover["Message-Id"]
    assert cover["Message-Id"].endswith("@example.net>")

    (only,) = _messages(two)
    assert only["Subject"] == "[PATCH mm-new] b: change b"
    assert "base-commit: " in only.get_payload()

    b4 = Path(sys.executable).parent / "b4"
    assert b4.exists(), "b4 is missing: pip install -r requirements-dev.txt"
    expect = {"one": {"a.c": 1, "b.c": 0, "c.c": 1}, "two": {"b.c": 1}}
    for name, files in expect.items():
        # b4 reads the posting back, offline; git am applies what it gives
        clone = tmp_path / f"am-{name}"
        _git(tmp_path, "clone", "-q", str(tree), str(clone))
        got = tmp_path / f"b4-{name}"
        subprocess.run(
            [
                str(b4),
                "--offline-mode",
                "am",
                "-m",
                str(out / f"{name}.mbox"),
                "-o",
                str(got),
            ],
            cwd=clone,
            check=True,
            capture_output=True,
            text=True,
        )
        (mbx,) = got.glob("*.mbx")
        _git(clone, "am", "-q", str(mbx))
        for f, value in files.items():
            assert (clone / f).read_text() == f"int {f[0]} = {value};\n"
        log = _git(clone, "log", "--format=%an <%ae>%n%b", f"{base}..HEAD")
        assert f"Signed-off-by: {sender}" in log
        assert "foliolab" not in log


def test_post_refused_without_an_identity(
    world, tmp_path, monkeypatch, capsys
):
    tree, base, folder = world
    empty = tmp_path / "empty-home"
    empty.mkdir()
    monkeypatch.setenv("HOME", str(empty))
    out = tmp_path / "out"
    assert _post(tree, base, folder, out) == UsageError.exit_code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "git has no user.name and user.email configured" in err[0]
    assert not out.exists()


def test_post_writes_a_new_directory_only(world, tmp_path, capsys):
    tree, base, folder = world
    out = tmp_path / "out"
    out.mkdir()
    assert _post(tree, base, folder, out) == UsageError.exit_code
    assert "exists: post writes into a new directory only" in (
        capsys.readouterr().err
    )
    assert list(out.iterdir()) == []


def test_a_posting_that_does_not_apply_writes_nothing(world, tmp_path):
    tree, base, folder = world
    (tree / "c.c").write_text("int c = 5;\n")
    _git(tree, "commit", "-q", "-a", "-m", "c moved on", env=_lab_env())
    out = tmp_path / "out"
    assert _post(tree, base, folder, out) != 0
    assert not out.exists()


def test_a_clone_is_its_own_base_commit(world, tmp_path):
    tree, base, folder = world
    out = tmp_path / "out"
    assert _post(tree, base, folder, out, upstream="") == 0
    assert f"base-commit: {base}\n" in (out / "one.mbox").read_text()


def test_a_debian_base_needs_its_upstream_commit(tmp_path, capsys):
    from foliolab.kernel.sources.debian import DebianSource
    from foliolab.series import post

    with pytest.raises(UsageError) as e:
        post.base_tree(DebianSource("debian:7.3", "7.3"), None)
    assert "give --base-commit SHA" in e.value.one_line()
    with pytest.raises(UsageError) as e:
        post.base_tree(DebianSource("debian:7.3", "7.3"), "50269104ff40")
    assert "is not a commit id of 40 hex digits" in e.value.message


def test_a_trailer_note_is_not_part_of_the_address():
    """stable-kernel-rules' "Cc: stable@vger.kernel.org # note": the
    note after " #" is not Cc'd as part of an address."""
    from foliolab.series import post

    who = post.Sender("A Sender", "sender@example.org")
    message = (
        "Fix.\n\nCc: stable@vger.kernel.org # needs 29f40594a281\n"
        "Cc: Ryan Roberts <ryan.roberts@arm.com>\n"
    )
    assert post.person_trailers(message, who) == [
        "stable@vger.kernel.org",
        "Ryan Roberts <ryan.roberts@arm.com>",
    ]
