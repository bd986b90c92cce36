"""Lambda functions run in-process: our real handlers, a real-looking context, Lambda's error payloads."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sfn_idempotency.local.compat.lambda_runtime import Around, function_name_of, qualifier_of
from sfn_idempotency.local.controls.calls import Reply
from sfn_idempotency.local.controls.faults import FaultPlan, FunctionResult
from sfn_idempotency.local.observability import function_logs
from sfn_idempotency.local.runtimes import python_interface
from sfn_idempotency.local.runtimes.outcome import Outcome
from sfn_idempotency.local.runtimes.python_handlers import (
    Handler,
    LocalLambdaContext,
    cold_start,
    exit_payload,
)
from sfn_idempotency.local.runtimes.python_interface import marshalled

__all__ = [
    "Handler",
    "LambdaRuntime",
    "LocalFunction",
    "LocalLambdaContext",
    "cold_start",
    "error_payload",
    "function_name_of",
    "outcomes_through",
    "qualifier_of",
]


@dataclass
class LocalFunction:
    """A function the engine created (``cloud.add_function``): its ``arn`` goes into a definition's
    substitutions; its ``handler`` runs in this process when a Task invokes it."""

    name: str
    arn: str
    handler: Handler
    timeout_seconds: int


class LambdaRuntime:
    """Answers ``lambda.Invoke`` for the functions added to it; other names fall through to moto."""

    def __init__(self, region: str, account: str, faults: FaultPlan) -> None:
        self._region = region
        self._account = account
        self._faults = faults
        self._functions: dict[str, LocalFunction] = {}
        self._invocations: dict[str, int] = {}
        self._lock = threading.Lock()

    def add(self, name: str, handler: Handler, timeout_seconds: int) -> LocalFunction:
        arn = f"arn:aws:lambda:{self._region}:{self._account}:function:{name}"
        function = LocalFunction(name, arn, handler, timeout_seconds)
        self._functions[name] = function
        self._invocations[name] = 0
        return function

    def invocations(self, name: str) -> int:
        """How many times the function's code was entered (failed runs included)."""
        with self._lock:
            return self._invocations[name]

    def hook(self, service: str, operation: str, params: dict[str, Any]) -> Reply | None:
        if (service, operation) != ("lambda", "Invoke"):
            return None
        reference = str(params.get("FunctionName", ""))
        function = self._functions.get(function_name_of(reference))
        if function is None:
            return None
        qualifier = params.get("Qualifier") or qualifier_of(reference)
        return self.invoke(function, params.get("Payload"), qualifier)

    def invoke(self, function: LocalFunction, payload: Any, qualifier: str | None = None) -> Reply:
        event = _decode(payload)
        # The context says the ARN the function was invoked by: with its qualifier, if it had one.
        invoked_arn = f"{function.arn}:{qualifier}" if qualifier else function.arn
        context = LocalLambdaContext(function.name, invoked_arn, function.timeout_seconds)
        with self._lock:
            self._invocations[function.name] += 1
        return self._faults.call_function(
            function.name,
            event,
            lambda: self._run(function, event, context),
            lambda answer: "FunctionError" in answer.body,
            lambda instead: (
                Reply.lambda_payload(marshalled(instead.value), request_id=context.aws_request_id)
                if isinstance(instead, FunctionResult)
                else Reply.lambda_payload(
                    {"errorMessage": instead.message, "errorType": instead.error_type, "stackTrace": []},
                    function_error="Unhandled",
                )
            ),
        )

    def _run(self, function: LocalFunction, event: Any, context: LocalLambdaContext) -> Reply:
        try:
            result = function.handler(event, context)
        except Exception as error:
            payload = error_payload(error, context)
            function_logs.log_error(self._account, self._region, function.name, _HANDLER_RUNTIME, payload)
            return Reply.lambda_payload(
                payload, function_error="Unhandled", request_id=context.aws_request_id
            )
        except SystemExit as error:  # the runtime's process ends: Lambda answers at once
            return Reply.lambda_payload(
                exit_payload(error, context.aws_request_id),
                function_error="Unhandled",
                request_id=context.aws_request_id,
            )
        try:
            data = marshalled(result)
        except (TypeError, ValueError) as error:
            payload = {
                "errorMessage": f"Unable to marshal response: {error}",
                "errorType": "Runtime.MarshalError",
            }
            return Reply.lambda_payload(
                payload, function_error="Unhandled", request_id=context.aws_request_id
            )
        # Lambda's answer carries the invocation's own request id, the one the function saw.
        return Reply.lambda_payload(data, request_id=context.aws_request_id)


# The engine's own functions are Python handlers: their records are Python's.
_HANDLER_RUNTIME = "python"


def _decode(payload: Any) -> Any:
    if payload is None or payload == b"":
        return None
    if isinstance(payload, bytes | bytearray):
        payload = payload.decode()
    return json.loads(payload) if isinstance(payload, str) else payload


def error_payload(error: Exception, context: LocalLambdaContext) -> dict[str, Any]:
    return python_interface.error_payload(error, context.aws_request_id)


def outcomes_through(plan: FaultPlan) -> Around:
    """Every invocation of a function created through the Lambda API, through ``plan``'s faults and
    wrappers (what compat fix 22 calls around each: ``lambda_runtime.around``)."""

    def around(name: str, event: Any, invocation: Callable[[], Outcome]) -> Outcome:
        return plan.call_function(
            name,
            event,
            invocation,
            lambda outcome: outcome.errored,
            lambda instead: (
                Outcome(marshalled(instead.value), errored=False)
                if isinstance(instead, FunctionResult)
                else Outcome.error(instead.error_type, instead.message)
            ),
        )

    return around
