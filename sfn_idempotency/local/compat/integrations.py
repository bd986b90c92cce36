"""Service integrations: what a Task's call sends and what its result looks like (fixes 6, 23, 24,
25, 55, 138, 148)."""

from __future__ import annotations

import base64
import datetime
import email.utils
import functools
import io
import json
import os
import re
import threading
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any
from xml.sax.saxutils import escape as xml_escape

import botocore.session
from botocore import xform_name
from moto.moto_api._internal import mock_random
from moto.stepfunctions.parser.utils import snake_to_camel_case

from sfn_idempotency.local.compat import json_paths
from sfn_idempotency.local.compat.answers import epoch_ms, read_json_text
from sfn_idempotency.local.compat.patching import Patch, keep

PARAMS_KEY = "sfn_local_api_params"  # a Task call's parameters, in its request context
_SERVICE_PACKAGE = "moto.stepfunctions.parser.asl.component.state.exec.state_task.service"
_SFN_TASK_MODULE = f"{_SERVICE_PACKAGE}.state_task_service_sfn"
_BATCH_TASK = f"{_SERVICE_PACKAGE}.state_task_service_batch:StateTaskServiceBatch"
_AWS_SDK_TASK = f"{_SERVICE_PACKAGE}.state_task_service_aws_sdk:StateTaskServiceAwsSdk"
_LAMBDA_EVAL_UTILS = "moto.stepfunctions.parser.asl.component.state.exec.state_task.lambda_eval_utils"
_FUNCTION_ERROR = f"{_LAMBDA_EVAL_UTILS}:LambdaFunctionErrorException"
# Capacity DynamoDB reports only when the request asks for it (ReturnConsumedCapacity).
_CAPACITY_ASKED = ("TOTAL", "INDEXES")


def _payload_read_as_json_text(original: Callable[[IO[bytes]], Any]) -> Callable[[IO[bytes]], Any]:
    """Fix 148: a function's answer is its value when it is JSON text as Step Functions reads JSON,
    and otherwise the text itself, a string (moto read it with Python's json module, so a Python
    function's ``NaN``, which Lambda's runtime writes, became a value no JSON text can hold)."""

    def from_payload(payload_streaming_body: IO[bytes]) -> Any:
        text = payload_streaming_body.read().decode("utf-8")
        try:
            return read_json_text(text)
        except ValueError:  # json.JSONDecodeError included
            return text

    return from_payload


def _operation_shapes(task: Any, action: str | None) -> Any:
    operation = snake_to_camel_case(action or task._get_boto_service_action())
    return _service_model(task._get_boto_service_name()).operation_model(operation)


def _pascal_case_request(original: Callable[..., None]) -> Callable[..., None]:
    def normalise_parameters(
        self: Any,
        parameters: dict[str, Any],
        boto_service_name: str | None = None,
        service_action_name: str | None = None,
    ) -> None:
        original(self, parameters, boto_service_name, service_action_name)
        self._to_boto_request(parameters, _operation_shapes(self, service_action_name).input_shape)

    return normalise_parameters


def _pascal_case_response(original: Callable[..., None]) -> Callable[..., None]:
    def normalise_response(
        self: Any, response: Any, boto_service_name: str | None = None, service_action_name: str | None = None
    ) -> None:
        original(self, response, boto_service_name, service_action_name)
        self._from_boto_response(response, _operation_shapes(self, service_action_name).output_shape)
        if isinstance(response, dict):
            # Step Functions renders the API's timestamps as epoch milliseconds in task results.
            for key, value in response.items():
                if isinstance(value, datetime.datetime):
                    response[key] = epoch_ms(value)

    return normalise_response


def java_sdk_service_name(boto_service: str) -> str:
    """The service as Step Functions names it in aws-sdk errors: the class prefix of the AWS SDK
    for Java v2 it runs on (``S3``, ``Sfn``, ``DynamoDb``, ``SecretsManager``, ``Sqs``...), made
    from the service id: words, and acronyms inside them, capitalized (recorded: S3, Sfn,
    SecretsManager, DynamoDb)."""
    service_id = _service_model(boto_service).service_id
    words = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]*[a-z0-9]+|[A-Z0-9]+", str(service_id))
    return "".join(word[:1].upper() + word[1:].lower() for word in words)


@functools.cache
def _service_model(boto_service: str) -> Any:
    return botocore.session.get_session().get_service_model(boto_service)


@functools.cache
def operations_by_snake_name(boto_service: str) -> dict[str, Any]:
    model = _service_model(boto_service)
    return {xform_name(name): model.operation_model(name) for name in model.operation_names}


