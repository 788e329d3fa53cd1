"""How far the lab's mm CI kernel config is from the mm CI's own.

The mm CI configures with virtme-ng (``vng --build --config A --config
B``): the architecture's defconfig, virtme-ng's own options, the two
fragments, then ``olddefconfig``. The lab configures every kernel from
``allnoconfig`` and its fragments, so each default-y option of the
defconfig that no fragment names is off here. This module configures one
tree both ways and lists every option, defined in the Kconfig files that
matter to the mm selftests, whose value differs; and whether a lab
fragment names it (asked for, or left out with a reason in a comment).

It only runs kconfig (seconds), never a build. virtme-ng's option lists
are read from the installed ``virtme`` package (``pip install
virtme-ng``), so the comparison follows the version installed.
"""

from __future__ import annotations

import re
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from foliolab import proc
from foliolab.arch import ARCHES, get_arch
from foliolab.errors import ConfigError, FoliolabError, UsageError
from foliolab.kernel import kconfig, source
from foliolab.paths import CONFIGS_DIR
from foliolab.suite.mmci import config

# Where the options live that the mm code, the page-table layout, the
# scheduler's preemption or a wrapper can see. Driver and subsystem
# options elsewhere are left to the defconfig's choice.
AUDITED = (
    "mm",
    "init",
    "fs/Kconfig",
    "fs/proc",
    "fs/hugetlbfs",
    "kernel",
    "lib",
    "arch/Kconfig",
    "arch/{arch}/Kconfig",
    "arch/{arch}/Kconfig.debug",
    "arch/{arch}/Kconfig.cpu",
    "drivers/iommu/Kconfig",
)
# Families of options left to the defconfig's choice, with why: what no
# wrapper and no mm path sees here. An option in none of them, with a
# prompt and named by no fragment, is what a reader of the audit must
# decide on (ask for it in configs/mm-ci-lab*.config, or say why not).
_FAMILIES = (
    (
        r"ERRATUM|_ERRATA|WORKAROUND",
        "CPU errata: matched on CPU models TCG does not show",
    ),
    (
        r"^MITIGATION_|^CPU_MITIGATIONS$|^CALL_(THUNKS|PADDING)$",
        "speculation mitigations (x86's page-table isolation among them: "
        "TCG's CPU is not affected, so it would stay off)",
    ),
    (
        r"TRACE|TRACING|TRACER|PROBE_EVENTS|^KPROBES|^UPROBES|_EVENTS$|^RING_BUFFER"
        r"|MCOUNT|^FUNCTION_PROFILER$|^PROFILING$|^BRANCH_PROFILE|^BPF|^RELAY$|^KALLSYMS_ALL$|^SCHEDSTATS$",
        "tracing, profiling and BPF",
    ),
    (
        r"^PM$|^PM_|SUSPEND|HIBERNAT|^FREEZER$|^CPU_PM$|^ENERGY_MODEL$|^WQ_POWER",
        "power management",
    ),
    (r"KEXEC|CRASH|VMCORE", "kexec and crash dumps"),
    (
        r"^CGROUP_(BPF|CPUACCT|DEBUG|DEVICE|FREEZER|MISC|PERF|PIDS|RDMA|SCHED)$"
        r"|^(IPC|NET|PID|TIME|UTS|USER)_NS$|^SCHED_AUTOGROUP$|GROUP_SCHED"
        r"|^PROC_PID_CPUSET$|^SOCK_CGROUP_DATA$",
        "cgroup controllers and namespaces no wrapper uses",
    ),
    (r"EFI|^DMI$|^ACPI", "firmware interfaces (the guests boot without EFI)"),
    (r"ACCT|^TASKSTATS$|^TASK_|^IRQ_TIME", "process accounting"),
    (
        r"^XEN|^PARAVIRT|^HYPERV|^KVM|^VIRTUALIZATION$",
        "hypervisor support (the guests are TCG's)",
    ),
    (
        r"^COMPAT|_COMPAT_|^IA32_EMULATION$|^UID16$|^SYSVIPC_COMPAT$|^KUSER_HELPERS$",
        "32-bit compat: no 32-bit selftest program is built here",
    ),
    (
        r"^RANDOMIZE_|^RELOCATABLE$|^STACKPROTECTOR",
        "kernel address randomization and stack protection: kernel addresses "
        "only (the counting plugin needs System.map's)",
    ),
    (
        r"^HOTPLUG_CPU$|^SCHED_(SMT|CLUSTER|CACHE|OMIT_FRAME_POINTER)$|^CPU_ISOLATION$"
        r"|^CPUMASK_OFFSTACK$",
        "scheduler topology and CPU hotplug (no wrapper takes a CPU away)",
    ),
    (
        r"FILESYSTEMS$|^TMPFS_(XATTR|POSIX_ACL)$|^POSIX_MQUEUE$|^FS_POSIX_ACL$|^FS_STACK$",
        "file systems and IPC no wrapper uses",
    ),
    (r"^SECCOMP|^SYSCALL_USER_DISPATCH$", "syscall filtering no wrapper uses"),
    (r"IOMMU|SMMU|DART$|^IRQ_REMAP$", "IOMMUs (the guests have none)"),
    (r"^KUNIT_", "KUnit's own switches (no wrapper runs KUnit tests)"),
    (
        r"^XZ_DEC|^CRC|^PACKING$|^IRQ_POLL$|^FONT_|^ASN1$",
        "library code no mm path calls",
    ),
    (
        r"^DEBUG_(INFO|MISC|STACK_USAGE|BOOT_PARAMS|ENTRY)|^X86_DEBUG_FPU$"
        r"|^EARLY_PRINTK|^X86_VERBOSE|^LOG_BUF_SHIFT$|^WERROR$|^LD_ORPHAN"
        r"|^MODULE_FORCE_UNLOAD$|^INITRAMFS_PRESERVE_MTIME$|^NO_HZ$|^SYMBOLIC_ERRNAME$"
        r"|^SECTION_MISMATCH|^MAGIC_SYSRQ|^JUMP_LABEL$|^MEMTEST$",
        "build, boot and debug plumbing",
    ),
    (
        r"^X86_(MPPARSE|EXTENDED_PLATFORM|REROUTE_FOR_BROKEN|CHECK_BIOS|BOOTPARAM_MEMORY"
        r"|MSR|CPUID|IOPL_IOPERM|X2APIC|MCE_|BUS_LOCK|FRED|KERNEL_IBT)|^IOSF_MBI$"
        r"|^PCI_MMCONFIG$|^AMD_NUMA$|^SOCIONEXT|^INDIRECT_PIO$|^PROVIDE_OHCI1394",
        "platform and CPU interfaces no mm path uses",
    ),
    (
        r"^ARM64_(AMU_EXTN|E0PD|PTR_AUTH|RAS_EXTN|SVE|SME|USE_LSE_ATOMICS"
        r"|PTR_AUTH_KERNEL)$",
        "arm64 CPU features of registers and atomics, not of memory",
    ),
)
# An option of mm/ is never explained by a family: it is named in
# configs/ (asked for, or left out with why) or has no prompt.
MM_DIR = "mm/"
LEFT_OUT = tuple((re.compile(pat), why) for pat, why in _FAMILIES)
NO_PROMPT = "no prompt: follows the options that select it"
_SYMBOL = re.compile(r"^\s*(?:menu)?config\s+([A-Za-z0-9_]+)", re.M)
_PROMPT = re.compile(r'^\s*(?:bool|tristate|int|hex|string|prompt)\s+"', re.M)
_STATEMENT = re.compile(
    r"^(?:if|endif|menu|endmenu|choice|endchoice|source|comment)\b", re.M
)
_NAMED = re.compile(r"\bCONFIG_([A-Za-z0-9_]+)")
# virtme-ng's names of the lab's architectures
_VNG_ARCH = {"x86_64": "x86_64", "arm64": "aarch64"}


