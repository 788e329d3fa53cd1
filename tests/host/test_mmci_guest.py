"""The mm CI's guest step (suite/mmci/guest.py, run.py's wrappers): the
kernel's config made of the mm CI's fragment, the lab's and the tree's;
the job each wrapper boots with and the records its setup leaves; the
payload archive; the choice of wrappers. Cheap: no kernel, no guest
(the boots themselves are in the notebook's runs)."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from test_mmci import run_cli

from foliolab import errors
from foliolab.arch import get_arch
from foliolab.kernel import kconfig
from foliolab.suite.mmci import discover, guest
from foliolab.suite.mmci import run as mmci_run
from foliolab.suite.mmci.results import WrapperRun, wrapper_outcomes
from foliolab.testrecord import TestOutcome, TestStatus

X86 = get_arch("x86_64")
MMAP = discover.wrapper_of("ksft_mmap.sh", "./run_vmtests.sh -t mmap\n")


def test_the_mm_ci_kernel_takes_the_lab_layer_then_the_trees_options():
    frag = kconfig.merge(
        kconfig.MMCI,
        "x86_64",
        version=(7, 3),
        tree_options={"CONFIG_TEST_HMM": "m", "CONFIG_NEW": "y"},
    )
    # the tree's fragment is last and wins (the mm CI's says y)
    assert frag.options["CONFIG_TEST_HMM"] == "m"
    assert frag.origin["CONFIG_TEST_HMM"] == kconfig.TREE_FRAGMENT
    assert list(frag.options)[-1] == "CONFIG_NEW"
    # the lab's layer: modules for the =m tests, and the choice base made
    assert frag.options["CONFIG_MODULES"] == "y"
    assert frag.origin["CONFIG_MODULES"] == "mm-ci-lab.config"
    assert frag.options["CONFIG_TRANSPARENT_HUGEPAGE_MADVISE"] == "n"
    assert frag.options["CONFIG_TRANSPARENT_HUGEPAGE_ALWAYS"] == "y"
    assert frag.options["CONFIG_X86_MCE"] == "y"  # x86's own file
    # what the lab leaves out is no longer asked for, and says why
    assert "CONFIG_GDB_SCRIPTS" not in frag.options
    assert "CONFIG_MEMCG_SWAP" not in frag.options
    assert frag.gone["CONFIG_GDB_SCRIPTS"] == "mm-ci-lab.config"
    # arm64 does not get x86's
    arm = kconfig.merge(kconfig.MMCI, "arm64", version=(7, 3))
    assert "CONFIG_X86_MCE" not in arm.options


def test_an_option_the_architecture_lacks_is_asked_of_no_fragment():
    # 7.3's arm64 selects no HAVE_ARCH_SOFT_DIRTY: kconfig drops
    # MEM_SOFT_DIRTY whatever asks, the tree's own fragment (last) too
    tree = {"CONFIG_MEM_SOFT_DIRTY": "y", "CONFIG_NEW": "y"}
    arm = kconfig.merge(
        kconfig.MMCI, "arm64", version=(7, 3), tree_options=tree
    )
    assert "CONFIG_MEM_SOFT_DIRTY" not in arm.options
    assert arm.gone["CONFIG_MEM_SOFT_DIRTY"] == "mm-ci-lab-arm64.config"
    assert arm.options["CONFIG_NEW"] == "y"
    x86 = kconfig.merge(
        kconfig.MMCI, "x86_64", version=(7, 3), tree_options=tree
    )
    assert x86.options["CONFIG_MEM_SOFT_DIRTY"] == "y"
    assert kconfig.parse(
        "# CONFIG_A is not on this architecture: no HAVE_ARCH_A\n"
    ) == {"CONFIG_A": kconfig.NOT_ON_ARCH}


def _configs_with(tmp_path, name, text):
    configs = tmp_path / "configs"
    shutil.copytree(kconfig.CONFIGS_DIR, configs)
    with (configs / name).open("a") as f:
        f.write(text)
    return configs


def test_not_on_this_architecture_is_said_in_an_architectures_own_file(
    tmp_path,
):
    # said in a file x86_64 reads too, it would take the option off there
    configs = _configs_with(
        tmp_path,
        "mm-ci-lab.config",
        "# CONFIG_KSM is not on this architecture: none\n",
    )
    with pytest.raises(errors.ConfigError, match="every architecture"):
        kconfig.merge(kconfig.MMCI, "x86_64", configs, version=(7, 3))


def test_a_stale_not_on_this_architecture_is_refused(tmp_path):
    arm = kconfig.merge(kconfig.MMCI, "arm64", version=(7, 3))
    assert arm.not_on_arch == {
        "CONFIG_MEM_SOFT_DIRTY": "mm-ci-lab-arm64.config"
    }
    lines = [
        f"{k}={v}" if v != "n" else f"# {k} is not set"
        for k, v in arm.options.items()
    ]
    config = tmp_path / ".config"
    # as 7.3's arm64 writes it: the option absent
    config.write_text("\n".join(lines) + "\n")
    kconfig.check(arm, config)
    # an arm64 that gained HAVE_ARCH_SOFT_DIRTY offers it, set or not
    for offered in (
        "CONFIG_MEM_SOFT_DIRTY=y",
        "# CONFIG_MEM_SOFT_DIRTY is not set",
    ):
        config.write_text("\n".join(lines + [offered]) + "\n")
        with pytest.raises(errors.ConfigError, match="kconfig offers it"):
            kconfig.check(arm, config)


def test_other_purposes_do_not_take_the_mm_ci_layers():
    frag = kconfig.merge("debug", "x86_64", version=(7, 3))
    assert "CONFIG_TEST_HMM" not in frag.options
    assert frag.options.get("CONFIG_MODULES") != "y"


def test_left_out_is_read_as_no_longer_asked_for():
    got = kconfig.parse(
        "CONFIG_A=y\n# CONFIG_A is left out: why\n# CONFIG_B is gone\n"
    )
    assert got == {"CONFIG_A": kconfig.GONE, "CONFIG_B": kconfig.GONE}


def test_a_wrappers_job_sets_the_guest_up_then_runs_it():
    job = guest.wrapper_job(MMAP, 4, 2048, 2400)
    assert "randomize_va_space" in job
    assert "echo 4 > $huge" in job
    assert "echo 2048M > /sys/block/zram0/disksize" in job
    assert "( sleep 2340\n" in job  # the tasks listed a minute before
    assert "bash ./ksft_mmap.sh\nrc=$?\n" in job
    assert job.rstrip().endswith("exit $rc")
    assert f"cd /{guest.GUEST_DIR}" in job
    assert guest.stuck_at_s(100) == 50  # a short limit: halfway


def _job_tail(w, limit, xtrace=False):
    """The job from its watcher on (the setup writes the guest's /proc),
    run by busybox's sh as the guest runs it."""
    job = guest.wrapper_job(w, 4, 2048, limit, xtrace=xtrace)
    return subprocess.run(
        ["busybox", "sh", "-c", job[job.index("( sleep") :]],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_wrapper_near_its_limit_has_its_tasks_listed_as_records():
    """The watcher lists the tasks (user tasks with their state, wchan
    and stack) as @@ records only: even a command line with a newline in
    it stays on its record's line; a wrapper that ends first stops the
    watcher, and the job's status is the wrapper's."""
    stuck = discover.Wrapper("x", "-c 'sleep 4\n'", "", "", False)
    cp = _job_tail(stuck, 4)  # the list at 2 s, the wrapper ends at 4
    lines = cp.stdout.splitlines()
    assert lines and all(ln.startswith(guest.STUCK_TAG) for ln in lines)
    # the wrapper's task (bash execs the sleep), asleep where it waits
    assert any(
        ln.startswith(f"{guest.STUCK_TAG} task ")
        and " S " in ln
        and ln.endswith(" sleep 4 ")
        for ln in lines
    ), lines
    assert any(" stack " in ln for ln in lines)
    assert guest.wrapper_output(cp.stdout) == ""
    quick = discover.Wrapper("x", "-c 'exit 3'", "", "", False)
    cp = _job_tail(quick, 4)
    assert cp.returncode == 3 and guest.STUCK_TAG not in cp.stdout


def test_xtrace_traces_every_bash_and_the_list_ends_with_its_last_lines(
    monkeypatch, tmp_path
):
    monkeypatch.setattr(guest, "XTRACE", str(tmp_path / "xtrace"))
    w = discover.Wrapper("x", "-c 'f() { sleep 4; }; echo hi; f'", "", "", 0)
    assert "BASH_XTRACEFD" not in guest.wrapper_job(w, 4, 2048, 4)
    cp = _job_tail(w, 4, xtrace=True)
    traced = [
        ln.removeprefix(f"{guest.STUCK_TAG} xtrace ")
        for ln in cp.stdout.splitlines()
        if ln.startswith(f"{guest.STUCK_TAG} xtrace ")
    ]
    assert traced == ["+ echo hi", "+ f", "+ sleep 4"]
    assert guest.wrapper_output(cp.stdout) == "hi\n"  # the output as it was


OUTPUT = """\
@@ boot 1.5
@@ mmci aslr 0
@@ mmci huge-1g 4
@@ mmci swap-kib 2097148
TAP version 13
# -----------------------
# running ./map_fixed_noreplace
# -----------------------
# ok 1 first
# [PASS]
ok 1 map_fixed_noreplace
1..1
@@ exit 0
"""


def test_the_setup_records_are_read_and_left_out_of_the_output():
    setup = guest.guest_setup(OUTPUT)
    assert (setup.aslr, setup.huge_1g_pages, setup.swap_kib) == (
        0,
        4,
        2097148,
    )
    assert setup.problems(4, 2048) == []
    text = guest.wrapper_output(OUTPUT)
    assert "@@" not in text
    rows = wrapper_outcomes(WrapperRun(MMAP, text, 0), "up")
    assert rows[0].path == "kselftest.mm.mmap"
    assert rows[0].status is TestStatus.PASS


def test_a_setup_that_did_not_hold_is_named():
    short = OUTPUT.replace("huge-1g 4", "huge-1g 1").replace(
        "aslr 0", "aslr 2"
    )
    problems = guest.guest_setup(short).problems(4, 2048)
    assert problems == [
        "ASLR is 2, not 0",
        "1 of 4 1 GiB huge pages reserved",
    ]
    no_swap = OUTPUT.replace("@@ mmci swap-kib 2097148\n", "")
    assert guest.guest_setup(no_swap).problems(4, 2048) == [
        "swap None KiB, not 2048 MiB"
    ]


def _cpio_names(data: bytes) -> dict[str, int]:
    """name -> mode of every entry of a newc archive."""
    names = {}
    f = io.BytesIO(data)
    while True:
        hdr = f.read(110)
        assert hdr[:6] == b"070701"
        mode = int(hdr[14:22], 16)
        size = int(hdr[54:62], 16)
        namesize = int(hdr[94:102], 16)
        name = f.read(namesize)[:-1].decode()
        f.read((4 - (110 + namesize) % 4) % 4)
        if name == "TRAILER!!!":
            return names
        f.read(size)
        f.read((4 - size % 4) % 4)
        names[name] = mode


def test_the_payload_carries_the_tests_bash_their_libraries_and_modules(
    tmp_path,
):
    mm = tmp_path / "mm"
    mm.mkdir()
    (mm / "run_vmtests.sh").write_text("#!/bin/bash\n")
    (mm / "run_vmtests.sh").chmod(0o755)
    (mm / "data.txt").write_text("x\n")
    shutil.copy("/bin/true", mm / "true_prog")
    (tmp_path / "kselftest").mkdir()
    (tmp_path / "kselftest" / "ktap_helpers.sh").write_text("# helpers\n")
    mods = tmp_path / "modules"
    (mods / "lib/modules/7.3.4").mkdir(parents=True)
    (mods / "lib/modules/7.3.4/modules.dep").write_text("")
    tests = guest.Selftests(mm, "c" * 40, (), tmp_path / "build.log")
    names = _cpio_names(guest.payload(X86, tests, mods))
    d = guest.GUEST_DIR
    assert names[f"{d}/run_vmtests.sh"] & 0o777 == 0o755
    assert names[f"{d}/data.txt"] & 0o777 == 0o644
    assert f"{d}/true_prog" in names
    assert "bin/bash" in names
    assert any(n.endswith("libc.so.6") for n in names)
    assert "lib/modules/7.3.4/modules.dep" in names
    # what run_vmtests.sh and the tests find in a distribution's root
    assert "foliolab/kselftest/ktap_helpers.sh" in names
    assert "usr/bin/kmod" in names
    assert names["sbin/modprobe"] & 0o170000 == 0o120000  # a symlink
    assert any(n.endswith("libgcc_s.so.1") for n in names)
    # procps' ps and psmisc's killall, files where busybox has links
    for tool in ("bin/ps", "usr/bin/pgrep", "usr/bin/killall"):
        assert names[tool] & 0o170000 == 0o100000, tool
    assert any(n.endswith("libproc2.so.0") for n in names)  # ps's
    # sudo, for run_vmtests.sh's `sudo -u nobody` (mlock's on-fault-limit)
    assert names[guest.SUDO.lstrip("/")] & 0o777 == 0o755


@pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/bin/busybox").exists(),
    reason="su as root, with busybox's su as the guest has it",
)
def test_the_guests_sudo_runs_as_the_user_asked_and_refuses_the_rest(
    tmp_path,
):
    """The guest's sudo with busybox's su, as in the guest: `sudo -u
    nobody CMD` runs CMD as nobody with its own options (`id -u`'s -u is
    not su's), in the same directory, as run_vmtests.sh's `sudo -u
    nobody sh -c ./on-fault-limit` asks; `sudo CMD` runs it as root; an
    option it does not know is refused, not ignored."""
    sudo = tmp_path / "sudo"
    sudo.write_bytes(guest.SUDO_SCRIPT)
    sudo.chmod(0o755)
    (tmp_path / "su").symlink_to("/bin/busybox")
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(sudo), *argv],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )

    assert run("-u", "nobody", "id", "-u").stdout == "65534\n"
    cp = run("-u", "nobody", "sh", "-c", 'id -un; pwd; echo "$0"')
    assert cp.stdout == f"nobody\n{tmp_path}\nsh\n", cp.stderr
    assert run("id", "-u").stdout == "0\n"
    # "--" before the command, as sudo takes it
    assert run("-u", "nobody", "--", "id", "-u").stdout == "65534\n"
    assert run("--", "id", "-u").stdout == "0\n"
    for argv in ((), ("-u", "nobody")):  # no command: sudo's usage
        cp = run(*argv)
        assert cp.returncode == 1 and cp.stderr.startswith("usage: sudo")
    cp = run("-n", "true")
    assert cp.returncode == 1
    assert cp.stderr == "sudo: this guest's sudo takes -u USER only, not -n\n"


