"""Lambda functions created through the Lambda API (any deploy tool, ``aws lambda create-function``)
run in the engine's own runtimes (fix 22): Python in process, Node.js in a warm Node process
(sfn_idempotency.local.runtimes). moto runs function code only in Docker, which the local engine
does not need or have.

Fix 157: an SQS queue's event source mapping delivers a batch its function failed again, once the
queue's visibility timeout has passed, until the function succeeds or the queue's redrive policy
moves the messages to its dead-letter queue (as Lambda's poller receives them again). moto invoked
the function once, when the message was sent, so a failing message stayed in its queue for good.

Fix 161: a trigger that does not wait for its function (an EventBridge rule's target, an SNS
subscription) invokes it asynchronously, as Lambda's asynchronous invocation does: in a thread of
its own, after the trigger has answered; a function error is tried again twice, a minute and then
two minutes later, or as often as the function's event invoke configuration says
(``MaximumRetryAttempts``). The waits scale as a Task's retries do (``retry_time``). What invoked
each run is ``invocation_trigger``'s, for whoever reports failures.

Fix 163: an SQS event source mapping invokes its function once per batch (up to its ``BatchSize``
messages), each record as SQS holds the message: its receive count, sent and first-receive times,
sender, message attributes and body's MD5, and a FIFO queue's group and deduplication ids. moto
invoked the function once per message with a fixed sample's attributes (a receive count of "1",
a timestamp of 2018, the MD5 of "test", no message attributes). A mapping with
``ReportBatchItemFailures`` deletes the messages its function did not name in
``batchItemFailures``; the named ones are delivered again (moto deleted the whole batch).
"""

from __future__ import annotations

import base64
import json
import logging
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from sfn_idempotency.local.compat.interpreter import retry_time
from sfn_idempotency.local.compat.patching import Patch
from sfn_idempotency.local.runtimes import NODE_PREFIX, UNAVAILABLE, code_folders, node, python, refusal
from sfn_idempotency.local.runtimes.outcome import Outcome

_MODELS = "moto.awslambda.models"
_LATEST = "$LATEST"
_UNQUALIFIED_ARN_COLONS = 6  # arn:aws:lambda:<region>:<account>:function:<name>
_FUNCTION_ERROR = "x-amz-function-error"
# Lambda's asynchronous invocation: a function error is retried twice, one and then two minutes on
# (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html).
ASYNC_RETRY_WAITS_SECONDS = (60.0, 120.0)
LOG = logging.getLogger(__name__)


class _InvocationTrigger(threading.local):
    name: str = ""  # what this thread's invocation is for ("SQS orders", "SNS alerts"...), while it runs


invocation_trigger = _InvocationTrigger()


def invoke_asynchronously(function_arn: str, payload: str, trigger: str) -> None:
    """Fix 161: ``payload`` delivered to the function as Lambda's asynchronous invocation delivers
    it, for ``trigger`` (what invoked it, in words: "EventBridge rule orders")."""
    from moto.awslambda.utils import get_backend

    *_, region, account = function_arn.split(":")[:5]
    lambdas = get_backend(account, region)

    def attempts() -> int:
        try:
            configured = lambdas.get_function_event_invoke_config(function_arn).get("MaximumRetryAttempts")
        except Exception:  # no configuration (or no function: the first attempt says so)
            configured = None
        retries = len(ASYNC_RETRY_WAITS_SECONDS) if configured is None else int(configured)
        return 1 + retries

    def deliver() -> None:
        for attempt in range(attempts()):
            if attempt:
                retry_time.sleep(ASYNC_RETRY_WAITS_SECONDS[attempt - 1])
            answered: dict[str, str] = {}
            invocation_trigger.name = trigger
            try:
                lambdas.invoke(function_arn, None, payload, {}, answered)
            except Exception as error:  # the function is gone: Lambda drops the event
                LOG.warning("%s could not invoke %s (%s): the event is dropped", trigger, function_arn, error)
                return
            finally:
                invocation_trigger.name = ""
            if _FUNCTION_ERROR not in answered:
                return

    threading.Thread(target=deliver, name=f"async-{function_name_of(function_arn)}", daemon=True).start()


# What the running cloud puts around every invocation (its faults and wrappers), wired by the
# engine: given the function's name, the event and the invocation itself, the outcome.
Around = Callable[[str, Any, Callable[[], Outcome]], Outcome]
around: Around | None = None


# Who hears of every invocation once it ended (the function, its outcome): its log is written to
# the function's log group from here (observability/function_logs).
invocation_listeners: list[Callable[[Any, Outcome], None]] = []


def run(function: Any, event: Any) -> Outcome:
    """One invocation, through what the running cloud puts around it."""
    if around is None:
        outcome = _run(function, event)
    else:
        outcome = around(str(function.function_name), event, lambda: _run(function, event))
    for listener in list(invocation_listeners):
        listener(function, outcome)
    return outcome


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


