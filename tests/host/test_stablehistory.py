"""`foliolab check --since`: a series read against a stable update, on
small trees made here.

The "stable" repository has an old release (v1.2.3) and a base (v1.2.5)
whose update removed a call from unmap_one() and changed walk_one(). The
series on the base has two patches: 0001 only changes walk_one() (and adds
a helper above unmap_one, so the next patch's hunks are at other lines
than the base's), 0002 brings the removed call back, wrapped differently
and with a comment in it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from foliolab import cli, errors
from foliolab.kernel import debian, source, sources
from foliolab.series import sincespec
from foliolab.series import stablehistory as sh

MAKEFILE = "VERSION = 1\nPATCHLEVEL = 2\nSUBLEVEL = {}\nEXTRAVERSION =\n"

OLD_C = """\
// SPDX-License-Identifier: GPL-2.0
#include <linux/mm.h>

static bool unmap_one(struct folio *folio, struct vm_area_struct *vma,
		      unsigned long addr, pmd_t *pmd)
{
	bool ret = true;

	if (!folio_mapped(folio)) {
		if (unmap_huge_pmd_locked(vma, addr, pmd,
					  folio))
			goto done;
		if (!ret)
			return false;
	}

	split_huge_pmd(vma, pmd, addr);
done:
	return ret;
}

static int walk_one(struct folio *folio)
{
	int nr = folio_nr_pages(folio);

	return nr;
}
"""

# The stable update: the call (and the early return after it) is gone
# from unmap_one; walk_one counts in a long.
BASE_C = """\
// SPDX-License-Identifier: GPL-2.0
#include <linux/mm.h>

static bool unmap_one(struct folio *folio, struct vm_area_struct *vma,
		      unsigned long addr, pmd_t *pmd)
{
	bool ret = true;

	if (!folio_mapped(folio)) {
		folio_lock(folio);
	}

	split_huge_pmd(vma, pmd, addr);
done:
	return ret;
}

