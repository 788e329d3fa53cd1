"""foliolab: an A/B lab for Linux memory management, in QEMU or on LAVA.

This module is the only one that prints errors and exits. It builds the
parser from the subcommands' own option groups (commands/: one module per
kind of work, each giving its commands with their options and handler).
Every library error is a FoliolabError whose one-line message
is printed as ``foliolab: error: ...``; its class picks the exit code.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import re
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from foliolab import __version__, paths, rundir
from foliolab.arch import get_arch
from foliolab.commands import (
    Command,
    bisect,
    kernel,
    measure,
    results,
    run,
    test,
)
from foliolab.commands.options import patches_arg
from foliolab.errors import (
    FoliolabError,
    Stop,
    SystemRefusedError,
    UsageError,
    stop_on_sigterm,
)
from foliolab.paths import cache_root, unwritable

log = logging.getLogger("foliolab")

# Every subcommand by name, in the order --help lists them: the kernels,
# measuring, running and testing them, then the results' commands with
# bisect among them.
ORDER = (
    *("setup", "tree", "export", "post", "build", "check"),
    *("compare", "jobs", "attribute"),
    "run",
    *("test", "coverage-reasons"),
    *("diff", "workloads"),
    "bisect",
    "report",
)


def _in_order(*groups: Sequence[Command]) -> tuple[Command, ...]:
    """The commands of ``groups`` in ORDER; each must be named there once,
    so a new command cannot go missing from --help."""
    by_name = {c.name: c for g in groups for c in g}
    given = sorted(c.name for g in groups for c in g)
    if given != sorted(ORDER):
        raise AssertionError(
            f"cli.ORDER {sorted(ORDER)} is not the commands {given}"
        )
    return tuple(by_name[name] for name in ORDER)


COMMANDS = _in_order(
    kernel.COMMANDS,
    measure.COMMANDS,
    run.COMMANDS,
    test.COMMANDS,
    results.COMMANDS,
    bisect.COMMANDS,
)
HANDLERS = {c.name: c.handler for c in COMMANDS}


def with_default(action: argparse.Action) -> None:
    """An option's help ends with its default, unless it names it."""
    text, default = action.help or "", action.default
    if (
        default in (None, False, argparse.SUPPRESS, [])
        or "default" in text
        or not action.option_strings
    ):
        return
    if isinstance(default, (list, tuple)):
        default = ",".join(str(d) for d in default)
    action.help = f"{text} (default: {default})".lstrip()


def defaults_in_help(p: argparse.ArgumentParser) -> None:
    """with_default on every option of ``p`` and its subcommands."""
    for action in p._actions:
        with_default(action)
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                defaults_in_help(sub)


class Parser(argparse.ArgumentParser):
    """argparse, but errors are our one-line UsageError."""

    def error(self, message: str) -> NoReturn:
        raise _usage(self.prog, message)

    def _get_value(self, action: argparse.Action, arg_string: str) -> object:
        """As argparse's, but an empty path (``--series ""``, a variable
        that was not set) is refused: Path("") is the current directory,
        which nobody meant."""
        if action.type in (Path, patches_arg) and not arg_string.strip():
            raise argparse.ArgumentError(
                action, "an empty path; give a file or a directory"
            )
        return super()._get_value(action, arg_string)

    def parse_args(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        namespace: argparse.Namespace | None = None,
    ) -> argparse.Namespace:
        """As argparse's, but unknown options are named with the
        subcommand they were given to (argparse names the top level)."""
        ns, extra = self.parse_known_args(args, namespace)
        if extra:
            words = (
                getattr(ns, "command", None),
                getattr(ns, "jobs_command", None),
            )
            prog = " ".join([self.prog, *(w for w in words if w)])
            raise _usage(prog, "unrecognized arguments: " + " ".join(extra))
        return ns


def _usage(prog: str, message: str) -> UsageError:
    """``compare: MESSAGE; see `foliolab compare --help```: main() prints
    the ``foliolab: error:`` before it, so the program is not named twice."""
    sub = prog.removeprefix("foliolab").strip()
    return UsageError(
        f"{sub}: {message}" if sub else message, hint=f"see `{prog} --help`"
    )


