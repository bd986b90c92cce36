"""Each failed run of a function a trigger invoked (an SQS queue's event source mapping, an
EventBridge rule, an SNS subscription), as it happens, for whoever listens (``serve`` prints one
line each). Nobody else would see it: a trigger's invocation has no caller to answer, so a function
that fails to load or run behind one stays silent while its message waits in the queue (or goes to
its dead-letter queue), or its event is retried and dropped. Every run, failed or not, is in the
function's log group too (function_logs); a state machine's failed Tasks are task_failures'; a
Lambda API caller gets the error itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sfn_idempotency.local.compat.lambda_runtime import function_name_of, invocation_trigger
from sfn_idempotency.local.compat.patching import CAPABILITY, Patch, apply_capability
from sfn_idempotency.local.observability.task_failures import failure_words

_LAMBDA_BACKEND = "moto.awslambda.models:LambdaBackend"
_FUNCTION_ERROR = "x-amz-function-error"


@dataclass(frozen=True)
class FunctionFailure:
    function: str
    trigger: str  # what invoked it: "SQS <queue name>", "EventBridge rule <name>", "SNS <topic name>"
    error: str
    cause: str

    def line(self, limit: int = 300) -> str:
        """One line: the function, what invoked it, the error, the cause's start."""
        return f"{self.function} ({self.trigger}): {failure_words(self.error, self.cause, limit)}"


listeners: list[Callable[[FunctionFailure], None]] = []


def _reported(original: Callable[..., Any]) -> Callable[..., Any]:
    """``LambdaBackend.invoke``: an invocation a trigger made that answered a function error is
    reported (its log group has it, whoever invoked it: function_logs)."""

    def invoke(
        self: Any, function_name: str, qualifier: str | None, body: Any, headers: Any, response_headers: Any
    ) -> Any:
        answer = original(self, function_name, qualifier, body, headers, response_headers)
        if _FUNCTION_ERROR not in response_headers:
            return answer
        trigger = invocation_trigger.name
        if trigger and listeners:
            failure = FunctionFailure(
                function_name_of(function_name), trigger, *_error_of(_payload_of(answer))
            )
            for listener in list(listeners):
                listener(failure)
        return answer

    return invoke


def _payload_of(answer: Any) -> Any:
    try:
        return json.loads(answer)
    except (TypeError, ValueError):
        return answer


def _error_of(payload: Any) -> tuple[str, str]:
    """(errorType, errorMessage) of a function error's payload, as Lambda's runtimes write it."""
    if not isinstance(payload, dict):
        return "", "" if payload is None else str(payload)
    return str(payload.get("errorType") or ""), str(payload.get("errorMessage") or "")


PATCHES: tuple[Patch, ...] = (Patch(CAPABILITY, _LAMBDA_BACKEND, "invoke", _reported),)


def install() -> None:
    apply_capability("function failure reports", PATCHES)
