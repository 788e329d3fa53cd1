"""A series on any source spec (SOURCE+DIR[:N]), with a small git tree as
the user's kernel clone and a small cache standing in for the base's: a
series that does not apply is refused before anything builds, one that
applies is recorded with the tree it went on. No network, no kernel."""

import pytest
from gitrepo import git

from foliolab import cli, errors
from foliolab.commands import measure as measure_cmd
from foliolab.kernel import (
    build,
    image,
    source,
    sources,
    store,
    trees,
)
from foliolab.kernel import (
    specs as kernels,
)
from foliolab.kernel.build import Kernel
from foliolab.kernel.sources.debian import DebianSource
from foliolab.kernelrecord import SeriesRecord
from foliolab.run import orchestrate
from foliolab.run import record as runrecord

RMAP = "int a;\nint b;\nint c;\n"


@pytest.fixture
def clone(tmp_path):
    """A kernel clone of two commits: a Makefile with its version and
    mm/rmap.c."""
    r = tmp_path / "linux"
    (r / "mm").mkdir(parents=True)
    git(r, "init", "-q", "-b", "master")
    (r / "Makefile").write_text("VERSION = 7\nPATCHLEVEL = 3\n")
    (r / "mm" / "rmap.c").write_text("int a;\n")
    git(r, "add", ".")
    git(r, "commit", "-q", "-m", "v7.3-rc1")
    (r / "mm" / "rmap.c").write_text(RMAP)
    git(r, "commit", "-q", "-am", "v7.3")
    return r


def series(clone, d, name, before, after):
    """A series of one patch turning mm/rmap.c from ``before`` into
    ``after`` (made on a branch of the clone, then dropped)."""
    git(clone, "checkout", "-q", "-b", "tmp")
    (clone / "mm" / "rmap.c").write_text(before)
    git(clone, "commit", "-q", "-am", "before", "--allow-empty")
    (clone / "mm" / "rmap.c").write_text(after)
    git(clone, "commit", "-q", "-am", "mm/rmap: change")
    d.mkdir()
    (d / name).write_text(git(clone, "format-patch", "-1", "--stdout") + "\n")
    (d / "series").write_text(name + "\n")
    git(clone, "checkout", "-q", "master")
    git(clone, "branch", "-q", "-D", "tmp")
    return d


@pytest.fixture
def good(clone, tmp_path):
    return series(
        clone,
        tmp_path / "good",
        "0001-good.patch",
        RMAP,
        "int a;\nint B;\nint c;\n",
    )


@pytest.fixture
def bad(clone, tmp_path):
    return series(
        clone,
        tmp_path / "bad",
        "0001-bad.patch",
        "int a;\nint other;\nint c;\n",
        "int a;\nint O;\nint c;\n",
    )


@pytest.fixture
def cache_repo(tmp_cache, monkeypatch):
    """The cache's repository (where git: commits are fetched), empty: the
    pinned base is not unpacked for these tests."""
    repo = tmp_cache / "linux"

    def prepare_base():
        if not (repo / ".git").exists():
            repo.mkdir(parents=True)
            git(repo, "init", "-q")
        return repo

    monkeypatch.setattr(source, "prepare_base", prepare_base)
    return repo


@pytest.fixture
def nothing_built(monkeypatch):
    def no(*a, **k):
        pytest.fail("built something")

    monkeypatch.setattr(build, "build_kernel", no)
    monkeypatch.setattr(store, "build_and_keep", no)
    monkeypatch.setattr(image, "build_image", no)


