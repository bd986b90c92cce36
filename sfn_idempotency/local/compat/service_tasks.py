"""Tasks of services moto's interpreter half-ran: API Gateway's invoke and the ``.sync`` jobs of
services it has no integration for, and Bedrock's InvokeModel (fixes 93, 96, 108 and 136, ledger L46).

93. An ``apigateway:invoke`` Task reaches the engine's own REST API stage, answered as ``serve``
    answers it, never the network (moto called ``requests`` with the endpoint as a URL); every
    documented parameter reaches it (moto kept ``ApiEndpoint`` and ``Method``, and passed its
    credentials by a name its own signature lacked, and built its failure without the environment
    every failure event needs: a TypeError at every call).
96. Athena ``startQueryExecution.sync`` and SageMaker's training, transform and processing jobs
    ``.sync`` wait for their job as AWS's integrations do; any other ``.sync`` moto has no
    integration for fails as ``States.Runtime`` naming it (moto answered a RuntimeError's text).
108. ``bedrock:invokeModel`` calls Bedrock Runtime's InvokeModel (moto's), its ``Body`` sent as JSON
    text and its answer's read back as JSON (``{"Body": …, "ContentType": …}``), as the
    integration's docs show; moto called the Bedrock control plane's client, which has no such
    method, and failed with an AttributeError's text. An action of such a service that the SDK
    does not have fails as ``States.Runtime`` naming it.
136. An ``apigateway:invoke`` Task whose ``Method`` sends no body (GET, DELETE, HEAD, OPTIONS) and
     that has a ``RequestBody`` makes its request without the body: an AWS sample invokes its API
     with GET and ``"RequestBody.$": "$"``, and its guide describes the call answering. moto raised
     a bare ValueError, and the Task failed as ``ApiGateway.ValueError``, a Python name, with no
     cause.
"""

from __future__ import annotations

import functools
import json
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sfn_idempotency.local.compat.patching import Patch

_SERVICE_PACKAGE = "moto.stepfunctions.parser.asl.component.state.exec.state_task.service"
_API_GATEWAY_TASK_MODULE = f"{_SERVICE_PACKAGE}.state_task_service_api_gateway"
_API_GATEWAY_TASK = f"{_API_GATEWAY_TASK_MODULE}:StateTaskServiceApiGateway"


# -- fix 93: apigateway:invoke reaches the engine's own REST APIs, never the network --------------
# ApiEndpoint is "<api id>.execute-api.<region>.amazonaws.com" (AWS's docs for the integration).
_EXECUTE_API = re.compile(r"^(?:https?://)?([a-z0-9]+)\.execute-api\.[a-z0-9-]+\.amazonaws\.com/?$")
# moto's path below the stage: LocalStack's invoke URL, not API Gateway's.
_USER_REQUEST = "_user_request_"
# What API Gateway answers on its domain for an API or stage that does not exist.
_FORBIDDEN = (403, {"Content-Type": "application/json"}, b'{"message":"Forbidden"}')


@dataclass(frozen=True)
class GatewayRequest:
    """One apigateway:invoke call, as the stage it names receives it."""

    rest_api_id: str
    stage: str
    verb: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes


GatewayAnswer = tuple[int, dict[str, str], bytes]