def _aarch64(elf: bytes, interp: bytes | None = None) -> bytes:
    """/bin/true's bytes said to be for aarch64 (ELF header e_machine),
    its loader's path replaced by ``interp`` (of the same length)."""
    data = bytearray(elf)
    data[18:20] = (183).to_bytes(2, "little")
    if interp is not None:
        i = data.index(b"/lib64/ld-linux-x86-64.so.2\0")
        data[i : i + len(interp)] = interp
    return bytes(data)


def test_an_arm64_payload_takes_bash_kmod_and_libraries_from_the_sysroot(
    tmp_path, monkeypatch
):
    # a fake arm64 sysroot: the host's /bin/true with an aarch64 header
    # stands for each binary and library (the payload reads their ELF
    # headers, never runs them)
    from foliolab import hostsetup

    arm = get_arch("arm64")
    root = tmp_path / "sysroot"
    true = Path("/bin/true").read_bytes()
    interp = b"/lib/ld-linux-aarch64.so.1\0"  # as long as x86's, less one
    prog = _aarch64(true, interp.ljust(28, b"\0"))
    for rel in (
        "bin/bash",
        "bin/kmod",
        "bin/ps",
        "usr/bin/pgrep",
        "usr/bin/killall",
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(prog)
    lib = root / "lib" / arm.multiarch
    lib.mkdir(parents=True)
    # a library: an aarch64 ELF header needing nothing
    bare = bytearray(64)
    bare[0:6] = b"\x7fELF\x02\x01"
    bare[18:20] = (183).to_bytes(2, "little")
    (root / "lib" / "ld-linux-aarch64.so.1").write_bytes(bytes(bare))
    for so in ("libc.so.6", "libgcc_s.so.1"):
        (lib / so).write_bytes(bytes(bare))
    monkeypatch.setattr(hostsetup, "guest_sysroot", lambda a: root)
    mm = tmp_path / "mm"
    mm.mkdir()
    (mm / "prog").write_bytes(prog)
    tests = guest.Selftests(mm, "c" * 40, (), tmp_path / "build.log")
    names = _cpio_names(guest.payload(arm, tests, None))
    assert f"{guest.GUEST_DIR}/prog" in names
    assert "bin/bash" in names and "usr/bin/kmod" in names
    assert "bin/ps" in names and "usr/bin/killall" in names
    assert "usr/bin/pgrep" in names
    assert names["sbin/modprobe"] & 0o170000 == 0o120000
    assert "lib/ld-linux-aarch64.so.1" in names
    assert f"lib/{arm.multiarch}/libc.so.6" in names
    assert f"lib/{arm.multiarch}/libgcc_s.so.1" in names  # dlopen()ed
    # the host's own are never taken for the arm64 guest
    assert not any("x86_64" in n for n in names)
    # a sysroot without libgcc_s or bash: one line naming it
    (lib / "libgcc_s.so.1").unlink()
    with pytest.raises(errors.ImageError, match="libgcc_s.so.1"):
        guest.payload(arm, tests, None)
    (root / "bin" / "bash").unlink()
    with pytest.raises(errors.BuildError, match="bin/bash for the arm64"):
        guest.payload(arm, tests, None)


def test_a_host_without_kmod_is_told_to_install_it(monkeypatch):
    from foliolab.kernel import image

    monkeypatch.setattr(image, "guest_tool", lambda arch, path: None)
    with pytest.raises(errors.BuildError) as e:
        guest._guest_file(X86, guest.KMOD)
    assert e.value.hint == "apt-get install bash kmod procps psmisc"


@pytest.mark.parametrize("arch_name", ["x86_64", "arm64"])
def test_the_selftests_are_built_for_the_guests_architecture(
    tmp_cache, monkeypatch, arch_name
):
    from foliolab import hostsetup, proc

    arch = get_arch(arch_name)
    root = tmp_cache / "sysroot" / arch_name
    monkeypatch.setattr(guest, "selftests_key", lambda repo, commit: "k")

    def copy_tree(repo, commit, dest, paths):
        (dest / discover.MM).mkdir(parents=True)
        (dest / discover.MM / "run_vmtests.sh").write_text("#!/bin/bash\n")

    made = []

    def run_until(argv, *, output, timeout, **kw):
        made.append([str(a) for a in argv])
        output.write_text("")
        return proc.Finished(0, False, 0.1, 0.1)

    monkeypatch.setattr(guest.hosttests, "copy_tree", copy_tree)
    monkeypatch.setattr(proc, "run_until", run_until)
    guest.build_selftests(tmp_cache, "c" * 40, arch)
    headers, selftests = made
    cflags = next(a for a in selftests if a.startswith("EXTRA_CFLAGS="))
    assert cflags.startswith("EXTRA_CFLAGS=-include ")
    if arch.native:
        assert not any(a.startswith("CROSS_COMPILE=") for a in selftests)
        assert str(root) not in cflags
        assert "CROSS_COMPILE=" in headers  # empty: the host's compiler
        return
    assert "ARCH=arm64" in selftests and "ARCH=arm64" in headers
    assert "CROSS_COMPILE=aarch64-linux-gnu-" in selftests
    # libnuma's and libcap's headers after the cross compiler's own, their
    # libraries and those libraries' own dependencies from the sysroot
    assert f"-idirafter {root}/usr/include" in cflags
    assert f"-L{root}/usr/lib/aarch64-linux-gnu" in cflags
    assert f"-Wl,-rpath-link,{root}/lib/aarch64-linux-gnu" in cflags
    assert "-isystem" not in cflags and " -I" not in cflags
    assert hostsetup.sysroot_cflags(arch) in cflags


def test_a_run_of_nothing_is_refused_in_one_line(capsys, tmp_path):
    rc, _, err = run_cli(
        capsys,
        "test",
        "--mm-ci",
        "--kernel",
        "up=base",
        "--wrappers",
        "none",
        "--no-host-tests",
        "--out",
        str(tmp_path / "out"),
    )
    assert rc == errors.UsageError.exit_code
    assert "nothing to run" in err
    assert not (tmp_path / "out").exists()


def test_arm64_runs_the_wrappers_and_refuses_host_tests_in_one_line(capsys):
    rc, _, err = run_cli(
        capsys, "test", "--mm-ci", "--arch", "arm64", "--kernel", "up=base"
    )
    assert rc == errors.UsageError.exit_code
    assert "the host tests run on the host, which is not arm64" in err
    assert "--no-host-tests" in err


def test_an_elf_for_another_machine_is_refused(tmp_path):
    mm = tmp_path / "mm"
    mm.mkdir()
    elf = bytearray(Path("/bin/true").read_bytes())
    elf[18:20] = (183).to_bytes(2, "little")  # aarch64
    (mm / "prog").write_bytes(bytes(elf))
    tests = guest.Selftests(mm, "c" * 40, (), tmp_path / "build.log")
    with pytest.raises(errors.FoliolabError):
        guest.payload(X86, tests, None)


def _request(tmp_path, wrappers):
    return mmci_run.MmciRequest((), X86, tmp_path, wrappers=wrappers)


def test_wrappers_are_chosen_by_name_and_an_unknown_one_refused(tmp_path):
    found = discover.Discovery(
        discover.WRAPPERS,
        (
            MMAP,
            discover.wrapper_of("ksft_cow.sh", "./run_vmtests.sh -t cow\n"),
        ),
        {},
    )
    every = mmci_run.chosen(_request(tmp_path, None), found)
    assert [w.name for w in every] == ["mmap", "cow"]
    assert mmci_run.chosen(_request(tmp_path, ()), found) == []
    picked = mmci_run.chosen(_request(tmp_path, ("cow",)), found)
    assert [w.name for w in picked] == ["cow"]
    with pytest.raises(errors.UsageError, match="no such wrappers"):
        mmci_run.chosen(_request(tmp_path, ("mmapp",)), found)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--wrappers", "mmap"], "--wrappers is --mm-ci's"),
        (["--wrapper-limit", "60"], "--wrapper-limit is --mm-ci's"),
        (
            ["--mm-ci", "--kernel", "up=base", "--wrappers", "a b"],
            "not all, none or a list of names",
        ),
    ],
)
def test_wrapper_options_are_checked_first(capsys, argv, message):
    rc, _, err = run_cli(capsys, "test", *argv)
    assert rc == errors.UsageError.exit_code
    assert message in err


