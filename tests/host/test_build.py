"""Kernel build command lines and directories, per architecture."""

import threading
import time

from foliolab import hostsetup
from foliolab.arch import ARCHES
from foliolab.kernel import build, source
from foliolab.kernel.source import Tree


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


def test_what_a_caller_also_keeps_is_copied_before_the_slot_is_free(
        tmp_path, monkeypatch):
    """The coverage run copied its notes files from the build directory
    after the build lock was gone, so a build of another series in the
    slot could hand it the wrong notes: also_keep runs while the lock is
    held, and a second build waits until it is done."""
    monkeypatch.setenv("FOLIOLAB_CACHE", str(tmp_path / "cache"))
    tree = Tree("a", tmp_path / "linux", "a" * 40, "")
    tree.path.mkdir()
    slot = tmp_path / "build"
    slot.mkdir()
    (slot / "bzImage").write_bytes(b"kernel")
    built = build.Kernel("a", "coverage", "x86_64", slot, slot / "bzImage",
                         "a" * 40, "c", 1.0)
    monkeypatch.setattr(hostsetup, "ensure_arch", lambda arch: None)
    monkeypatch.setattr(build, "_build_checked_out",
                        lambda *args: built)
    order = []

    def next_build():
        with source.checkout_lock(tree.path):
            order.append("next build")

    def copy_notes(kernel):
        assert kernel is built
        other = threading.Thread(target=next_build)
        other.start()
        time.sleep(0.3)                 # long enough for it to get in
        order.append("notes copied")
        copy_notes.other = other

    build.build_kernel(tree, ARCHES["x86_64"], "coverage",
                       also_keep=copy_notes)
    copy_notes.other.join()
    assert order == ["notes copied", "next build"]