def test_a_series_that_does_not_apply_is_refused_before_anything_builds(
    clone, good, bad, cache_repo, tmp_cache, tmp_path, nothing_built, capsys
):
    """Two kernels that would build, and one whose series does not apply
    to its tree: one line naming the patch, the file and the tree, and
    nothing built, no run directory."""
    out = tmp_path / "out"
    head = git(clone, "rev-parse", "HEAD")
    rc = cli.main(
        [
            "compare",
            "--kernel",
            f"a=git:{clone}@HEAD",
            "--kernel",
            f"b=git:{clone}@HEAD+{good}",
            "--kernel",
            f"c=git:{clone}@master+{bad}",
            "--workloads",
            "pageout",
            "--runs",
            "2",
            "--out",
            str(out),
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == errors.PatchApplyError.exit_code != 0
    assert err == [
        f"foliolab: error: {bad}/0001-bad.patch does not apply to mm/rmap.c "
        f"on git:{clone}@master ({clone} {head[:12]}): its hunk at line 1 "
        f"does not match; log: {tmp_cache}/logs/am-0001-bad.patch.log"
    ]
    assert not out.exists()
    # the user's clone is as it was
    assert git(clone, "status", "--porcelain") == ""
    assert (clone / "mm" / "rmap.c").read_text() == RMAP


def test_check_refuses_a_series_on_its_base_before_building(
    clone, bad, cache_repo, nothing_built, capsys
):
    rc = cli.main(
        ["check", "--patches", str(bad), "--base", f"git:{clone}@HEAD"]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == errors.PatchApplyError.exit_code
    assert (
        len(err) == 1
        and f"0001-bad.patch does not apply to mm/rmap.c on git:{clone}@HEAD ("
        in err[0]
    )


@pytest.mark.parametrize(
    "base, says",
    [
        (
            "image:/boot/bzImage",
            "--base image:/boot/bzImage: a series is put on "
            "base, git:PATH@REF or debian:VERSION",
        ),
        ("git:/nope@HEAD", "/nope is not a git repository"),
    ],
)
def test_check_takes_a_source_spec_as_its_base(
    base, says, good, capsys, nothing_built
):
    rc = cli.main(["check", "--patches", str(good), "--base", base])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == errors.UsageError.exit_code
    assert len(err) == 1 and says in err[0]


def test_a_series_on_a_clone_is_applied_once_and_recorded(
    clone, good, cache_repo, monkeypatch
):
    """The series goes on the fetched commit, is kept per tree and content,
    and the manifest records the spec, the tree and the series' sha."""
    head = git(clone, "rev-parse", "HEAD")
    spec = kernels.parse_kernel(f"b=git:{clone}@HEAD+{good}")
    tree = trees.tree_of(spec)
    digest = sources.read_patches(good).digest
    assert (
        git(cache_repo, "rev-parse", f"refs/foliolab/series/{head}/{digest}")
        == tree.commit
    )
    assert git(cache_repo, "rev-parse", f"{tree.commit}~1") == head
    assert (
        git(cache_repo, "show", f"{tree.commit}:mm/rmap.c")
        == "int a;\nint B;\nint c;"
    )
    assert tree.version() == (7, 3) and spec.source.slot() == "linux-7.3"
    assert trees.tree_of(spec).commit == tree.commit  # found again

    req = measure_cmd._request(
        *_compare_args(f"a=git:{clone}@HEAD", f"b=git:{clone}@HEAD+{good}")
    )
    run = req.stages()
    m = runrecord.start_manifest(run)
    monkeypatch.setattr(
        store,
        "prepare",
        lambda specs, arch, purpose, trees: {
            k.name: _kernel(k.name, trees[k.name]) for k in specs
        },
    )
    orchestrate.prepare_kernels(run.kernels, m)
    assert m.kernel("a").series is None
    import hashlib

    patch = hashlib.sha256((good / "0001-good.patch").read_bytes())
    assert m.kernel("b").series == SeriesRecord(
        str(good),
        1,
        digest,
        f"git:{clone}@HEAD",
        f"{clone} {head[:12]}",
        head,
        [patch.hexdigest()],  # KCIDB's patchset_hash is made of them
    )
    rec = m.to_json()["kernel_records"][1]
    assert rec["spec"] == f"git:{clone}@HEAD+{good}"
    assert rec["series"]["sha"] == digest
    assert rec["given"]["onto"]["kind"] == "git"


def test_a_prefix_of_none_is_the_tree_itself(clone, good, cache_repo):
    head = git(clone, "rev-parse", "HEAD")
    t = trees.tree_of(kernels.parse_kernel(f"z=git:{clone}@HEAD+{good}:0"))
    assert (t.commit, t.series_digest, t.onto.commit) == (head, "", head)


def test_attribute_steps_through_the_series_on_its_base(good, monkeypatch):
    args = cli.build_parser().parse_args(
        [
            "attribute",
            "--at",
            "1",
            "--series",
            str(good),
            "--base",
            "debian:7.3",
            "--workloads",
            "pageout",
        ]
    )
    specs = measure_cmd.attribute_specs(args)
    assert [(k.name, k.text) for k in specs] == [
        ("base", "debian:7.3"),
        ("p1", f"debian:7.3+{good}:1"),
    ]
    assert specs[1].source == DebianSource("debian:7.3", "7.3")
    plain = measure_cmd.attribute_specs(
        cli.build_parser().parse_args(
            ["attribute", "--at", "1", "--series", str(good)]
        )
    )
    assert plain == [
        kernels.parse_kernel("base=base"),
        kernels.parse_kernel(f"p1=base+{good}:1"),
    ]


def _compare_args(*kernel_args):
    argv = ["compare", "--workloads", "pageout", "--runs", "2"]
    for k in kernel_args:
        argv += ["--kernel", k]
    args = cli.build_parser().parse_args(argv)
    args.argv = argv
    return args, measure_cmd._kernel_args(args), args.patches, {}


def _kernel(name, tree):
    return Kernel(
        name,
        "perf",
        "x86_64",
        tree.path,
        tree.path / "bzImage",
        tree.commit,
        "5ha",
        0.0,
    )


def test_run_and_test_refuse_it_before_building_too(
    clone, good, bad, cache_repo, nothing_built
):
    """`run` and `test` take --kernel NAME=SPEC through tree()."""
    with pytest.raises(
        errors.PatchApplyError,
        match="0001-bad.patch does not apply to mm/rmap.c on git:",
    ):
        trees.variant_tree("patched", None, f"n=git:{clone}@HEAD+{bad}")
    t = trees.variant_tree("patched", None, f"n=git:{clone}@HEAD+{good}")
    assert t.variant == "n" and t.series_digest


def test_check_builds_each_prefix_on_its_base(
    clone, cache_repo, tmp_path, monkeypatch
):
    """seriescheck on a git: base: checkpatch from that tree, then the
    tree with patches 1..i, each built (stood in here) and booted."""
    from types import SimpleNamespace

    from foliolab.arch import get_arch
    from foliolab.series import check as seriescheck

    head = git(clone, "rev-parse", "HEAD")
    for text in ("int a;\nint B;\nint c;\n", "int a;\nint B;\nint C;\n"):
        (clone / "mm" / "rmap.c").write_text(text)
        git(clone, "commit", "-q", "-am", "mm/rmap: change")
    d = tmp_path / "two"
    git(clone, "format-patch", "-q", "-2", "-o", str(d))
    (d / "series").write_text(
        "".join(p.name + "\n" for p in sorted(d.glob("*.patch")))
    )
    git(clone, "reset", "-q", "--hard", head)
    built, checked = [], []
    monkeypatch.setattr(
        seriescheck,
        "run_checkpatch",
        lambda repo, p: (checked.append(repo), seriescheck.Step(True, "ok"))[
            1
        ],
    )
    monkeypatch.setattr(
        image,
        "build_image",
        lambda arch, kselftests=None: SimpleNamespace(
            path=tmp_path / "initrd"
        ),
    )
    monkeypatch.setattr(
        build,
        "build_kernel",
        lambda tree, arch, config, keep=None: (
            built.append(tree),
            _kernel(tree.variant, tree),
        )[1],
    )
    monkeypatch.setattr(
        seriescheck,
        "boot_once",
        lambda *a: SimpleNamespace(
            clean=True, exit_code=0, elapsed=1.0, console=tmp_path / "c.log"
        ),
    )
    spec = kernels.with_series(
        kernels.parse_base(f"git:{clone}@{head}"), "patched", d
    )
    checks = seriescheck.check_series(
        spec, get_arch("x86_64"), "perf", "tcg", tmp_path / "out"
    )
    assert [c.ok for c in checks] == [True, True]
    assert checked == [cache_repo, cache_repo]
    assert [
        git(cache_repo, "rev-list", "--count", f"{head}..{t.commit}")
        for t in built
    ] == ["1", "2"]
    assert [
        git(cache_repo, "show", f"{t.commit}:mm/rmap.c") for t in built
    ] == ["int a;\nint B;\nint c;", "int a;\nint B;\nint C;"]
    assert all(t.variant == "patched" for t in built)