def test_an_option_the_tree_does_not_define_is_not_asked_of_it(tmp_path):
    from test_mmci import make_tree

    from foliolab.kernel import build, source

    repo, commit = make_tree(
        tmp_path / "tree",
        {
            "Makefile": "VERSION = 7\nPATCHLEVEL = 3\n",
            "mm/Kconfig": "config MMU\n\tbool\nmenuconfig KSM\n\tbool\n",
            kconfig.TREE_FRAGMENT: "CONFIG_TEST_HMM=m\n",
        },
    )
    tree = source.Tree("up", repo, commit, "")
    frag = build.fragment_of(tree, X86, kconfig.MMCI)
    # the mm CI's own options the tree defines stay asked for
    assert frag.options["CONFIG_MMU"] == "y"
    assert frag.options["CONFIG_KSM"] == "y"
    assert frag.gone["CONFIG_MM_ID"] == build.NOT_IN_TREE
    assert "CONFIG_MM_ID" not in frag.options
    # the lab's, the base's and the tree's own are never dropped this way
    assert frag.options["CONFIG_MODULES"] == "y"
    assert frag.options["CONFIG_TEST_HMM"] == "m"
    assert frag.options["CONFIG_SWAP"] == "y"


def _series(tmp_path, n):
    d = tmp_path / "series"
    d.mkdir()
    names = []
    for i in range(1, n + 1):
        name = f"{i:04d}-p{i}.patch"
        (d / name).write_text(
            f"From: a <a@b>\nSubject: [PATCH] p{i}\n\n---\n"
            f"diff --git a/f{i} b/f{i}\n"
        )
        names.append(name)
    (d / "series").write_text("\n".join(names) + "\n")
    return d


