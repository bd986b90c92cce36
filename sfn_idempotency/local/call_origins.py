"""Which execution makes a call: a Task's Lambda invocation names the execution whose Task made it,
for what wraps function calls (the exactly-once explorer attributes each run of a side effect, and
holds or fails only the calls of the executions it drives). A Task with a timeout makes its call in
a thread of its own, so the thread that calls knows it here, set as the call begins.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from sfn_idempotency.local.compat.patching import CAPABILITY, Patch, apply_capability

_LAMBDA_EVAL = "moto.stepfunctions.parser.asl.component.state.exec.state_task.lambda_eval_utils"


class _Origin(threading.local):
    execution: str = ""


_origin = _Origin()


def calling_execution() -> str:
    """The ARN of the execution whose Task is invoking a function in this thread ("" if none)."""
    return _origin.execution


def _known(original: Callable[..., None]) -> Callable[..., None]:
    def execute_lambda_function_integration(env: Any, *args: Any, **kwargs: Any) -> None:
        _origin.execution = str(env.states.context_object.context_object_data["Execution"]["Id"])
        try:
            original(env, *args, **kwargs)
        finally:
            _origin.execution = ""

    return execute_lambda_function_integration


PATCHES: tuple[Patch, ...] = (Patch(CAPABILITY, _LAMBDA_EVAL, "execute_lambda_function_integration", _known),)


def install() -> None:
    apply_capability("the origin of function calls", PATCHES)