@dataclass(frozen=True)
class Difference:
    """One option whose value differs: where it is defined, its value in
    each config ("-" when kconfig did not offer it), whether a lab
    fragment names it, and the left-out family it falls in (or
    NO_PROMPT, or "")."""

    option: str
    defined_in: str
    lab: str
    mmci: str
    named: bool
    family: str
    # what to read when it is unexplained (an option selecting it)
    lead: str = ""

    @property
    def unexplained(self) -> bool:
        return not self.named and not self.family


def blocks(kconfig_text: str) -> list[tuple[str, str]]:
    """Each ``config``/``menuconfig`` of a Kconfig file with the lines of
    its definition (up to the next option or statement)."""
    out = []
    starts = list(_SYMBOL.finditer(kconfig_text))
    for i, m in enumerate(starts):
        end = (
            starts[i + 1].start() if i + 1 < len(starts) else len(kconfig_text)
        )
        block = kconfig_text[m.end() : end]
        stop = _STATEMENT.search(block)
        out.append((m.group(1), block[: stop.start()] if stop else block))
    return out


_SELECT = re.compile(r"^\s*select\s+([A-Za-z0-9_]+)", re.M)


@dataclass(frozen=True)
class KconfigIndex:
    """What the audit reads of a tree's Kconfig files, in one walk: the
    options the audited files define (the first file defining each,
    relative to the tree, and whether any definition has a prompt), and
    for each option that is selected, the options selecting it, from
    every Kconfig file: an option without a prompt follows those,
    wherever they are defined (IOMMU_SVA in drivers/iommu selects an mm/
    option)."""

    defined: dict[str, tuple[str, bool]]
    selected_by: dict[str, set[str]]