def _rows(path, status, kernel="k"):
    return [TestOutcome(path, status, kernel)]


CASE = "kselftest.mm.soft_dirty.soft_dirty.Test_soft-dirty_after_swap"


@pytest.mark.parametrize("bad_from", [1, 3, 5, 8])
def test_the_first_bad_patch_is_found_by_bisecting_prefixes(
    tmp_path, bad_from
):
    from foliolab.kernel import specs
    from foliolab.suite.mmci import firstbad

    spec = specs.parse_spec("next", f"base+{_series(tmp_path, 8)}")
    up = [_rows(CASE, TestStatus.PASS, "up") for _ in range(3)]
    tried = []

    def run_prefix(k, paths):
        assert paths == [CASE]
        n = len(k.series().patches)
        tried.append((k.name, n))
        status = TestStatus.FAIL if n >= bad_from else TestStatus.PASS
        return firstbad.ProbeRuns(
            up, [_rows(CASE, status, k.name) for _ in range(3)]
        )

    got = firstbad.locate(spec, [CASE], run_prefix, up_is_source=True)
    assert got.first_bad == bad_from
    assert got.patch == f"{bad_from:04d}-p{bad_from}.patch"
    # the whole series again first, then a bisection: at most
    # ceil(log2(8)) prefixes more, never the source, which the comparison
    # already tried
    assert tried[0] == ("next+p8", 8)
    assert len(tried) <= 1 + 3
    assert all(0 < n < 8 for _, n in tried[1:])
    assert all(name == f"next+p{n}" for name, n in tried)
    assert {s.prefix: s.bad for s in got.steps} == {
        n: n >= bad_from for _, n in tried
    }
    assert all(s.reference == {CASE: "0/3"} for s in got.steps)
    assert all(
        s.line().endswith(f"[{CASE} {s.tallies[CASE]} against 0/3]")
        for s in got.steps
    )
    rows = firstbad.outcomes(got)
    assert [r.path for r in rows] == [f"firstbad.{CASE}"]
    assert rows[0].status is TestStatus.FAIL
    assert rows[0].misc["patch"] == got.patch
    assert "against 0/3" in rows[0].misc["steps"]


