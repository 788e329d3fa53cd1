"""Kernel build command lines and directories, per architecture."""

from foliolab import build
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
