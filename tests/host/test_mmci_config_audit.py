"""The audit of the lab's mm CI kernel config against the mm CI's: which
options differ, and which of them nothing explains."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

from foliolab.errors import ConfigError, UsageError
from foliolab.suite.mmci import config_audit as audit

KCONFIG = """\
config CHOSEN
	bool "an option with a prompt"
	default y

config SELECTED
	bool

menuconfig MENU
	tristate "a menu"

if MENU
config HIDDEN_INT
	int
	default 4
endif

config TWICE
	def_bool y

config TWICE
	bool "prompted in its second definition"
"""


def _tree(tmp_path, files: dict[str, str]):
    for where, text in files.items():
        (tmp_path / where).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / where).write_text(text)
    return tmp_path


def _prompts(tmp_path, text: str) -> dict[str, bool]:
    """Whether each option of an audited Kconfig file can be chosen."""
    found = audit.index(_tree(tmp_path, {"mm/Kconfig": text}), "x86_64")
    return {name: prompt for name, (_, prompt) in found.defined.items()}


def test_an_option_without_a_prompt_cannot_be_chosen(tmp_path):
    assert _prompts(tmp_path, KCONFIG) == {
        "CHOSEN": True,
        "SELECTED": False,
        "MENU": True,
        "HIDDEN_INT": False,
        "TWICE": True,
    }


def test_a_prompt_after_the_block_is_not_the_options(tmp_path):
    text = 'config A\n\tbool\nmenu "B"\n\tbool "not A\'s"\nendmenu\n'
    assert _prompts(tmp_path, text) == {"A": False}


def test_only_the_audited_files_define_options(tmp_path):
    tree = _tree(
        tmp_path,
        {
            "mm/Kconfig": "config BOTH\n\tbool\n",
            "arch/x86/Kconfig": 'config BOTH\n\tbool "x86\'s"\n'
            'config X86_ONLY\n\tbool "x"\n',
            "arch/arm64/Kconfig": 'config ARM64_ONLY\n\tbool "a"\n',
            "drivers/gpu/Kconfig": 'config GPU\n\tbool "g"\n',
        },
    )
    defined = audit.index(tree, "x86_64").defined
    # another architecture's and a driver's files are not audited; an
    # option two audited files define is counted where AUDITED's earlier
    # one puts it, and has a prompt if either definition does
    assert defined == {
        "BOTH": ("mm/Kconfig", True),
        "X86_ONLY": ("arch/x86/Kconfig", True),
    }


def _diffs(lab: str, mmci: str, named: set[str] | None = None):
    defined = {
        "CHOSEN": ("mm/Kconfig", True),
        "SELECTED": ("mm/Kconfig", False),
        "OFF_BOTH": ("mm/Kconfig", True),
        "SAME": ("mm/Kconfig", True),
        "ARM64_ERRATUM_1": ("arch/arm64/Kconfig", True),
        "HZ": ("kernel/Kconfig.hz", True),
    }
    return {
        d.option: d
        for d in audit.differences(lab, mmci, defined, named or set())
    }


def test_differences_are_the_options_whose_values_differ():
    lab = "# CONFIG_CHOSEN is not set\nCONFIG_SAME=y\nCONFIG_HZ=250\n"
    mmci = (
        "CONFIG_CHOSEN=y\nCONFIG_SELECTED=y\nCONFIG_SAME=y\n"
        "# CONFIG_OFF_BOTH is not set\nCONFIG_ARM64_ERRATUM_1=y\nCONFIG_HZ=1000\n"
    )
    got = _diffs(lab, mmci)
    # off in one and not offered in the other are the same
    assert set(got) == {"CHOSEN", "SELECTED", "ARM64_ERRATUM_1", "HZ"}
    assert (got["CHOSEN"].lab, got["CHOSEN"].mmci) == ("n", "y")
    assert (got["SELECTED"].lab, got["SELECTED"].mmci) == ("-", "y")
    assert (got["HZ"].lab, got["HZ"].mmci) == ("250", "1000")
    assert got["SELECTED"].family == audit.NO_PROMPT
    assert got["ARM64_ERRATUM_1"].family.startswith("CPU errata")
    assert got["CHOSEN"].unexplained and got["HZ"].unexplained
    assert not got["SELECTED"].unexplained


def test_an_option_a_fragment_names_is_explained():
    got = _diffs("CONFIG_HZ=250\n", "CONFIG_HZ=1000\n", named={"HZ"})
    assert not got["HZ"].unexplained and got["HZ"].named


def test_named_options_are_the_mm_ci_kernels_fragments(tmp_path):
    files = {
        "base.config": "CONFIG_ASKED=y\n# CONFIG_OFF is not set\n",
        "arch-x86_64.config": "CONFIG_X86_ONLY=y\n",
        "arch-arm64.config": "# prose naming CONFIG_PROSE too\n",
        "mm-ci.config": "CONFIG_MMCI=y\n",
        "mm-ci-lab.config": "# CONFIG_LEFT is left out: why\n",
        "mm-ci-lab-arm64.config": "CONFIG_ARM64_ONLY=y\n",
        "since-7.3.config": "CONFIG_NEWER=y\n",
        # another purpose's fragment names nothing for the mm CI's kernel
        "perf.config": "CONFIG_PERF_ONLY=y\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    both = {"ASKED", "OFF", "MMCI", "LEFT"}
    assert audit.named_options("arm64", (6, 12), tmp_path) == both | {
        "PROSE",
        "ARM64_ONLY",
    }
    assert audit.named_options("x86_64", (7, 3), tmp_path) == both | {
        "X86_ONLY",
        "NEWER",
    }


def test_no_family_explains_an_option_of_mm():
    defined = {
        "CGROUP_PIDS": ("init/Kconfig", True),
        "ZSMALLOC_STAT": ("mm/Kconfig", True),
        "DEBUG_INFO_BTF": ("mm/Kconfig.debug", True),
    }
    lab = "# CONFIG_CGROUP_PIDS is not set\n"
    mmci = "CONFIG_CGROUP_PIDS=y\nCONFIG_ZSMALLOC_STAT=y\nCONFIG_DEBUG_INFO_BTF=y\n"
    got = {d.option: d for d in audit.differences(lab, mmci, defined, set())}
    assert not got["CGROUP_PIDS"].unexplained
    # the same family patterns match these names, but they are mm's
    assert got["ZSMALLOC_STAT"].unexplained
    assert got["DEBUG_INFO_BTF"].unexplained


def test_the_report_puts_the_unexplained_first_and_counts_them():
    got = _diffs(
        "CONFIG_HZ=250\n",
        "CONFIG_HZ=1000\nCONFIG_CHOSEN=y\nCONFIG_SELECTED=y\n",
        named={"CHOSEN"},
    )
    lines = audit.report(list(got.values())).splitlines()
    assert lines[1].split() == [
        "HZ",
        "250",
        "1000",
        "kernel/Kconfig.hz",
        "UNEXPLAINED",
    ]
    assert "named in configs/" in lines[2]
    assert lines[-1].startswith("# 3 options differ; 1 unexplained")


def test_a_tree_without_a_kernel_makefile_is_refused(tmp_path):
    (tmp_path / "Makefile").write_text("all:\n\ttrue\n")
    with pytest.raises(UsageError, match="VERSION and PATCHLEVEL"):
        audit.tree_version(tmp_path)
    (tmp_path / "Makefile").write_text(
        "VERSION = 7\nPATCHLEVEL = 3\nSUBLEVEL = 4\n"
    )
    assert audit.tree_version(tmp_path) == (7, 3)


def test_vng_options_follow_virtme_ngs_order(monkeypatch):
    configkernel = types.SimpleNamespace(
        _GENERIC_CONFIG_OPTIONAL=["CONFIG_OPT=y"],
        _GENERIC_CONFIG=["CONFIG_REQUIRED=y"],
    )
    arch = types.SimpleNamespace(config_base=lambda: ["CONFIG_SERIAL=y"])
    architectures = types.SimpleNamespace(get=lambda name: arch)
    virtme = types.ModuleType("virtme")
    commands = types.ModuleType("virtme.commands")
    commands.configkernel = configkernel  # type: ignore[attr-defined]
    virtme.architectures = architectures  # type: ignore[attr-defined]
    virtme.commands = commands  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "virtme", virtme)
    monkeypatch.setitem(sys.modules, "virtme.commands", commands)
    assert audit.vng_options(
        "arm64", ["CONFIG_A=y\nCONFIG_B=y", "CONFIG_C=m"]
    ) == [
        "CONFIG_OPT=y",
        "CONFIG_SERIAL=y",
        "CONFIG_A=y",
        "CONFIG_B=y",
        "CONFIG_C=m",
        "CONFIG_REQUIRED=y",
    ]


def test_without_virtme_ng_the_audit_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "virtme", None)
    with pytest.raises(UsageError) as e:
        audit.vng_options("x86_64", [])
    assert "pip install virtme-ng" in (e.value.hint or "")


def test_main_prints_the_report_of_one_tree(tmp_path, monkeypatch, capsys):
    tree = tmp_path / "linux"
    (tree / "mm").mkdir(parents=True)
    (tree / "Makefile").write_text("VERSION = 7\nPATCHLEVEL = 3\n")
    (tree / "mm" / "Kconfig").write_text('config NUMA_THING\n\tbool "numa"\n')
    seen = {}

    def configure_both(path, arch, version):
        seen["args"] = (path, arch, version)
        return "# CONFIG_NUMA_THING is not set\n", "CONFIG_NUMA_THING=y\n"

    monkeypatch.setattr(audit, "configure_both", configure_both)
    monkeypatch.setattr(audit, "vng_options", lambda arch, fragments: [])
    assert audit.main([str(tree), "arm64"]) == 0
    assert seen["args"] == (tree, "arm64", (7, 3))
    out = capsys.readouterr().out.splitlines()
    assert out[1].split() == [
        "NUMA_THING",
        "n",
        "y",
        "mm/Kconfig",
        "UNEXPLAINED",
    ]
    assert out[-1].startswith("# 1 options differ; 1 unexplained")


def test_a_bad_tree_gets_one_line_before_any_work(tmp_path, capsys):
    assert audit.main([str(tmp_path / "none"), "x86_64"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "no kernel Makefile" in err[0]


def test_a_failed_make_names_its_target_and_the_last_line(
    tmp_path, monkeypatch
):
    def run(argv, **kw):
        return subprocess.CompletedProcess(
            argv, 2, "", "warning\n*** The source tree is not clean\n"
        )

    # under proc.run, the project's one way to run a command
    monkeypatch.setattr(subprocess, "run", run)
    with pytest.raises(ConfigError) as e:
        audit._make(tmp_path, tmp_path / "o", "arm64", "defconfig")
    assert "make defconfig failed" in e.value.message
    assert e.value.message.endswith("*** The source tree is not clean")


def test_selections_name_who_selects_what(tmp_path):
    text = (
        'config DRIVER\n\ttristate "a driver"\n\tselect MM_HELPER\n'
        "\tselect LIB_CODE if DRIVER\n\n"
        'config OTHER\n\tbool "other"\n\tselect MM_HELPER\n'
        'menu "not an option"\n\tselect NOT_OTHERS\nendmenu\n'
    )
    tree = _tree(tmp_path, {"drivers/x/Kconfig": text})
    assert audit.index(tree, "arm64").selected_by == {
        "MM_HELPER": {"DRIVER", "OTHER"},
        "LIB_CODE": {"DRIVER"},
    }


def test_selections_are_read_from_every_kconfig_of_the_tree(tmp_path):
    tree = _tree(
        tmp_path,
        {
            "drivers/x/Kconfig": 'config DRIVER\n\tbool "d"\n'
            "\tselect MM_HELPER\n",
            "Documentation/Kconfig": "config EXAMPLE\n\tselect MM_HELPER\n",
        },
    )
    assert audit.index(tree, "x86_64").selected_by == {"MM_HELPER": {"DRIVER"}}


def test_an_mm_option_without_a_prompt_is_held_to_what_selects_it():
    defined = {
        "MM_HELPER": ("mm/Kconfig", False),
        "LIB_CODE": ("lib/Kconfig", False),
    }
    lab = ""
    mmci = "CONFIG_MM_HELPER=y\nCONFIG_LIB_CODE=y\nCONFIG_DRIVER=y\n"
    selectors = {"MM_HELPER": {"DRIVER"}, "LIB_CODE": {"DRIVER"}}
    got = {
        d.option: d
        for d in audit.differences(lab, mmci, defined, set(), selectors)
    }
    assert got["MM_HELPER"].unexplained
    assert got["MM_HELPER"].lead == "selected by DRIVER"
    # library code follows its drivers
    assert got["LIB_CODE"].family == audit.NO_PROMPT + " (DRIVER)"
    # once configs/ names the driver (left out, with why), mm's option is
    # explained by it
    named = {
        d.option: d
        for d in audit.differences(lab, mmci, defined, {"DRIVER"}, selectors)
    }
    assert not named["MM_HELPER"].unexplained
