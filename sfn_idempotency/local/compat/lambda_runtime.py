"""Lambda functions created through the Lambda API (any deploy tool, ``aws lambda create-function``)
run in the engine's own runtimes (fix 22): Python in process, Node.js in a warm Node process
(sfn_idempotency.local.runtimes). moto runs function code only in Docker, which the local engine
does not need or have.

Fix 157: an SQS queue's event source mapping delivers a batch its function failed again, once the
queue's visibility timeout has passed, until the function succeeds or the queue's redrive policy
moves the messages to its dead-letter queue (as Lambda's poller receives them again). moto invoked
the function once, when the message was sent, so a failing message stayed in its queue for good.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable
from typing import Any

from sfn_idempotency.local import runtimes
from sfn_idempotency.local.compat.patching import Patch
from sfn_idempotency.local.controls.faults import FunctionResult
from sfn_idempotency.local.engine.lambdas import function_name_of, marshalled, qualifier_of
from sfn_idempotency.local.runtimes import NODE_PREFIX, UNAVAILABLE, code_folders, node, python, refusal
from sfn_idempotency.local.runtimes.outcome import Outcome

_MODELS = "moto.awslambda.models"
_LATEST = "$LATEST"
_UNQUALIFIED_ARN_COLONS = 6  # arn:aws:lambda:<region>:<account>:function:<name>


def run(function: Any, event: Any) -> Outcome:
    """One invocation, through the running cloud's fault plan (its faults and wrappers)."""
    plan = runtimes.faults
    if plan is None:
        return _run(function, event)
    return plan.call_function(
        str(function.function_name),
        event,
        lambda: _run(function, event),
        lambda outcome: outcome.errored,
        lambda instead: (
            Outcome(marshalled(instead.value), errored=False)
            if isinstance(instead, FunctionResult)
            else Outcome.error(instead.error_type, instead.message)
        ),
    )


def _run(function: Any, event: Any) -> Outcome:
    """One invocation in the function's runtime, under the ARN it was invoked by (its qualifier
    included, as the context's ``invoked_function_arn`` says it). A runtime the engine does not
    have answers a function error naming it (moto would try Docker)."""
    refused = refusal(function.run_time, function.package_type)
    if refused is not None:
        return Outcome.error(UNAVAILABLE, f"{function.function_name}: {refused}")
    qualifier = getattr(_invoked, "qualifier", None)
    _invoked.qualifier = None
    invoked_arn = function.function_arn
    if qualifier and not invoked_arn.endswith(f":{qualifier}"):
        invoked_arn = f"{invoked_arn}:{qualifier}"
    if str(function.run_time).startswith(NODE_PREFIX):
        return node.run(function, event, invoked_arn)
    return python.run(function, event, invoked_arn)


def _invoke_in_process(_original: Callable[..., Any]) -> Callable[..., Any]:
    """``LambdaFunction.invoke``: a Python or Node.js zip runs here; the answer names the version that ran
    (``X-Amz-Executed-Version``, which the Step Functions result carries as ``ExecutedVersion``)
    and an exception as an ``Unhandled`` function error, as AWS's Python runtime does."""

    def invoke(self: Any, body: Any, request_headers: Any, response_headers: Any) -> Any:
        response_headers["x-amz-executed-version"] = str(self.version)
        outcome = run(self, json.loads(body) if body else {})
        if outcome.errored:
            response_headers["x-amz-function-error"] = "Unhandled"
        if request_headers.get("x-amz-log-type") == "Tail":
            response_headers["x-amz-log-result"] = base64.b64encode(outcome.log.encode()[-4096:]).decode()
        return outcome.payload

    return invoke


def _run_lambda_in_process(_original: Callable[..., Any]) -> Callable[..., Any]:
    """``LambdaFunction._invoke_lambda``, which moto's other services call (event source mappings,
    destinations): the same runtime, in its ``(payload, errored, logs)`` form."""

    def invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
        outcome = run(self, {} if event is None else event)
        return outcome.payload.decode("utf-8", errors="replace"), outcome.errored, outcome.log

    return invoke_lambda


