"""The mm CI's wrappers in a guest: each ``ksft_*.sh`` of the tree (or,
before the wrappers, each run_vmtests.sh category) run on its own boot of
the kernel built with the mm CI's options (kconfig.MMCI), in a guest
laid out as plan.GUEST_HERE says and why.

The selftests are built as the mm CI builds them: the tree's own
tools/testing/selftests/mm Makefile, against the tree's exported uapi
headers, dynamically linked, every program it has. Like the host tests
(hosttests.py) they are built in a copy of the parts they need, taken
from git's objects at the tree's commit, so a shared tree is only read;
the result is kept. A program that does not build is named in
the payload's record and in the wrapper's rows (run_vmtests.sh then
reports it as failing). The build is kept by what it reads (git's ids
of those parts), so commits that leave tools/ alone share it.

The guest is foliolab's busybox initramfs. A second archive, the
payload, adds what run_vmtests.sh expects of a distribution's root:
bash, the built directory at /foliolab/mmci, the shared libraries its
programs and bash need, and the kernel's modules (test_vmalloc,
test_hmm, hwpoison_inject are modules the wrappers modprobe). The kernel
unpacks the archives in order, so one image file per kernel carries
both, and each boot appends only its job.

Differences from the mm CI's guest that are not scaling (plan.py has
those): no distribution root (tools run_vmtests.sh would find there and
busybox lacks, such as sudo, make the tests that need them skip or fail;
each such case is traced in the baseline); swap on zram instead of a
disk image (the initramfs has no disk; zram's pages are compressed guest
memory, so swap-heavy cases see less free memory than the mm CI's).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from foliolab import hostsetup, proc
from foliolab.arch import Arch
from foliolab.errors import BuildError, FoliolabError
from foliolab.kernel import build, image
from foliolab.kernel import source as ksource
from foliolab.paths import cache_root
from foliolab.suite.mmci import hosttests, mmci
from foliolab.suite.mmci.discover import MM, Wrapper

log = logging.getLogger("foliolab")

# What the mm selftests' build reads from the tree besides tools/: found
# by building 7.3.4's (hmm-tests includes lib/test_hmm_uapi.h and
# ksm_tests include/vdso/time64.h by relative paths; cow.c mm/gup_test.h).
TREE_PATHS = ("tools", "lib/test_hmm_uapi.h", "include/vdso", "mm/gup_test.h")
GUEST_DIR = "foliolab/mmci"
# bash for run_vmtests.sh (busybox's sh is not bash); on the host, as the
# suite's other host tools
BASH = "/bin/bash"
# kmod for modprobe: busybox's has no -n, which run_vmtests.sh asks
# before it loads hwpoison_inject (memory_failure skipped "Module
# hwpoison_inject not found" with busybox's, 2026-11-29)
KMOD = "/usr/bin/kmod"
KMOD_NAMES = ("sbin/modprobe", "sbin/insmod", "sbin/rmmod", "sbin/lsmod")
# procps' ps and pgrep and psmisc's killall for hugetlb's cgroup script
# (the mm CI's guest has a distribution's root). Debian's busybox-static
# has no pgrep at all, so charge_reserved_hugetlb.sh's clean-up
# (`pgrep -f write_to_hugetlbfs`) found no writer to kill, its `umount`
# of the hugetlbfs the writer still mapped failed under `set -e`, and the
# script left with the writer holding run_vmtests.sh's pipe to sed open:
# the wrapper waited until its limit (7.3.4, runs mmci-slow-a,
# mmci-htlb-stuck and mmci-htlb-xtrace, 2026-11-30, shown by --xtrace).
# Busybox's `ps PID` exits 0 for a process that is gone (the script's
# check that its writer still runs) and its killall has no --wait (the
# script's kill). Each at busybox's own path for it, where it has one.
PS = "/bin/ps"
PGREP = "/usr/bin/pgrep"
KILLALL = "/usr/bin/killall"
# sudo, as the guest's one user is root: run_vmtests.sh runs mlock's
# on-fault-limit as `sudo -u nobody` only where `command -v sudo` finds
# one (7.3.4's line 303, 6.12.117's 316), so without it that check was
# skipped in every run ("# SKIP ./on-fault-limit"); the mm CI's guest,
# a distribution's root, has sudo. A script, not Debian's sudo (setuid,
# sudoers, PAM, for a guest whose every command is root's): root runs a
# command as it is, and another user's with busybox's su, which asks
# root for no password. Any option but -u is refused aloud, so a script
# that asks more of sudo fails rather than runs as the wrong user.
SUDO = "/usr/bin/sudo"
SUDO_SCRIPT = b"""\
#!/bin/sh
# foliolab's sudo for the mm CI's guest (suite/mmci/guest.py, SUDO)
user=
if [ "$1" = -u ] && [ -n "$2" ]; then
	user=$2
	shift 2