def build_parser() -> argparse.ArgumentParser:
    """The whole CLI (pure: no side effects), from the commands' own
    option groups."""
    p = Parser(prog="foliolab", description=__doc__.splitlines()[0])
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="log every command that is run",
    )
    p.add_argument(
        "--version", action="version", version=f"foliolab {__version__}"
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    for c in COMMANDS:
        c.options(
            sub.add_parser(
                c.name,
                help=c.help,
                epilog=f"example:\n  {c.example}" if c.example else None,
                formatter_class=argparse.RawDescriptionHelpFormatter,
            )
        )
    defaults_in_help(p)
    return p


def _path_options(
    p: argparse.ArgumentParser, args: argparse.Namespace
) -> dict[str, str]:
    """dest -> the option's name as a user gives it (--out, or the
    positional's own name), for the command ``args`` ran."""
    names: dict[str, str] = {}
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for word in (
                getattr(args, "command", None),
                getattr(args, "jobs_command", None),
            ):
                if word in a.choices:
                    names.update(_path_options(a.choices[word], args))
        else:
            names[a.dest] = max(a.option_strings, key=len, default=a.dest)
    return names


def expand_paths(args: argparse.Namespace) -> None:
    """Every path argument with its ``~`` expanded, and refused in one
    line if it cannot be a path on this system (a ``~user`` with no such
    user, a name or a path longer than the system takes), before any
    command sees it."""
    names = _path_options(build_parser(), args)
    for dest, value in vars(args).items():
        if isinstance(value, Path):
            setattr(args, dest, _expanded(names.get(dest, dest), value))
        elif isinstance(value, list) and any(
            isinstance(v, Path) for v in value
        ):
            setattr(
                args,
                dest,
                [
                    _expanded(names.get(dest, dest), v)
                    if isinstance(v, Path)
                    else v
                    for v in value
                ],
            )


def _expanded(option: str, path: Path) -> Path:
    full = paths.user_path(path, option)
    try:
        full.resolve()
    except RuntimeError:  # Python's word for a loop of symbolic links
        raise UsageError(
            f"{option} {path}: a loop of symbolic links",
            hint="give a path that leads somewhere",
        ) from None
    encoded = os.fsencode(full)
    longest = max((len(n) for n in encoded.split(b"/")), default=0)
    if longest > 255 or len(encoded) >= 4096:
        raise UsageError(
            f"{option} {str(path)[:60]}...: "
            + (
                f"a name of {longest} bytes (the system takes 255)"
                if longest > 255
                else f"a path of {len(encoded)} bytes (the system takes 4095)"
            ),
            hint="give a shorter path",
        )
    return full


def check_args(args: argparse.Namespace) -> None:
    """Input errors argparse cannot see, before any work starts."""
    expand_paths(args)
    if _given_blank(getattr(args, "argv", []), "--cpu"):
        # "" is also its default (the executor's own model), so the type
        # cannot tell: the command line can
        raise UsageError(
            "--cpu: an empty model",
            hint="give one `qemu-system-ARCH -cpu help` lists, or leave "
            "--cpu out",
        )
    cache = cache_root()
    if cache.exists() and not cache.is_dir():
        raise UsageError(
            f"the cache {cache} is a file, not a directory",
            hint="point FOLIOLAB_CACHE at a directory, or unset it "
            "(default ~/.cache/foliolab)",
        )
    nodes = getattr(args, "numa_nodes", 1) or 1
    if nodes > 1 and getattr(args, "vcpus", nodes) % nodes:
        raise UsageError(
            f"--numa-nodes {nodes}: {args.vcpus} vCPUs do not split into "
            f"{nodes} nodes",
            hint="give --vcpus a multiple of --numa-nodes",
        )
    if hasattr(args, "arch"):
        arch = get_arch(args.arch)
        if hasattr(args, "accel"):
            arch.check_accel(args.accel)
    if getattr(args, "out", None) is not None:
        check_out(args.out)


def _given_blank(argv: list[str], option: str) -> bool:
    """Whether ``argv`` gives ``option`` a blank value."""
    for i, a in enumerate(argv):
        if a == "--":
            return False
        if a.startswith(option + "=") and not a.split("=", 1)[1].strip():
            return True
        if a == option and i + 1 < len(argv) and not argv[i + 1].strip():
            return True
    return False


def check_out(out: Path) -> None:
    """--out must be a directory this user can make and write in."""
    why = unwritable(out)
    if why:
        raise UsageError(
            f"--out {out}: {why}",
            hint="give --out a directory you can write, e.g. "
            "under your home or /tmp",
        )


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(
        format="%(message)s", level=logging.INFO, stream=sys.stderr
    )
    with stop_on_sigterm():
        try:
            code = _main(argv)
        finally:
            # the run directories the command claimed (rundir.claim)
            rundir.let_go()
        return _flushed(code)


# A word of an error line longer than this is cut: a value echoed back
# (--arch of 5000 characters) made a line no terminal shows.
LONGEST_WORD = 100


def printable(line: str) -> str:
    """``line`` as one line: control characters (a newline, a tab in a
    value echoed back) escaped, and words over LONGEST_WORD cut (not
    paths)."""
    line = "".join(c if c.isprintable() else repr(c)[1:-1] for c in line)
    return re.sub(
        rf"\S{{{LONGEST_WORD + 1},}}",
        lambda m: (
            m[0]  # a path: the user needs it whole
            if "/" in m[0]
            else f"{m[0][:60]}...({len(m[0])} characters)"
        ),
        line,
    )


def _flushed(code: int) -> int:
    """``code``, once what the command printed is out: stdout on a full
    disk or /dev/full fails only here, at the flush (else at exit, as a
    traceback-like "Exception ignored" and code 120)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        # `foliolab report --mail RUN | head`: the reader has what it
        # wanted; as a shell reports a death by SIGPIPE
        _drop_stdout()
        return code or 128 + signal.SIGPIPE.value
    except OSError as e:
        _drop_stdout()
        _say(f"foliolab: error: {_os_error(e).one_line()}")
        # the command's own failure (a stopped run's 10, a resume
        # script's cue) says more than the output it could not print
        return code or SystemRefusedError.exit_code
    return code


def _say(line: str) -> None:
    """``line`` on stderr, if stderr is still there (a terminal closed
    under a stopped run gives EIO): the exit code says the rest."""
    try:
        print(line, file=sys.stderr)
    except OSError:
        pass


def _drop_stdout() -> None:
    """What is left in stdout's buffer goes nowhere, so the interpreter's
    own flush at exit has nothing to fail on."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # not a real file (a test's StringIO): nothing at exit


# What to do about an OSError, by its errno.
_OS_HINTS = {
    errno.ENOSPC: "free space on that file system, or give a path on "
    "another one",
    errno.EDQUOT: "free space on that file system, or give a path on "
    "another one",
    errno.EROFS: "the file system is read-only: give a path on a writable one",
    errno.ENAMETOOLONG: "give a shorter path",
    errno.EACCES: "check its permissions, or give a path you can use",
    errno.EPERM: "check its permissions, or give a path you can use",
    errno.ENOENT: "check the path",
    errno.ENOTDIR: "a part of the path is a file, not a directory",
    errno.EISDIR: "give a file, not a directory",
    errno.ELOOP: "the path is a loop of symbolic links",
    errno.EMFILE: "too many open files: raise `ulimit -n`",
}


def _os_error(e: OSError) -> SystemRefusedError:
    """An OSError that reached cli.py, as one line naming the file."""
    what = e.strerror or str(e) or type(e).__name__
    where = " -> ".join(
        str(f)[:200] for f in (e.filename, e.filename2) if f is not None
    )
    return SystemRefusedError(
        f"{where}: {what}" if where else what,
        hint=_OS_HINTS.get(e.errno or 0, "see the path and try again"),
    )


def _main(argv: list[str] | None) -> int:
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        if not argv:  # what there is to do, rather than what is missing
            build_parser().print_help()
            return UsageError.exit_code
        args = build_parser().parse_args(argv)
        args.argv = argv
        if args.verbose:
            log.setLevel(logging.DEBUG)
        check_args(args)
        return HANDLERS[args.command](args)
    except FoliolabError as e:
        _say(f"foliolab: error: {printable(e.one_line())}")
        return e.exit_code
    except BrokenPipeError:
        _drop_stdout()
        return 128 + signal.SIGPIPE.value
    except OSError as e:
        # what no stage turned into an error of its own: the operating
        # system refused a file operation (a full or read-only disk, a
        # name too long, a FIFO or device where a file was meant); -v
        # shows where, for a path the lab itself got wrong
        log.debug("the OSError, where it was raised:", exc_info=True)
        err = _os_error(e)
        _say(f"foliolab: error: {printable(err.one_line())}")
        return err.exit_code
    except KeyboardInterrupt:
        _say("foliolab: interrupted")
        return 130
    except Stop as s:
        # a stop signal outside a measuring run (before it, or after):
        # one line, and the exit status a shell gives the signal's death
        _say(f"foliolab: stopped by {s.signame}")
        return 128 + signal.Signals[s.signame].value