static int walk_one(struct folio *folio)
{
	long nr = folio_nr_pages(folio);

	return nr;
}
"""

# 0001: a helper above unmap_one, and walk_one changed again.
PATCH1_C = BASE_C.replace(
    "#include <linux/mm.h>\n",
    "#include <linux/mm.h>\n\nstatic void note(struct folio *folio)\n"
    "{\n\tfolio_get(folio);\n}\n",
).replace("\treturn nr;\n", "\tnote(folio);\n\treturn nr;\n")

# 0002: the removed call back, re-wrapped, with a comment between its
# tokens, inside a new condition.
PATCH2_C = PATCH1_C.replace(
    "\t\tfolio_lock(folio);\n",
    "\t\tfolio_lock(folio);\n"
    "\t\tif (folio_test_lazyfree(folio) &&\n"
    "\t\t    unmap_huge_pmd_locked(vma, addr, /* the PMD */\n"
    "\t\t\t\t\t  pmd, folio)) goto done;\n",
)

# A patch that adds code looking like what was removed, and is not it:
# another call with the same arguments and goto, then the removed early
# return itself, exactly (20 tokens in a row that the stable update
# removed from this function, but no call among them).
LOOKALIKE_C = PATCH1_C.replace(
    "\t\tfolio_lock(folio);\n",
    "\t\tfolio_lock(folio);\n"
    "\t\tif (try_lock_pmd(vma, addr, pmd, folio))\n"
    "\t\t\tgoto done;\n"
    "\t\tif (!ret)\n\t\t\treturn false;\n",
)


def _commit(repo: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    source.git(repo, "add", "-A")
    source.git(repo, "commit", "-q", "-m", message)


def make_stable(tmp_path: Path, series_texts: list[str]) -> tuple[Path, Path]:
    """The stable repository and a series directory made from commits of
    ``series_texts`` (mm/rmap.c after each patch) on the base."""
    repo = tmp_path / "stable"
    repo.mkdir()
    source.git(repo, "init", "-q", "-b", "stable")
    _commit(
        repo,
        {"Makefile": MAKEFILE.format(3), "mm/rmap.c": OLD_C},
        "Linux 1.2.3",
    )
    source.git(repo, "tag", "v1.2.3")
    _commit(
        repo,
        {"Makefile": MAKEFILE.format(5), "mm/rmap.c": BASE_C},
        "Linux 1.2.5",
    )
    source.git(repo, "tag", "v1.2.5")
    _commit(repo, {"Makefile": MAKEFILE.format(7)}, "Linux 1.2.7")
    source.git(repo, "tag", "v1.2.7")
    source.git(repo, "checkout", "-q", "-b", "dev", "v1.2.5")
    for n, text in enumerate(series_texts, 1):
        _commit(repo, {"mm/rmap.c": text}, f"mm: patch {n}")
    series = tmp_path / "series"
    source.git(repo, "format-patch", "-q", "-o", str(series), "v1.2.5..dev")
    names = sorted(p.name for p in series.glob("*.patch"))
    (series / "series").write_text("".join(n + "\n" for n in names))
    return repo, series


def snapshot(repo: Path, tag: str) -> sincespec.Snapshot:
    commit = source.resolve_ref(repo, tag)
    return sincespec.Snapshot(
        tag, repo, commit, sincespec.release_of_makefile(repo, commit)
    )


def history_of(repo: Path, series: Path) -> sh.HistoryReport:
    return sh.check_series(
        sources.read_patches(series),
        snapshot(repo, "v1.2.3"),
        snapshot(repo, "v1.2.5"),
    )


RESTORED = (
    "0002 mm/rmap.c unmap_one() restored +17-18 <- v1.2.3 "
    'mm/rmap.c:10-14 -"if (unmap_huge_pmd_locked(vma, addr, pmd, '
    'folio)) goto done; if (!ret) return..."'
)
TOUCHES_1 = (
    "0001 mm/rmap.c walk_one() touches +27 <- v1.2.3 "
    'mm/rmap.c:24 -"int nr = folio_nr_pages(folio);"'
)
TOUCHES_2 = (
    "0002 mm/rmap.c unmap_one() touches +16-18 <- v1.2.3 "
    'mm/rmap.c:10-14 -"if (unmap_huge_pmd_locked(vma, ad..."'
)


def test_a_rewrapped_restored_call_is_named_with_its_stable_lines(tmp_path):
    repo, series = make_stable(tmp_path, [PATCH1_C, PATCH2_C])
    report = history_of(repo, series)
    assert [f.line() for f in report.findings] == [
        TOUCHES_1,
        RESTORED,
        TOUCHES_2,
    ]
    assert (report.touched, report.changed, report.changes) == (1, 1, 2)
    with pytest.raises(errors.HistoryError, match="patch 0002 restores"):
        report.raise_if_restored()


def test_lookalike_code_is_not_a_restoration(tmp_path):
    repo, series = make_stable(tmp_path, [PATCH1_C, LOOKALIKE_C])
    report = history_of(repo, series)
    assert [f.kind for f in report.findings] == [sh.Kind.TOUCHES] * 2
    report.raise_if_restored()  # touches only: no error


@pytest.mark.parametrize(
    "code, enough",
    [
        ("return false;", False),
        ("}", False),
        ("if (!ret) return false; }", False),
        ("(vma, addr, pmd, folio)) goto done; if (!ret) return false;", False),
        ("unmap_huge_pmd_locked(vma, addr, pmd, folio)) goto done;", True),
        ("folio_unlock(folio); folio_put(folio); }", True),
    ],
)
def test_what_is_enough_to_be_a_restoration(code, enough):
    from foliolab.series import csource

    assert sh.substantial(csource.tokens(code)) is enough


def test_code_the_tree_already_has_is_not_restored_again(tmp_path):
    """A later patch that only re-wraps the restored call names nothing
    new: its tokens were in the function before it."""
    rewrapped = PATCH2_C.replace(
        "addr, /* the PMD */\n\t\t\t\t\t  pmd, folio)) goto done;\n",
        "addr, pmd, folio))\n\t\t\tgoto done;\n",
    )
    assert rewrapped != PATCH2_C
    repo, series = make_stable(tmp_path, [PATCH1_C, PATCH2_C, rewrapped])
    report = history_of(repo, series)
    assert [f.patch for f in report.restored()] == ["0002"]


def run(capsys, *argv):
    rc = cli.main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@pytest.fixture
def pinned(monkeypatch):
    """The pinned base replaced by a test repository's v1.2.5; ``calls``
    counts how often the base was prepared."""
    calls = []

    def use(repo: Path) -> None:
        base = snapshot(repo, "v1.2.5")
        monkeypatch.setattr(sincespec, "pinned_release", lambda: base.release)
        monkeypatch.setattr(
            sincespec, "pinned_base", lambda: calls.append(1) or base
        )

    use.calls = calls
    return use


def test_the_command_prints_a_line_a_finding_and_fails(
    tmp_path, capsys, pinned
):
    repo, series = make_stable(tmp_path, [PATCH1_C, PATCH2_C])
    pinned(repo)
    rc, out, err = run(
        capsys,
        "check",
        "--patches",
        str(series),
        "--since",
        f"git:{repo}@v1.2.3",
        "--history-only",
    )
    assert rc == errors.HistoryError.exit_code == 13
    lines = out.splitlines()
    assert lines[1:-1] == [TOUCHES_1, RESTORED, TOUCHES_2]
    assert lines[-1] == "history: 1 restored, 2 touches"
    assert "patch 0002 restores code" in err


def test_touches_alone_pass(tmp_path, capsys, pinned):
    repo, series = make_stable(tmp_path, [PATCH1_C])
    pinned(repo)
    rc, out, _ = run(
        capsys,
        "check",
        "--patches",
        str(series),
        "--since",
        f"git:{repo}@v1.2.3",
        "--history-only",
    )
    assert rc == 0
    assert out.splitlines()[1:] == [
        TOUCHES_1,
        "history: 0 restored, 1 touches",
    ]


@pytest.mark.parametrize(
    "since, message",
    [
        ("git:{repo}@v9.9", "'v9.9' is not a commit in"),
        (
            "git:{repo}@v1.2.7",
            "is Linux 1.2.7, not older than the base's 1.2.5",
        ),
        (
            "git:{repo}@v1.2.5",
            "is Linux 1.2.5, not older than the base's 1.2.5",
        ),
        ("git:{tmp}/nowhere@v1.2.3", "is not a git repository"),
        ("git:{repo}", "is not git:PATH@REF"),
        ("v1.2.3", "is not a tree spec"),
        ("debian:latest", "debian:latest is not a kernel version"),
    ],
)
def test_bad_since_is_one_line_before_anything_else(
    tmp_path, capsys, pinned, since, message
):
    repo, series = make_stable(tmp_path, [PATCH1_C, PATCH2_C])
    pinned(repo)
    rc, out, err = run(
        capsys,
        "check",
        "--patches",
        str(series),
        "--since",
        since.format(repo=repo, tmp=tmp_path),
        "--history-only",
    )
    assert rc == errors.UsageError.exit_code
    assert out == "" and pinned.calls == []
    (line,) = err.splitlines()
    assert line.startswith("foliolab: error: ") and message in line


def test_history_only_needs_since(capsys):
    rc, _, err = run(capsys, "check", "--history-only")
    assert rc == errors.UsageError.exit_code and "needs --since" in err


def _archive(monkeypatch, have: list[str]) -> None:
    monkeypatch.setattr(
        debian, "update_lists", lambda force=False, looking_for=None: None
    )
    monkeypatch.setattr(debian, "_lists_age", lambda: 0.0)
    monkeypatch.setattr(debian, "versions", lambda name: have)
    monkeypatch.setattr(
        debian, "prepare", lambda pkg: pytest.fail(f"fetched {pkg}")
    )


@pytest.mark.parametrize(
    "spec, message",
    [
        ("6.12.999", "linux-source-6.12 6.12.999 is not in Debian's archive"),
        ("6.12.118", "is Linux 6.12.118, not older than the base's 6.12.117"),
        ("6.12", "is Linux 6.12.118, not older than the base's 6.12.117"),
    ],
)
def test_a_debian_since_is_checked_before_it_is_fetched(
    monkeypatch, spec, message
):
    _archive(monkeypatch, ["6.12.118-1", "6.12.107-1", "6.12.107-1~deb12u1"])
    with pytest.raises(errors.UsageError, match=message):
        sincespec.resolve(
            sincespec.parse(f"debian:{spec}"), sincespec.Release(6, 12, 117)
        )


def test_the_pinned_base_release_is_its_upstream_part():
    assert sincespec.release_of_debian(
        "6.12.117-1~deb12u1"
    ) == sincespec.Release(6, 12, 117)
    assert sincespec.Release(6, 12, 107) < sincespec.Release(6, 12, 117)


def test_without_history_only_the_history_comes_first(
    tmp_path, capsys, pinned, monkeypatch
):
    """The findings are printed before anything is built, the usual
    checks still run, and the restoration fails the command after them."""
    from foliolab.kernel import trees
    from foliolab.series import check as seriescheck

    repo, series = make_stable(tmp_path, [PATCH1_C, PATCH2_C])
    pinned(repo)
    seen = []

    def checks(spec, *args):
        seen.append(capsys.readouterr().out)
        ok = seriescheck.Step(True, "ok")
        return [
            seriescheck.PatchCheck(i, p.name, ok, ok, ok)
            for i, p in enumerate(spec.series().patches, 1)
        ]

    monkeypatch.setattr(seriescheck, "check_series", checks)
    # the apply check needs the real base; this series is for the small one
    monkeypatch.setattr(trees, "tree_of", lambda spec: None)
    rc, out, err = run(
        capsys,
        "check",
        "--patches",
        str(series),
        "--since",
        f"git:{repo}@v1.2.3",
        "--out",
        str(tmp_path / "out"),
    )
    assert RESTORED in seen[0].splitlines()
    assert "all 2 patches pass" in out
    assert rc == errors.HistoryError.exit_code and "0002 restores" in err