def _java_sdk_error_names(_original: Any) -> Any:
    """moto named every service but DynamoDB and Step Functions by its lower-case API name
    (``s3.NoSuchKeyException``), which no Catch written for AWS (``S3.NoSuchKeyException``) matches."""

    def normalise_service_error_name(service_name: str) -> str:
        try:
            return java_sdk_service_name(boto_name_of(service_name))
        except Exception:  # a service botocore does not know: its name as given
            return service_name

    return staticmethod(normalise_service_error_name)


def boto_name_of(sfn_service_name: str) -> str:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service import (
        StateTaskService,
    )

    overrides: dict[str, str] = StateTaskService._SERVICE_NAME_SFN_TO_BOTO_OVERRIDES
    return overrides.get(sfn_service_name, sfn_service_name)


def _aws_sdk_request(_original: Callable[..., None]) -> Callable[..., None]:
    """An aws-sdk Task's parameters are the API's members, spelled with a capital (``StateMachineArn``
    for the API's ``stateMachineArn``); a value the API takes as a blob (an S3 object's ``Body``) is
    sent as its JSON text, strings included (recorded: ``"text data"`` is stored with its quotes)."""

    def normalise_parameters(
        self: Any,
        parameters: dict[str, Any],
        boto_service_name: str | None = None,
        service_action_name: str | None = None,
    ) -> None:
        operation = _aws_sdk_operation(self)
        if operation is not None and operation.input_shape is not None:
            self._to_boto_request(parameters, operation.input_shape)
            _typed_as_the_sdk_sends_it(operation.name, parameters)

    return normalise_parameters


# Fix 76: what the SDK for Java sends for an object body given as text (RequestBody.fromString).
_TEXT_BODY_TYPE = "text/plain; charset=UTF-8"


def _typed_as_the_sdk_sends_it(operation: str, parameters: dict[str, Any]) -> None:
    """An aws-sdk S3 PutObject whose Body is given in the state (text) and no ContentType stores
    the object as ``text/plain; charset=UTF-8`` (recorded for text, objects, lists, booleans and
    numbers; moto stored binary/octet-stream)."""
    if operation == "PutObject" and "Body" in parameters and "ContentType" not in parameters:
        parameters["ContentType"] = _TEXT_BODY_TYPE


def _aws_sdk_response(_original: Callable[..., None]) -> Callable[..., None]:
    """An aws-sdk Task's result: the API's answer with every member spelled with a capital, and a
    streamed body (S3 GetObject) as its text, as the SDK for Java that Step Functions runs on
    renders it (moto left the stream object in the result, and camelCase members as they were)."""

    def normalise_response(
        self: Any, response: Any, boto_service_name: str | None = None, service_action_name: str | None = None
    ) -> None:
        operation = _aws_sdk_operation(self)
        if operation is not None and operation.output_shape is not None:
            _capitalized(response, operation.output_shape)

    return normalise_response


def _map_values_as_members(original: Callable[[Any, Any, Any], Any]) -> Callable[[Any, Any, Any], Any]:
    """Fix 138: the values of a map the API takes (FIS's ``Actions`` and ``Targets``, keyed by the
    user's names) are the API's structures, their members spelled with a capital too. moto went into
    structures and lists only, so a map's ``ActionId`` reached botocore as is: a KeyError's text,
    ``'ActionId'``, as the Task's cause (an AWS sample's ``fis:createExperimentTemplate``)."""
    from botocore.model import ListShape, MapShape, StructureShape

    containers = (ListShape, MapShape, StructureShape)  # a map of scalars goes to botocore as it was

    def to_boto_request_value(self: Any, request_value: Any, value_shape: Any) -> Any:
        if (
            isinstance(value_shape, MapShape)
            and isinstance(value_shape.value, containers)
            and isinstance(request_value, dict)
        ):
            for key, item in request_value.items():
                request_value[key] = to_boto_request_value(self, item, value_shape.value)
            return request_value
        return original(self, request_value, value_shape)

    return to_boto_request_value


def _aws_sdk_operation(task: Any) -> Any:
    try:
        return operations_by_snake_name(task._get_boto_service_name())[task._get_boto_service_action()]
    except Exception:  # an operation botocore does not model: the call itself will fail, named
        return None