def test_a_new_failure_that_does_not_come_again_is_not_searched(tmp_path):
    """The whole series booted beside the reference fails the case as
    often as the reference does: the search stops there and names no
    patch (a bisection of good steps alone would name the last)."""
    from foliolab.kernel import specs
    from foliolab.suite.mmci import firstbad

    spec = specs.parse_spec("next", f"base+{_series(tmp_path, 4)}")
    tried = []

    def run_prefix(k, paths):
        tried.append(len(k.series().patches))
        half = [
            _rows(CASE, TestStatus.FAIL if i % 2 else TestStatus.PASS)
            for i in range(6)
        ]
        return firstbad.ProbeRuns(half, half)

    got = firstbad.locate(spec, [CASE], run_prefix, up_is_source=True)
    assert tried == [4]
    assert got.first_bad is None and got.patch == ""
    assert got.note == firstbad.NOT_AGAIN
    assert "3/6 against 3/6" in firstbad.text(got)
    assert firstbad.outcomes(got)[0].status is TestStatus.ERROR


def test_each_prefix_is_judged_against_the_reference_beside_it(tmp_path):
    """A case whose rate drifts during a search: the reference booted
    beside a prefix fails it as often as the prefix does, so the prefix
    is not bad, though the reference's first runs never failed it."""
    from foliolab.kernel import specs
    from foliolab.suite.mmci import firstbad

    spec = specs.parse_spec("next", f"base+{_series(tmp_path, 4)}")

    def run_prefix(k, paths):
        n = len(k.series().patches)
        # before prefix 3, the case fails 4 of 6 times on each side (the
        # reference's first runs, made before, never failed it); from
        # prefix 3, always on the prefix and never on the reference
        early = n < 3
        beside = [
            _rows(
                CASE,
                TestStatus.FAIL if early and i < 4 else TestStatus.PASS,
                "up",
            )
            for i in range(6)
        ]
        mine = [
            _rows(
                CASE,
                TestStatus.FAIL if not early or i < 4 else TestStatus.PASS,
            )
            for i in range(6)
        ]
        return firstbad.ProbeRuns(beside, mine)

    got = firstbad.locate(spec, [CASE], run_prefix, up_is_source=True)
    steps = {
        s.prefix: (s.bad, s.tallies[CASE], s.reference[CASE])
        for s in got.steps
    }
    assert got.first_bad == 3, steps
    assert steps[2] == (False, "4/6", "4/6")