class ApiGatewayInvocations:
    """How apigateway:invoke Tasks reach the engine's REST APIs: the running cloud sets ``answer``;
    None answers as a missing API (the cloud stopped, or none started)."""

    def __init__(self) -> None:
        self.answer: Callable[[GatewayRequest], GatewayAnswer | None] | None = None

    def request(self, verb: str, url: str, *, headers: dict[str, str] | None = None, **body: Any) -> Any:
        """moto's call, ``<ApiEndpoint>/<Stage>/_user_request_/<Path>?<query>``, as a requests
        Response from the engine's gateway."""
        import requests

        target, _, query = url.partition("?")
        endpoint, _, below = target.partition("/")
        stage, _, path = below.partition("/")
        path = path.removeprefix(_USER_REQUEST).removesuffix("/")  # moto joins the query on with a "/"
        found = _EXECUTE_API.match(endpoint)
        payload = body.get("json")
        request_body = b"" if payload is None else json.dumps(payload).encode()
        answered = None
        if found is not None and self.answer is not None:
            request = GatewayRequest(
                found.group(1),
                stage,
                verb,
                "/" + path.lstrip("/"),
                urllib.parse.parse_qs(query, keep_blank_values=True),
                dict(headers or {}),
                request_body,
            )
            answered = self.answer(request)
        status, answer_headers, answer_body = answered or _FORBIDDEN
        response = requests.Response()
        response.status_code = status
        response._content = answer_body
        response.headers.update({**answer_headers, "Content-Length": str(len(answer_body))})
        response.url = url
        return response

    # moto calls ``getattr(requests, method.lower())(url, headers=…, json=…)``.
    get = functools.partialmethod(request, "GET")
    post = functools.partialmethod(request, "POST")
    put = functools.partialmethod(request, "PUT")
    patch = functools.partialmethod(request, "PATCH")
    delete = functools.partialmethod(request, "DELETE")
    head = functools.partialmethod(request, "HEAD")
    options = functools.partialmethod(request, "OPTIONS")


api_gateway = ApiGatewayInvocations()


def _local_gateway(_original: Any) -> ApiGatewayInvocations:
    return api_gateway


