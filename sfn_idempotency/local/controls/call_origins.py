"""Which execution, and which of its Task states, makes a call: a Task's AWS call (a Lambda
invocation, a DynamoDB write...) names the execution and state whose Task made it, for what watches
calls (the exactly-once explorer attributes each run of a side effect, and holds or fails only the
calls of the executions it drives). A Task with a timeout makes its call in a thread of its own, so
the thread that calls knows it here, set as the Task's work begins.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from sfn_idempotency.local.compat.patching import CAPABILITY, Patch, apply_capability

_STATE_TASK = "moto.stepfunctions.parser.asl.component.state.exec.state_task"


class _Origin(threading.local):
    execution: str = ""
    state: str = ""


_origin = _Origin()


def calling_execution() -> str:
    """The ARN of the execution whose Task is making a call in this thread ("" if none)."""
    return _origin.execution


def calling_state() -> str:
    """The name of the Task state making a call in this thread ("" if none)."""
    return _origin.state


def _known(original: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    """``StateTaskService._eval_execution``: a service Task's work (its call among it)."""

    def eval_execution(self: Any, env: Any) -> None:
        with _calling(env):
            original(self, env)

    return eval_execution


def _function_known(original: Callable[..., None]) -> Callable[..., None]:
    """A Task whose Resource is the function itself calls it here (its ``_eval_execution`` is
    compat fix 73's)."""

    def execute_lambda_function_integration(env: Any, *args: Any, **kwargs: Any) -> None:
        with _calling(env):
            original(env, *args, **kwargs)

    return execute_lambda_function_integration


@contextlib.contextmanager
def _calling(env: Any) -> Iterator[None]:
    context = env.states.context_object.context_object_data
    # TestState may give a context of its own, with members left out or empty
    _origin.execution = str((context.get("Execution") or {}).get("Id", ""))
    _origin.state = str((context.get("State") or {}).get("Name", ""))
    try:
        yield
    finally:
        _origin.execution = _origin.state = ""


PATCHES: tuple[Patch, ...] = (
    Patch(
        CAPABILITY, f"{_STATE_TASK}.service.state_task_service:StateTaskService", "_eval_execution", _known
    ),
    Patch(
        CAPABILITY, f"{_STATE_TASK}.lambda_eval_utils", "execute_lambda_function_integration", _function_known
    ),
)


def install() -> None:
    apply_capability("the origin of Task calls", PATCHES)