fi
[ "$1" = -- ] && shift
case $1 in
-*)
	echo "sudo: this guest's sudo takes -u USER only, not $1" >&2
	exit 1
	;;
"")
	echo "usage: sudo [-u USER] [--] COMMAND [ARG...]" >&2
	exit 1
	;;
esac
if [ -n "$user" ]; then
	# "--" ends su's options, so none of the command's is taken for
	# su's (busybox's getopt took `id -u`'s -u, and would a -c)
	exec su -s /bin/sh -c 'exec "$@"' -- "$user" sudo "$@"
fi
exec "$@"
"""
# what the guest gets from the host (x86_64) or the sysroot (arm64) at
# the path it has there, and the Debian packages they come from
TOOLS = (BASH, KMOD, PS, PGREP, KILLALL)
TOOL_PACKAGES = "bash kmod procps psmisc"
# The kselftest helpers beside selftests/mm that its scripts source by a
# relative path (kmemleak's wrappers: ../kselftest/ktap_helpers.sh)
HELPERS = "tools/testing/selftests/kselftest"
_MAKE_ERROR = re.compile(r"^make: \*\*\* \[[^\]]*?:\d+: (\S+)\] Error", re.M)
_BUILT = "built.json"
# what a kept build holds; a new one is built when it changes (2: the
# kselftest helpers beside mm/; 3: kselftest.h included in every program)
KEPT_LAYOUT = 3
# Each wrapper's job: the mm CI's guest setup (run-mm-selftests.sh), each
# step's result printed as a record, then the wrapper.
_SETUP = """\
echo 0 > /proc/sys/kernel/randomize_va_space
echo "@@ mmci aslr $(cat /proc/sys/kernel/randomize_va_space)"
huge=/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages
echo {huge} > $huge
echo "@@ mmci huge-1g $(cat $huge)"
echo {swap_mib}M > /sys/block/zram0/disksize && mkswap /dev/zram0 >/dev/null \\
	&& swapon /dev/zram0
