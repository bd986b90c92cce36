"""The package's modules import each other without circles: every import counts, at module level,
under TYPE_CHECKING or inside a function, so that what two modules share lives below both."""

from __future__ import annotations

import ast
from pathlib import Path

import sfn_idempotency

PACKAGE_ROOT = Path(sfn_idempotency.__file__).parent
PACKAGE = "sfn_idempotency"


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