def test_a_source_that_fails_against_another_reference_is_said_so(tmp_path):
    from foliolab.kernel import specs
    from foliolab.suite.mmci import firstbad

    spec = specs.parse_spec("next", f"base+{_series(tmp_path, 4)}")
    up = [_rows(CASE, TestStatus.PASS, "up") for _ in range(3)]
    got = firstbad.locate(
        spec,
        [CASE],
        lambda k, paths: firstbad.ProbeRuns(
            up, [_rows(CASE, TestStatus.FAIL) for _ in range(3)]
        ),
        up_is_source=False,
    )
    assert got.first_bad == 0
    assert [s.prefix for s in got.steps] == [0, 4]  # the whole series first
    assert "source fails them" in firstbad.text(got)
    assert firstbad.outcomes(got)[0].status is TestStatus.ERROR


def test_a_kernel_without_a_series_is_not_searched():
    from foliolab.kernel import specs
    from foliolab.suite.mmci import firstbad

    got = firstbad.locate(
        specs.parse_spec("next", "base"),
        [CASE],
        lambda k, paths: pytest.fail("nothing to run"),
        up_is_source=False,
    )
    assert got.first_bad is None and "not a series kernel" in got.note


def test_the_wrapper_of_a_case_path():
    from foliolab.suite.mmci import firstbad

    assert firstbad.wrapper_of_path(CASE) == "soft_dirty"
    assert firstbad.wrapper_of_path("kselftest.mm.cow") == "cow"
    assert firstbad.wrapper_of_path("hosttest.radix-tree.maple") is None