def index(tree: Path, arch: str) -> KconfigIndex:
    """Read every Kconfig file of ``tree`` once (Documentation/'s
    examples aside) for the audit of ``arch``."""
    tops = [t.format(arch=get_arch(arch).linux_arch) for t in AUDITED]

    def rank(where: str) -> int | None:
        """Which of AUDITED holds the file (itself or a directory above
        it), earliest first: an option two audited files define is
        counted where the earlier one puts it (mm/ before arch/)."""
        return next(
            (
                i
                for i, top in enumerate(tops)
                if where == top or where.startswith(top + "/")
            ),
            None,
        )

    first: dict[str, tuple[int, str]] = {}
    prompted: set[str] = set()
    selected_by: dict[str, set[str]] = {}
    for f in sorted(tree.rglob("Kconfig*")):
        if not f.is_file() or "Documentation" in f.parts:
            continue
        where = str(f.relative_to(tree))
        audited = rank(where)
        for name, block in blocks(f.read_text(errors="replace")):
            for selected in _SELECT.findall(block):
                selected_by.setdefault(selected, set()).add(name)
            if audited is None:
                continue
            if name not in first or audited < first[name][0]:
                first[name] = (audited, where)
            if _PROMPT.search(block):
                prompted.add(name)
    defined = {n: (where, n in prompted) for n, (_, where) in first.items()}
    return KconfigIndex(defined, selected_by)


def named_options(
    arch: str, version: tuple[int, int], configs_dir: Path = CONFIGS_DIR
) -> set[str]:
    """Every option the mm CI kernel's fragments for ``arch`` and
    ``version`` name, asked for or only in a comment (a "left out"
    reason names it too); the other purposes' and architectures' files
    do not count."""
    named: set[str] = set()
    for f in kconfig.fragment_files(kconfig.MMCI, arch, configs_dir, version):
        named.update(_NAMED.findall(f.read_text()))
    return named


def differences(
    lab_config: str,
    mmci_config: str,
    defined: dict[str, tuple[str, bool]],
    named: set[str],
    selectors: dict[str, set[str]] | None = None,
) -> list[Difference]:
    """The options of ``defined`` whose values differ between the two
    .config texts. Off and not offered count as the same. An option
    without a prompt follows the options that select it (``selectors``,
    from index()), which the report lists; for an option of mm/ each
    of those that differs must be named in configs/ or fall in a family,
    or the option is unexplained and the report says which to read."""
    lab = kconfig.parse(lab_config, "lab .config")
    mmci = kconfig.parse(mmci_config, "mm CI .config")

    def value(config: dict[str, str], name: str) -> str:
        return config.get(f"CONFIG_{name}", "-")

    def differs(name: str) -> bool:
        a, b = value(lab, name), value(mmci, name)
        return a != b and not {a, b} <= {"n", "-"}

    def family_of(name: str, where: str) -> str:
        if where.startswith(MM_DIR):
            return ""
        return next((why for pat, why in LEFT_OUT if pat.search(name)), "")

    out = []
    for name in sorted(defined):
        if not differs(name):
            continue
        where, prompt = defined[name]
        d = Difference(
            name,
            where,
            value(lab, name),
            value(mmci, name),
            name in named,
            family_of(name, where),
        )
        if not d.family and not prompt:
            by = sorted(
                s for s in (selectors or {}).get(name, ()) if differs(s)
            )
            loose = [
                s
                for s in by
                if s not in named
                and not family_of(s, defined.get(s, ("", True))[0])
            ]
            # library and irq code follows whatever drivers select it; an
            # option of mm/ is held to what selects it
            if loose and where.startswith(MM_DIR):
                # unexplained: the selector is what to read
                d = replace(d, lead=f"selected by {', '.join(loose)}")
            else:
                d = replace(
                    d, family=NO_PROMPT + (f" ({', '.join(by)})" if by else "")
                )
        out.append(d)
    return out


def vng_options(arch: str, fragments: list[str]) -> list[str]:
    """The lines virtme-ng appends to the defconfig: its optional list,
    the architecture's base, the ``--config`` fragments, its required
    list (virtme/commands/configkernel.py's order)."""
    try:
        from virtme import architectures  # type: ignore[import-not-found]
        from virtme.commands import (  # type: ignore[import-not-found]
            configkernel,
        )
    except ImportError as e:
        raise UsageError(
            "the audit needs virtme-ng's option lists",
            hint="pip install virtme-ng (PyPI), then run it again",
        ) from e
    lines: list[str] = list(configkernel._GENERIC_CONFIG_OPTIONAL)
    lines += architectures.get(_VNG_ARCH[arch]).config_base()
    for text in fragments:
        lines += text.splitlines()
    lines += configkernel._GENERIC_CONFIG
    return lines


