"""The patch table's composition (sfn_idempotency.local.compat.patching): a capability that patches
what a compat fix patches wraps the fix instead of dropping it."""

from __future__ import annotations

import sys
import types
from typing import Any

from sfn_idempotency.local.compat.patching import Patch, apply


class Target:
    @classmethod
    def made(cls) -> list[str]:
        return ["original"]


def _adding(word: str) -> Any:
    def build(original: Any) -> Any:
        return classmethod(lambda cls: [*original(), word])

    return build


def test_two_tables_patching_one_attribute_compose_and_each_reinstalls_only_its_own():
    # Given a module-level class, and two tables that patch the same classmethod (a fix, a capability)
    module = types.ModuleType("patched_for_test")
    module.Target = type("Target", (Target,), {})  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    try:
        fix = (Patch(1, f"{module.__name__}:Target", "made", _adding("fix")),)
        capability = (Patch(0, f"{module.__name__}:Target", "made", _adding("capability")),)

        # When both are applied, and each is applied again
        apply(fix)
        apply(capability)
        apply(capability)
        apply(fix)

        # Then the capability wraps the fix, once each, on the one original
        assert module.Target.made() == ["original", "fix", "capability"]
    finally:
        del sys.modules[module.__name__]