def _every_documented_parameter(_original: Any) -> dict[str, set[str]]:
    """moto kept only ApiEndpoint and Method of a Task's Parameters: the stage, path, headers,
    query and body were dropped before the call (the integration's documented fields)."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_api_gateway import (
        TaskParameters,
    )

    return {"invoke": set(TaskParameters.__annotations__)}


def _credentials_by_their_name(original: Callable[..., None]) -> Callable[..., None]:
    """moto's service Task passes ``state_credentials=``, which this task's own signature names
    ``task_credentials`` (a TypeError at every call)."""

    def eval_service_task(
        self: Any,
        env: Any,
        resource_runtime_part: Any,
        normalised_parameters: Any,
        state_credentials: Any = None,
    ) -> None:
        original(self, env, resource_runtime_part, normalised_parameters, state_credentials)

    return eval_service_task


# moto's note: a RequestBody "is only supported for PATCH, POST, and PUT", the methods whose requests
# carry one.
_METHODS_WITH_A_BODY = frozenset({"PATCH", "POST", "PUT"})


def _a_body_only_where_the_method_sends_one(original: Callable[..., None]) -> Callable[..., None]:
    def eval_service_task(
        self: Any,
        env: Any,
        resource_runtime_part: Any,
        normalised_parameters: Any,
        state_credentials: Any = None,
    ) -> None:
        if (
            "RequestBody" in normalised_parameters
            and normalised_parameters.get("Method") not in _METHODS_WITH_A_BODY
        ):
            normalised_parameters = {
                name: value for name, value in normalised_parameters.items() if name != "RequestBody"
            }
        original(self, env, resource_runtime_part, normalised_parameters, state_credentials)

    return eval_service_task


def _failure_with_its_environment(_original: Callable[..., Any]) -> Callable[..., Any]:
    """moto built the failure without the environment every failure event needs (a TypeError,
    whatever the API answered); this is its body with it."""
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import CustomErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEvent
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_api_gateway import (
        SfnGatewayException,
    )
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    def from_error(self: Any, env: Any, ex: Exception) -> Any:
        if isinstance(ex, SfnGatewayException):
            error_name, cause = f"ApiGateway.{ex.response.status_code}", ex.response.text
        else:
            error_name, cause = f"ApiGateway.{type(ex).__name__}", str(ex)
        details = TaskFailedEventDetails(
            error=error_name,
            cause=cause,
            resource=self._get_sfn_resource(),
            resourceType=self._get_sfn_resource_type(),
        )
        return FailureEvent(
            env=env,
            error_name=CustomErrorName(error_name),
            event_type=HistoryEventType.TaskFailed,
            event_details=EventDetails(taskFailedEventDetails=details),
        )

    return from_error


# -- fix 96: the .sync integrations of Athena and SageMaker wait for their job, as AWS's do --------
@dataclass(frozen=True)
class SyncJob:
    """How a .sync Task's job is watched: the call that describes it, the request field that names
    it (read from the submission's answer, else from the Task's parameters), and its status."""

    describe: str
    key: str
    status: tuple[str, ...]
    succeeded: frozenset[str]
    failed: frozenset[str]


_SAGEMAKER_ENDED = frozenset({"Failed", "Stopped"})
# The jobs AWS's docs list with .sync that moto has no integration for (boto service, action).
SYNC_JOBS = {
    ("athena", "start_query_execution"): SyncJob(
        "get_query_execution",
        "QueryExecutionId",
        ("QueryExecution", "Status", "State"),
        frozenset({"SUCCEEDED"}),
        frozenset({"FAILED", "CANCELLED"}),
    ),
    ("sagemaker", "create_training_job"): SyncJob(
        "describe_training_job",
        "TrainingJobName",
        ("TrainingJobStatus",),
        frozenset({"Completed"}),
        _SAGEMAKER_ENDED,
    ),
    ("sagemaker", "create_transform_job"): SyncJob(
        "describe_transform_job",
        "TransformJobName",
        ("TransformJobStatus",),
        frozenset({"Completed"}),
        _SAGEMAKER_ENDED,
    ),
    ("sagemaker", "create_processing_job"): SyncJob(
        "describe_processing_job",
        "ProcessingJobName",
        ("ProcessingJobStatus",),
        frozenset({"Completed"}),
        _SAGEMAKER_ENDED,
    ),
}
_UNSUPPORTED_TASK = f"{_SERVICE_PACKAGE}.state_task_service_unsupported:StateTaskServiceUnsupported"


def _sync_job(task: Any) -> SyncJob | None:
    return SYNC_JOBS.get((task._get_boto_service_name(), task._get_boto_service_action()))


def _sync_jobs_allowed(original: Callable[[Any], None]) -> Callable[[Any], None]:
    def assert_supported(self: Any) -> None:
        if _sync_job(self) is None or self.resource.condition != "sync":
            original(self)

    return assert_supported


def _task_failure(env: Any, kind: str, cause: str, task: Any = None) -> Exception:
    """The Task's ``States.<kind>`` failure (its resource named when ``task`` is given), to raise."""
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

    typ = StatesErrorNameType[f"States{kind}"]
    details = TaskFailedEventDetails(error=typ.to_name(), cause=cause)
    if task is not None:
        details.update(resource=task._get_sfn_resource(), resourceType=task._get_sfn_resource_type())
    failure: Exception = FailureEventException(
        FailureEvent(
            env=env,
            error_name=StatesErrorName(typ=typ),
            event_type=HistoryEventType.TaskFailed,
            event_details=EventDetails(taskFailedEventDetails=details),
        )
    )
    return failure


def _patterns_refused_by_name(original: Callable[..., None]) -> Callable[..., None]:
    """moto answered a .sync of any other service it has no integration for with a RuntimeError's
    text; it fails as the state's own ``States.Runtime``, naming the resource."""

    def eval_body(self: Any, env: Any) -> None:
        condition = self.resource.condition
        if condition not in (None, "waitForTaskToken") and (condition != "sync" or _sync_job(self) is None):
            cause = f"The local engine does not run the .{condition} pattern of {self.resource.resource_arn}"
            raise _task_failure(env, "Runtime", cause)
        original(self, env)

    return eval_body


