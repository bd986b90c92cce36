"""The package's modules import each other without circles, and so do its packages, the rooms a
reader thinks in (``flow``, ``local/compat``, ``local/engine``...): every import counts, at module
level, under TYPE_CHECKING or inside a function, so that what two of them share lives below both.
The fixes to moto (``local/compat``) stand on nothing of the engine's above them."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import sfn_idempotency

PACKAGE_ROOT = Path(sfn_idempotency.__file__).parent
PACKAGE = "sfn_idempotency"
# Packages whose sub-packages are rooms of their own (``local/compat``, ``local/engine``...).
HOUSES = ("sfn_idempotency.local",)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The package's modules that ``path`` names in any import statement."""
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if candidate in modules else base)
    return {name for name in found if name in modules and name != here}


def import_graph() -> dict[str, set[str]]:
    paths = sorted(PACKAGE_ROOT.rglob("*.py"))
    modules = {module_name(path) for path in paths}
    return {module_name(path): imported_modules(path, modules) for path in paths}


def room_of(module: str) -> str:
    """The package a module belongs to, as a reader names it: ``sfn_idempotency.flow`` for
    ``flow/wrapping.py``, ``sfn_idempotency.local.compat`` for ``local/compat/jsonata.py``; a
    top-level module (``wrap``) or a house's own ``__init__`` is a room of its own."""
    for house in HOUSES:
        if module.startswith(f"{house}."):
            return ".".join(module.split(".")[: house.count(".") + 2])
    return ".".join(module.split(".")[:2])


def room_graph(graph: dict[str, set[str]]) -> tuple[dict[str, set[str]], dict[tuple[str, str], list[str]]]:
    """Rooms and the rooms they import, with the module imports behind each arrow."""
    rooms: dict[str, set[str]] = {room_of(module): set() for module in graph}
    arrows: dict[tuple[str, str], list[str]] = {}
    for module, targets in graph.items():
        for target in targets:
            here, there = room_of(module), room_of(target)
            if here != there:
                rooms[here].add(there)
                arrows.setdefault((here, there), []).append(f"{module} imports {target}")
    return rooms, arrows


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each circle once, as the path that closes it (depth-first, modules in order)."""
    found: list[list[str]] = []
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        for target in sorted(graph[module]):
            if target in path:
                found.append([*path[path.index(target) :], target])
            elif target not in done:
                visit(target, [*path, target])
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            visit(module, [module])
    return found


def test_the_graph_sees_the_package():
    # Given the package's import graph
    graph = import_graph()
    # Then it holds the modules and the edges they have (the check below is not vacuous)
    assert "sfn_idempotency.local.apps.cloud_assembly" in graph
    assert "sfn_idempotency.flow.outcomes" in graph["sfn_idempotency.demo"]
    assert circles({"a": {"b"}, "b": {"a"}}) == [["a", "b", "a"]]


def test_no_module_imports_one_that_imports_it_back():
    # When every import of every module is followed
    found = circles(import_graph())
    # Then no path leads back to where it started
    assert found == [], "\n".join(" -> ".join(circle) for circle in found)


def test_the_rooms_are_read_off_the_modules():
    # Given modules of a house's room, of a top-level package, and top-level modules
    # Then each is in the room a reader names
    assert room_of("sfn_idempotency.local.compat.jsonata") == "sfn_idempotency.local.compat"
    assert (
        room_of("sfn_idempotency.local.capabilities.test_state.run") == "sfn_idempotency.local.capabilities"
    )
    assert room_of("sfn_idempotency.flow.wrapping") == "sfn_idempotency.flow"
    assert room_of("sfn_idempotency.wrap") == "sfn_idempotency.wrap"
    assert room_of("sfn_idempotency.local") == "sfn_idempotency.local"
    # and an import between rooms is an arrow between them
    rooms, arrows = room_graph(
        {"sfn_idempotency.flow.a": {"sfn_idempotency.wrap"}, "sfn_idempotency.wrap": set()}
    )
    assert rooms == {"sfn_idempotency.flow": {"sfn_idempotency.wrap"}, "sfn_idempotency.wrap": set()}
    assert arrows == {
        ("sfn_idempotency.flow", "sfn_idempotency.wrap"): [
            "sfn_idempotency.flow.a imports sfn_idempotency.wrap"
        ]
    }


def test_no_room_imports_one_that_imports_it_back():
    # When every import of every module is followed, room to room
    rooms, arrows = room_graph(import_graph())
    found = circles(rooms)
    # Then no path leads back to the room where it started; each arrow of a circle is named
    named = [
        " -> ".join(circle)
        + "".join(f"\n    {line}" for a, b in itertools.pairwise(circle) for line in arrows[a, b])
        for circle in found
    ]
    assert found == [], "\n".join(named)


def test_the_fixes_stand_on_moto_and_what_lies_below_them_only():
    # When the rooms the fixes to moto import are listed
    rooms, _ = room_graph(import_graph())
    below = rooms["sfn_idempotency.local.compat"]
    # Then they are the pieces below the fixes, never the engine's rooms that stand on them
    assert below <= {"sfn_idempotency.local.runtimes", "sfn_idempotency.local.languages"}, below
