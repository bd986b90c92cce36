"""One request through one method, as API Gateway runs it
(https://docs.aws.amazon.com/apigateway/latest/developerguide/rest-api-data-transformations.html):
the request mapping (templates chosen by Content-Type, passthrough behaviour), the integration
(MOCK; a Lambda function, as a proxy or not; a JSON-protocol service action such as Step Functions'
StartExecution or StartSyncExecution), the integration response its selection pattern picks, the
method response, and API Gateway's own JSON errors where nothing fits.
"""

from __future__ import annotations

import base64
import datetime
import json
import urllib.parse
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from botocore.exceptions import ClientError

from sfn_idempotency.local.compat.integrations import json_protocol_body
from sfn_idempotency.local.http.mapping_templates import (
    BodyNotJson,
    Parameters,
    Rendered,
    TemplateError,
    render,
)
from sfn_idempotency.local.http.rest_apis import (
    AwsTarget,
    Match,
    Method,
    Stage,
    aws_target,
    selected_response,
)

JSON = "application/json"
_DEFAULT_CONTENT_TYPE = JSON
_SERVER_ERROR = "Internal server error"
# What a caller's identity has that a local request does not (no IAM, no Cognito, no API key).
_UNKNOWN_IDENTITY = (
    "accountId",
    "apiKey",
    "caller",
    "cognitoAuthenticationProvider",
    "cognitoAuthenticationType",
    "cognitoIdentityId",
    "cognitoIdentityPoolId",
    "user",
    "userArn",
)


@dataclass(frozen=True)
class HttpRequest:
    """A request as it reached the stage: ``path`` is below the stage, with its leading slash."""

    verb: str
    path: str
    query: Mapping[str, list[str]] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    source_ip: str = "127.0.0.1"

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((value for key, value in self.headers.items() if key.lower() == wanted), None)


@dataclass(frozen=True)
class HttpAnswer:
    status: int
    headers: dict[str, str]
    body: bytes


