"""`foliolab run --count --root FUNCTION`: a function the kernel's source
does not have is refused in one line (exit 2) once the tree is there and
before the kernel is built; one it has goes on to the build."""

import gitrepo
import pytest

from foliolab import cli, errors
from foliolab.kernel import build, image, source, trees


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A clone with try_to_unmap() and the tree `run` builds from it; the
    build and the image fail the test if they are reached."""
    repo = tmp_path / "linux"
    (repo / "mm").mkdir(parents=True)
    (repo / "mm" / "rmap.c").write_text("void try_to_unmap(void) {}\n")

    def git(*argv: str) -> str:
        return gitrepo.git(repo, *argv)

    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "up")
    t = source.Tree("vanilla", repo, git("rev-parse", "HEAD"), "")
    monkeypatch.setattr(trees, "variant_tree", lambda *a: t)
    monkeypatch.setattr(
        image, "build_image", lambda *a: pytest.fail("built the image")
    )
    return t


def run(root: str) -> int:
    return cli.main(
        ["run", "--count", "--accel", "tcg", "--root", root, "--", "true"]
    )


def test_an_unknown_root_is_refused_before_the_build(
    tree, monkeypatch, capsys
):
    monkeypatch.setattr(
        build, "build_kernel", lambda *a, **k: pytest.fail("built a kernel")
    )
    rc = run("no_such_fn")
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == errors.UsageError.exit_code == 2
    assert err == [
        "foliolab: error: --root no_such_fn: the vanilla kernel has no "
        f"such function (not in its source, commit {tree.commit[:12]}); "
        "check its spelling in System.map (a static function may carry "
        "a suffix such as .isra.0)"
    ]


@pytest.mark.parametrize("root", ["try_to_unmap", "try_to_unmap.isra.0"])
def test_a_root_the_source_has_goes_on_to_the_build(tree, monkeypatch, root):
    class Built(Exception):
        pass

    def build_kernel(*a: object, **k: object) -> None:
        raise Built

    monkeypatch.setattr(build, "build_kernel", build_kernel)
    with pytest.raises(Built):
        run(root)
