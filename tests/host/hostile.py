"""Hostile input for foliolab, and the judge of what it did with it.

tests/host/test_hostile.py draws cases from here. Three parts:

- ``options()``: every option and positional of every command, found by
  walking the parser cli.py builds (a new option is covered without an
  edit here), each with the kind of value it takes, read from its type,
  choices, nargs and metavar;
- ``World``: a scratch tree per case (HOME, the cache with a sentinel in
  it, a working directory, copies of the recorded runs, a sentinel
  directory nobody names, FIFOs, a path too long, ...) and the hostile
  values of each kind that point into it;
- ``run_case()``: cli.main(argv) in-process with the heavy seams
  (subprocess launches, sockets, the kernel build, the Debian archive,
  host setup) replaced by recorders, and an ``Outcome`` saying what
  escaped, the exit code, stderr, the heavy work attempted and every file
  changed; ``faults()`` turns an Outcome into the rules it broke.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import logging
import os
import resource
import shutil
import signal
import socket
import stat
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from foliolab import cli

RECORDED_RUNS = Path(__file__).parent / "data" / "runs"

# The exit codes docs/manual.md's "Exit codes" table gives (test_hostile
# checks the table says so too): 0 done, 1-15 by stage, 128 + the signal
# that stopped a command (SIGHUP 1, SIGINT 2, SIGPIPE 13, SIGTERM 15).
MANUAL_EXIT_CODES = frozenset({*range(0, 17), 129, 130, 141, 143})


# A case that has not ended in this long hangs (a FIFO opened for
# reading waits for a writer forever).
HANG_S = int(os.environ.get("FOLIOLAB_HOSTILE_HANG_S", "20"))


class Hung(BaseException):
    """Raised by the alarm when a case runs past HANG_S."""


class HeavyWork(BaseException):
    """Raised by a heavy seam: a download, unpack, build or boot was
    started. A BaseException, so no handler of errors in foliolab takes
    it for one and the case ends there."""


# ---------------------------------------------------------------------------
# The options, from the parser


@dataclass(frozen=True)
class Option:
    """One option (or positional) of one command, and what it takes."""

    command: tuple[str, ...]  # ("compare",), ("jobs", "export")
    flag: str | None  # "--out"; None for a positional
    dest: str
    kind: str  # see _kind()
    choices: tuple[str, ...] = ()
    appends: bool = False  # action="append": every value given counts

    def __str__(self) -> str:
        return f"{' '.join(self.command)} {self.flag or self.dest}"


def _made(t: object, text: str) -> object:
    if not callable(t) or t is Path:
        return None
    try:
        return t(text)
    except Exception:  # noqa: BLE001 - a type refusing it says enough
        return None


def _kind(a: argparse.Action) -> str:
    """The kind of value an action takes, from what argparse knows."""
    if a.nargs == 0:
        return "flag"
    if a.choices is not None:
        return "choice"
    t = a.type
    name = getattr(t, "__name__", "")
    meta = (a.metavar or a.dest or "").upper()
    if t is float:
        return "float"
    # what the type makes of a number, and of two: an int is a count, a
    # tuple of ints a list of them (whatever the type's name)
    made = _made(t, "1"), _made(t, "1,2")
    if isinstance(made[0], int) and not isinstance(made[0], bool):
        return "int"
    if isinstance(made[1], tuple) or meta.startswith("N,"):
        return "int_list"
    if name in ("directory",) or "DIR" in meta or meta in ("OUT", "RUN"):
        return "dir"
    if t is Path or name == "patches_arg" or "FILE" in meta:
        return "file" if ("FILE" in meta or "LOG" in meta) else "dir"
    if meta.startswith("NAME=SPEC"):
        return "kernel"
    if "SPEC" in meta:
        return "spec"
    if "URL" in meta:
        return "url"
    return "text"


def options(
    parser: argparse.ArgumentParser | None = None,
) -> list[Option]:
    """Every option and positional of every command of ``parser``."""
    found: list[Option] = []

    def walk(p: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    walk(sub, (*path, name))
            elif isinstance(
                a, (argparse._HelpAction, argparse._VersionAction)
            ):
                continue
            elif path:
                flag = max(a.option_strings, key=len, default=None)
                found.append(
                    Option(
                        path,
                        flag,
                        a.dest,
                        _kind(a),
                        tuple(str(c) for c in a.choices or ()),
                        isinstance(a, argparse._AppendAction),
                    )
                )

    walk(parser or cli.build_parser(), ())
    return found


# The fewest arguments each command needs to get past argparse; the values
# are ones a user could mean (the case's hostile value replaces one of
# them, or is added beside them).
def required(command: tuple[str, ...], w: World) -> dict[str, list[str]]:
    run = str(w.runs["results-73-r2-count"])
    other = str(w.runs["results-73-r2-count-b"])
    table: dict[tuple[str, ...], dict[str, list[str]]] = {
        ("attribute",): {"--at": ["1"]},
        ("bisect",): {
            "--repo": [str(w.gitdir)],
            "--good": ["v1"],
            "--bad": ["v2"],
            "--workload": ["pageout"],
            "--metric": ["pageout_ms"],
        },
        ("run",): {"cmd": ["true"]},
        ("coverage-reasons",): {"run": [run], "series": [str(w.series)]},
        ("diff",): {"outs": [run, other]},
        ("report",): {"dir": [run]},
        ("jobs", "collect"): {"dir": [run], "logs": [str(w.textfile)]},
    }
    return table.get(command, {})


def argv_for_many(
    command: tuple[str, ...], picked: list[tuple[Option, str]], w: World
) -> list[str]:
    """The command line that gives each option of ``picked`` (options
    with a flag) its hostile value, and the required arguments the plain
    ones above."""
    argv = list(command)
    for opt, value in picked:
        argv.append(value if opt.kind == "flag" else f"{opt.flag}={value}")
    positionals: list[str] = []
    for dest, vals in required(command, w).items():
        if dest.startswith("--"):
            if dest not in {o.flag for o, _ in picked}:
                argv += [dest, vals[0]]
        else:
            positionals += vals
    return argv + (["--", *positionals] if positionals else [])


def argv_for(opt: Option, value: str, w: World) -> list[str]:
    """The command line that gives ``opt`` the hostile ``value`` and the
    other required arguments the plain ones above."""
    argv = list(opt.command)
    need = required(opt.command, w)
    positionals: list[str] = []
    for dest, vals in need.items():
        if dest.startswith("--"):
            if dest != opt.flag:
                argv += [dest, vals[0]]
        elif dest != opt.dest:
            positionals += vals
        else:
            positionals += [value] + vals[1:]
    if opt.flag is None:
        if opt.dest not in need:
            positionals.append(value)
        # "--" so a value that starts with "-" is a positional still
        return argv + ["--", *positionals] if positionals else argv
    if opt.kind == "flag":
        argv.append(value)  # a flag's "value" is the flag itself
    else:
        argv.append(f"{opt.flag}={value}")
    return argv + (["--", *positionals] if positionals else [])


# ---------------------------------------------------------------------------
# The scratch world of one case


@dataclass
class World:
    root: Path
    home: Path
    cache: Path
    cwd: Path
    sentinel: Path
    runs: dict[str, Path]
    series: Path
    gitdir: Path
    textfile: Path
    fifo: Path
    values: dict[str, list[str]] = field(default_factory=dict)
    # a git repository that is no kernel tree (two commits on main),
    # shared by every case: it is only read
    notkernel: Path = field(default_factory=lambda: not_a_kernel_repo())

    @classmethod
    def make(cls, root: Path, runs: tuple[str, ...] = ()) -> World:
        """The tree; ``runs`` names the recorded runs to copy in (the two
        small ones the plain arguments name are always there)."""
        for d in ("home", "cache", "cwd", "sentinel", "in", "runs"):
            (root / d).mkdir(parents=True)
        (root / "cache" / "SENTINEL").write_text("untouched\n")
        (root / "sentinel" / "keep.txt").write_text("nobody names me\n")
        copied = {}
        for name in {"results-73-r2-count", "results-73-r2-count-b", *runs}:
            dst = root / "runs" / name
            shutil.copytree(RECORDED_RUNS / name, dst)
            copied[name] = dst
        ind = root / "in"
        series = ind / "series-ok"
        series.mkdir()
        (series / "series").write_text("0001-x.patch\n")
        (series / "0001-x.patch").write_text(
            "From: a <a@b>\nSubject: [PATCH] x\n\n---\n"
            "--- a/mm/x.c\n+++ b/mm/x.c\n@@ -1 +1 @@\n-a\n+b\n"
        )
        gitdir = ind / "notgit"
        gitdir.mkdir()
        text = ind / "text.txt"
        text.write_text("just text\n")
        fifo = ind / "fifo"
        os.mkfifo(fifo)
        w = cls(
            root,
            root / "home",
            root / "cache",
            root / "cwd",
            root / "sentinel",
            copied,
            series,
            gitdir,
            text,
            fifo,
        )
        w.values = w._hostile_values()
        return w

    def _hostile_series(self) -> list[str]:
        """Series folders that are wrong in one way each."""
        ind = self.root / "in"
        made = []
        for name, files in {
            "series-empty": {},
            "series-blank": {"series": ""},
            "series-missing-entry": {"series": "nope.patch\n"},
            "series-escape": {"series": "../../sentinel/keep.txt\n"},
            "series-dup": {
                "series": "a.patch\na.patch\n",
                "a.patch": "not a patch\n",
            },
            "series-binary": {
                "series": "b.patch\n",
                "b.patch": "\x00\x01\x02 GIT binary patch\n",
            },
        }.items():
            d = ind / name
            d.mkdir()
            for f, text in files.items():
                (d / f).write_text(text)
            made.append(str(d))
        d = ind / "series-dir"
        (d / "series").mkdir(parents=True)
        made.append(str(d))
        d = ind / "series-fifo"
        d.mkdir()
        os.mkfifo(d / "series")
        made.append(str(d))
        d = ind / "series-zero"
        d.mkdir()
        (d / "series").symlink_to("/dev/zero")
        made.append(str(d))
        return made

    def _hostile_paths(self) -> list[str]:
        ind = self.root / "in"
        (ind / "loop").symlink_to(ind / "loop")
        (ind / "zero").symlink_to("/dev/zero")
        return [
            "",
            " ",
            str(self.fifo),
            "/dev/zero",
            "/dev/full",
            "/dev/null",
            str(ind / "zero"),
            str(ind / "loop"),
            str(self.gitdir),  # a directory
            str(self.textfile),  # a file
            str(ind / "missing" / "x"),
            str(ind / ("n" * 300)),  # a name too long
            str(ind) + "/d" * 2100,  # a path too long
            "~nosuchuser/x",
            "~/x",
            "/sys/kernel/foliolab-x",  # not writable, even by root
            "/proc/self/foliolab-x",
            str(self.textfile) + "/under-a-file",
            str(self.sentinel),  # a directory the case must not touch
            str(self.runs["results-73-r2-count-b"]),  # another run
            "results/\udcff",  # bytes that are not UTF-8
            "ü/é/中",
            "-",
        ]

    def _hostile_values(self) -> dict[str, list[str]]:
        numbers = [
            "",
            " ",
            "0",
            "-1",
            "-0",
            "nan",
            "NaN",
            "inf",
            "-inf",
            "Infinity",
            "1e309",
            "9" * 30,
            "99999999999",
            "2**64",
            "0x10",
            "1.5",
            "1,000",
            "１２",  # full-width digits
            "٣",  # Arabic-Indic three
            "ten",
            "1 2",
            "\u202e5",
        ]
        texts = [
            "",
            " ",
            ",",
            ",,,",
            "=",
            "a=b=c",
            "x" * 5000,
            "ü中\u202e",
            "\t\n",
            "nan",
            "-1",
            "../../sentinel",
            "$(touch /tmp/pwned)",
            "a,a",
            "pageout.folio_kb=-1",
            "pageout.folio_kb=nan",
            "pageout.folio_kb=99999999999999",
            "pageout.nosuchparam=1",
            "nosuchworkload.x=1",
            "pageout@x=1",
            "vcpus=0,1",
            "vcpus=",
            "pageout.folio_kb=1,1",
        ]
        series = self._hostile_series()
        paths = self._hostile_paths()
        specs = [
            "",
            "git:",
            "git:@",
            f"git:{self.gitdir}@main",
            f"git:{self.notkernel}@main",  # a repository, not a kernel
            f"git:{self.notkernel}@main+{self.series}",
            "git:/nonexistent@v1",
            f"git:{self.fifo}@x",
            "debian:",
            "debian:abc",
            "debian:6.1",
            "debian:5.10.1-1",  # older than the config fragments serve
            "debian:７.３",
            "debian:99.99",
            "debian:7.3+",
            "base+",
            f"base+{self.root / 'in' / 'missing'}",
            f"base+{series[0]}",
            f"base+{self.series}:x",
            f"base+{self.series}:-1",
            f"base+{self.series}:0",
            f"base+{self.series}:99",
            f"base+{self.fifo}",
            "base++",
            "nosuchsource",
            "ü",
        ]
        kernels = [
            "",
            "=",
            "=base",
            "a=",
            "a=b=c",
            "a",
            "base",
            *(f"k={s}" for s in specs),
            "a=base,a=base",
        ]
        urls = [
            "",
            "not a url",
            "ftp://x",
            "http://",
            "file:///dev/zero",
            "http://[::1",
            "http://256.256.256.256:99999/",
        ]
        return {
            "int": numbers,
            "float": numbers,
            "int_list": [*numbers, "1,1", "3,2", "1,,2", ",", "1,-1"],
            "dir": [*paths, *series],
            "file": paths,
            "spec": specs,
            "kernel": kernels,
            "url": urls,
            "text": texts + paths[:6],
            "choice": ["", "ü", "nosuch", "PERF", "-1"],
        }


_NOT_A_KERNEL: list[Path] = []


def not_a_kernel_repo() -> Path:
    """A git repository of two commits and no kernel in it (and branches
    rmap-only, with an mm/rmap.c alone, and mm-only, with a Makefile's
    version too), made once per process (its directory removed at
    exit)."""
    if not _NOT_A_KERNEL:
        import atexit
        import tempfile

        top = Path(tempfile.mkdtemp(prefix="foliolab-notkernel-"))
        atexit.register(shutil.rmtree, top, True)
        repo = top / "repo"
        repo.mkdir()
        (repo / "README").write_text("not a kernel\n")
        ident = ["-c", "user.name=t", "-c", "user.email=t@t"]
        for argv in (
            ["init", "-q", "-b", "main"],
            ["add", "README"],
            ["commit", "-q", "-m", "README"],
            ["commit", "-q", "--allow-empty", "-m", "a second commit"],
            # branch rmap-only: an mm/rmap.c alone; mm-only: with a
            # Makefile's version, what the lab takes for a kernel tree,
            # and nothing else of one (no selftests)
            ["checkout", "-q", "-b", "rmap-only"],
            ["add", "mm/rmap.c"],
            ["commit", "-q", "-m", "mm/rmap.c"],
            ["checkout", "-q", "-b", "mm-only"],
            ["add", "Makefile"],
            ["commit", "-q", "-m", "Makefile"],
            ["checkout", "-q", "main"],
        ):
            if argv[0] == "add" and argv[1] == "mm/rmap.c":
                (repo / "mm").mkdir()
                (repo / "mm" / "rmap.c").write_text("/* rmap */\n")
            if argv[0] == "add" and argv[1] == "Makefile":
                (repo / "Makefile").write_text("VERSION = 7\nPATCHLEVEL = 3\n")
            subprocess.run(
                ["git", "-C", str(repo), *ident, *argv],
                check=True,
                capture_output=True,
            )
        _NOT_A_KERNEL.append(repo)
    return _NOT_A_KERNEL[0]


@contextlib.contextmanager
def environment(w: World) -> Iterator[None]:
    """HOME, the cache and the working directory of the case; restored
    afterwards."""
    saved = {k: os.environ.get(k) for k in ("HOME", "FOLIOLAB_CACHE")}
    saved_xdg = os.environ.pop("XDG_CACHE_HOME", None)
    cwd = os.getcwd()
    os.environ["HOME"] = str(w.home)
    os.environ["FOLIOLAB_CACHE"] = str(w.cache)
    os.chdir(w.cwd)
    try:
        yield
    finally:
        os.chdir(cwd)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if saved_xdg is not None:
            os.environ["XDG_CACHE_HOME"] = saved_xdg


# ---------------------------------------------------------------------------
# The heavy seams

# What a check may run (reads that answer in milliseconds); anything else
# a subprocess starts is heavy work.
LIGHT_GIT = {
    "rev-parse",
    "cat-file",
    "ls-tree",
    "show",
    "log",
    "rev-list",
    "merge-base",
    "describe",
    "grep",  # of a commit's objects: the --root check's read
    "ls-files",
    "config",
    "version",
}


def is_light(argv: list[str]) -> bool:
    name = Path(argv[0]).name if argv else ""
    words = argv[1:]
    if name == "git":
        return _git_command(words) in LIGHT_GIT
    if name.startswith("qemu-system"):
        return "help" in words or "--version" in words or "-version" in words
    if name in ("dpkg-query", "uname", "nproc", "lscpu", "id"):
        return True
    if name == "dpkg":
        return all(a.startswith("--print") for a in words)
    return "--version" in words


def _git_command(words: list[str]) -> str:
    """git's command word, after its global options: ``git -c KEY=V -C
    DIR rev-parse`` is rev-parse (the values of -c and -C are not the
    command: source.git() gives both, and every read it made was taken
    for heavy work)."""
    i = 0
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in ("-c", "-C") else 1
    return words[i] if i < len(words) else ""


_COPIES: dict[int, list[tuple[object, str, str]]] = {}


def _copies(
    entries: list[tuple[object, str]],
) -> list[tuple[object, str, str]]:
    """Every (module, attribute) of foliolab that holds one of ``entries``
    (found again only when modules were imported since)."""
    key = len(sys.modules)
    if key not in _COPIES:
        originals = {id(getattr(m, n)): n for m, n in entries}
        found = []
        for mod in list(sys.modules.values()):
            if not getattr(mod, "__name__", "").startswith("foliolab"):
                continue
            for attr, val in list(vars(mod).items()):
                if id(val) in originals:
                    found.append((mod, attr, originals[id(val)]))
        _COPIES.clear()
        _COPIES[key] = found
    return _COPIES[key]


class Seams:
    """Records the heavy work a case attempted, and stops it there."""

    def __init__(self) -> None:
        self.heavy: list[str] = []
        self.light: list[str] = []

    def heavy_work(self, what: str) -> HeavyWork:
        self.heavy.append(what)
        return HeavyWork(what)

    @contextlib.contextmanager
    def installed(self) -> Iterator[Seams]:
        real_popen_init = subprocess.Popen.__init__
        seams = self

        def popen_init(popen: object, args: object, *a: object, **k: object):
            argv = (
                [str(x) for x in args]  # type: ignore[attr-defined]
                if isinstance(args, (list, tuple))
                else [str(args)]
            )
            if is_light(argv):
                seams.light.append(" ".join(argv))
                return real_popen_init(popen, args, *a, **k)  # type: ignore
            raise seams.heavy_work("subprocess: " + " ".join(argv)[:200])

        def no_network(*a: object, **k: object) -> None:
            raise seams.heavy_work(f"network: {a[1:2]}")

        def heavy(name: str) -> Callable[..., None]:
            def f(*a: object, **k: object) -> None:
                raise seams.heavy_work(name)

            return f

        patches: list[tuple[object, str, object]] = [
            (subprocess.Popen, "__init__", popen_init),
            (socket.socket, "connect", no_network),
            (socket.socket, "connect_ex", no_network),
            (socket, "create_connection", no_network),
            (os, "system", heavy("os.system")),
        ]
        # the Python entries of the heavy stages, under every name a
        # foliolab module holds them (``from x import f`` copies)
        from foliolab import hostsetup
        from foliolab.executors.lava import server
        from foliolab.kernel import build, debian, source

        entries = [
            (build, "build_kernel"),
            (debian, "update_lists"),
            (debian, "fetch_deb"),
            (debian, "unpack"),
            (debian, "prepare"),
            (source, "prepare_base"),
            (hostsetup, "ensure_packages"),
            (hostsetup, "ensure_guest_sysroot"),
            (hostsetup, "ensure_foreign_arch"),
        ]
        for mod, attr, name in _copies(entries):
            patches.append((mod, attr, heavy(name)))
        import urllib.request

        patches.append((urllib.request, "urlopen", heavy("urlopen")))
        patches.append((server.urllib.request, "urlopen", heavy("urlopen")))
        saved = [(o, n, getattr(o, n)) for o, n, _ in patches]
        for o, n, v in patches:
            setattr(o, n, v)
        try:
            yield self
        finally:
            for o, n, v in reversed(saved):
                setattr(o, n, v)


# ---------------------------------------------------------------------------
# Snapshots: every file of the world, by type, size and bytes


def snapshot(root: Path) -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            try:
                st = p.lstat()
            except OSError:
                continue
            rel = str(p.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = ("dir", "")
            elif stat.S_ISREG(st.st_mode):
                found[rel] = (
                    "file",
                    hashlib.sha256(p.read_bytes()).hexdigest(),
                )
            else:
                found[rel] = ("other", oct(st.st_mode))
    return found


def changed(
    before: dict[str, tuple[str, str]], after: dict[str, tuple[str, str]]
) -> list[str]:
    return sorted(
        k
        for k in before.keys() | after.keys()
        if before.get(k) != after.get(k)
    )


# ---------------------------------------------------------------------------
# One case


@dataclass
class Outcome:
    argv: list[str]
    code: int | None = None
    stdout: str = ""
    stderr: str = ""
    escaped: BaseException | None = None
    where: str = ""  # the innermost foliolab frame of what escaped
    heavy: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)


def _where(e: BaseException) -> str:
    frames = [
        f
        for f in traceback.extract_tb(e.__traceback__)
        if "/foliolab/" in f.filename
    ]
    if not frames:
        return "?"
    f = frames[-1]
    return f"{f.filename.split('/foliolab/')[-1]}:{f.name}"


# What one case may add to the process's address space: far more than any
# refusal or report of the recorded runs needs; an unbounded read (of a
# record that is a symlink to /dev/zero) then ends in a MemoryError the
# judge sees, not in the kernel's OOM killer ending the whole test run.
MEMORY = 1 << 30


def _address_space() -> int:
    """This process's virtual size now, in bytes."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _hung(signum: int, frame: object) -> None:
    raise Hung(f"no end after {HANG_S} s")


