"""Kernel build command lines and directories, per architecture."""

import os
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
    assert "HOSTCC=env -u CCACHE_DEPEND ccache gcc" in argv
    assert argv[-1] == "Image"


def test_x86_make_argv_is_native():
    argv = build.make_argv("/tree", "/out", ARCHES["x86_64"], "bzImage")
    assert "ARCH=x86" in argv and "CROSS_COMPILE=" in argv
    assert "CC=ccache gcc" in argv


def test_an_image_does_not_say_which_directory_built_it(tmp_cache):
    """The banner's build number would count the links in the directory
    (a patched kernel built after the vanilla one in `base` said #2, from
    scratch #1): fixed, like the timestamp and the host."""
    env = build.make_env()
    assert env["KBUILD_BUILD_VERSION"] == "1"
    assert env["CCACHE_DEPEND"] == "1"  # the host's compiler: not
    assert "-u CCACHE_DEPEND" in build.HOSTCC
    assert env["KBUILD_BUILD_TIMESTAMP"] and env["KBUILD_BUILD_HOST"]


def test_build_dirs_are_keyed_by_arch(tmp_cache):
    dirs = {build.build_dir(a, "perf", "base") for a in ARCHES.values()}
    assert {d.name for d in dirs} == {"x86_64-perf-base", "arm64-perf-base"}


def _repo(path, versions):
    """A git repository at ``path`` with a commit per (VERSION,
    PATCHLEVEL) of its top Makefile; their ids, in order."""
    path.mkdir(parents=True)
    commits = []
    for i, (v, p) in enumerate(versions):
        (path / "Makefile").write_text(
            f"VERSION = {v}\nPATCHLEVEL = {p}\nSUBLEVEL = {i}\n"
        )
        source.git(path, "init", "-q") if i == 0 else None
        source.git(path, "add", "Makefile")
        source.git(path, "commit", "-q", "-m", f"{v}.{p}.{i}")
        commits.append(source.git(path, "rev-parse", "HEAD").stdout.strip())
    return commits


def test_every_commit_of_the_base_checkout_builds_in_one_directory(
    tmp_path, tmp_cache
):
    """The vanilla and the patched kernel (and a series' prefixes, a
    git: commit of 6.12) are built from one checkout, so in one directory:
    the second is an incremental build of the first (the trial of
    2026-11-26 built it from scratch in its own `patched` directory). A
    tree of another checkout (a Debian package's) or version has its
    own."""
    base, patched, up = _repo(source.base_repo(), [(6, 12), (6, 12), (7, 3)])
    repo = source.base_repo()
    slots = [
        build.slot_for(Tree(name, repo, commit, ""))
        for name, commit in [
            ("vanilla", base),
            ("patched", patched),
            ("s", patched),
            ("up", up),
        ]
    ]
    assert slots == ["base", "base", "base", "linux-7.3"]
    (deb,) = _repo(tmp_path / "debian" / "src" / "6.12.117", [(6, 12)])
    assert (
        build.slot_for(
            Tree("d", tmp_path / "debian" / "src" / "6.12.117", deb, "")
        )
        == "linux-6.12"
    )
    arch = ARCHES["x86_64"]
    assert (
        build.build_dir(arch, "perf", slots[0])
        == tmp_cache / "build" / "x86_64-perf-base"
    )