def test_commits_that_leave_tools_alone_share_their_selftests(tmp_path):
    from test_mmci import git, make_tree

    repo, first = make_tree(
        tmp_path / "tree",
        {"tools/testing/selftests/mm/a.c": "1\n", "mm/rmap.c": "1\n"},
    )
    (repo / "mm/rmap.c").write_text("2\n")
    git(repo, "commit", "-qam", "mm only")
    second = git(repo, "rev-parse", "HEAD").strip()
    (repo / "tools/testing/selftests/mm/a.c").write_text("2\n")
    git(repo, "commit", "-qam", "a selftest")
    third = git(repo, "rev-parse", "HEAD").strip()
    key = guest.selftests_key
    assert key(repo, first) == key(repo, second)
    assert key(repo, second) != key(repo, third)


def test_a_scratch_directory_on_a_command_line_is_not_in_the_path():
    title = "running ./khugepaged all:file /tmp/xfs_dir_HFhGvr"
    sep = "-" * len(title)
    out = (
        "TAP version 13\n"
        f"# {sep}\n# {title}\n# {sep}\n"
        "# ok 1 collapse_full\n"
        "ok 1 khugepaged all:file /tmp/xfs_dir_HFhGvr\n"
        "1..1\n"
    )
    thp = discover.wrapper_of("ksft_thp.sh", "./run_vmtests.sh -t thp\n")
    rows = wrapper_outcomes(WrapperRun(thp, out, 0), "up")
    assert [r.path for r in rows] == [
        "kselftest.mm.thp",
        "kselftest.mm.thp.khugepaged_all_file",
        "kselftest.mm.thp.khugepaged_all_file.collapse_full",
    ]
    # the command as it ran is kept
    assert rows[1].misc["command"].endswith("/tmp/xfs_dir_HFhGvr")


def test_mglru_on_is_set_in_the_guest_recorded_and_checked(tmp_path):
    """--mglru on: the job turns MGLRU on before the wrapper and records
    the switch's state in every boot (on or off); a boot whose MGLRU is
    not what the run asked for did not hold."""
    on = guest.wrapper_job(MMAP, 4, 2048, 2400, mglru=True)
    off = guest.wrapper_job(MMAP, 4, 2048, 2400)
    switch = "/sys/kernel/mm/lru_gen/enabled"
    assert f"echo y > {switch}\n" in on and f"echo y > {switch}" not in off
    assert on.index(f"echo y > {switch}") < on.index("bash ./ksft_mmap.sh")
    # the record as busybox's sh writes it from the switch's hex mask, and
    # from a kernel without MGLRU
    record = off[off.index("lru_gen=$(") : off.index("cd /")]
    for text, want in (("0x0007", 7), ("0x0000", 0), (None, -1)):
        f = tmp_path / "enabled"
        f.unlink(missing_ok=True)
        if text is not None:
            f.write_text(text + "\n")
        cp = subprocess.run(
            ["busybox", "sh", "-c", record.replace(switch, str(f))],
            capture_output=True,
            text=True,
            check=True,
        )
        assert cp.stdout == f"@@ mmci lru-gen {want}\n"
        setup = guest.guest_setup(OUTPUT + cp.stdout)
        assert setup.lru_gen == want
        problems_on = setup.problems(4, 2048, want_mglru=True)
        problems_off = setup.problems(4, 2048, want_mglru=False)
        if want > 0:
            assert problems_on == [] and problems_off == [
                "MGLRU is on (lru_gen 7), not off"
            ]
        else:
            assert problems_off == [] and problems_on == [
                f"MGLRU is not on (lru_gen {want})"
            ]
    # a boot recorded before the record was: off, as the kernel boots
    assert guest.guest_setup(OUTPUT).problems(4, 2048) == []


def test_mglru_with_the_mm_ci_is_one_setting_a_run_and_says_so(
    capsys, tmp_path
):
    from test_mmci import wrapper_tree

    repo, _ = wrapper_tree(tmp_path)
    argv = ["test", "--mm-ci", "--kernel", f"up=git:{repo}@main"]
    rc, _, err = run_cli(capsys, *argv, "--mglru", "both", "--dry-run")
    assert rc == errors.UsageError.exit_code
    assert "--mm-ci --mglru both: one MGLRU setting a run" in err
    rc, _, err = run_cli(
        capsys, *argv, "--mglru", "on", "--wrappers", "none", "--dry-run"
    )
    assert rc == errors.UsageError.exit_code
    assert "--mglru on with --wrappers none" in err
    rc, out, err = run_cli(capsys, *argv, "--mglru", "on", "--dry-run")
    assert rc == 0, err
    assert out.startswith("not the mm CI's guest: MGLRU on in every boot")
    rc, out, err = run_cli(capsys, *argv, "--mglru", "off", "--dry-run")
    assert rc == 0 and "MGLRU" not in out
    # the request a --resume compares: unchanged when off
    from foliolab import cli
    from foliolab.commands import test as test_cmd

    for flag, want in (
        ([], None),
        (["--mglru", "off"], None),
        (["--mglru", "on"], "on"),
    ):
        given = [*argv, *flag, "--out", str(tmp_path / f"o{len(flag)}{want}")]
        args = cli.build_parser().parse_args(given)
        args.argv = given
        req = test_cmd._mmci_request(args)
        assert req.mglru == (want == "on")
        assert req.key().get("mglru") == want