echo "@@ mmci swap-kib $(awk '/^SwapTotal/ {{print $2}}' /proc/meminfo)"
{mglru}lru_gen=$(cat {switch} 2>/dev/null || echo -1)
echo "@@ mmci lru-gen $(printf %d $lru_gen)"
cd /{dir}
"""
# What ran when a wrapper nears its time limit: each user task (and any
# kernel thread in D state) with its state, where it sleeps (wchan) and
# its kernel stack, as @@ records the results keep beside the wrapper's
# output. A wrapper that runs into the limit is killed with its guest,
# and the output its pipes still buffer (run_vmtests.sh's sed) is lost
# with it: this is what shows where it waited.
STUCK_TAG = "@@ mmci stuck"
_WATCH = """\
( sleep {at}
  echo "{tag} after {at} s: the tasks, their state and wchan"
  for d in /proc/[0-9]*; do
    read -r stat < $d/stat 2>/dev/null || continue
    state=$(echo "$stat" | sed 's/^.*) //' | cut -d' ' -f1)
    cmd=$(tr '\\0\\n' '  ' < $d/cmdline 2>/dev/null | cut -c1-200)
    [ -n "$cmd" ] || [ "$state" = D ] || continue
    wchan=$(cat $d/wchan 2>/dev/null)
    echo "{tag} task ${{d#/proc/}} $state $wchan $cmd"
    sed 's/^/{tag} stack /' $d/stack 2>/dev/null
  done
  grep -i huge /proc/meminfo | sed 's/^/{tag} meminfo /'
  tail -n {xtrace_lines} {xtrace} 2>/dev/null \\
    | sed 's/^/{tag} xtrace /'
) &
watcher=$!
"""
# --xtrace: every bash the wrapper starts traces each command (bash's
# xtrace; bash takes no PS4 from the environment as root, so without the
# script's name) to a file the watcher's list ends with; not the mm CI's
# guest (the tracing takes time), for finding where a wrapper waits when
# its own output is lost
XTRACE = "/tmp/foliolab-xtrace"
XTRACE_LINES = 300
_XTRACE_ON = """\
exec 9>{xtrace}
export BASH_XTRACEFD=9 SHELLOPTS=xtrace
"""


@dataclass(frozen=True)
class Selftests:
    """The built tools/testing/selftests/mm of one commit."""

    directory: Path
    commit: str
    not_built: tuple[str, ...]  # programs make could not build
    log: Path


def selftests_key(repo: Path, commit: str) -> str:
    """What the build of the selftests reads, named: git's object ids of
    TREE_PATHS at ``commit``. The prefixes of a series that leaves
    tools/ alone share one build (a bisection tries several)."""
    h = hashlib.sha256(f"layout {KEPT_LAYOUT}\n".encode())
    for p in TREE_PATHS:
        cp = ksource.git(repo, "rev-parse", f"{commit}:{p}", check=False)
        oid = cp.stdout.strip() if cp.returncode == 0 else "-"
        h.update(f"{p}\0{oid}\n".encode())
    return h.hexdigest()[:16]


def selftests_dir(arch: Arch, key: str) -> Path:
    return cache_root() / "mmci-selftests" / arch.name / key


def build_selftests(repo: Path, commit: str, arch: Arch) -> Selftests:
    """The tree's mm selftests, built with its own Makefile (``make -k``:
    every program that builds), kept per commit."""
    keep = selftests_dir(arch, selftests_key(repo, commit))
    record = keep / _BUILT
    if record.is_file():
        got = json.loads(record.read_text())
        return Selftests(
            keep / "mm", commit, tuple(got["not_built"]), keep / "build.log"
        )
    keep.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=keep.parent))
    try:
        src = work / "src"
        src.mkdir()
        hosttests.copy_tree(repo, commit, src, TREE_PATHS)
        logf = work / "build.log"
        # the uapi headers of this tree, where lib.mk looks for them
        # (KHDR_INCLUDES: top_srcdir/usr/include); a build directory of
        # their own, so no kernel build's is touched
        hdr = proc.run_until(
            [
                "nice",
                "make",
                "-C",
                str(repo),
                f"O={work / 'hdr'}",
                f"ARCH={arch.linux_arch}",
                f"CROSS_COMPILE={arch.cross_compile}",
                "headers_install",
                f"INSTALL_HDR_PATH={src / 'usr'}",
            ],
            output=work / "headers.log",
            timeout=1800,
        )
        if hdr.returncode != 0 or hdr.timed_out:
            raise BuildError(
                f"the uapi headers of {commit[:12]} did not install",
                log_path=work / "headers.log",
            )
        # 6.12.117's khugepaged.c returns KSFT_SKIP without including
        # kselftest.h (a stable backport slip), so its thp category had no
        # khugepaged; including the header in every program is harmless
        # (include guards), as the suite's own build does
        made = proc.run_until(
            [
                "nice",
                "make",
                "-C",
                str(src / MM),
                f"-j{os.cpu_count() or 2}",
                "-k",
                *arch.cross_make_args,
                # libnuma's and libcap's for another architecture: the
                # guest sysroot's (arch.guest_packages)
                f"EXTRA_CFLAGS=-include {src / HELPERS}.h "
                + hostsetup.sysroot_cflags(arch),
            ],
            output=logf,
            timeout=3600,
        )
        text = logf.read_text(errors="replace")
        not_built = sorted({Path(p).name for p in _MAKE_ERROR.findall(text)})
        if made.timed_out or not (src / MM / "run_vmtests.sh").is_file():
            raise BuildError(
                f"the mm selftests of {commit[:12]} did not build",
                log_path=logf,
            )
        keep_tmp = work / "keep"
        keep_tmp.mkdir()
        shutil.move(str(src / MM), keep_tmp / "mm")
        if (src / HELPERS).is_dir():
            shutil.move(str(src / HELPERS), keep_tmp / "kselftest")
        shutil.move(str(logf), keep_tmp / "build.log")
        (keep_tmp / _BUILT).write_text(
            json.dumps({"commit": commit, "not_built": not_built}) + "\n"
        )
        shutil.rmtree(keep, ignore_errors=True)
        keep_tmp.rename(keep)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not_built:
        log.warning(
            "mm selftests of %s: %d program(s) did not build: %s",
            commit[:12],
            len(not_built),
            " ".join(not_built),
        )
    return Selftests(keep / "mm", commit, tuple(not_built), keep / "build.log")


def _guest_file(arch: Arch, path: str) -> Path:
    """The file the guest gets at ``path`` (one of TOOLS): the host's own
    for its architecture, else the guest sysroot's."""
    found = image.guest_tool(arch, path)
    if found is None and arch.native:
        raise BuildError(
            f"{path} for the guest is missing on this host",
            hint=f"apt-get install {TOOL_PACKAGES}",
        )
    if found is None:
        root = image.guest_root(arch)
        raise BuildError(
            f"{path} for the {arch.name} guest is not in {root}",
            hint=f"remove {root} to have it unpacked again",
        )
    return found


