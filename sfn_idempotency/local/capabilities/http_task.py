"""Fix 33: HTTP Tasks (``arn:aws:states:::http:invoke``) run, as AWS runs them: the request is
made with the EventBridge connection's authorization, and the answer is ``Headers``,
``ResponseBody``, ``StatusCode`` and ``StatusText``; a status outside 2xx fails the Task with
``States.Http.StatusCode.<code>``. moto's parser refused any definition holding one ("Unknown
service 'http'"), and a Retry or Catch naming ``States.Http.StatusCode.<code>``. TestState at TRACE reports the raw ``request`` and ``response``, without the
connection's secrets unless ``revealSecrets``.
Docs: https://docs.aws.amazon.com/step-functions/latest/dg/call-https-apis.html
"""

from __future__ import annotations

import base64
import functools
import json
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from sfn_idempotency.local.compat.patching import Patch

_SERVICE_PACKAGE = "moto.stepfunctions.parser.asl.component.state.exec.state_task.service"
_FACTORY_USERS = (
    f"{_SERVICE_PACKAGE}.state_task_service_factory",
    "moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task_factory",
)
_PARAMETERS = frozenset(
    {"ApiEndpoint", "Method", "Headers", "QueryParameters", "RequestBody", "Authentication", "Transform"}
)
_DEFAULT_TIMEOUT_SECONDS = 60.0  # AWS's limit for one HTTP Task call
_SUCCESS = range(200, 300)
_HTTP_STATUS_ERROR = re.compile(r"States\.Http\.StatusCode\.[1-5][0-9][0-9]")


# TestState's revealSecrets, by the run's inspection data: the one object every frame of the run
# shares (the frames' environments do not carry the request, and the run has a thread of its own).
_revealing: dict[int, bool] = {}
_revealing_lock = threading.Lock()


def reveal_secrets_in(inspection: dict[str, Any], reveal: bool) -> None:
    with _revealing_lock:
        _revealing[id(inspection)] = reveal


def forget_secrets_of(inspection: dict[str, Any]) -> None:
    with _revealing_lock:
        _revealing.pop(id(inspection), None)


class HttpStatusError(Exception):
    """The endpoint answered outside 2xx: the Task fails with States.Http.StatusCode.<code>."""

    def __init__(self, status: int, answer: dict[str, Any]) -> None:
        super().__init__(f"States.Http.StatusCode.{status}")
        self.status = status
        self.answer = answer


class HttpTaskError(Exception):
    """The call could not be made (no connection, an endpoint that does not answer)."""


def _connection(connection_arn: str, account_id: str, region: str) -> Any:
    from moto.events.models import events_backends

    name = connection_arn.split(":connection/", 1)[-1].split("/", 1)[0]
    connection = events_backends[account_id][region].connections.get(name)
    if connection is None or connection.arn != connection_arn:
        raise HttpTaskError(f"The connection {connection_arn} does not exist")
    return connection


def _authorization(connection: Any) -> tuple[dict[str, str], dict[str, str]]:
    """(secret headers, other headers and query) the connection adds to every request."""
    parameters = connection.auth_parameters
    secret: dict[str, str] = {}
    if "ApiKeyAuthParameters" in parameters:
        key = parameters["ApiKeyAuthParameters"]
        secret[key["ApiKeyName"]] = key["ApiKeyValue"]
    elif "BasicAuthParameters" in parameters:
        basic = parameters["BasicAuthParameters"]
        token = base64.b64encode(f"{basic['Username']}:{basic['Password']}".encode()).decode()
        secret["Authorization"] = f"Basic {token}"
    else:
        raise HttpTaskError("the local engine calls HTTP endpoints with API key or basic authorization only")
    invocation = parameters.get("InvocationHttpParameters", {})
    headers = {item["Key"]: item["Value"] for item in invocation.get("HeaderParameters", [])}
    return secret, headers


def _request(
    parameters: dict[str, Any], account_id: str, region: str
) -> tuple[urllib.request.Request, dict[str, str]]:
    """The request, and the headers that are the connection's secrets."""
    connection = _connection(parameters["Authentication"]["ConnectionArn"], account_id, region)
    secret, connection_headers = _authorization(connection)
    url = str(parameters["ApiEndpoint"])
    query = parameters.get("QueryParameters")
    if query:
        url = f"{url}{'&' if '?' in url else '?'}{urllib.parse.urlencode(query, doseq=True)}"
    headers = {**connection_headers, **(parameters.get("Headers") or {}), **secret}
    body = parameters.get("RequestBody")
    data = None
    if body is not None:
        encoding = (parameters.get("Transform") or {}).get("RequestBodyEncoding", "NONE")
        if encoding == "URL_ENCODED" and isinstance(body, dict):
            data = urllib.parse.urlencode(body).encode()
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
        else:
            data = (body if isinstance(body, str) else json.dumps(body)).encode()
            headers.setdefault("Content-Type", "application/json")
    method = str(parameters["Method"]).upper()
    return urllib.request.Request(url, data=data, headers=headers, method=method), secret


