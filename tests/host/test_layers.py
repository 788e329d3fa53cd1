"""The house's layers: no import runs back up, and no modules import
each other in a loop.

foliolab's packages and its top-level modules ("rooms") stand in the
order LAYERS declares, lowest first: a room may import only rooms below
it (and its own modules). Read from the code's imports with ``ast``
(function-level imports too), so a new capability cannot put an arrow
back up, or close a loop, without this test saying where.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "foliolab"

# Lowest first. A room is a top-level module (``errors``) or a folder
# (``kernel``); ``foliolab`` is the package's own __init__.py.
LAYERS = (
    "foliolab",
    "errors",
    "records",
    "paths",
    "ui",
    "proc",
    "locks",
    "rundir",
    "arch",
    "timings",
    "hostsetup",
    "bootrecord",
    "guestdata",
    "workloads",
    "kernel",
    "kernelrecord",
    "testrecord",
    "counting",
    "executors",
    "manifest",
    "boot",
    "analysis",
    "render",
    "run",
    "series",
    "robot",
    "coverage",
    "suite",
    "bisect",
    "export",
    "commands",
    "cli",
    "__main__",
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The foliolab modules ``name`` imports (``from X import Y``: the
    module X.Y where Y is one, else X)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[
                    : len(package.split(".")) - (node.level - 1)
                ]
                base = ".".join(up + ([base] if base else []))
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                for a in node.names
            ]
        else:
            continue
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def cycle(edges: dict[str, set[str]]) -> list[str]:
    """A loop of ``edges`` (as the names on it, the first again at the
    end), or [] if there is none."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str]:
        state[n] = 1
        stack.append(n)
        for m in sorted(edges.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m) :] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return []

    for n in sorted(edges):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return []


def test_every_room_has_its_layer():
    rooms = {room(m) for m in graph()}
    assert rooms == set(LAYERS), (
        f"not in LAYERS: {sorted(rooms - set(LAYERS))}; "
        f"in LAYERS, not in foliolab/: {sorted(set(LAYERS) - rooms)}"
    )


def test_no_import_runs_back_up():
    order = {r: i for i, r in enumerate(LAYERS)}
    up = sorted(
        f"{m} -> {t}"
        for m, targets in graph().items()
        for t in targets
        if room(m) != room(t) and order[room(t)] > order[room(m)]
    )
    assert not up, (
        "imports of a room above (LAYERS, lowest first): " + "; ".join(up)
    )


def test_no_modules_import_each_other_in_a_loop():
    loop = cycle(graph())
    assert not loop, "an import loop: " + " -> ".join(loop)


@pytest.mark.parametrize("name", ["qemu", "lava"])
def test_only_the_registry_names_an_executor(name):
    """Outside executors/, what an executor does is asked of the registry
    (executors/__init__.py), never of its module."""
    named = sorted(
        m
        for m, targets in graph().items()
        if not m.startswith("foliolab.executors")
        and any(t.startswith(f"foliolab.executors.{name}") for t in targets)
    )
    assert not named, f"{', '.join(named)} import executors.{name}"
