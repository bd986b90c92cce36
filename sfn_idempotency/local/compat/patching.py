"""The guarded patch table's building blocks: each fix declares the moto internals it touches."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

CAPABILITY = 0  # the "fix" number of a patch that adds a capability (mock files...), not a fix


@dataclass(frozen=True)
class Patch:
    """``owner.attribute = build(original)``; ``owner`` is ``module`` or ``module:Class``."""

    fix: int
    owner: str
    attribute: str
    build: Callable[[Any], Any]

    def resolve_owner(self) -> Any:
        module_name, _, class_name = self.owner.partition(":")
        owner = importlib.import_module(module_name)
        return getattr(owner, class_name) if class_name else owner


def keep(original: Any) -> Any:
    """The build of a patch that only reads an internal: checked to exist, never replaced."""
    return original


def replace(owner: Any, attribute: str, build: Callable[[Any], Any]) -> None:
    """``owner.attribute = build(original)``; installing again rebuilds from the same original."""
    saved = f"_sfn_local_original_{attribute}"
    original = owner.__dict__.get(saved) or getattr(owner, attribute)
    setattr(owner, saved, original)
    setattr(owner, attribute, build(original))


def add(owner: str, attribute: str, value: Any) -> None:
    """An operation moto lacks, added rather than replaced (``owner`` as in ``Patch``)."""
    setattr(Patch(0, owner, attribute, keep).resolve_owner(), attribute, value)


def missing(patches: tuple[Patch, ...]) -> list[str]:
    """What each patch needs from moto and this moto lacks (empty: every patch applies)."""
    problems = []
    for patch in patches:
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
    Two fixes of one attribute compose, in the table's order: the later wraps the earlier."""
    builds: dict[tuple[str, str], list[Callable[[Any], Any]]] = {}
    for patch in patches:
        if patch.build is not keep:
            builds.setdefault((patch.owner, patch.attribute), []).append(patch.build)
    for (owner, attribute), chain in builds.items():
        replace(Patch(0, owner, attribute, keep).resolve_owner(), attribute, _composed(chain))


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