def payload(
    arch: Arch,
    tests: Selftests,
    modules_root: Path | None,
    test_modules: Path | None = None,
) -> bytes:
    """The archive each wrapper's boot adds to the base image:
    ``test_modules`` (keep_test_modules()) go into the selftests'
    directory, where their wrappers look."""
    c = image.Cpio()
    tools = {path: _guest_file(arch, path) for path in TOOLS}
    dynamic: list[str] = [str(f) for f in tools.values()]
    c.dir(GUEST_DIR)
    for f in sorted(tests.directory.rglob("*")):
        rel = f.relative_to(tests.directory)
        name = f"{GUEST_DIR}/{rel}"
        if f.is_symlink() or not (f.is_file() or f.is_dir()):
            continue
        if f.is_dir():
            c.dir(name)
            continue
        data = f.read_bytes()
        mode = stat.S_IMODE(f.stat().st_mode)
        if data[:4] == b"\x7fELF":
            image.check_machine(data, arch, str(f))
            dynamic.append(str(f))
        c.file(name, data, mode)
    if test_modules is not None:
        for f in sorted(test_modules.rglob("*.ko")):
            rel = f.relative_to(test_modules)
            if not (tests.directory / rel.parent).is_dir():
                c.dir(f"{GUEST_DIR}/{rel.parent}")
            c.file(f"{GUEST_DIR}/{rel}", f.read_bytes(), 0o644)
    helpers = tests.directory.parent / "kselftest"
    if helpers.is_dir():
        # where ../kselftest/ from GUEST_DIR is
        for f in sorted(helpers.iterdir()):
            if f.is_file() and not f.is_symlink():
                mode = stat.S_IMODE(f.stat().st_mode)
                c.file(f"foliolab/kselftest/{f.name}", f.read_bytes(), mode)
    for guest_path, f in tools.items():
        # over busybox's link of the same name, where it has one
        data = f.read_bytes()
        image.check_machine(data, arch, str(f))
        c.file(guest_path, data, 0o755)
    for name in KMOD_NAMES:
        c.symlink(name, KMOD)
    c.file(SUDO, SUDO_SCRIPT, 0o755)
    for guest_path, f in sorted(image.guest_libraries(arch, dynamic).items()):
        c.file(guest_path, f.read_bytes(), 0o755)
    if modules_root is not None and modules_root.is_dir():
        for f in sorted(modules_root.rglob("*")):
            there = str(f.relative_to(modules_root))
            if f.is_dir():
                c.dir(there)
            elif f.is_file() and not f.is_symlink():
                c.file(there, f.read_bytes(), 0o644)
    return c.finish()