def test_a_summary_and_search_with_mglru_on_say_so(tmp_path):
    import json

    from foliolab.suite.mmci import compare, firstbad, mmci

    row = TestOutcome("kselftest.mm.thp", TestStatus.PASS, "up")
    heading = mmci.changed_guest((), mglru=True)
    text, js = compare.write(
        tmp_path,
        compare.compare([[row]], []),
        "up",
        None,
        extra={"mglru": "on"},
        heading=heading,
    )
    assert text.read_text().startswith(
        "not the mm CI's guest: MGLRU on in every boot"
    )
    assert json.loads(js.read_text())["mglru"] == "on"
    both = mmci.changed_guest(("a=1",), mglru=True).splitlines()
    assert len(both) == 2 and "a=1" in both[0] and "MGLRU" in both[1]
    found = firstbad.FirstBad(
        "next",
        "base+s",
        ("kselftest.mm.thp",),
        (),
        2,
        "0002-x.patch",
        mglru=True,
    )
    assert firstbad.text(found).startswith("not the mm CI's guest: MGLRU on")
    (out,) = firstbad.outcomes(found)
    assert out.misc["mglru"] == "on"


def test_a_wrapper_boot_that_never_ran_says_why_in_its_row(
    monkeypatch, tmp_path
):
    """_one_wrapper gives the row the boot's status and its executor's
    word on why it ended, not a kernel issue listed before it."""
    from types import SimpleNamespace

    from foliolab.bootrecord import BootStatus
    from foliolab.executors.base import BootSpec

    why = "qemu: error reading initrd /x/initrd.cpio"

    def fake_boot(executor, request, img):
        return SimpleNamespace(
            results=tmp_path / "none",
            console=tmp_path / "none",
            exit_code=None,
            status=BootStatus.QEMU_ERROR,
            elapsed=0.1,
            issues=["warning: an earlier line", why],
            why_ended=why,
        )

    monkeypatch.setattr(mmci_run, "boot_once", fake_boot)
    req = mmci_run.MmciRequest((), get_arch("x86_64"), tmp_path / "out")
    spec = BootSpec(get_arch("x86_64"), tmp_path / "bzImage", timeout=600)
    tests = guest.Selftests(tmp_path, "c", (), tmp_path / "log")
    rows = mmci_run._one_wrapper(
        req, "up", MMAP, spec, tmp_path / "img", None, "up/guest/mmap", tests
    )
    assert rows[0].status is TestStatus.ERROR
    assert rows[0].misc["detail"].endswith(f"(boot qemu-error: {why})")


@pytest.mark.parametrize("held", [True, False])
def test_a_wrapper_boot_with_mglru_on_is_marked_and_checked(
    monkeypatch, tmp_path, held
):
    """Each row of a boot with MGLRU on says so; a boot where it did not
    come on is an error, never a pass."""
    from types import SimpleNamespace

    from foliolab.bootrecord import BootStatus
    from foliolab.executors.base import BootSpec

    jobs = []

    def fake_boot(executor, request, img):
        jobs.append(request.job)
        results = tmp_path / "results.txt"
        results.write_text(
            OUTPUT.replace(
                "@@ exit 0", f"@@ mmci lru-gen {7 if held else 0}\n@@ exit 0"
            )
        )
        return SimpleNamespace(
            results=results,
            console=tmp_path / "none",
            exit_code=0,
            status=BootStatus.OK,
            elapsed=12.0,
            issues=[],
            why_ended="",
        )

    monkeypatch.setattr(mmci_run, "boot_once", fake_boot)
    req = mmci_run.MmciRequest(
        (), get_arch("x86_64"), tmp_path / "out", mglru=True
    )
    spec = BootSpec(get_arch("x86_64"), tmp_path / "bzImage", timeout=600)
    tests = guest.Selftests(tmp_path, "c", (), tmp_path / "log")
    rows = mmci_run._one_wrapper(
        req, "up", MMAP, spec, tmp_path / "img", None, "up/guest/mmap", tests
    )
    assert "echo y > /sys/kernel/mm/lru_gen/enabled" in jobs[0]
    assert rows[0].misc["mglru"] == "on"
    # the mask the guest read is kept with the row, either way
    assert rows[0].misc["lru_gen_enabled"] == (7 if held else 0)
    if held:
        assert rows[0].status is TestStatus.PASS
    else:
        assert rows[0].status is TestStatus.ERROR
        assert "MGLRU is not on (lru_gen 0)" in rows[0].misc["detail"]
