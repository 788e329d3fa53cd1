import pytest

from foliolab.arch import ARCHES
from foliolab.errors import ConfigError, UsageError
from foliolab.kernel import kconfig
from foliolab.paths import CONFIGS_DIR


def test_parse_set_unset_and_comments():
    got = kconfig.parse(
        '# comment\nCONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C="x y"\n\n'
    )
    assert got == {"CONFIG_A": "y", "CONFIG_B": "n", "CONFIG_C": '"x y"'}


def test_parse_rejects_garbage():
    with pytest.raises(ConfigError, match="f:2"):
        kconfig.parse("CONFIG_A=y\nA=y\n", "f")


def test_merge_later_fragment_wins(tmp_path):
    (tmp_path / "base.config").write_text("CONFIG_A=y\nCONFIG_B=y\n")
    (tmp_path / "arch-x86_64.config").write_text("CONFIG_X=y\n")
    (tmp_path / "debug.config").write_text(
        "# CONFIG_B is not set\nCONFIG_C=y\n"
    )
    frag = kconfig.merge("debug", "x86_64", tmp_path)
    assert frag.options == {
        "CONFIG_A": "y",
        "CONFIG_X": "y",
        "CONFIG_B": "n",
        "CONFIG_C": "y",
    }
    assert frag.origin["CONFIG_B"] == "debug.config"
    assert frag.origin["CONFIG_X"] == "arch-x86_64.config"
    assert "# CONFIG_B is not set" in frag.text()


def test_merge_unknown_purpose():
    with pytest.raises(UsageError, match="unknown --config"):
        kconfig.merge("fast", "x86_64")


def test_merge_unknown_arch():
    with pytest.raises(UsageError, match="unknown --arch 'sparc'"):
        kconfig.merge("perf", "sparc")


def test_missing_arch_fragment_is_an_error(tmp_path):
    (tmp_path / "base.config").write_text("CONFIG_A=y\n")
    (tmp_path / "perf.config").write_text("")
    with pytest.raises(ConfigError, match="arch-arm64.config is missing"):
        kconfig.merge("perf", "arm64", tmp_path)


def test_dropped_options_are_reported(tmp_path):
    (tmp_path / "base.config").write_text("CONFIG_A=y\nCONFIG_ZRAM=y\n")
    (tmp_path / "arch-x86_64.config").write_text("")
    (tmp_path / "perf.config").write_text("")
    frag = kconfig.merge("perf", "x86_64", tmp_path)
    final = tmp_path / ".config"
    final.write_text("CONFIG_A=y\n# CONFIG_ZRAM is not set\n")
    assert kconfig.dropped(frag, final.read_text()) == [
        "CONFIG_ZRAM=y (base.config; got n)"
    ]
    with pytest.raises(ConfigError, match="CONFIG_ZRAM"):
        kconfig.check(frag, final)


COMMON_NEEDS = (
    "MEMCG",
    "SWAP",
    "ZRAM",
    "TRANSPARENT_HUGEPAGE",
    "THP_SWAP",
    "KSM",
    "NUMA",
    "MIGRATION",
    "XFS_FS",
    "BLK_DEV_RAM",
    "USERFAULTFD",
    "PTE_MARKER_UFFD_WP",
    "FUNCTION_GRAPH_TRACER",
    "FUNCTION_PROFILER",
    "KPROBES",
    "DEBUG_FS",
    "VIRTIO_PCI",
    "VIRTIO_CONSOLE",
    "PCI",
    "BLK_DEV_INITRD",
)
ARCH_NEEDS = {
    "x86_64": (
        "SERIAL_8250_CONSOLE",
        "ACPI_NUMA",
        "MEM_SOFT_DIRTY",
        "DEBUG_TLBFLUSH",
        "KVM_GUEST",
    ),
    "arm64": (
        "ARM64_4K_PAGES",
        "ARM64_CONTPTE",
        "PCI_HOST_GENERIC",
        "SERIAL_AMBA_PL011",
        "SERIAL_AMBA_PL011_CONSOLE",
    ),
}


@pytest.mark.parametrize("arch", sorted(ARCH_NEEDS))
def test_project_fragments_have_what_the_workloads_need(arch):
    for purpose in kconfig.PURPOSES:
        opts = kconfig.merge(purpose, arch).options
        for need in COMMON_NEEDS + ARCH_NEEDS[arch]:
            assert opts.get(f"CONFIG_{need}") == "y", (purpose, need)
    debug = kconfig.merge("debug", arch).options
    for need in (
        "DEBUG_VM",
        "PAGE_TABLE_CHECK",
        "PROVE_LOCKING",
        "DEBUG_LIST",
    ):
        assert debug[f"CONFIG_{need}"] == "y"
        assert kconfig.merge("perf", arch).options.get(f"CONFIG_{need}") != "y"


def test_every_arch_has_its_fragment():
    for name, arch in ARCHES.items():
        assert (CONFIGS_DIR / arch.config_fragment).is_file(), name