def stuck_at_s(limit_s: int) -> int:
    """When the watcher lists the tasks: a minute before the limit (the
    listing takes seconds under TCG), or halfway through a short one."""
    return max(limit_s - 60, limit_s // 2)


def wrapper_job(
    w: Wrapper,
    huge_1g_pages: int,
    swap_mib: int,
    limit_s: int,
    xtrace: bool = False,
    mglru: bool = False,
) -> str:
    """The guest's job for one wrapper: the mm CI's setup (with MGLRU
    turned on when ``mglru``; its state recorded either way), the watcher
    of a wrapper that nears ``limit_s``, then the wrapper (traced with
    ``xtrace``), its exit status the job's."""
    setup = _SETUP.format(
        huge=huge_1g_pages,
        swap_mib=swap_mib,
        dir=GUEST_DIR,
        switch=mmci.MGLRU_SWITCH,
        mglru=f"echo y > {mmci.MGLRU_SWITCH}\n" if mglru else "",
    )
    watch = _WATCH.format(
        at=stuck_at_s(limit_s),
        tag=STUCK_TAG,
        xtrace=XTRACE,
        xtrace_lines=XTRACE_LINES,
    )
    return (
        setup
        + watch
        + (_XTRACE_ON.format(xtrace=XTRACE) if xtrace else "")
        + f"bash {w.command}\nrc=$?\nkill $watcher 2>/dev/null\nexit $rc\n"
    )


@dataclass(frozen=True)
class GuestSetup:
    """What the job's setup records say held (the ``@@ mmci`` lines)."""

    aslr: int | None
    huge_1g_pages: int | None
    swap_kib: int | None
    # lru_gen's enabled mask (0: MGLRU off; -1: no MGLRU in the kernel;
    # None: not recorded, a boot from before it was)
    lru_gen: int | None = None

    def problems(
        self, want_huge: int, want_swap_mib: int, want_mglru: bool = False
    ) -> list[str]:
        """How the guest differs from the layout asked for: a wrapper
        run in such a guest is not the mm CI's (or not the MGLRU setting
        the run asked for)."""
        out = []
        on = self.lru_gen is not None and self.lru_gen > 0
        if want_mglru and not on:
            out.append(f"MGLRU is not on (lru_gen {self.lru_gen})")
        if not want_mglru and on:
            out.append(f"MGLRU is on (lru_gen {self.lru_gen}), not off")
        if self.aslr != 0:
            out.append(f"ASLR is {self.aslr}, not 0")
        if self.huge_1g_pages != want_huge:
            out.append(
                f"{self.huge_1g_pages} of {want_huge} 1 GiB huge pages "
                "reserved"
            )
        if self.swap_kib is None or self.swap_kib < want_swap_mib * 1024 * 0.9:
            out.append(f"swap {self.swap_kib} KiB, not {want_swap_mib} MiB")
        return out


_SETUP_RECORD = re.compile(r"^@@ mmci (\S+) (-?\d+)\s*$", re.M)


def guest_setup(output: str) -> GuestSetup:
    got = {k: int(v) for k, v in _SETUP_RECORD.findall(output)}
    return GuestSetup(
        got.get("aslr"),
        got.get("huge-1g"),
        got.get("swap-kib"),
        got.get("lru-gen"),
    )


def wrapper_output(output: str) -> str:
    """The wrapper's own output: the results' text less the records
    foliolab's init and the setup write (``@@ ...`` lines)."""
    return "".join(
        line
        for line in output.splitlines(keepends=True)
        if not line.startswith("@@ ")
    )


def kernel_args() -> tuple[str, ...]:
    """The mm CI's kernel arguments that are not the console's (the
    executor sets that): its log level."""
    return tuple(a for a in mmci.KERNEL_ARGS if a.startswith("loglevel="))


# the selftests' Makefile names the directories of its test modules
# (7.3.4: page_frag), built only against a kernel build directory
_MODS_DIR = re.compile(r"^\s*TEST_GEN_MODS_DIR\s*:?=\s*(.*?)\s*$", re.M)
# what keep_test_modules() writes beside the modules it could not build
NOT_BUILT_MODULES = "not-built"


def test_module_dirs(repo: Path, commit: str) -> list[str]:
    """The test modules' directories the tree's mm selftests Makefile
    names (7.3.4: page_frag; 6.12.117: none), those the tree has: a name
    misread from the Makefile is no directory to build."""
    shown = ksource.git(repo, "show", f"{commit}:{MM}/Makefile", check=False)
    if shown.returncode != 0:
        return []
    named = [d for m in _MODS_DIR.findall(shown.stdout) for d in m.split()]
    there = ksource.git(
        repo, "ls-tree", "-d", "--name-only", commit, f"{MM}/", check=False
    ).stdout.split()
    return [d for d in named if f"{MM}/{d}" in there]


def keep_test_modules(
    kernel: build.Kernel, tree: ksource.Tree, arch: Arch, dest: Path
) -> None:
    """The selftests' test modules (page_frag_test.ko) built against
    ``kernel`` and kept in ``dest/DIR/``, where the wrapper looks for
    them under the selftests' directory: the mm CI builds its selftests
    against its kernel's build, so test_page_frag.sh finds its module
    there. Each build's log is kept as ``dest/DIR.build.log``. A module
    that does not build is named in ``dest/not-built`` (its wrapper then
    skips, and its row says why) and the kernel stands; it is kept so
    with the kernel (a build that failed is not tried again at each
    run: remove the kernel's store directory to try again)."""
    failed = []
    dest.mkdir(parents=True, exist_ok=True)  # made even when there are none
    for d in test_module_dirs(tree.path, tree.commit):
        work = Path(tempfile.mkdtemp(prefix="mods-"))
        kos: list[Path] = []
        try:
            hosttests.copy_tree(tree.path, tree.commit, work, (f"{MM}/{d}",))
            src = work / MM / d
            kos = build.build_external_module(kernel, tree, arch, src)
        except (FoliolabError, OSError) as e:
            log.warning("the %s test module did not build: %s", d, e)
        finally:
            built_log = work / MM / d / "build.log"
            if built_log.is_file():
                shutil.copy2(built_log, dest / f"{d}.build.log")
            for ko in kos:
                (dest / d).mkdir(parents=True, exist_ok=True)
                shutil.copy2(ko, dest / d / ko.name)
            shutil.rmtree(work, ignore_errors=True)
        if not kos:
            failed.append(d)
    if failed:
        (dest / NOT_BUILT_MODULES).write_text("\n".join(failed) + "\n")


def keep_modules(kernel: build.Kernel, dest: Path) -> Path | None:
    """The kernel's installed modules copied to ``dest`` (None: it has
    none). Called while the build lock is held: the build directory is
    the next build's once it is released."""
    root = kernel.build_dir / build.MODULES_ROOT
    if not root.is_dir():
        return None
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(root, dest, symlinks=True)
    return dest
