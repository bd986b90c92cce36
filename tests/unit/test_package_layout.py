"""The tree names the architecture (issue 56): every import path the docs and the README name still
resolves, every package is in the wheel, the layout page draws every folder, and no module outside
``local/compat/`` (moto's fixes, one module per AWS surface) passes 600 lines."""

from __future__ import annotations

import re
import tomllib
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest

import sfn_idempotency
from tests import REPOSITORY_ROOT

PACKAGE_ROOT = Path(sfn_idempotency.__file__).parent
DOCUMENTS = sorted([REPOSITORY_ROOT / "README.md", *(REPOSITORY_ROOT / "docs").rglob("*.md")])
LAYOUT_PAGE = REPOSITORY_ROOT / "docs" / "reference" / "layout.md"
MAX_MODULE_LINES = 600
FIXES_OF_MOTO = PACKAGE_ROOT / "local" / "compat"
# mkdocstrings reads `::: name` from these folders (mkdocs.yml's handler paths).
DIRECTIVE_PREFIXES = ("", "sfn_idempotency.lambdas.")

DOTTED_NAME = re.compile(r"\bsfn_idempotency(?:\.[A-Za-z_]\w*)+")
FROM_IMPORT = re.compile(r"^\s*from (sfn_idempotency[\w.]*) import ([\w, ]+)$", re.M)
DIRECTIVE = re.compile(r"^::: ([\w.]+)$", re.M)


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module, or a name a module holds (the longest module prefix, then
    attributes)."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            value: Any = import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[split:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


def documented_names() -> dict[str, str]:
    """Every import path a document names, and the first document that names it."""
    found: dict[str, str] = {}
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        where = str(document.relative_to(REPOSITORY_ROOT))
        names = DOTTED_NAME.findall(text)
        for module, imported in FROM_IMPORT.findall(text):
            names += [f"{module}.{name.strip()}" for name in imported.split(",") if name.strip()]
        for directive in DIRECTIVE.findall(text):
            names.append(
                next((p + directive for p in DIRECTIVE_PREFIXES if resolves(p + directive)), directive)
            )
        for name in names:
            found.setdefault(name.rstrip("."), where)
    return found


def test_the_docs_name_the_public_faces():
    # Given the names the docs and the README use (the check below is not vacuous)
    names = documented_names()
    # Then they include the public modules and names the versioning page promises
    assert {"sfn_idempotency.testing", "sfn_idempotency.cdk", "sfn_idempotency.wrap.wrap_state"} <= set(names)
    assert "sfn_idempotency.testing.LocalCloud" in names  # from a `from ... import` line


@pytest.mark.parametrize(("name", "document"), sorted(documented_names().items()))
def test_every_import_path_the_docs_name_resolves(name: str, document: str):
    # When the name is imported as the document writes it
    # Then it is there
    assert resolves(name), f"{document} names {name}, which does not resolve"


def test_the_public_packages_export_what_they_list():
    for package in ("sfn_idempotency.testing", "sfn_idempotency.cdk"):
        module = import_module(package)
        assert [name for name in module.__all__ if not hasattr(module, name)] == []


def package_folders() -> list[str]:
    return sorted(
        ".".join(init.parent.relative_to(PACKAGE_ROOT.parent).parts)
        for init in PACKAGE_ROOT.rglob("__init__.py")
        if "__pycache__" not in init.parts
    )


def test_every_package_is_built_into_the_wheel():
    # Given the packages pyproject.toml names (setuptools builds those, and no others)
    listed = set(
        tomllib.loads((REPOSITORY_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
            "packages"
        ]
    )
    # Then every package folder of the source is one of them
    assert [package for package in package_folders() if package not in listed] == []


def test_the_layout_page_draws_every_folder_of_the_package():
    page = LAYOUT_PAGE.read_text(encoding="utf-8")
    folders = [
        package.replace(".", "/") + "/" for package in package_folders() if package != "sfn_idempotency"
    ]
    assert [folder for folder in folders if f"`{folder}`" not in page] == []


def test_no_module_outside_the_fixes_of_moto_passes_600_lines():
    long = {
        str(path.relative_to(PACKAGE_ROOT)): lines
        for path in PACKAGE_ROOT.rglob("*.py")
        if FIXES_OF_MOTO not in path.parents
        and (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


LAYER_DRAWING = re.compile(r"### Its layers\n.*?```text\n(.*?)```", re.S)
LABEL_WIDTH = 10  # the drawing's first column: the layer's name


def drawn_layers() -> list[list[str]]:
    """The layout page's drawing of the layers, top to bottom: the rooms each line names."""
    (drawing,) = LAYER_DRAWING.findall(LAYOUT_PAGE.read_text(encoding="utf-8"))
    lines = []
    for line in drawing.splitlines():
        names = re.split(r"\s{2,}", line[LABEL_WIDTH:].strip())[0]
        lines.append([room_of_path(name.strip()) for name in names.split(",")])
    return lines


def room_of_path(path: str) -> str:
    """``local/engine/`` is sfn_idempotency.local.engine, ``wrap.py`` sfn_idempotency.wrap, and a
    package's ``__init__.py`` the package itself."""
    dotted = path.removesuffix("/").removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    return f"sfn_idempotency.{dotted}"


def test_the_layers_drawn_hold_every_import():
    # Given the rooms of the package and their imports, and the layout page's drawing of them
    from tests.unit.test_import_graph import import_graph, room_graph

    rooms, arrows = room_graph(import_graph())
    drawn = drawn_layers()
    line_of = {room: index for index, line in enumerate(drawn) for room in line}
    # Then it draws every room (the package's own __init__, its version, aside)
    assert sorted(set(rooms) - set(line_of) - {"sfn_idempotency"}) == []
    # And every import goes from a room to one on its own line or below it
    upward = [
        line
        for (here, there), lines in arrows.items()
        if there in line_of and line_of[there] < line_of[here]
        for line in lines
    ]
    assert upward == []