def _answer(status: int, reason: str, headers: Any, raw: bytes) -> dict[str, Any]:
    text = raw.decode("utf-8", errors="replace")
    try:
        body: Any = json.loads(text) if text else ""
    except ValueError:
        body = text
    return {
        "Headers": {name: [value] for name, value in headers.items()},
        "ResponseBody": body,
        "StatusCode": status,
        "StatusText": reason,
    }


def _call(request: urllib.request.Request, timeout: float) -> tuple[dict[str, Any], bytes]:
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
            return _answer(response.status, response.reason, response.headers, raw), raw
    except urllib.error.HTTPError as error:
        raw = error.read()
        return _answer(error.code, error.reason, error.headers, raw), raw
    except (urllib.error.URLError, OSError) as error:
        raise HttpTaskError(f"the endpoint {request.full_url} did not answer: {error}") from None


def _inspect(
    env: Any, request: urllib.request.Request, secret: dict[str, str], answer: dict[str, Any], raw: bytes
) -> None:
    """TestState's TRACE stages: the raw request and response (secrets only if revealed)."""
    inspection = getattr(env, "inspection_data", None)
    if inspection is None:
        return
    with _revealing_lock:
        reveal = _revealing.get(id(inspection), False)
    hidden = set() if reveal else {name.title() for name in secret}
    headers = {name: value for name, value in request.header_items() if name.title() not in hidden}
    protocol = urllib.parse.urlsplit(request.full_url).scheme
    inspection["request"] = {
        "protocol": protocol,
        "method": request.get_method(),
        "url": request.full_url,
        "headers": json.dumps(headers),
        "body": (request.data or b"").decode("utf-8", errors="replace")
        if isinstance(request.data, bytes)
        else "",
    }
    inspection["response"] = {
        "protocol": protocol,
        "statusCode": str(answer["StatusCode"]),
        "statusMessage": str(answer["StatusText"]),
        "headers": json.dumps({name: values[0] for name, values in answer["Headers"].items()}),
        "body": raw.decode("utf-8", errors="replace"),
    }


@functools.cache
def _http_error_name_type() -> Any:
    from moto.stepfunctions.parser.asl.component.common.error_name.error_name import ErrorName

    class HttpErrorName(ErrorName):  # type: ignore[misc]
        """A ``States.Http.StatusCode.<code>`` name: a States.* name the parser's types do not list."""

    return HttpErrorName


def _http_status_error_names(original: Any) -> Any:
    """ErrorEquals may name an HTTP status (``States.Http.StatusCode.404``); moto's parser refused
    any States.* name it does not know as an illegal custom name."""

    @functools.wraps(original)
    def visit_error_name(self: Any, ctx: Any) -> Any:
        literal = ctx.string_literal()
        if literal is not None:
            name = self._inner_string_of(parser_rule_context=literal)
            if _HTTP_STATUS_ERROR.fullmatch(name):
                return _http_error_name_type()(error_name=name)
        return original(self, ctx)

    return visit_error_name


@functools.cache
def _http_service() -> Any:
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEvent
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service import (
        StateTaskService,
    )
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    class StateTaskServiceHttp(StateTaskService):  # type: ignore[misc]
        def _get_supported_parameters(self) -> set[str] | None:
            return set(_PARAMETERS) if self.resource.api_action == "invoke" else None

        def _failure(self, env: Any, error: str, cause: str) -> Any:
            details = TaskFailedEventDetails(
                error=error,
                cause=cause,
                resource=self._get_sfn_resource(),
                resourceType=self._get_sfn_resource_type(),
            )
            return FailureEvent(
                env=env,
                error_name=_http_error_name_type()(error_name=error),
                event_type=HistoryEventType.TaskFailed,
                event_details=EventDetails(taskFailedEventDetails=details),
            )

        def _from_error(self, env: Any, ex: Exception) -> Any:
            if isinstance(ex, HttpStatusError):
                return self._failure(env, str(ex), json.dumps(ex.answer))
            if isinstance(ex, (HttpTaskError, KeyError)):
                missing = f"the parameter {ex} is required" if isinstance(ex, KeyError) else str(ex)
                return self._failure(env, "States.Runtime", missing)
            return super()._from_error(env=env, ex=ex)

        def _eval_service_task(
            self,
            env: Any,
            resource_runtime_part: Any,
            normalised_parameters: dict[str, Any],
            state_credentials: Any,
        ) -> None:
            request, secret = _request(
                normalised_parameters, resource_runtime_part.account, resource_runtime_part.region
            )
            answer, raw = _call(request, _DEFAULT_TIMEOUT_SECONDS)
            _inspect(env, request, secret, answer, raw)
            if answer["StatusCode"] not in _SUCCESS:
                raise HttpStatusError(int(answer["StatusCode"]), answer)
            env.stack.append(answer)

    return StateTaskServiceHttp


def _with_http(original: Any) -> Any:
    @functools.wraps(original)
    def state_task_service_for(service_name: str) -> Any:
        if service_name == "http":
            return _http_service()()
        return original(service_name)

    return state_task_service_for


PATCHES: tuple[Patch, ...] = (
    *(Patch(33, module, "state_task_service_for", _with_http) for module in _FACTORY_USERS),
    Patch(
        33,
        "moto.stepfunctions.parser.asl.parse.preprocessor:Preprocessor",
        "visitError_name",
        _http_status_error_names,
    ),
)