def test_two_checkouts_building_in_one_directory_wait_for_each_other(
    tmp_path, tmp_cache, monkeypatch
):
    """A Debian 7.3 tree and a git: 7.3 commit share `linux-7.3` but not a
    checkout lock: the directory's own lock keeps their makes (and the
    copy of each kernel) apart."""
    monkeypatch.setattr(hostsetup, "ensure_arch", lambda arch: None)
    monkeypatch.setattr(Tree, "version", lambda self: (7, 3))
    spans = []

    def fake_build(tree, arch, purpose, out, make_vars):
        start = time.monotonic()
        time.sleep(0.3)
        out.mkdir(parents=True, exist_ok=True)
        (out / "bzImage").write_text(tree.variant)
        spans.append((start, time.monotonic(), out))
        return build.Kernel(
            tree.variant,
            purpose,
            "x86_64",
            out,
            out / "bzImage",
            tree.commit,
            "c",
            0.3,
        )

    monkeypatch.setattr(build, "_build_checked_out", fake_build)
    kept = {}

    def one(name):
        tree = Tree(name, tmp_path / name, name * 40, "")
        k = build.build_kernel(
            tree, ARCHES["x86_64"], "perf", keep=tmp_path / "kept" / name
        )
        kept[name] = k.image.read_text()

    threads = [threading.Thread(target=one, args=(n,)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (a0, a1, out_a), (b0, b1, out_b) = sorted(spans)
    assert out_a == out_b == tmp_cache / "build" / "x86_64-perf-linux-7.3"
    assert a1 <= b0  # one after the other
    assert kept == {"a": "a", "b": "b"}  # each kept its own image


def _obj(out, rel, deps, built_at):
    """An object ``rel`` in ``out`` built at ``built_at`` with a kbuild
    .cmd naming ``deps``."""
    obj = out / rel
    obj.parent.mkdir(parents=True, exist_ok=True)
    obj.write_text("")
    lines = [
        f"savedcmd_{rel} := gcc -c -o {rel} {deps[0]}",
        f"source_{rel} := {deps[0]}",
        f"deps_{rel} := \\",
    ]
    lines += [f"  {d} \\" for d in deps[1:]]
    lines += ["", f"{rel}: $(deps_{rel})", f"$(deps_{rel}):"]
    (obj.parent / f".{obj.name}.cmd").write_text("\n".join(lines) + "\n")
    os.utime(obj, (built_at, built_at))


def test_an_incremental_build_is_shown_against_what_it_will_compile(tmp_path):
    """The patched kernel after the vanilla one in the same directory
    gets a total, so a percentage and an ETA (the trial's second build
    showed them only because it was a fresh build): the objects older
    than a file their .cmd names, their directories' archives, the
    links."""
    src = tmp_path / "linux"
    out = tmp_path / "build"
    (src / "mm").mkdir(parents=True)
    (src / "include").mkdir()
    out.mkdir()
    (out / "source").symlink_to(src)
    for f, t in [
        ("mm/a.c", 50),
        ("mm/b.c", 50),
        ("kernel/c.c", 50),
        ("include/changed.h", 200),
        ("include/same.h", 50),
    ]:
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        (src / f).write_text("")
        os.utime(src / f, (t, t))
    _obj(
        out,
        "mm/a.o",
        [
            f"{src}/mm/a.c",
            f"{src}/include/changed.h",
            "$(wildcard include/config/FOO)",
        ],
        100,
    )
    _obj(out, "mm/b.o", [f"{src}/mm/b.c", f"{src}/include/same.h"], 100)
    _obj(
        out,
        "kernel/c.o",
        [
            f"{src}/kernel/c.c",
            f"{src}/include/same.h",
            "$(wildcard include/config/FOO)",
        ],
        100,
    )
    # mm/a.o, and the archives of mm/ and the top directory
    assert build.stale_steps(out, src) == 1 + 2 + build.LINK_STEPS
    (out / "include" / "config").mkdir(parents=True)
    (out / "include" / "config" / "FOO").write_text("")  # option changed
    assert build.stale_steps(out, src) == 2 + 3 + build.LINK_STEPS
    # another source tree: every command line differs, total not known
    assert build.stale_steps(out, tmp_path / "debian-tree") is None


def test_a_changed_config_counts_the_objects_that_test_its_options(tmp_path):
    """A new .config (a fragment gained an option) changes no file an
    object names until make's syncconfig runs, so the objects testing a
    changed option are counted from the two configs (a debug build after
    CONFIG_MEMORY_FAILURE was added showed 100% for minutes)."""
    src = tmp_path / "linux"
    out = tmp_path / "build"
    (src / "mm").mkdir(parents=True)
    (out / "include" / "config").mkdir(parents=True)
    (out / "source").symlink_to(src)
    for f in ("mm/a.c", "mm/b.c"):
        (src / f).write_text("")
        os.utime(src / f, (50, 50))
    _obj(
        out,
        "mm/a.o",
        [f"{src}/mm/a.c", "$(wildcard include/config/MEMORY_FAILURE)"],
        100,
    )
    _obj(
        out,
        "mm/b.o",
        [f"{src}/mm/b.c", "$(wildcard include/config/NUMA)"],
        100,
    )
    auto = out / "include" / "config" / "auto.conf"
    auto.write_text("CONFIG_NUMA=y\n")
    os.utime(auto, (100, 100))
    (out / ".config").write_text(
        "CONFIG_NUMA=y\n# CONFIG_MEMORY_FAILURE is not set\n"
    )
    os.utime(out / ".config", (200, 200))
    assert build.stale_steps(out, src) == build.LINK_STEPS  # same values
    (out / ".config").write_text("CONFIG_NUMA=y\nCONFIG_MEMORY_FAILURE=y\n")
    os.utime(out / ".config", (200, 200))
    assert build.changed_option_files(out) == {"include/config/MEMORY_FAILURE"}
    assert build.stale_steps(out, src) == 1 + 2 + build.LINK_STEPS
    os.utime(auto, (300, 300))  # make has run since: no guess
    assert build.stale_steps(out, src) == build.LINK_STEPS


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
    tmp_path, tmp_cache, monkeypatch
):
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
    build.configure(a, arch, "perf", out)  # same tree: kept
    assert calls.read_text().count("allnoconfig") == 1
    config = build.configure(b, arch, "perf", out)
    assert calls.read_text().count("allnoconfig") == 2
    assert "tree-b" in config.read_text()
    assert build.config_digest(config) != ""


def test_a_kept_kernel_boots_its_own_image_whatever_the_slot_builds_next(
    tmp_path,
):
    """Two suites on one cache (up and next of 7.3, 2026-11-26) shared a
    build directory and both booted the second one's kernel: a kernel kept
    in the run's directory is a copy that the next build cannot touch."""
    slot = tmp_path / "build"
    slot.mkdir()
    image = slot / "bzImage"
    image.write_bytes(b"kernel one")
    k = build.Kernel("up", "debug", "x86_64", slot, image, "a" * 40, "c", 1.0)
    kept = k.kept_in(tmp_path / "run" / "kernel")
    image.write_bytes(b"kernel two")  # the next build in the slot
    assert kept.image == tmp_path / "run" / "kernel" / "bzImage"
    assert kept.image.read_bytes() == b"kernel one"
    assert kept.build_dir == slot and kept.commit == k.commit


def test_what_a_caller_also_keeps_is_copied_before_the_slot_is_free(
    tmp_path, monkeypatch
):
    """The coverage run copied its notes files from the build directory
    after the build lock was gone, so a build of another series in the
    slot could hand it the wrong notes: also_keep runs while the lock is
    held, and a second build waits until it is done."""
    monkeypatch.setenv("FOLIOLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(Tree, "version", lambda self: (6, 12))
    tree = Tree("a", tmp_path / "linux", "a" * 40, "")
    tree.path.mkdir()
    slot = tmp_path / "build"
    slot.mkdir()
    (slot / "bzImage").write_bytes(b"kernel")
    built = build.Kernel(
        "a", "coverage", "x86_64", slot, slot / "bzImage", "a" * 40, "c", 1.0
    )
    monkeypatch.setattr(hostsetup, "ensure_arch", lambda arch: None)
    monkeypatch.setattr(build, "_build_checked_out", lambda *args: built)
    order = []

    def next_build():
        with source.checkout_lock(tree.path):
            order.append("next build")

    def copy_notes(kernel):
        assert kernel is built
        other = threading.Thread(target=next_build)
        other.start()
        time.sleep(0.3)  # long enough for it to get in
        order.append("notes copied")
        copy_notes.other = other

    build.build_kernel(
        tree, ARCHES["x86_64"], "coverage", also_keep=copy_notes
    )
    copy_notes.other.join()
    assert order == ["notes copied", "next build"]
