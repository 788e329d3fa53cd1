"""--kernel NAME=SPEC and N-way reports, without QEMU."""

import re
from pathlib import Path

import pytest
from gitrepo import git

from foliolab import cli, errors
from foliolab.kernel import sources
from foliolab.kernel import specs as kernels
from foliolab.kernel.sources.base import SourceRecord, written
from foliolab.kernel.sources.debian import DebianSource
from foliolab.kernel.sources.git import GitSource
from foliolab.kernel.sources.image import ImageSource
from foliolab.kernel.sources.pinned import PinnedBase
from foliolab.kernel.sources.series import AppliedSeries, DirSeries


def series_dir(tmp_path, n=3):
    d = tmp_path / "series"
    d.mkdir()
    names = [f"{i:04d}-x.patch" for i in range(1, n + 1)]
    for name in names:
        (d / name).write_text("not applied in these tests\n")
    (d / "series").write_text("".join(n + "\n" for n in names))
    return d


@pytest.mark.parametrize(
    "arg, kind",
    [
        ("b=base", "base"),
        ("s1=base+patches/6.12", "series"),
        ("s1=base+patches/6.12:10", "series"),
        ("mine=git:/src/linux@mm-unstable", "git"),
        ("img=image:/boot/vmlinuz", "image"),
        ("up=debian:7.3", "debian"),
        ("up=debian:7.3.4-1~bpo13+1", "debian"),
    ],
)
def test_spec_forms(arg, kind):
    k = kernels.parse_kernel(arg)
    assert k.kind == kind and k.name == arg.split("=")[0]


def test_series_prefix_and_git_ref_are_split_at_the_last_separator():
    k = kernels.parse_kernel("a=base+dir:with:colons:4")
    assert k.applied == AppliedSeries(DirSeries(Path("dir:with:colons")), 4)
    g = kernels.parse_kernel("g=git:/a@b/c@v6.12")
    assert g.source == GitSource("git:/a@b/c@v6.12", Path("/a@b/c"), "v6.12")


@pytest.mark.parametrize(
    "arg, says",
    [
        ("base", "is not NAME=SPEC"),
        ("x=", "is not NAME=SPEC"),
        ("bad name=base", "is not a short name"),
        ("x=vanilla", "unknown SPEC"),
        ("x=git:/src/linux", "is not git:PATH@REF"),
        ("x=base+:3", "names no series directory"),
        ("x=image:", "names no image"),
        ("x=debian:", "is not a kernel version"),
        ("x=debian:latest", "is not a kernel version"),
    ],
)
def test_bad_specs_say_what_is_wrong(arg, says):
    with pytest.raises(errors.UsageError, match=says):
        kernels.parse_kernel(arg)


def test_check_specs(tmp_path):
    d = series_dir(tmp_path, 3)
    ok = [
        kernels.parse_kernel("b=base"),
        kernels.parse_kernel(f"s=base+{d}:3"),
    ]
    kernels.check_specs(ok)
    assert len(ok[1].series().patches) == 3
    with pytest.raises(errors.UsageError, match="needs two or more"):
        kernels.check_specs(ok[:1])
    with pytest.raises(errors.UsageError, match="given twice"):
        kernels.check_specs([ok[0], ok[0]])
    with pytest.raises(errors.UsageError, match="the series has 3"):
        kernels.check_specs([ok[0], kernels.parse_kernel(f"s=base+{d}:4")])
    with pytest.raises(errors.UsageError, match="does not exist"):
        kernels.check_specs(
            [ok[0], kernels.parse_kernel(f"s=base+{tmp_path}/nope")]
        )