def _make(tree: Path, out: Path, arch: str, *args: str) -> None:
    a = get_arch(arch)
    argv = [
        "make",
        "-s",
        "-C",
        str(tree),
        f"O={out}",
        f"ARCH={a.linux_arch}",
        f"CROSS_COMPILE={a.cross_compile}",
        *args,
    ]
    cp = proc.run(argv, check=False, error=ConfigError)
    if cp.returncode != 0:
        last = (cp.stderr.strip().splitlines() or ["no output"])[-1]
        raise ConfigError(
            f"make {args[-1]} failed in {tree}: {last}",
            hint="the tree must be clean (make mrproper) and the compiler "
            "for the architecture installed",
        )


def configure_both(
    tree: Path, arch: str, version: tuple[int, int]
) -> tuple[str, str]:
    """(the lab's .config, the mm CI's .config) of ``tree`` for ``arch``,
    made in temporary build directories (the tree is only read)."""
    # a tree without the selftests' fragment adds nothing, as for a build
    there = tree / kconfig.TREE_FRAGMENT
    tree_fragment = there.read_text() if there.is_file() else ""
    frag = kconfig.merge(
        kconfig.MMCI,
        arch,
        version=version,
        tree_options=kconfig.parse(tree_fragment, kconfig.TREE_FRAGMENT),
    )
    mmci_fragment = config.FRAGMENT.read_text()
    with tempfile.TemporaryDirectory(prefix="mmci-audit-") as tmp:
        lab_out, ci_out = Path(tmp, "lab"), Path(tmp, "mmci")
        lab_out.mkdir()
        ci_out.mkdir()
        (lab_out / "fragment").write_text(frag.text())
        _make(
            tree,
            lab_out,
            arch,
            f"KCONFIG_ALLCONFIG={lab_out / 'fragment'}",
            "allnoconfig",
        )
        _make(tree, ci_out, arch, "defconfig")
        extra = vng_options(arch, [mmci_fragment, tree_fragment])
        with open(ci_out / ".config", "a") as f:
            f.write("\n" + "\n".join(extra) + "\n")
        _make(tree, ci_out, arch, "olddefconfig")
        return (lab_out / ".config").read_text(), (
            ci_out / ".config"
        ).read_text()


def report(diffs: list[Difference]) -> str:
    """One line an option: the unexplained first, then those a fragment
    names, then the left-out families'."""

    def rank(d: Difference) -> tuple[int, str, str]:
        return (
            0 if d.unexplained else 1 if d.named else 2,
            d.family,
            d.option,
        )

    lines = [f"{'option':40} {'lab':8} {'mm CI':8} {'defined in':26} why"]
    for d in sorted(diffs, key=rank):
        why = (
            "UNEXPLAINED" + (f": {d.lead}" if d.lead else "")
            if d.unexplained
            else ("named in configs/" if d.named else d.family)
        )
        lines.append(
            f"{d.option:40} {d.lab:8} {d.mmci:8} {d.defined_in:26} {why}"
        )
    unexplained = sum(d.unexplained for d in diffs)
    lines.append(
        f"# {len(diffs)} options differ; {unexplained} unexplained (ask for "
        "each in configs/mm-ci-lab*.config, or say there why it is left out)"
    )
    return "\n".join(lines) + "\n"


def tree_version(tree: Path) -> tuple[int, int]:
    """(VERSION, PATCHLEVEL) from the tree's top Makefile."""
    makefile = tree / "Makefile"
    text = makefile.read_text(errors="replace") if makefile.is_file() else ""
    found = source.makefile_numbers_in(text)
    if "VERSION" not in found or "PATCHLEVEL" not in found:
        raise UsageError(
            f"{tree} has no kernel Makefile with VERSION and PATCHLEVEL",
            hint="give the top directory of a kernel tree",
        )
    return found["VERSION"], found["PATCHLEVEL"]


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m foliolab.suite.mmci.config_audit",
        description="the options where the lab's mm CI kernel config "
        "differs from the mm CI's (vng: defconfig + its options + the "
        "fragments), for one kernel tree",
    )
    ap.add_argument("tree", type=Path, help="a kernel tree (only read)")
    ap.add_argument("arch", choices=sorted(ARCHES))
    args = ap.parse_args(argv)
    try:
        # what the audit needs, checked before kconfig runs
        version = tree_version(args.tree)
        vng_options(args.arch, [])
        lab, mmci = configure_both(args.tree, args.arch, version)
        kconfigs = index(args.tree, args.arch)
        diffs = differences(
            lab,
            mmci,
            kconfigs.defined,
            named_options(args.arch, version),
            kconfigs.selected_by,
        )
    except FoliolabError as e:
        print(f"config_audit: {e.one_line()}", file=sys.stderr)
        return e.exit_code
    print(report(diffs), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