class Services(Protocol):
    """How an integration reaches the engine's services (the cloud provides it)."""

    def call(self, service: str, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        """An API call (a ClientError as the service answers it)."""

    def invoke(self, function_arn: str, payload: bytes) -> tuple[bytes, str | None]:
        """A Lambda function's answer and its FunctionError (None when it succeeded)."""


def gateway_error(status: int, error_type: str, message: str) -> HttpAnswer:
    """API Gateway's own answer, JSON with the ``x-amzn-ErrorType`` it names itself with."""
    body = json.dumps({"message": message}).encode()
    return HttpAnswer(status, {"Content-Type": JSON, "x-amzn-ErrorType": error_type}, body)


def missing_authentication_token() -> HttpAnswer:
    """What API Gateway answers a path or method no resource declares."""
    return gateway_error(403, "MissingAuthenticationTokenException", "Missing Authentication Token")


def answer(stage: Stage, request: HttpRequest, services: Services, account: str, region: str) -> HttpAnswer:
    match = stage.match(request.verb, request.path)
    if match is None:
        return missing_authentication_token()
    context = request_context(stage, match, request, account, region)
    integration = match.method.integration
    try:
        if integration.type == "AWS_PROXY":
            return _lambda_proxy(stage, match, request, context, services)
        return _mapped(stage, match, request, context, services)
    except BodyNotJson as error:
        return gateway_error(400, "BadRequestException", str(error))
    except TemplateError:
        return gateway_error(500, "InternalServerErrorException", _SERVER_ERROR)


# -- $context ----------------------------------------------------------------------------------
def request_context(
    stage: Stage, match: Match, request: HttpRequest, account: str, region: str
) -> dict[str, Any]:
    """``$context`` (and a proxy event's ``requestContext``); what a local request has no value
    for (an authorizer, a caller's identity) is empty, as API Gateway renders a missing value."""
    now = datetime.datetime.now(datetime.UTC)
    identity = {**dict.fromkeys(_UNKNOWN_IDENTITY, ""), "sourceIp": request.source_ip}
    identity["userAgent"] = request.header("User-Agent") or ""
    return {
        "accountId": account,
        "apiId": stage.rest_api_id,
        "authorizer": {},
        "domainName": f"{stage.rest_api_id}.execute-api.{region}.amazonaws.com",
        "domainPrefix": stage.rest_api_id,
        "extendedRequestId": base64.b64encode(uuid.uuid4().bytes[:12]).decode(),
        "httpMethod": request.verb,
        "identity": identity,
        "path": f"/{stage.name}{urllib.parse.unquote(request.path)}",
        "protocol": "HTTP/1.1",
        "requestId": str(uuid.uuid4()),
        "requestTime": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
        "requestTimeEpoch": int(now.timestamp() * 1000),
        "resourceId": match.method.resource_id,
        "resourcePath": match.method.resource_path,
        "stage": stage.name,
    }


def _parameters(match: Match, request: HttpRequest) -> Parameters:
    return Parameters(
        path=dict(match.path_parameters),
        querystring={name: values[-1] for name, values in request.query.items() if values},
        header=dict(request.headers),
    )


# -- AWS_PROXY: the Lambda proxy event and its answer ---------------------------------------------
def _lambda_proxy(
    stage: Stage, match: Match, request: HttpRequest, context: dict[str, Any], services: Services
) -> HttpAnswer:
    target = _target(match.method)
    text, is_base64 = _body_text(request.body)
    event = {
        "resource": match.method.resource_path,
        "path": urllib.parse.unquote(request.path),
        "httpMethod": request.verb,
        "headers": dict(request.headers) or None,
        "multiValueHeaders": {name: [value] for name, value in request.headers.items()} or None,
        "queryStringParameters": {name: values[-1] for name, values in request.query.items()} or None,
        "multiValueQueryStringParameters": {name: list(values) for name, values in request.query.items()}
        or None,
        "pathParameters": dict(match.path_parameters) or None,
        "stageVariables": dict(stage.variables) or None,
        "requestContext": context,
        "body": text,
        "isBase64Encoded": is_base64,
    }
    payload, function_error = services.invoke(target.function_arn, json.dumps(event).encode())
    if function_error:
        return gateway_error(502, "InternalServerErrorException", _SERVER_ERROR)
    try:
        return _proxy_answer(json.loads(payload))
    except (ValueError, TypeError, KeyError):
        # "Malformed Lambda proxy response": API Gateway's 502.
        return gateway_error(502, "InternalServerErrorException", _SERVER_ERROR)


def _body_text(body: bytes) -> tuple[str | None, bool]:
    if not body:
        return None, False
    try:
        return body.decode("utf-8"), False
    except UnicodeDecodeError:
        return base64.b64encode(body).decode(), True


def _proxy_answer(result: Any) -> HttpAnswer:
    if not isinstance(result, dict):
        raise TypeError("a proxy answer is an object")
    status = int(result.get("statusCode", 200))
    headers = {str(name): str(value) for name, value in (result.get("headers") or {}).items()}
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers[str(name)] = ", ".join(str(value) for value in values)
    body = result.get("body")
    if body is not None and not isinstance(body, str):
        raise TypeError("a proxy answer's body is a string")
    data = (body or "").encode()
    if result.get("isBase64Encoded"):
        data = base64.b64decode(data)
    if not any(name.lower() == "content-type" for name in headers):  # header names have no case
        headers["Content-Type"] = JSON
    return HttpAnswer(status, headers, data)


# -- AWS and MOCK: mapped request, integration, mapped response ------------------------------------
def _mapped(
    stage: Stage, match: Match, request: HttpRequest, context: dict[str, Any], services: Services
) -> HttpAnswer:
    integration = match.method.integration
    parameters = _parameters(match, request)

    def rendered(template: str, body: str) -> Rendered:
        return render(
            template, body=body, parameters=parameters, context=context, stage_variables=stage.variables
        )

    body = request.body.decode("utf-8", errors="replace")
    # A request without a body reaches a mapping template as "{}" (CDK's Step Functions template
    # relies on it: its GET methods' input is {"body": {}, …}).
    template_body = body or "{}"
    content_type = (request.header("Content-Type") or _DEFAULT_CONTENT_TYPE).split(";")[0].strip().lower()
    template = integration.request_templates.get(content_type)
    if template is None:
        refuse = integration.passthrough_behavior == "NEVER" or (
            integration.passthrough_behavior == "WHEN_NO_TEMPLATES" and integration.request_templates
        )
        if refuse:
            return gateway_error(415, "UnsupportedMediaTypeException", "Unsupported Media Type")
        integration_body = body
    else:
        integration_body = rendered(template, template_body).text
    selector, output, output_headers = _integrate(match.method, integration_body, services)
    chosen = selected_response(integration.responses, selector)
    if chosen is None or (
        match.method.method_responses and chosen.status_code not in match.method.method_responses
    ):
        # "Execution failed due to configuration error": no output mapping fits.
        return gateway_error(500, "InternalServerErrorException", _SERVER_ERROR)
    headers = {"Content-Type": JSON}
    response_template = chosen.templates.get(JSON) or next(iter(chosen.templates.values()), None)
    status = int(chosen.status_code)
    text = output
    if response_template:
        response = rendered(response_template, output)
        text, status = response.text, response.status or status
        headers.update(response.headers)
    headers.update(_response_parameters(chosen.parameters, output, output_headers))
    return HttpAnswer(status, headers, text.encode())


def _integrate(method: Method, body: str, services: Services) -> tuple[str, str, dict[str, str]]:
    """(what selects the integration response, the integration's output, its headers)."""
    integration = method.integration
    if integration.type == "MOCK":
        # A MOCK integration answers the status code its request template names.
        try:
            status = json.loads(body or "{}").get("statusCode", 200)
        except (ValueError, AttributeError):
            status = 200
        return str(status), "", {}
    target = _target(method)
    if target.function_arn:
        payload, function_error = services.invoke(target.function_arn, body.encode())
        text = payload.decode("utf-8", errors="replace")
        if function_error:
            # A Lambda error is selected by its errorMessage.
            try:
                message = str(json.loads(text).get("errorMessage", ""))
            except (ValueError, AttributeError):
                message = text
            return message, text, {}
        return "", text, {}
    return _service_action(target, body, services)


def _service_action(target: AwsTarget, body: str, services: Services) -> tuple[str, str, dict[str, str]]:
    try:
        params = json.loads(body) if body.strip() else {}
    except json.JSONDecodeError:
        error = {
            "__type": "SerializationException",
            "message": "Start of structure or map found where not expected.",
        }
        return "400", json.dumps(error), {}
    try:
        result = services.call(target.service, target.action, params if isinstance(params, dict) else {})
    except ClientError as error:
        details = error.response.get("Error", {})
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 400)
        return str(status), json.dumps({"__type": details.get("Code"), "message": details.get("Message")}), {}
    return "200", json_protocol_body(result), {}


