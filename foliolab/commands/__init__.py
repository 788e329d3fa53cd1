"""foliolab's subcommands, one module per kind of work: kernel (setup,
tree, export, build, check), measure (compare, jobs, attribute), run,
test, results (diff, workloads, report) and bisect. Each gives its
commands as ``Command``s: the name, the one-line help, the function that
adds the command's options (from the shared groups in options.py) and
its handler. cli.py builds the parser from them and prints errors.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    options: Callable[[argparse.ArgumentParser], None]
    handler: Callable[[argparse.Namespace], int]
    # one command line as a user types it, shown under the command's
    # --help (tests/host/test_cli.py parses every one)
    example: str = ""
