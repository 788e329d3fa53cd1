import pytest

from foliolab import kconfig
from foliolab.errors import ConfigError, UsageError


def test_parse_set_unset_and_comments():
    got = kconfig.parse("# comment\nCONFIG_A=y\n# CONFIG_B is not set\n"
                        "CONFIG_C=\"x y\"\n\n")
    assert got == {"CONFIG_A": "y", "CONFIG_B": "n", "CONFIG_C": '"x y"'}


def test_parse_rejects_garbage():
    with pytest.raises(ConfigError, match="f:2"):
        kconfig.parse("CONFIG_A=y\nA=y\n", "f")


def test_merge_later_fragment_wins(tmp_path):
    (tmp_path / "base.config").write_text("CONFIG_A=y\nCONFIG_B=y\n")
    (tmp_path / "debug.config").write_text("# CONFIG_B is not set\n"
                                           "CONFIG_C=y\n")
    frag = kconfig.merge("debug", tmp_path)
    assert frag.options == {"CONFIG_A": "y", "CONFIG_B": "n", "CONFIG_C": "y"}
    assert frag.origin["CONFIG_B"] == "debug.config"
    assert "# CONFIG_B is not set" in frag.text()


def test_merge_unknown_purpose():
    with pytest.raises(UsageError, match="unknown --config"):
        kconfig.merge("fast")


def test_dropped_options_are_reported(tmp_path):
    (tmp_path / "base.config").write_text("CONFIG_A=y\nCONFIG_ZRAM=y\n")
    (tmp_path / "perf.config").write_text("")
    frag = kconfig.merge("perf", tmp_path)
    final = tmp_path / ".config"
    final.write_text("CONFIG_A=y\n# CONFIG_ZRAM is not set\n")
    assert kconfig.dropped(frag, final.read_text()) == [
        "CONFIG_ZRAM=y (base.config; got n)"]
    with pytest.raises(ConfigError, match="CONFIG_ZRAM"):
        kconfig.check(frag, final)


def test_project_fragments_have_what_the_workloads_need():
    for purpose in kconfig.PURPOSES:
        opts = kconfig.merge(purpose).options
        for need in ("MEMCG", "SWAP", "ZRAM", "TRANSPARENT_HUGEPAGE",
                     "THP_SWAP", "KSM", "NUMA", "MIGRATION", "XFS_FS",
                     "BLK_DEV_RAM", "USERFAULTFD", "MEM_SOFT_DIRTY",
                     "FUNCTION_GRAPH_TRACER", "FUNCTION_PROFILER", "KPROBES",
                     "DEBUG_FS", "DEBUG_TLBFLUSH"):
            assert opts.get(f"CONFIG_{need}") == "y", (purpose, need)
    debug = kconfig.merge("debug").options
    for need in ("DEBUG_VM", "PAGE_TABLE_CHECK", "PROVE_LOCKING", "DEBUG_LIST"):
        assert debug[f"CONFIG_{need}"] == "y"
        assert kconfig.merge("perf").options.get(f"CONFIG_{need}") != "y"