def _own(layer: str, arch: str) -> list[str]:
    """``<layer>-<arch>.config`` where configs/ has one."""
    name = f"{layer}-{arch}.config"
    return [name] if (CONFIGS_DIR / name).exists() else []


@pytest.mark.parametrize("arch", sorted(ARCHES))
def test_fragment_selection_per_arch(arch):
    for purpose in ("perf", "debug"):
        assert [f.name for f in kconfig.fragment_files(purpose, arch)] == [
            "base.config",
            f"arch-{arch}.config",
            f"{purpose}.config",
            *_own(purpose, arch),
        ]
    # kasan is the debug kernel plus KASAN
    assert [f.name for f in kconfig.fragment_files("kasan", arch)] == [
        "base.config",
        f"arch-{arch}.config",
        "debug.config",
        *_own("debug", arch),
        "kasan.config",
        *_own("kasan", arch),
    ]


def test_a_purposes_arch_fragment_follows_its_layer(tmp_path):
    """``debug-x86_64.config`` comes right after debug.config, for the
    kernels built on debug too, and never for another arch or purpose."""
    for name, text in {
        "base.config": "CONFIG_MMU=y\n",
        "arch-x86_64.config": "CONFIG_X86_64=y\n",
        "arch-arm64.config": "CONFIG_ARM64=y\n",
        "debug.config": "CONFIG_DEBUG_VM=y\n",
        "debug-x86_64.config": "CONFIG_X86_MCE=y\n",
        "kasan.config": "CONFIG_KASAN=y\n",
        "perf.config": "\n",
    }.items():
        (tmp_path / name).write_text(text)

    def names(p: str, a: str) -> list[str]:
        return [
            f.name for f in kconfig.fragment_files(p, a, configs_dir=tmp_path)
        ]

    assert names("kasan", "x86_64") == [
        "base.config",
        "arch-x86_64.config",
        "debug.config",
        "debug-x86_64.config",
        "kasan.config",
    ]
    assert names("debug", "arm64") == [
        "base.config",
        "arch-arm64.config",
        "debug.config",
    ]
    assert names("perf", "x86_64") == [
        "base.config",
        "arch-x86_64.config",
        "perf.config",
    ]
    assert (
        kconfig.merge("debug", "x86_64", configs_dir=tmp_path).options[
            "CONFIG_X86_MCE"
        ]
        == "y"
    )


def test_memory_failure_in_every_debug_kernel_and_no_perf_kernel():
    """The KSM poison test needs MADV_HWPOISON in the debug kernels; the
    perf kernels stay as they were measured."""
    for arch in ARCHES:
        assert (
            kconfig.merge("debug", arch).options["CONFIG_MEMORY_FAILURE"]
            == "y"
        )
        perf = kconfig.merge("perf", arch).options
        assert perf.get("CONFIG_MEMORY_FAILURE", "n") == "n"
        assert perf.get("CONFIG_X86_MCE", "n") == "n"


def test_kasan_is_debug_plus_kasan():
    debug = kconfig.merge("debug", "x86_64").options
    kasan = kconfig.merge("kasan", "x86_64").options
    assert {k: v for k, v in kasan.items() if k in debug} == debug
    assert kasan["CONFIG_KASAN"] == "y" and "CONFIG_KASAN" not in debug


def test_arch_fragments_only_add_to_base():
    """An option is either shared (base) or one architecture's: an arch
    fragment never overrides base, and no arch's options leak to another."""
    base = set(kconfig.parse((CONFIGS_DIR / "base.config").read_text()))
    per_arch = {
        name: set(kconfig.parse((CONFIGS_DIR / a.config_fragment).read_text()))
        for name, a in ARCHES.items()
    }
    for name, opts in per_arch.items():
        assert not base & opts, name
    arm64 = kconfig.merge("perf", "arm64").options
    for opt in per_arch["x86_64"]:
        assert opt not in arm64, opt
    x86 = kconfig.merge("perf", "x86_64").options
    assert not [
        o
        for o in x86
        if o.startswith(("CONFIG_ARM64", "CONFIG_ARM_", "CONFIG_SERIAL_AMBA"))
    ]


@pytest.mark.parametrize("purpose", ("perf", "debug"))
def test_x86_fragment_unchanged_by_the_arch_split(purpose, data):
    """x86_64's merged fragment is exactly the one used before
    configs/arch-*.config existed (saved in tests/host/data), so its
    .config is unchanged: kconfig does not depend on the order of lines
    in KCONFIG_ALLCONFIG, only on the options and their values. (The
    debug one has since gained MEMORY_FAILURE and X86_MCE, FAILSLAB,
    BLK_DEV_NULL_BLK and PROC_MEM_ALWAYS_FORCE, on purpose.)"""
    before = kconfig.parse(
        (data / f"kconfig-x86_64-{purpose}.fragment").read_text()
    )
    now = kconfig.merge(purpose, "x86_64").options
    assert now == before