def _target(method: Method) -> AwsTarget:
    target = aws_target(method.integration.uri)
    if isinstance(target, str):  # read as served (rest_apis._method): cannot happen
        raise TemplateError(target)
    return target


def _response_parameters(
    parameters: Mapping[str, str], output: str, headers: Mapping[str, str]
) -> dict[str, str]:
    """``method.response.header.X``: a quoted literal, an integration response header, or a field
    of its JSON body."""
    mapped: dict[str, str] = {}
    for destination, source in parameters.items():
        prefix = "method.response.header."
        if not destination.startswith(prefix):
            continue
        value = _response_parameter(source, output, headers)
        if value is not None:
            mapped[destination[len(prefix) :]] = value
    return mapped


def _response_parameter(source: str, output: str, headers: Mapping[str, str]) -> str | None:
    if len(source) >= 2 and source[0] == source[-1] == "'":
        return source[1:-1]
    if source.startswith("integration.response.header."):
        return headers.get(source.removeprefix("integration.response.header."))
    if source.startswith("integration.response.body."):
        try:
            value = json.loads(output)
            for part in source.removeprefix("integration.response.body.").split("."):
                value = value[part]
        except (ValueError, KeyError, TypeError):
            return None
        return value if isinstance(value, str) else json.dumps(value)
    return None