def _one_event_per_batch(_original: Callable[..., bool]) -> Callable[..., bool]:
    """``LambdaBackend.send_sqs_batch``: one invocation with every message of the batch (fix 163)."""

    def send_sqs_batch(self: Any, function_arn: str, messages: Any, queue_arn: str) -> bool:
        region = queue_arn.split(":")[3]
        queue = _queue_of(queue_arn)
        held = _as_the_queue_holds_them(messages, queue)
        event = {"Records": [_sqs_record(message, queue_arn, region) for message in held]}
        answered: dict[str, str] = {}
        invocation_trigger.name = f"SQS {queue_arn.rsplit(':', 1)[-1]}"
        try:
            response = self.invoke(function_arn, None, json.dumps(event), {}, answered)
        finally:
            invocation_trigger.name = ""
        if _FUNCTION_ERROR in answered:
            return False
        if not _reports_item_failures(queue, function_arn):
            return True
        failed = _failed_items(response, {message.id for message in messages})
        if failed is None:
            return False  # a response Lambda cannot read fails the whole batch
        if failed:
            # moto deletes the messages it is left with; the failed ones wait out their visibility
            # timeout and are delivered again.
            messages[:] = [message for message in messages if message.id not in failed]
            _deliver_again_later(self, function_arn, queue_arn)
        return True

    return send_sqs_batch


def _reports_item_failures(queue: Any, function_arn: str) -> bool:
    """Whether the mapping's ``FunctionResponseTypes`` holds ``ReportBatchItemFailures``."""
    mapping = queue.lambda_event_source_mappings.get(function_arn) if queue is not None else None
    return "ReportBatchItemFailures" in (getattr(mapping, "function_response_types", None) or ())


def _failed_items(response: Any, batch: set[str]) -> set[str] | None:
    """The message ids a partial batch response names, or None when Lambda fails the whole batch:
    a response that is not JSON, an item without the id of a message of the batch
    (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html)."""
    try:
        answer = json.loads(response) if response else None
    except ValueError:
        return None
    failures = answer.get("batchItemFailures") if isinstance(answer, dict) else None
    if not failures:
        return set()  # none, null or an empty list: the whole batch succeeded
    if not isinstance(failures, list):
        return None
    failed: set[str] = set()
    for item in failures:
        named = item.get("itemIdentifier") if isinstance(item, dict) else None
        if not isinstance(named, str) or named not in batch:
            return None
        failed.add(named)
    return failed


def _queue_of(queue_arn: str) -> Any:
    from moto.sqs.models import sqs_backends

    *_, region, account, name = queue_arn.split(":")
    return sqs_backends[account][region].queues.get(name)


def _as_the_queue_holds_them(messages: Any, queue: Any) -> list[Any]:
    """The queue's own messages for ``messages``: moto receives copies stripped of their message
    attributes (a receive that names none)."""
    held = {message.id: message for message in (queue._messages if queue is not None else ())}
    return [held.get(message.id, message) for message in messages]


def _sqs_record(message: Any, queue_arn: str, region: str) -> dict[str, Any]:
    """A message as Lambda's SQS event holds it
    (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html)."""
    attributes = {
        "ApproximateReceiveCount": str(message.approximate_receive_count),
        "SentTimestamp": str(message.sent_timestamp),
        "SenderId": message.sender_id,
        "ApproximateFirstReceiveTimestamp": str(message.approximate_first_receive_timestamp),
    }
    if queue_arn.endswith(".fifo"):
        attributes.update(MessageGroupId=message.group_id, MessageDeduplicationId=message.deduplication_id)
    record: dict[str, Any] = {
        "messageId": message.id,
        "receiptHandle": message.receipt_handle,
        "body": message.body,
        "attributes": attributes,
        "messageAttributes": {
            name: _record_attribute(value) for name, value in sorted(message.message_attributes.items())
        },
        "md5OfBody": message.body_md5,
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }
    if message.message_attributes:
        record["md5OfMessageAttributes"] = message.attribute_md5
    return record


def _record_attribute(value: dict[str, Any]) -> dict[str, Any]:
    """A message attribute as the event writes it: camel-cased, a binary value in base64."""
    written: dict[str, Any] = {"stringListValues": [], "binaryListValues": [], "dataType": value["DataType"]}
    if "StringValue" in value:
        written["stringValue"] = value["StringValue"]
    if "BinaryValue" in value:
        binary = value["BinaryValue"]
        written["binaryValue"] = binary if isinstance(binary, str) else base64.b64encode(binary).decode()
    return written


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
    # 157 wraps 163: a batch is delivered whole, and again after the visibility timeout if it failed
    Patch(163, f"{_MODELS}:LambdaBackend", "send_sqs_batch", _one_event_per_batch),
    Patch(157, f"{_MODELS}:LambdaBackend", "send_sqs_batch", _redelivered_until_done),
)


def function_name_of(reference: str) -> str:
    """A name, a partial or full ARN, with or without qualifier: the function's name."""
    parts = unquote(reference).split(":")
    return parts[parts.index("function") + 1] if "function" in parts else parts[0]


def qualifier_of(reference: str) -> str | None:
    """The version or alias a function reference names (``name:qualifier``, or a qualified ARN)."""
    parts = unquote(reference).split(":")
    after = parts[parts.index("function") + 2 :] if "function" in parts else parts[1:]
    return after[0] if after else None