class _Invoked(threading.local):
    qualifier: str | None = None  # the version or alias this thread's Invoke named, if any


_invoked = _Invoked()


def _qualified_not_found(original: Callable[..., Any]) -> Callable[..., Any]:
    """Invoking a function that does not exist names its ``$LATEST`` qualifier (recorded); one that
    does is run with the qualifier it was invoked by (its context's ``invoked_function_arn``)."""

    def invoke(self: Any, function_name: str, qualifier: str | None, *args: Any, **kwargs: Any) -> Any:
        from moto.awslambda.exceptions import UnknownFunctionException

        _invoked.qualifier = qualifier or qualifier_of(function_name)
        try:
            return original(self, function_name, qualifier, *args, **kwargs)
        except UnknownFunctionException as error:
            arn = str(error.message).removeprefix("Function not found: ")
            if qualifier is None and arn.count(":") == _UNQUALIFIED_ARN_COLONS:
                raise UnknownFunctionException(f"{arn}:{_LATEST}") from None
            raise

    return invoke


def _remove_deleted_code(original: Callable[..., Any]) -> Callable[..., Any]:
    """``LambdaBackend.delete_function``: a deleted function (or version) leaves no code behind."""

    def delete_function(self: Any, function_name: str, qualifier: str | None = None) -> None:
        original(self, function_name, qualifier)
        name = function_name_of(function_name)
        code_folders.remove_where(
            lambda arn, sha: (
                function_name_of(arn) == name and (qualifier is None or arn.endswith(f":{qualifier}"))
            )
        )

    return delete_function


def _redelivered_until_done(original: Callable[..., bool]) -> Callable[..., bool]:
    """``LambdaBackend.send_sqs_batch``: a batch that failed is received and delivered again after
    the queue's visibility timeout (fix 157)."""

    def send_sqs_batch(self: Any, function_arn: str, messages: Any, queue_arn: str) -> bool:
        delivered = original(self, function_arn, messages, queue_arn)
        if not delivered:
            _deliver_again_later(self, function_arn, queue_arn)
        return delivered

    return send_sqs_batch


def _deliver_again_later(lambdas: Any, function_arn: str, queue_arn: str) -> None:
    from moto.sqs.models import sqs_backends

    *_, region, account, name = queue_arn.split(":")
    queue = sqs_backends[account][region].queues.get(name)
    if queue is None:
        return

    def deliver() -> None:
        mapping = queue.lambda_event_source_mappings.get(function_arn)
        if (
            mapping is None
            or not mapping.enabled
            or queue is not sqs_backends[account][region].queues.get(name)
        ):
            return  # the mapping, the queue or the whole cloud went meanwhile
        sqs = sqs_backends[account][region]
        # Received again: each receive counts, and past maxReceiveCount moto's SQS moves a message
        # to the dead-letter queue instead of answering it.
        messages = sqs.receive_message(name, mapping.batch_size, 0, queue.visibility_timeout)
        if not messages:
            return
        if lambdas.send_sqs_batch(function_arn, messages, queue_arn):
            for message in messages:
                sqs.delete_message(name, message.receipt_handle)
        else:
            for message in messages:
                sqs.change_message_visibility(name, message.receipt_handle, visibility_timeout=0)

    timer = threading.Timer(float(queue.visibility_timeout), deliver)
    timer.daemon = True
    timer.start()


PATCHES: tuple[Patch, ...] = (
    Patch(22, f"{_MODELS}:LambdaFunction", "invoke", _invoke_in_process),
    Patch(22, f"{_MODELS}:LambdaFunction", "_invoke_lambda", _run_lambda_in_process),
    Patch(22, f"{_MODELS}:LambdaBackend", "invoke", _qualified_not_found),
    Patch(22, f"{_MODELS}:LambdaBackend", "delete_function", _remove_deleted_code),
    Patch(157, f"{_MODELS}:LambdaBackend", "send_sqs_batch", _redelivered_until_done),
)