def _capitalized(value: Any, shape: Any) -> None:
    """Rename the members of ``value`` (a parsed answer of ``shape``) in place, recursively; a map's
    keys are its data, kept, and its values renamed (fix 138)."""
    from botocore.response import StreamingBody

    if isinstance(value, list) and shape.type_name == "list":
        for item in value:
            _capitalized(item, shape.member)
        return
    if isinstance(value, dict) and shape.type_name == "map":
        for item in value.values():
            _capitalized(item, shape.value)
        return
    if not isinstance(value, dict) or shape.type_name != "structure":
        return
    for name in list(value):
        member = shape.members.get(name)
        item = value.pop(name)
        if isinstance(item, StreamingBody):
            item = item.read().decode("utf-8", errors="replace")
        if member is not None:
            _capitalized(item, member)
        value[name[:1].upper() + name[1:]] = item


def remember_params(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    """``before-parameter-build``: a Task call's parameters, kept in its request context for what
    reads them later in the call (fix 25 below, the engine's call hooks)."""
    context[PARAMS_KEY] = dict(params)


def drop_unasked_capacity(parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    """``after-call.dynamodb`` (fix 25): DynamoDB reports ConsumedCapacity only when the request
    asks for it; moto always did, so every DynamoDB Task result carried it (recorded: absent)."""
    asked = context.get(PARAMS_KEY, {}).get("ReturnConsumedCapacity")
    if isinstance(parsed, dict) and asked not in _CAPACITY_ASKED:
        parsed.pop("ConsumedCapacity", None)


def s3_extended_request_id(parsed: dict[str, Any], **_: Any) -> None:
    """``after-call.s3`` (fix 25): every S3 answer has an extended request id, which an aws-sdk
    Task's error Cause quotes (``Extended Request ID: …``, recorded); moto's errors had none."""
    metadata = parsed.setdefault("ResponseMetadata", {})
    if not metadata.get("HostId"):
        sent = metadata.get("HTTPHeaders", {}).get("x-amz-id-2")
        metadata["HostId"] = sent or base64.b64encode(os.urandom(48)).decode()


_ATTEMPTS = "(SDK Attempt Count: 1)"  # the engine's calls are not retried by the SDK


def _attempts_counted(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 77: an aws-sdk Task's error Cause ends as the SDK for Java's message does since it
    counts its attempts, "(Service: Sfn, Status Code: 400, Request ID: …) (SDK Attempt Count: 1)"
    (recorded November 2025; the recordings before it, without the count, are superseded)."""

    def from_error(self: Any, env: Any, ex: Exception) -> Any:
        failure = original(self, env, ex)
        details = (failure.event_details or {}).get("taskFailedEventDetails") or {}
        cause = details.get("cause")
        if isinstance(cause, str) and "(Service: " in cause and not cause.endswith(_ATTEMPTS):
            details["cause"] = f"{cause} {_ATTEMPTS}"
        return failure

    return from_error


def _failed_entries_as_json_text(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 55: a PutEvents Task whose answer has failed entries fails with EventBridge.FailedEntry
    and the answer as JSON text for its Cause (recorded: test_put_events_no_source); moto put the
    answer itself there, which the history wrote as Python's repr."""
    from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

    def from_error(self: Any, env: Any, ex: Exception) -> Any:
        failure = original(self, env, ex)
        details = (failure.event_details or {}).get("taskFailedEventDetails") or {}
        if not isinstance(details.get("cause", ""), str):
            details["cause"] = to_json_str(details["cause"])
        return failure

    return from_error


# -- fix 70: an optimized integration answers with the SDK's HTTP metadata -------------------
# Step Functions' optimized integrations (not aws-sdk) add the SDK for Java's response metadata to
# a request-response Task's result: SdkHttpMetadata (the answer's headers, once as lists and once
# as values, and its status) and SdkResponseMetadata (its request id). The headers each service
# sends, as recorded (the newest recording where two differ); a value of None is filled in below.
_REQUEST_ID, _LENGTH, _DATE, _CRC32, _TRACE_ID = (
    "x-amzn-RequestId",
    "Content-Length",
    "Date",
    "x-amz-crc32",
    "X-Amzn-Trace-Id",
)
_JSON_1_0 = "application/x-amz-json-1.0"
_RECORDED_HEADERS: dict[str, tuple[tuple[str, str | None], ...]] = {
    "dynamodb": (
        ("Server", "Server"),
        ("Connection", "keep-alive"),
        (_REQUEST_ID, None),
        (_CRC32, None),
        (_LENGTH, None),
        (_DATE, None),
        ("Content-Type", _JSON_1_0),
    ),
    "lambda": (
        ("X-Amz-Executed-Version", None),
        ("x-amzn-Remapped-Content-Length", "0"),
        ("Connection", "keep-alive"),
        (_REQUEST_ID, None),
        (_LENGTH, None),
        (_DATE, None),
        (_TRACE_ID, None),
        ("Content-Type", "application/json"),
    ),
    "sqs": (
        (_REQUEST_ID, None),
        ("connection", "keep-alive"),
        (_LENGTH, None),
        (_DATE, None),
        ("Content-Type", _JSON_1_0),
    ),
    "sns": (
        (_REQUEST_ID, None),
        ("connection", "keep-alive"),
        (_LENGTH, None),
        (_DATE, None),
        ("Content-Type", "text/xml"),
    ),
    "states": (
        (_REQUEST_ID, None),
        ("connection", "keep-alive"),
        (_LENGTH, None),
        (_DATE, None),
        ("Content-Type", _JSON_1_0),
    ),
    "ecs": (
        (_REQUEST_ID, None),
        (_LENGTH, None),
        (_DATE, None),
        ("Content-Type", "application/x-amz-json-1.1"),
    ),
}
# Where one operation's answer names a header otherwise (recorded: DynamoDB's GetItem, November 2025).
_RECORDED_RENAMES = {("dynamodb", "GetItem"): {_REQUEST_ID: "x-amzn-requestid"}}
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_OPTIMIZED_TASKS = {
    "dynamodb": "state_task_service_dynamodb:StateTaskServiceDynamoDB",
    "lambda": "state_task_service_lambda:StateTaskServiceLambda",
    "sqs": "state_task_service_sqs:StateTaskServiceSqs",
    "sns": "state_task_service_sns:StateTaskServiceSns",
    "states": "state_task_service_sfn:StateTaskServiceSfn",
    "ecs": "state_task_service_ecs:StateTaskServiceEcs",
}


@dataclass(frozen=True)
class WireAnswer:
    """What the SDK saw of the last answer this thread's Task call got. Its body, as AWS would have
    written it, is made only when a Task's result carries its length (an aws-sdk Task's, a
    Lambda's or an in-process answer's never needs it)."""

    model: Any
    status: int
    request_id: str
    members: dict[str, Any]  # the answer as botocore parsed it, before the Task changes it
    length_as_sent: int  # the body's length as it came (Lambda's payload, an injected fault)

    @property
    def operation(self) -> str:
        return str(self.model.name)

    @functools.cached_property
    def body(self) -> bytes | None:
        """A JSON service's body, compact, timestamps in epoch seconds; a query service's flat
        answer in AWS's XML layout; None for any other, whose length is the one sent."""
        protocol = self.model.service_model.protocol
        if protocol == "json":
            return json_protocol_body(self.members).encode()
        if protocol == "query":
            document = _query_document(self.model, self.members, self.request_id)
            return document.encode() if document is not None else None
        return None

    @property
    def body_length(self) -> int:
        return len(self.body) if self.body is not None else self.length_as_sent

    @property
    def body_crc32(self) -> int:
        return zlib.crc32(self.body) if self.body is not None else 0


_last_answer = threading.local()


def remember_wire_answer(http_response: Any, parsed: Any, model: Any, **_: Any) -> None:
    """``after-call`` (fix 70): the answer's status, request id and members, kept for the Task that
    made the call (a Task's call and its result share a thread)."""
    if not isinstance(parsed, dict):
        return
    _keep_function_error_text(parsed)
    metadata = parsed.get("ResponseMetadata") or {}
    request_id = str(metadata.get("RequestId") or uuid.uuid4())
    if model.service_model.service_name != "dynamodb" and not _UUID.fullmatch(request_id):
        request_id = str(uuid.uuid4())  # every service here but DynamoDB answers UUIDs (recorded)
    # An answer given in process (calls.Reply) says its length; one without a body (an injected
    # fault) has none.
    sent = (metadata.get("HTTPHeaders") or {}).get("content-length")
    if sent is not None:
        length = int(sent)
    else:
        length = len(http_response.content) if http_response.raw is not None else 0
    _last_answer.value = WireAnswer(
        model=model,
        status=int(metadata.get("HTTPStatusCode") or http_response.status_code),
        request_id=request_id,
        members={name: value for name, value in parsed.items() if name != "ResponseMetadata"},
        length_as_sent=length,
    )


# -- fix 73: a Lambda function's error is its Cause as the function wrote it ------------------------
def _keep_function_error_text(parsed: dict[str, Any]) -> None:
    """A failed Invoke's payload, as its runtime wrote it, kept for the error the Task raises."""
    from botocore.response import StreamingBody

    payload = parsed.get("Payload")
    _last_answer.error_text = None
    if parsed.get("FunctionError") and isinstance(payload, StreamingBody):
        data = payload.read()
        parsed["Payload"] = StreamingBody(io.BytesIO(data), len(data))
        _last_answer.error_text = data.decode("utf-8", errors="replace")


def _error_as_written(original: Callable[..., None]) -> Callable[..., None]:
    """moto wrote a failed function's payload back as compact JSON for the error's Cause. So does
    AWS for ``lambda:invoke``; for a Task whose Resource is the function itself, AWS's Cause is the
    payload as the function's runtime wrote it (both recorded: the Python runtime's
    ``{"errorMessage": "…", "errorType": "…", …}`` keeps its spaces there, test_task_lambda, and
    loses them through ``lambda:invoke``, test_task_service_lambda)."""

    def init(self: Any, function_error: str | None, payload: str) -> None:
        written = getattr(_last_answer, "error_text", None)
        if (
            getattr(_last_answer, "function_resource", False)
            and written is not None
            and _same_json(written, payload)
        ):
            payload = written
        original(self, function_error, payload)

    return init


def _function_resource(original: Callable[..., None]) -> Callable[..., None]:
    """``StateTaskLambda._eval_execution``: a Task whose Resource is the function itself."""

    def eval_execution(self: Any, env: Any) -> None:
        _last_answer.function_resource = True
        try:
            original(self, env)
        finally:
            _last_answer.function_resource = False

    return eval_execution


def _same_json(text: str, other: str) -> bool:
    try:
        return bool(json.loads(text) == json.loads(other))
    except ValueError:
        return text == other


def _query_document(model: Any, parsed: dict[str, Any], request_id: str) -> str | None:
    """A query service's XML answer as AWS lays it out (SNS's Publish: 294 bytes for a plain
    topic, 352 with a SequenceNumber, recorded), for an answer of plain text members; None for
    any other, whose length is then moto's."""
    members = [(name, parsed[name]) for name in model.output_shape.members if name in parsed]
    if not all(isinstance(value, str | int) and not isinstance(value, bool) for _, value in members):
        return None
    namespace = model.service_model.metadata.get("xmlNamespace", "")
    lines = [
        f'<{model.name}Response xmlns="{namespace}">',
        f"  <{model.name}Result>",
        *(f"    <{name}>{xml_escape(str(value))}</{name}>" for name, value in members),
        f"  </{model.name}Result>",
        "  <ResponseMetadata>",
        f"    <RequestId>{request_id}</RequestId>",
        "  </ResponseMetadata>",
        f"</{model.name}Response>",
    ]
    return "\n".join(lines) + "\n"


def json_protocol_body(parsed: dict[str, Any]) -> str:
    """A JSON-protocol service's answer as it writes it on the wire, from what botocore parsed:
    compact, timestamps in epoch seconds, blobs in base64, no response metadata."""
    members = {name: value for name, value in parsed.items() if name != "ResponseMetadata"}
    return json.dumps(members, separators=(",", ":"), default=_wire_value)


def _wire_value(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return value.timestamp()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    raise TypeError(f"{type(value).__name__} is not on the wire")


def sdk_metadata(service: str, answer: WireAnswer, result: dict[str, Any]) -> dict[str, Any]:
    """``SdkHttpMetadata`` and ``SdkResponseMetadata`` as the recordings show them."""
    # The trace id is drawn as moto draws its identifiers: a seeded moto repeats it, and no draw gives
    # up the interpreter's lock (os.urandom does, and each such draw was a thread switch under load).
    filled = {
        _REQUEST_ID: answer.request_id,
        _LENGTH: str(answer.body_length),
        _DATE: email.utils.formatdate(usegmt=True),
        _CRC32: str(answer.body_crc32),
        _TRACE_ID: f"Root=1-{mock_random.getrandbits(32):08x}-{mock_random.getrandbits(96):024x}",
        "X-Amz-Executed-Version": str(result.get("ExecutedVersion", "$LATEST")),
    }
    renamed = _RECORDED_RENAMES.get((service, answer.operation), {})
    headers = {
        renamed.get(name, name): value if value is not None else filled[name]
        for name, value in _RECORDED_HEADERS[service]
    }
    if "LogResult" in result:
        headers["X-Amz-Log-Result"] = str(result["LogResult"])
    return {
        "SdkHttpMetadata": {
            "AllHttpHeaders": {name: [value] for name, value in headers.items()},
            "HttpHeaders": headers,
            "HttpStatusCode": answer.status,
        },
        "SdkResponseMetadata": {"RequestId": answer.request_id},
    }


def _with_sdk_metadata(service: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    def build(original: Callable[..., None]) -> Callable[..., None]:
        def eval_service_task(self: Any, env: Any, *args: Any, **kwargs: Any) -> None:
            _last_answer.value = None
            original(self, env, *args, **kwargs)
            answer: WireAnswer | None = _last_answer.value
            result = env.stack[-1] if env.stack else None
            # The call's own answer (a .sync or callback Task's TaskSubmitted event shows it, its
            # result is what it waited for), never a mocked one (it answers what its mock says).
            if answer is not None and isinstance(result, dict) and not env.is_mocked_mode():
                result.update(sdk_metadata(service, answer, result))

        return eval_service_task

    return build


# -- fix 71: a Task whose answer its ResultSelector cannot select fails as the state, not the call --
def _state_failures_kept(original: Callable[..., Any]) -> Callable[..., Any]:
    """A service Task named every exception after its service: a ResultSelector path missing from
    a DynamoDB answer became ``DynamoDB.AmazonDynamoDBException`` after TaskSucceeded. On AWS it is
    the state's own ``States.Runtime`` (not caught by ``States.ALL``), with the cause every other
    state's missing path has ("The JSONPath '…' specified for the field '…' could not be found in
    the input '…'", moto's own words for it); an error the state raised itself keeps its name."""
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
    from moto.stepfunctions.parser.asl.utils.encoding import to_json_str
    from moto.stepfunctions.parser.asl.utils.json_path import NoSuchJsonPathError

    runtime = StatesErrorNameType.StatesRuntime

    def from_error(self: Any, env: Any, ex: Exception) -> Any:
        if isinstance(ex, FailureEventException):
            return ex.failure_event
        if isinstance(ex, UnfitParameters):
            cause = str(ex)
        elif isinstance(ex, NoSuchJsonPathError):
            cause = (
                f"The JSONPath '{ex.json_path}' specified for the field "
                f"'{getattr(ex, json_paths.FIELD_NAME, env.next_field_name)}' "
                f"could not be found in the input '{to_json_str(ex.data)}'"
            )
        else:
            return original(self, env, ex)
        details = TaskFailedEventDetails(error=runtime.to_name(), cause=cause)
        return FailureEvent(
            env=env,
            error_name=StatesErrorName(typ=runtime),
            event_type=HistoryEventType.TaskFailed,
            event_details=EventDetails(taskFailedEventDetails=details),
        )

    return from_error


# -- fix 99: parameters that do not fit DynamoDB's request fail as the state, in AWS's words -------
# What the SDK for Java cannot build a request from: a scalar where the API has a structure, list or
# map. A scalar of another scalar type ("BOOL": "false") it converts, as Jackson does.
_CONTAINER_TYPES = frozenset({"<class 'dict'>", "<class 'list'>"})


def _unfit_field(service: str, operation: str, parameters: dict[str, Any]) -> str | None:
    """The first field of ``parameters`` whose value cannot be the member the API declares."""
    from botocore.validate import ParamValidator

    shape = _service_model(service).operation_model(operation).input_shape
    if not _scalar_for_a_container(parameters, shape):
        return None  # nothing botocore's whole validation (a tenth of a write's time) would find
    report = ParamValidator().validate(parameters, shape)
    for kind, name, details in report._errors:
        if kind == "invalid type" and set(details.get("valid_types", ())) <= _CONTAINER_TYPES:
            return str(name).rsplit(".", 1)[-1]
    return None


def _scalar_for_a_container(value: Any, shape: Any) -> bool:
    """Whether botocore's validation finds a structure or map given something other than a dict
    (the errors ``_unfit_field`` reads), walking where it walks: a structure's known members, a
    map's values, a list's items; a document, and what it takes for a list, are not such errors."""
    kind = shape.type_name
    if value is None:
        return False  # an absent member: the SDK for Java sends none, and the service judges that
    if kind == "structure":
        if shape.is_document_type:
            return False
        if not isinstance(value, dict):
            return True
        members = shape.members
        return any(
            _scalar_for_a_container(item, members[name]) for name, item in value.items() if name in members
        )
    if kind == "map":
        if not isinstance(value, dict):
            return True
        return any(_scalar_for_a_container(item, shape.value) for item in value.values())
    if kind == "list" and isinstance(value, list | tuple):
        return any(_scalar_for_a_container(item, shape.member) for item in value)
    return False


class UnfitParameters(Exception):
    """A Task's parameters that the SDK cannot build its request from (fix 99); fix 71's error
    handler makes it the state's ``States.Runtime``."""

    def __init__(self, parameters: dict[str, Any], field: str) -> None:
        compact = json.dumps(parameters, separators=(",", ":"), ensure_ascii=False)
        super().__init__(
            f"The Parameters '{compact}' could not be used to start the Task: "
            f"[The value of the field '{field}' has an invalid format]"
        )


def _parameters_checked_before_the_call(original: Callable[..., None]) -> Callable[..., None]:
    """moto handed botocore a request it could not serialize: the cause was Python's
    ("'str' object has no attribute 'items'", an Item attribute written as a plain string). AWS
    fails the state: "The Parameters '…' could not be used to start the Task: [The value of the
    field '…' has an invalid format]" (``States.Runtime``, recorded for API Gateway's Headers)."""

    def eval_service_task(
        self: Any,
        env: Any,
        resource_runtime_part: Any,
        normalised_parameters: dict[str, Any],
        *args: Any,
        **kwargs: Any,
    ) -> None:
        operation = snake_to_camel_case(self._get_boto_service_action())
        field = _unfit_field(self._get_boto_service_name(), operation, normalised_parameters)
        if field is not None:
            raise UnfitParameters(normalised_parameters, field)
        # A member given null is one the SDK for Java leaves out of the request: the service then
        # refuses a required one in its own words (recorded: "Value null at 'item' failed to satisfy
        # constraint: Member must not be null")
        present = {name: value for name, value in normalised_parameters.items() if value is not None}
        original(self, env, resource_runtime_part, present, *args, **kwargs)

    return eval_service_task


# -- fix 102: a service's refusal named as the SDK for Java names it ------------------------------
@dataclass(frozen=True)
class SdkNaming:
    """How Step Functions names an optimized integration's refusals: ``<prefix>.<exception>``, the
    SDK for Java's exception class for the error code when the service models it, else the
    service's ``generic`` exception; the cause says the code ("(Service: <java>; Status Code: …;
    Error Code: …; Request ID: …; Proxy: null)")."""

    prefix: str
    java: str
    generic: str


# Recorded: DynamoDB.AmazonDynamoDBException (ValidationException), SQS.AmazonSQSException
# (MissingParameter), SNS.InvalidParameterException, Lambda.ResourceNotFoundException,
# StepFunctions.StateMachineDoesNotExistException; the other generic classes are the SDK's names.
SDK_NAMING = {
    "dynamodb": SdkNaming("DynamoDB", "AmazonDynamoDBv2", "AmazonDynamoDBException"),
    "sqs": SdkNaming("SQS", "AmazonSQS", "AmazonSQSException"),
    "sns": SdkNaming("SNS", "AmazonSNS", "AmazonSNSException"),
    "lambda": SdkNaming("Lambda", "AWSLambda", "AWSLambdaException"),
    "stepfunctions": SdkNaming("StepFunctions", "AWSStepFunctions", "AWSStepFunctionsException"),
    "events": SdkNaming("EventBridge", "AmazonEventBridge", "AmazonEventBridgeException"),
}


@functools.cache
def modelled_exception(boto_service: str, code: str) -> str | None:
    """The SDK's exception class for ``code``, when the service's model has the error: its shape's
    name, with the ``Exception`` the SDK for Java adds to a name without it."""
    for shape in _service_model(boto_service).error_shapes:
        if code in (shape.name, shape.error_code):
            return shape.name if shape.name.endswith("Exception") else f"{shape.name}Exception"
    return None


def _named_as_the_sdk_names_them(service: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def build(original: Callable[..., Any]) -> Callable[..., Any]:
        from botocore.exceptions import ClientError
        from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
        from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import (
            CustomErrorName,
        )
        from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEvent
        from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

        naming = SDK_NAMING[service]

        def from_error(self: Any, env: Any, ex: Exception) -> Any:
            if not isinstance(ex, ClientError):
                return original(self, env, ex)
            error = ex.response["Error"]
            code = str(error.get("Code", ""))
            metadata = ex.response.get("ResponseMetadata", {})
            # A JSON service answering in its query protocol's codes (SQS) says its shape apart.
            shape = str(error.get("QueryErrorCode") or code)
            name = f"{naming.prefix}.{modelled_exception(service, shape) or naming.generic}"
            cause = (
                f"{error.get('Message', '')} (Service: {naming.java}; "
                f"Status Code: {metadata.get('HTTPStatusCode', 400)}; Error Code: {code}; "
                f"Request ID: {metadata.get('RequestId', '')}; Proxy: null)"
            )
            details = TaskFailedEventDetails(
                error=name,
                cause=cause,
                resource=self._get_sfn_resource(),
                resourceType=self._get_sfn_resource_type(),
            )
            return FailureEvent(
                env=env,
                error_name=CustomErrorName(name),
                event_type=HistoryEventType.TaskFailed,
                event_details=EventDetails(taskFailedEventDetails=details),
            )

        return from_error

    return build


_SDK_NAMED_TASKS = {
    "dynamodb": "state_task_service_dynamodb:StateTaskServiceDynamoDB",
    "sqs": "state_task_service_sqs:StateTaskServiceSqs",
    "sns": "state_task_service_sns:StateTaskServiceSns",
    "lambda": "state_task_service_lambda:StateTaskServiceLambda",
    "stepfunctions": "state_task_service_sfn:StateTaskServiceSfn",
    "events": "state_task_service_events:StateTaskServiceEvents",
}

_SERVICE_ERRORS = (
    "state_task_service_dynamodb:StateTaskServiceDynamoDB",
    "state_task_service_lambda:StateTaskServiceLambda",
    "state_task_service_sqs:StateTaskServiceSqs",
    "state_task_service_sns:StateTaskServiceSns",
    "state_task_service_sfn:StateTaskServiceSfn",
    "state_task_service_events:StateTaskServiceEvents",
    "state_task_service_glue:StateTaskServiceGlue",
    "state_task_service_batch:StateTaskServiceBatch",
    "state_task_service_api_gateway:StateTaskServiceApiGateway",
    "state_task_service_aws_sdk:StateTaskServiceAwsSdk",
)


PATCHES: tuple[Patch, ...] = (
    Patch(6, f"{_SFN_TASK_MODULE}:StateTaskServiceSfn", "_normalise_parameters", _pascal_case_request),
    Patch(
        55,
        f"{_SERVICE_PACKAGE}.state_task_service_events:StateTaskServiceEvents",
        "_from_error",
        _failed_entries_as_json_text,
    ),
    Patch(6, f"{_SFN_TASK_MODULE}:StateTaskServiceSfn", "_normalise_response", _pascal_case_response),
    Patch(6, f"{_SFN_TASK_MODULE}:StateTaskServiceSfn", "_to_boto_request", keep),
    Patch(6, f"{_SFN_TASK_MODULE}:StateTaskServiceSfn", "_from_boto_response", keep),
    Patch(95, _BATCH_TASK, "_normalise_parameters", _pascal_case_request),
    Patch(95, _BATCH_TASK, "_normalise_response", _pascal_case_response),
    Patch(23, _AWS_SDK_TASK, "_normalise_service_error_name", _java_sdk_error_names),
    Patch(24, _AWS_SDK_TASK, "_normalise_parameters", _aws_sdk_request),
    Patch(24, _AWS_SDK_TASK, "_normalise_response", _aws_sdk_response),
    Patch(24, _AWS_SDK_TASK, "_to_boto_request", keep),
    Patch(
        138,
        f"{_SERVICE_PACKAGE}.state_task_service:StateTaskService",
        "_to_boto_request_value",
        _map_values_as_members,
    ),
    Patch(
        24,
        f"{_SERVICE_PACKAGE}.state_task_service:StateTaskService",
        "_SERVICE_NAME_SFN_TO_BOTO_OVERRIDES",
        keep,
    ),
    # before fix 70, which wraps what it puts in place
    Patch(
        99,
        f"{_SERVICE_PACKAGE}.{_OPTIMIZED_TASKS['dynamodb']}",
        "_eval_service_task",
        _parameters_checked_before_the_call,
    ),
    *(
        Patch(70, f"{_SERVICE_PACKAGE}.{task}", "_eval_service_task", _with_sdk_metadata(service))
        for service, task in _OPTIMIZED_TASKS.items()
    ),
    # before fix 71, which wraps what it puts in place
    *(
        Patch(102, f"{_SERVICE_PACKAGE}.{task}", "_from_error", _named_as_the_sdk_names_them(service))
        for service, task in _SDK_NAMED_TASKS.items()
    ),
    *(
        Patch(71, f"{_SERVICE_PACKAGE}.{task}", "_from_error", _state_failures_kept)
        for task in _SERVICE_ERRORS
    ),
    Patch(73, _FUNCTION_ERROR, "__init__", _error_as_written),
    Patch(148, _LAMBDA_EVAL_UTILS, "_from_payload", _payload_read_as_json_text),
    Patch(
        73,
        "moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task_lambda:StateTaskLambda",
        "_eval_execution",
        _function_resource,
    ),
    Patch(77, _AWS_SDK_TASK, "_from_error", _attempts_counted),
)