def run_case(argv: list[str], w: World) -> Outcome:
    """cli.main(argv) in ``w``, with the heavy seams recording."""
    out, err = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter("%(message)s"))
    root_logger = logging.getLogger()
    before = snapshot(w.root)
    o = Outcome(argv)
    seams = Seams()
    root_logger.addHandler(handler)
    level = logging.getLogger("foliolab").level
    try:
        with (
            environment(w),
            seams.installed(),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            old = signal.signal(signal.SIGALRM, _hung)
            signal.alarm(HANG_S)
            limits = resource.getrlimit(resource.RLIMIT_AS)
            resource.setrlimit(
                resource.RLIMIT_AS, (_address_space() + MEMORY, limits[1])
            )
            try:
                o.code = cli.main(argv)
            except SystemExit as e:  # --help, --version: argparse's own
                o.code = e.code if isinstance(e.code, int) else 1
            except BaseException as e:  # noqa: BLE001 - what we look for
                o.escaped = e
                o.where = _where(e)
            finally:
                resource.setrlimit(resource.RLIMIT_AS, limits)
                signal.alarm(0)
                signal.signal(signal.SIGALRM, old)
    finally:
        root_logger.removeHandler(handler)
        logging.getLogger("foliolab").setLevel(level)
    o.stdout, o.stderr = out.getvalue(), err.getvalue()
    o.heavy = seams.heavy
    o.changed = changed(before, snapshot(w.root))
    return o


def owned(argv: list[str], w: World) -> list[str]:
    """What the command may write: its --out (or a report's run, or the
    default results/ under the working directory) and report's --kcidb
    FILE, relative to the world."""
    mine: list[str] = [str(w.cwd.relative_to(w.root) / "results")]
    for i, a in enumerate(argv):
        value = None
        # --out DIR, and the one file report --kcidb FILE writes
        for flag in ("--out", "--kcidb"):
            if a.startswith(flag + "="):
                value = a.split("=", 1)[1]
            elif a == flag and i + 1 < len(argv):
                value = argv[i + 1]
        if value:
            home = str(w.home) + "/"  # the case's HOME, not this process's
            p = Path(home + value[2:] if value.startswith("~/") else value)
            p = p if p.is_absolute() else w.cwd / p
            with contextlib.suppress(ValueError):
                mine.append(str(p.relative_to(w.root)))
    if argv[0] == "report" and "--out" not in " ".join(argv):
        with contextlib.suppress(ValueError):
            mine.append(str(Path(argv[-1]).relative_to(w.root)))
    return mine


def faults(o: Outcome, w: World, *, may_work: bool) -> list[str]:
    """The rules ``o`` broke, each as ``kind: cause``; [] if none.
    ``may_work``: the value could be a right one, so reaching heavy work
    (and writing what the command owns) is no fault."""
    found: list[str] = []
    if isinstance(o.escaped, HeavyWork):
        if not may_work:
            found.append(f"heavy work before a refusal: {o.heavy[0][:60]}")
        return found  # the case ended at the seam: nothing more to judge
    if o.heavy:  # a seam fired but foliolab swallowed it
        found.append(f"heavy work swallowed: {o.heavy[0][:60]}")
    if isinstance(o.escaped, Hung):
        found.append(f"hung: at {o.where}")
        return found
    if o.escaped is not None:
        found.append(
            f"traceback: {type(o.escaped).__name__} at {o.where}: "
            f"{str(o.escaped)[:80]}"
        )
        return found
    if "Traceback (most recent call last)" in o.stderr:
        found.append("traceback printed on stderr")
    if o.code not in MANUAL_EXIT_CODES:
        found.append(f"exit code {o.code} not in the manual's table")
    if o.code not in (0, None):
        lines = [ln for ln in o.stderr.splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("foliolab: ")]
        if len(errors) != 1 or errors[0] != lines[-1]:
            found.append(f"exit {o.code} without one error line last")
        # (the scratch tree's own path, /dev/shm/foliolab-hostile-..., is
        # counted as one character: a user's paths are what they are)
        elif any(len(ln.replace(str(w.root), "W")) > 400 for ln in errors):
            found.append(f"exit {o.code}: an error line over 400 chars")
    mine = owned(o.argv, w)
    outside = [
        c
        for c in o.changed
        if not any(c == m or c.startswith(m + "/") for m in mine)
        # a missing parent of --out, made for it (mkdir -p)
        and not any(m.startswith(c + "/") for m in mine)
    ]
    if outside:
        found.append(f"changed outside what it owns: {outside[0]}")
    if o.code not in (0, None) and o.changed and not may_work:
        inside = [c for c in o.changed if c not in outside]
        if inside:
            found.append(f"refused but wrote: {inside[0]}")
    if any(c.startswith("cache/") for c in o.changed) and o.code != 0:
        found.append(f"the cache changed: {o.changed[0]}")
    return found


def damage_json(text: str, path: list[str | int], value: object) -> str:
    """``text`` (one JSON document) with the value at ``path`` replaced
    (NaN and infinities written as Python's json writes them)."""
    doc = json.loads(text)
    if not path:
        return json.dumps(value)
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return json.dumps(doc)


def json_paths(doc: object, prefix: tuple[str | int, ...] = ()) -> list:
    """Every path into ``doc``: the containers and the leaves."""
    found: list[tuple[str | int, ...]] = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            found += json_paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:3]):
            found += json_paths(v, (*prefix, i))
    return found
