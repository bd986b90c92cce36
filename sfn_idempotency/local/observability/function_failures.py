"""Each failed run of a function that an SQS queue's event source mapping invoked, as it happens, for
whoever listens (``serve`` prints one line each). Nobody else would see it: the mapping's invocation
has no caller to answer, so a function that fails to load or run behind a queue stays silent while
its message waits in the queue (or goes to its dead-letter queue). A state machine's failed Tasks
are task_failures'; a Lambda API caller gets the error itself.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sfn_idempotency.local.compat.patching import CAPABILITY, Patch, apply_capability
from sfn_idempotency.local.observability.task_failures import failure_words

_LAMBDA_BACKEND = "moto.awslambda.models:LambdaBackend"
_FUNCTION_ERROR = "x-amz-function-error"


@dataclass(frozen=True)
class FunctionFailure:
    function: str
    trigger: str  # what invoked it: "SQS <queue name>"
    error: str
    cause: str

    def line(self, limit: int = 300) -> str:
        """One line: the function, what invoked it, the error, the cause's start."""
        return f"{self.function} ({self.trigger}): {failure_words(self.error, self.cause, limit)}"


listeners: list[Callable[[FunctionFailure], None]] = []


class _Trigger(threading.local):
    name: str = ""  # what this thread's invocation is for, while a mapping delivers


_trigger = _Trigger()


def _from_a_queue(original: Callable[..., bool]) -> Callable[..., bool]:
    """``LambdaBackend._send_sqs_message``: the invocation it makes is the queue's."""

    def send_sqs_message(self: Any, function_arn: str, message: Any, queue_arn: str) -> bool:
        _trigger.name = f"SQS {queue_arn.rsplit(':', 1)[-1]}"
        try:
            return original(self, function_arn, message, queue_arn)
        finally:
            _trigger.name = ""

    return send_sqs_message


def _reported(original: Callable[..., Any]) -> Callable[..., Any]:
    """``LambdaBackend.invoke``: a trigger's invocation that answered a function error is reported."""

    def invoke(
        self: Any, function_name: str, qualifier: str | None, body: Any, headers: Any, response_headers: Any
    ) -> Any:
        answer = original(self, function_name, qualifier, body, headers, response_headers)
        if _trigger.name and listeners and _FUNCTION_ERROR in response_headers:
            failure = FunctionFailure(function_name.rsplit(":", 1)[-1], _trigger.name, *_error_of(answer))
            for listener in list(listeners):
                listener(failure)
        return answer

    return invoke


def _error_of(answer: Any) -> tuple[str, str]:
    """(errorType, errorMessage) of a function error's payload, as Lambda's runtimes write it."""
    try:
        payload = json.loads(answer)
    except (TypeError, ValueError):
        return "", str(answer or "")
    if not isinstance(payload, dict):
        return "", str(payload)
    return str(payload.get("errorType") or ""), str(payload.get("errorMessage") or "")


PATCHES: tuple[Patch, ...] = (
    Patch(CAPABILITY, _LAMBDA_BACKEND, "_send_sqs_message", _from_a_queue),
    Patch(CAPABILITY, _LAMBDA_BACKEND, "invoke", _reported),
)


def install() -> None:
    apply_capability("function failure reports", PATCHES)