def test_check_image_specs(tmp_path):
    b = kernels.parse_kernel("b=base")
    img = tmp_path / "build" / "arch" / "x86" / "boot" / "bzImage"
    spec = kernels.parse_kernel(f"i=image:{img}")
    with pytest.raises(errors.UsageError, match="does not exist"):
        kernels.check_specs([b, spec])
    img.parent.mkdir(parents=True)
    img.write_bytes(b"kernel")
    with pytest.raises(errors.UsageError, match="no .config beside"):
        kernels.check_specs([b, spec])
    (tmp_path / "build" / ".config").write_text("CONFIG_MMU=y\n")
    kernels.check_specs([b, spec])
    with pytest.raises(errors.UsageError, match="needs System.map"):
        kernels.check_specs([b, spec], count=True)
    (tmp_path / "build" / "System.map").write_text("")
    kernels.check_specs([b, spec], count=True)


def test_image_whose_config_lacks_an_option_is_refused(tmp_path):
    """The image's .config must hold the lab's fragment: the error names
    the first option it lacks."""
    from foliolab.arch import get_arch

    img = tmp_path / "bzImage"
    img.write_bytes(b"kernel")
    (tmp_path / ".config").write_text("CONFIG_MMU=y\n")
    spec = kernels.parse_kernel(f"i=image:{img}")
    with pytest.raises(errors.ConfigError, match="first: CONFIG_"):
        spec.source.prebuilt_kernel("i", get_arch("x86_64"), "perf")


def test_git_spec_checks_repo_and_ref(tmp_path):
    b = kernels.parse_kernel("b=base")
    with pytest.raises(errors.UsageError, match="is not a git repository"):
        kernels.check_specs(
            [b, kernels.parse_kernel(f"g=git:{tmp_path}@HEAD")]
        )
    git(tmp_path, "init", "-q")
    (tmp_path / "f").write_text("1\n")
    git(tmp_path, "add", "f")
    git(tmp_path, "commit", "-q", "-m", "one")
    with pytest.raises(errors.UsageError, match="is not a Linux kernel tree"):
        kernels.check_specs(
            [b, kernels.parse_kernel(f"g=git:{tmp_path}@HEAD")]
        )
    (tmp_path / "mm").mkdir()
    (tmp_path / "mm" / "rmap.c").write_text("/* rmap */\n")
    git(tmp_path, "add", "mm")
    git(tmp_path, "commit", "-q", "-m", "a kernel's mm/rmap.c")
    with pytest.raises(errors.UsageError, match="names no VERSION"):
        kernels.check_specs(
            [b, kernels.parse_kernel(f"g=git:{tmp_path}@HEAD")]
        )
    (tmp_path / "Makefile").write_text("VERSION = 7\nPATCHLEVEL = 3\n")
    git(tmp_path, "add", "Makefile")
    git(tmp_path, "commit", "-q", "-m", "a kernel's Makefile")
    kernels.check_specs([b, kernels.parse_kernel(f"g=git:{tmp_path}@HEAD")])
    with pytest.raises(errors.UsageError, match="'nope' is not a commit"):
        kernels.check_specs(
            [b, kernels.parse_kernel(f"g=git:{tmp_path}@nope")]
        )


def test_patches_shorthand():
    v, p = kernels.from_patches(Path("patches/6.12"))
    assert (v.name, v.kind, p.name, p.kind) == (
        "vanilla",
        "base",
        "patched",
        "series",
    )
    assert p.text == "base+patches/6.12"
    v, p = kernels.from_patches(None)
    assert p.kind == "base"  # A/A: one kernel, two names