def _job_watched(_original: Callable[..., Any]) -> Callable[..., Any]:
    """The job's describe call until its status is one that ended: its answer is the Task's
    result, or, for a job that failed, the cause of ``States.TaskFailed`` (as moto's Batch and
    Glue resolvers, and AWS, have it)."""
    from moto.stepfunctions.parser.asl.utils.boto_client import boto_client_for
    from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

    def build_sync_resolver(
        self: Any,
        env: Any,
        resource_runtime_part: Any,
        normalised_parameters: dict[str, Any],
        state_credentials: Any,
    ) -> Callable[[], Any]:
        job = _sync_job(self)
        assert job is not None  # only listed jobs get here (_sync_jobs_allowed)
        submitted = env.stack.pop()
        name = submitted.get(job.key) or normalised_parameters.get(job.key)
        client = boto_client_for(
            service=self._get_boto_service_name(),
            region=resource_runtime_part.region,
            state_credentials=state_credentials,
        )

        def resolve() -> Any:
            described = getattr(client, job.describe)(**{job.key: name})
            described.pop("ResponseMetadata", None)
            status: Any = described
            for step in job.status:
                status = status.get(step, {}) if isinstance(status, dict) else None
            if status in job.failed:
                raise _task_failure(env, "TaskFailed", to_json_str(described), task=self)
            return described if status in job.succeeded else None

        return resolve

    return build_sync_resolver


def _bedrock_runtime_and_named_actions(original: Callable[..., None]) -> Callable[..., None]:
    def eval_service_task(
        self: Any,
        env: Any,
        resource_runtime_part: Any,
        normalised_parameters: dict[str, Any],
        state_credentials: Any,
    ) -> None:
        from moto.stepfunctions.parser.asl.utils.boto_client import boto_client_for

        service, action = self._get_boto_service_name(), self._get_boto_service_action()
        if (service, action) == ("bedrock", "invoke_model"):
            env.stack.append(
                _invoked_model(
                    boto_client_for, resource_runtime_part, normalised_parameters, state_credentials
                )
            )
            return
        client = boto_client_for(
            service=service, region=resource_runtime_part.region, state_credentials=state_credentials
        )
        if not hasattr(client, action):
            cause = f"The local engine does not run {self.resource.resource_arn}: {service} has no action {action}"
            raise _task_failure(env, "Runtime", cause)
        original(self, env, resource_runtime_part, normalised_parameters, state_credentials)

    return eval_service_task


def _invoked_model(
    client_for: Callable[..., Any], runtime_part: Any, parameters: dict[str, Any], credentials: Any
) -> dict[str, Any]:
    """Bedrock's InvokeModel as the optimized integration calls it: the ``Body`` object as JSON text,
    the answer's body read back as JSON."""
    runtime = client_for(service="bedrock-runtime", region=runtime_part.region, state_credentials=credentials)
    request = {"modelId": parameters["ModelId"], "body": json.dumps(parameters.get("Body", {}))}
    for member, name in (("ContentType", "contentType"), ("Accept", "accept")):
        if member in parameters:
            request[name] = parameters[member]
    answer = runtime.invoke_model(**request)
    return {"Body": json.loads(answer["body"].read() or b"{}"), "ContentType": answer.get("contentType")}


PATCHES: tuple[Patch, ...] = (  # before integrations' fixes 70 and 71, which wrap what these put in place
    Patch(93, _API_GATEWAY_TASK_MODULE, "requests", _local_gateway),
    Patch(93, _API_GATEWAY_TASK, "_SUPPORTED_API_PARAM_BINDINGS", _every_documented_parameter),
    Patch(93, _API_GATEWAY_TASK, "_eval_service_task", _credentials_by_their_name),
    Patch(93, _API_GATEWAY_TASK, "_from_error", _failure_with_its_environment),
    Patch(136, _API_GATEWAY_TASK, "_eval_service_task", _a_body_only_where_the_method_sends_one),
    Patch(96, _UNSUPPORTED_TASK, "_assert_integration_pattern_is_supported", _sync_jobs_allowed),
    Patch(96, _UNSUPPORTED_TASK, "_eval_body", _patterns_refused_by_name),
    Patch(96, _UNSUPPORTED_TASK, "_build_sync_resolver", _job_watched),
    Patch(108, _UNSUPPORTED_TASK, "_eval_service_task", _bedrock_runtime_and_named_actions),
)
