"""Kernel build command lines and directories, per architecture."""

from foliolab.kernel import build
from foliolab.arch import ARCHES


def test_arm64_make_argv_cross_compiles():
    argv = build.make_argv("/tree", "/out", ARCHES["arm64"], "Image")
    assert "ARCH=arm64" in argv
    assert "CROSS_COMPILE=aarch64-linux-gnu-" in argv
    assert "CC=ccache aarch64-linux-gnu-gcc" in argv
    assert "HOSTCC=ccache gcc" in argv and argv[-1] == "Image"


def test_x86_make_argv_is_native():
    argv = build.make_argv("/tree", "/out", ARCHES["x86_64"], "bzImage")
    assert "ARCH=x86" in argv and "CROSS_COMPILE=" in argv
    assert "CC=ccache gcc" in argv


def test_build_dirs_are_keyed_by_arch(tmp_cache):
    dirs = {build.build_dir(a, "perf", "vanilla") for a in ARCHES.values()}
    assert {d.name for d in dirs} == {"x86_64-perf-vanilla",
                                      "arm64-perf-vanilla"}


def _fake_make(tmp_path, monkeypatch):
    """A `make` on PATH that writes O=DIR/.config from KCONFIG_ALLCONFIG's
    options plus CONFIG_FROM_TREE naming the tree (-C), as kconfig would
    carry an option the tree has, and logs every call."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "make-calls"
    (bin_dir / "make").write_text(f"""#!/bin/sh
echo "$*" >> {calls}
for a; do
  case $a in
    -C) next=tree ;;
    O=*) out=${{a#O=}} ;;
    KCONFIG_ALLCONFIG=*) frag=${{a#KCONFIG_ALLCONFIG=}} ;;
    *) [ "$next" = tree ] && tree=$a; next= ;;
  esac
done
grep '^CONFIG_' "$frag" > "$out/.config"
echo "CONFIG_FROM_TREE=\\"$tree\\"" >> "$out/.config"
""")
    (bin_dir / "make").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return calls


def test_a_config_is_made_again_for_another_tree_in_the_same_slot(
        tmp_path, tmp_cache, monkeypatch):
    """The .config is a function of the tree and the fragment: a second
    commit built in the same directory gets its own allnoconfig, not the
    first one's .config through make's oldconfig."""
    from foliolab.kernel.source import Tree
    calls = _fake_make(tmp_path, monkeypatch)
    monkeypatch.setattr(Tree, "version", lambda self: (6, 12))
    arch = ARCHES["x86_64"]
    out = build.build_dir(arch, "perf", "patched")
    a = Tree("a", tmp_path / "tree-a", "a" * 40, "")
    b = Tree("b", tmp_path / "tree-b", "b" * 40, "")
    config = build.configure(a, arch, "perf", out)
    assert "tree-a" in config.read_text()
    build.configure(a, arch, "perf", out)            # same tree: kept
    assert calls.read_text().count("allnoconfig") == 1
    config = build.configure(b, arch, "perf", out)
    assert calls.read_text().count("allnoconfig") == 2
    assert "tree-b" in config.read_text()
    assert build.config_digest(config) != ""


def test_a_kept_kernel_boots_its_own_image_whatever_the_slot_builds_next(
        tmp_path):
    """Two suites on one cache (up and next of 7.3, 2026-11-26) shared a
    build directory and both booted the second one's kernel: a kernel kept
    in the run's directory is a copy that the next build cannot touch."""
    slot = tmp_path / "build"
    slot.mkdir()
    image = slot / "bzImage"
    image.write_bytes(b"kernel one")
    k = build.Kernel("up", "debug", "x86_64", slot, image, "a" * 40, "c",
                     1.0)
    kept = k.kept_in(tmp_path / "run" / "kernel")
    image.write_bytes(b"kernel two")          # the next build in the slot
    assert kept.image == tmp_path / "run" / "kernel" / "bzImage"
    assert kept.image.read_bytes() == b"kernel one"
    assert kept.build_dir == slot and kept.commit == k.commit