@pytest.mark.parametrize(
    "argv, says",
    [
        (["compare", "--kernel", "a=base"], "needs two or more"),
        (
            [
                "compare",
                "--kernel",
                "a=base",
                "--kernel",
                "b=base",
                "--patches",
                "none",
            ],
            "--kernel and --patches both",
        ),
        (
            ["compare", "--kernel", "a=base", "--kernel", "b=image:/nope/bz"],
            "does not exist",
        ),
        (
            ["compare", "--kernel", "a=base", "--kernel", "b=frob"],
            "unknown SPEC",
        ),
        (["attribute", "--at", "4,99"], "has 25 patches"),
        (["attribute", "--at", "10,4"], "increasing patch counts"),
    ],
)
def test_kernel_errors_stop_before_any_work(
    capsys, monkeypatch, tmp_path, argv, says
):
    from foliolab.kernel import build

    monkeypatch.setattr(
        build, "build_kernel", lambda *a: pytest.fail("built a kernel")
    )
    out = tmp_path / "out"
    rc = cli.main([*argv, "--workloads", "pageout", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == errors.UsageError.exit_code
    assert len(err) == 1 and says in err[0]
    assert not out.exists()


def test_dry_run_prints_builds_and_boots_and_does_nothing(
    capsys, monkeypatch, tmp_path, tmp_cache
):
    from foliolab.kernel import build

    monkeypatch.setattr(
        build, "build_kernel", lambda *a: pytest.fail("built a kernel")
    )
    out = tmp_path / "out"
    rc = cli.main(
        [
            "compare",
            "--kernel",
            "a=base",
            "--kernel",
            f"b=base+{series_dir(tmp_path, 2)}:1",
            "--kernel",
            "c=base",
            "--workloads",
            "pageout",
            "--runs",
            "2",
            "--dry-run",
            "--out",
            str(out),
        ]
    )
    text = capsys.readouterr().out
    assert rc == 0
    boots = [
        line
        for line in text.splitlines()
        if line.startswith("qemu-system-x86_64")
    ]
    assert [
        line.split("/raw/pageout/")[1].split("/")[0] for line in boots
    ] == ["a-000", "b-000", "c-000", "c-001", "b-001", "a-001"]
    assert text.count("\nmake -C") == 3
    assert not out.exists() and not tmp_cache.exists()


def test_dry_run_names_the_build_directory_the_build_uses(
    capsys, tmp_path, tmp_cache
):
    """Every commit of the base's checkout (the base, base+DIR:0, a
    prefix) builds in the one `base` directory, incremental on the last
    one, and the dry run says so."""
    series = series_dir(tmp_path, 2)
    rc = cli.main(
        [
            "compare",
            "--kernel",
            "a=base",
            "--kernel",
            f"z=base+{series}:0",
            "--kernel",
            f"b=base+{series}:1",
            "--workloads",
            "pageout",
            "--runs",
            "1",
            "--dry-run",
        ]
    )
    text = capsys.readouterr().out
    assert rc == 0
    makes = [line for line in text.splitlines() if line.startswith("make ")]
    assert len(makes) == 3
    assert all(
        "O=" + str(tmp_cache / "build" / "x86_64-perf-base") in m
        for m in makes
    )


# ---- SOURCE+DIR[:N]: a series on any source spec ---------------------------


@pytest.mark.parametrize(
    "source, kind",
    [
        ("debian:7.3", "debian"),
        ("debian:7.3.4-1~bpo13+1", "debian"),  # a '+' of its own
        ("git:/src/linux@v7.3", "git"),
        ("git:/src/a+b/linux@v7.3", "git"),  # a '+' in the path
        ("git:/src/linux@mm+stuff", "git"),  # and in the ref
    ],
)
@pytest.mark.parametrize("prefix", [None, 4])
def test_a_series_on_any_source(tmp_path, source, kind, prefix):
    d = series_dir(tmp_path, 4)
    tail = "" if prefix is None else f":{prefix}"
    k = kernels.parse_kernel(f"next={source}+{d}{tail}")
    assert (k.kind, k.applied, k.text) == (
        "series",
        AppliedSeries(DirSeries(d), prefix),
        f"{source}+{d}{tail}",
    )
    under = k.source_spec()
    assert (under.kind, under.text, under.name) == (kind, source, "next")
    assert under.source is k.source and under.applied is None
    assert len(k.series().patches) == (prefix or 4)


def test_a_relative_series_directory_after_a_source(tmp_path, monkeypatch):
    series_dir(tmp_path, 2)
    monkeypatch.chdir(tmp_path)
    k = kernels.parse_kernel("next=debian:7.3+series:1")
    assert (k.applied, k.source) == (
        AppliedSeries(DirSeries(Path("series")), 1),
        DebianSource("debian:7.3", "7.3"),
    )


def test_a_directory_of_patch_files_is_a_series_directory_too(tmp_path):
    """The split takes it; reading it then says its `series` file is
    missing, as for base+DIR."""
    d = tmp_path / "p"
    d.mkdir()
    (d / "0001-a.patch").write_text("x\n")
    k = kernels.parse_kernel(f"n=git:/src/linux@v7.3+{d}")
    assert k.applied == AppliedSeries(DirSeries(d))
    with pytest.raises(errors.UsageError, match="series is missing"):
        k.series()


def test_without_a_series_directory_a_plus_is_the_sources_own(tmp_path):
    """A Debian version or a ref may hold '+': no directory of that name,
    no series."""
    k = kernels.parse_kernel("up=debian:7.3.4-1~bpo13+1")
    assert k.applied is None
    assert k.source == DebianSource(k.text, "7.3.4-1~bpo13+1")
    g = kernels.parse_kernel(f"g=git:{tmp_path}@topic+{tmp_path}/nope")
    assert g.applied is None and g.source.ref == f"topic+{tmp_path}/nope"


def test_base_and_base_dir_parse_as_they_always_did(tmp_path):
    """base+DIR is the pinned base with the series: no `onto`, so its
    kernel, build slot and kept commit are what they were."""
    d = series_dir(tmp_path, 3)
    k = kernels.parse_kernel(f"s=base+{d}:0")
    assert k == kernels.KernelSpec(
        "s", f"base+{d}:0", PinnedBase(), AppliedSeries(DirSeries(d), 0)
    )
    assert k.record() == SourceRecord(
        "series", f"base+{d}:0", written(series_dir=str(d), prefix=0)
    )
    assert k.source_spec().kind == "base"
    assert k.source.slot() == "base"
    assert kernels.parse_kernel(f"s=base+{d}:2").source.slot() == "base"
    assert kernels.parse_kernel("b=base") == kernels.KernelSpec(
        "b", "base", PinnedBase()
    )


def test_with_series_is_what_the_spec_parses_to(tmp_path):
    d = series_dir(tmp_path, 3)
    for source in ("base", "debian:7.3", f"git:{tmp_path}@v1"):
        onto = kernels.parse_base(source)
        for prefix in (None, 2):
            tail = "" if prefix is None else f":{prefix}"
            assert kernels.with_series(
                onto, "p", d, prefix
            ) == kernels.parse_kernel(f"p={source}+{d}{tail}")


@pytest.mark.parametrize(
    "spec, says",
    [
        ("debian:7.3+{tmp}/nope", "{tmp}/nope is not a directory"),
        (
            "debian:7.3+{tmp}/empty",
            "{tmp}/empty holds no `series` file or .patch files",
        ),
        ("debian:7.3+", "no series directory after its '+'"),
        ("debian:7.3+{tmp}/s:", "{tmp}/s: is not a directory"),
        ("debian:7.3+{tmp}/s+{tmp}/s", "{tmp}/s+{tmp}/s is not a directory"),
        (
            "git:/src/linux@v1+{tmp}/a+b",
            "is ambiguous: git:/src/linux@v1 + "
            "{tmp}/a+b or git:/src/linux@v1+{tmp}/a "
            "+ b",
        ),
        ("git:/src/linux+{tmp}/s", "is not git:PATH@REF"),
        ("image:/boot/x+{tmp}/s", None),  # an image takes no series
    ],
)
def test_a_series_spec_that_cannot_be_read_says_why(
    tmp_path, monkeypatch, spec, says
):
    series_dir(tmp_path, 1).rename(tmp_path / "s")
    (tmp_path / "empty").mkdir()
    for name in ("a+b", "b"):
        d = tmp_path / "w" / name
        d.mkdir(parents=True)
        (d / "series").write_text("")
    monkeypatch.chdir(tmp_path / "w")  # `b` is there, and so is `a+b`
    spec = spec.replace("{tmp}", str(tmp_path))
    if "ambiguous" in (says or ""):
        spec = spec.replace(f"{tmp_path}/a+b", f"{tmp_path}/w/a+b")
        says = says.replace("{tmp}", f"{tmp_path}/w")
    if says is None:
        k = kernels.parse_kernel(f"x={spec}")
        assert k.source == ImageSource(spec, Path(spec[len("image:") :]))
        return
    with pytest.raises(errors.UsageError) as e:
        kernels.parse_kernel(f"x={spec}")
    assert says.replace("{tmp}", str(tmp_path)) in e.value.one_line()
    assert e.value.one_line().startswith("kernel x: ")


def test_a_ref_with_a_plus_that_is_no_commit_names_both_readings(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "f").write_text("1\n")
    git(tmp_path, "add", "f")
    git(tmp_path, "commit", "-q", "-m", "one")
    k = kernels.parse_kernel(f"n=git:{tmp_path}@HEAD+patches/7.33")
    with pytest.raises(errors.UsageError) as e:
        kernels.check_spec(k)
    assert e.value.message == (
        f"kernel n: 'git:{tmp_path}@HEAD+patches/7.33' is neither a source "
        f"('HEAD+patches/7.33' is not a commit in {tmp_path}) nor "
        "SOURCE+DIR (patches/7.33 is not a directory)"
    )


def test_the_tree_under_a_series_is_checked_too(tmp_path):
    d = series_dir(tmp_path, 1)
    k = kernels.parse_kernel(f"n=git:{tmp_path}@HEAD+{d}")
    with pytest.raises(errors.UsageError, match="is not a git repository"):
        kernels.check_spec(k)


@pytest.mark.parametrize(
    "text, says",
    [
        (
            "image:/boot/bzImage",
            "--base image:/boot/bzImage: a series is put on "
            "base, git:PATH@REF or debian:VERSION",
        ),
        ("vanilla", "unknown SPEC"),
    ],
)
def test_a_base_is_a_source_spec(text, says):
    with pytest.raises(errors.UsageError, match=re.escape(says)):
        kernels.parse_base(text)


def test_a_series_kernel_builds_where_its_tree_does(tmp_path):
    """debian:7.3+DIR shares linux-7.3 with debian:7.3 (an incremental
    build of it); a Debian 6.12 tree is another checkout than the base's
    and never takes over `base`."""
    d = series_dir(tmp_path, 2)
    for spec, slot in (
        (f"n=debian:7.3+{d}:1", "linux-7.3"),
        (f"n=debian:6.12+{d}", "linux-6.12"),
    ):
        assert kernels.parse_kernel(spec).source.slot() == slot


def test_the_forms_help_names_are_the_registrys_in_their_old_words():
    """SPEC's forms, as refusals and help say them, come from the
    registered sources; those of the first four read as they always
    did."""
    assert kernels.forms(sources.REGISTERED[:4]) == (
        "base, git:PATH@REF, debian:VERSION, any of these +DIR or "
        "+DIR:N (a series on it), or image:PATH",
        "base, git:PATH@REF or debian:VERSION",
    )
    assert (kernels.SPEC_FORMS, kernels.SOURCE_FORMS) == kernels.forms(
        sources.REGISTERED
    )


def test_a_debian_version_older_than_the_fragments_is_refused_first(
    monkeypatch,
):
    """debian:6.1 is refused from its version alone, before the archive
    is asked (the lab's fragments are written for 6.12 and later), and
    in a list of kernels before any other kernel's archive look-up."""
    import foliolab.kernel.debian as debian

    old = kernels.parse_kernel("old=debian:6.1")
    with pytest.raises(errors.UsageError, match="older than 6.12"):
        kernels.check_local(old)
    asked = []
    monkeypatch.setattr(
        debian, "update_lists", lambda *a, **k: asked.append(a)
    )
    new = kernels.parse_kernel("new=debian:7.3")
    with pytest.raises(errors.UsageError, match="older than 6.12"):
        kernels.check_specs([new, old])
    assert asked == []
