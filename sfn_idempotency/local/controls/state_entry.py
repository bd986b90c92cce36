"""What the engine does as a state is entered, before it runs: one patch of moto's state
evaluation runs the entry hooks in order. Redrive records each frame's resume point there; a test's
pause (``FaultPlan.pause_before``) holds the execution there. A hook may answer that the state must
not run: a paused execution that was stopped or timed out meanwhile starts nothing more, as an
execution stopped just before that state would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sfn_idempotency.local.compat.patching import CAPABILITY, Patch, apply_capability

_STATE = "moto.stepfunctions.parser.asl.component.state.state:CommonStateField"

# (state, env) -> whether the state runs
EntryHook = Callable[[Any, Any], bool]


class EntryHooks:
    """The engine's own hooks (always on once installed), then the running cloud's."""

    def __init__(self) -> None:
        self.engine: list[EntryHook] = []
        self.cloud: list[EntryHook] = []

    def add_engine_hook(self, hook: EntryHook) -> None:
        if hook not in self.engine:
            self.engine.append(hook)


hooks = EntryHooks()


def _entered(original: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    def eval_body(self: Any, env: Any) -> None:
        runs = True
        for hook in (*hooks.engine, *hooks.cloud):
            runs = hook(self, env) and runs
        if runs:
            original(self, env)

    return eval_body


PATCHES: tuple[Patch, ...] = (Patch(CAPABILITY, _STATE, "_eval_body", _entered),)


def install() -> None:
    apply_capability("state entry hooks", PATCHES)
