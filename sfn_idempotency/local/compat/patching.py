"""The guarded patch table's building blocks: each fix declares the moto internals it touches.

A patch of a module that loads on demand (moto's CloudFormation: importing it imports the models of
every service it deploys, EC2's among them) is checked and applied right after that module's first
import, not at the engine's start: a machine that deploys no stack never pays for it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

CAPABILITY = 0  # the "fix" number of a patch that adds a capability (mock files...), not a fix
# Module prefixes whose patches wait for their first import (CloudFormation's 1.5 s, API Gateway's
# 0.25 s of OpenAPI validators): neither is needed before a stack or a REST API is made.
LOADED_ON_DEMAND = ("moto.cloudformation.", "moto.apigateway.")


class IncompatibleMotoError(RuntimeError):
    """The installed moto lacks an internal that a fix patches: results would be wrong, so refuse."""


@dataclass(frozen=True)
class Patch:
    """``owner.attribute = build(original)``; ``owner`` is ``module`` or ``module:Class``."""

    fix: int
    owner: str
    attribute: str
    build: Callable[[Any], Any]

    @property
    def module(self) -> str:
        return self.owner.partition(":")[0]

    def resolve_owner(self) -> Any:
        module_name, _, class_name = self.owner.partition(":")
        owner = importlib.import_module(module_name)
        return getattr(owner, class_name) if class_name else owner

    @property
    def waits_for_import(self) -> bool:
        """Its module loads on demand and has not loaded yet."""
        return self.module.startswith(LOADED_ON_DEMAND) and self.module not in sys.modules


class _AfterFirstImport(importlib.abc.MetaPathFinder):
    """Runs actions right after a module's first import has executed it (Python has no
    post-import hook): the finder wraps the loader that the other finders found."""

    def __init__(self) -> None:
        self.pending: dict[str, dict[str, Callable[[], None]]] = {}
        self._lock = threading.Lock()

    def add(self, module: str, key: str, action: Callable[[], None]) -> None:
        with self._lock:
            if module in sys.modules:
                run_now = True
            else:
                self.pending.setdefault(module, {})[key] = action  # a second install replaces it
                run_now = False
        if run_now:
            action()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.pending:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            with self._lock:
                actions = self.pending.pop(fullname, {})
            for action in actions.values():
                action()

        loader.exec_module = exec_module  # type: ignore[method-assign]  # this spec's own loader
        return spec


_after_first_import = _AfterFirstImport()
sys.meta_path.insert(0, _after_first_import)


def after_first_import(module: str, key: str, action: Callable[[], None]) -> None:
    """``action()`` once ``module`` has been imported: now if it has, else right after its import
    (one action per ``key``)."""
    _after_first_import.add(module, key, action)


def keep(original: Any) -> Any:
    """The build of a patch that only reads an internal: checked to exist, never replaced."""
    return original


def kept_on(owner: Any, attribute: str) -> dict[Any, Any]:
    """The dict a fix keeps on ``owner`` (an instance) under ``attribute``, made at its first use.
    Read with ``get``: ``setdefault`` would build a throwaway dict at every call of a hot path."""
    kept: dict[Any, Any] | None = owner.__dict__.get(attribute)
    if kept is None:
        kept = owner.__dict__[attribute] = {}
    return kept


# Each patched attribute's builds, one per table that patches it (the compat fixes' table, a
# capability's), in the order the tables were first applied: a capability that patches what a fix
# patches wraps the fix, and installing a table again replaces its own build, never another's.
_LAYERS: dict[tuple[int, str], dict[int, Callable[[Any], Any]]] = {}


def replace(owner: Any, attribute: str, build: Callable[[Any], Any], table: int = 0) -> None:
    """``owner.attribute = build(original)``, over what other ``table``s built on the same original;
    installing again rebuilds from that original."""
    saved = f"_sfn_local_original_{attribute}"
    original = owner.__dict__.get(saved) or getattr(owner, attribute)
    setattr(owner, saved, original)
    layers = _LAYERS.setdefault((id(owner), attribute), {})
    layers[table] = build
    built = original
    for layer in layers.values():
        # Each build takes what reading the attribute gives: a classmethod one built, bound.
        built = layer(built.__get__(None, owner) if isinstance(built, classmethod) else built)
    setattr(owner, attribute, built)


def add(owner: str, attribute: str, value: Any) -> None:
    """An operation moto lacks, added rather than replaced (``owner`` as in ``Patch``)."""
    setattr(Patch(0, owner, attribute, keep).resolve_owner(), attribute, value)


def missing(patches: tuple[Patch, ...], *, loaded_only: bool = False) -> list[str]:
    """What each patch needs from moto and this moto lacks (empty: every patch applies).
    ``loaded_only``: patches of modules that load on demand are left to their first import."""
    problems = []
    for patch in patches:
        if loaded_only and patch.waits_for_import:
            continue
        try:
            owner = patch.resolve_owner()
        except (ImportError, AttributeError) as error:
            problems.append(f"fix {patch.fix}: {patch.owner} is missing ({error})")
            continue
        if not hasattr(owner, patch.attribute):
            problems.append(f"fix {patch.fix}: {patch.owner}.{patch.attribute} is missing")
    return problems


def apply(patches: tuple[Patch, ...]) -> None:
    """Every patch that replaces something, replaced (idempotent: rebuilt from the originals).
    Two fixes of one attribute compose, in the table's order: the later wraps the earlier; another
    table's patches of it wrap them in turn (``replace``)."""
    waiting = {patch.module for patch in patches if patch.waits_for_import}
    for module in waiting:
        of_module = tuple(patch for patch in patches if patch.module == module)
        # Keyed by the patches themselves: installing them again replaces the action, another
        # table's patches of the same module wait beside it.
        after_first_import(module, f"patches {hash(of_module)}", functools.partial(_checked, of_module))
    builds: dict[tuple[str, str], list[Callable[[Any], Any]]] = {}
    for patch in patches:
        if patch.build is not keep and patch.module not in waiting:
            builds.setdefault((patch.owner, patch.attribute), []).append(patch.build)
    for (owner, attribute), chain in builds.items():
        replace(Patch(0, owner, attribute, keep).resolve_owner(), attribute, _composed(chain), hash(patches))


def _checked(patches: tuple[Patch, ...]) -> None:
    problems = missing(patches)
    if problems:
        raise IncompatibleMotoError(f"this moto is not supported by the local engine: {'; '.join(problems)}")
    apply(patches)


def apply_capability(what: str, patches: tuple[Patch, ...]) -> None:
    """A capability's patches (mock files, activities, redrive...) applied, or a RuntimeError
    naming ``what`` cannot run when this moto lacks an internal they need."""
    problems = missing(patches)
    if problems:
        raise RuntimeError(f"{what} cannot run on this moto: {'; '.join(problems)}")
    apply(patches)


def _composed(chain: list[Callable[[Any], Any]]) -> Callable[[Any], Any]:
    def build(original: Any) -> Any:
        for step in chain:
            original = step(original)
        return original

    return build
