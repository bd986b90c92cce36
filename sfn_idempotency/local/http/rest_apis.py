"""A REST API's stage as API Gateway serves it: its methods, read through the API Gateway API (so
it is what a stack or a script made, compat fixes 41 and 42), and the method a request reaches.

Routing follows API Gateway's documented precedence: a literal path segment before a ``{param}``,
a ``{param}`` before a greedy ``{proxy+}``; a resource's own verb before its ``ANY``. A request that
reaches no method is API Gateway's ``403 Missing Authentication Token``.
"""

from __future__ import annotations

import functools
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import botocore.session

REST_API_TYPE = "AWS::ApiGateway::RestApi"
ANY = "ANY"
VERBS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
# Which integrations the engine runs, by type.
SERVED_INTEGRATION_TYPES = frozenset({"AWS", "AWS_PROXY", "MOCK"})
_LITERAL, _PARAMETER, _GREEDY = 2, 1, 0
# arn:aws:apigateway:<region>:[<subdomain>.]<service>:action/<Action> or …:path/<path>
_AWS_URI = re.compile(r"^arn:[^:]+:apigateway:[^:]*:(?:[a-z0-9-]+\.)?([a-z0-9-]+):(action|path)/(.+)$")
_FUNCTION_PATH = re.compile(r"^2015-03-31/functions/(.+)/invocations$")
# API Gateway's service names that are not botocore's.
_BOTOCORE_NAMES = {"states": "stepfunctions", "monitoring": "cloudwatch", "email": "ses"}
# The protocols whose request is the template's JSON as it stands.
_JSON_PROTOCOLS = frozenset({"json"})


@dataclass(frozen=True)
class AwsTarget:
    """What an AWS or AWS_PROXY integration's URI calls: a Lambda function, or a service action."""

    service: str  # botocore's name
    action: str = ""
    function_arn: str = ""


def aws_target(uri: str) -> AwsTarget | str:
    """The URI's target, or why the engine cannot call it."""
    found = _AWS_URI.match(uri)
    if found is None:
        return f"the URI {uri!r} is not an API Gateway service URI"
    service, kind, rest = found.groups()
    service = _BOTOCORE_NAMES.get(service, service)
    if service == "lambda" and kind == "path":
        function = _FUNCTION_PATH.match(rest)
        if function is None:
            return f"the Lambda path {rest!r} is not a function's invocations"
        return AwsTarget(service, function_arn=function.group(1))
    if kind != "action":
        return f"{service} path integrations are not served (only actions, and Lambda functions)"
    protocol = _protocol(service)
    if protocol is None:
        return f"{service} is not a service the engine knows"
    if protocol not in _JSON_PROTOCOLS:
        return f"{service} speaks the {protocol} protocol; the engine serves JSON-protocol actions"
    return AwsTarget(service, action=rest)


@functools.cache
def _protocol(service: str) -> str | None:
    try:
        return str(botocore.session.get_session().get_service_model(service).protocol)
    except Exception:  # botocore's UnknownServiceError and kin
        return None


@dataclass(frozen=True)
class IntegrationResponse:
    """One of an integration's responses: chosen by ``selection_pattern`` (empty: the default)."""

    status_code: str
    selection_pattern: str = ""
    templates: Mapping[str, str] = field(default_factory=dict)
    parameters: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Integration:
    type: str
    uri: str = ""
    http_method: str = "POST"
    request_templates: Mapping[str, str] = field(default_factory=dict)
    passthrough_behavior: str = "WHEN_NO_MATCH"
    responses: tuple[IntegrationResponse, ...] = ()


@dataclass(frozen=True)
class Method:
    verb: str
    resource_path: str  # as declared: /orders/{id}
    integration: Integration
    method_responses: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    resource_id: str = ""


@dataclass(frozen=True)
class Match:
    method: Method
    path_parameters: dict[str, str]


@dataclass(frozen=True)
class Stage:
    """The methods one stage serves, with its variables."""

    rest_api_id: str
    name: str
    methods: tuple[Method, ...]
    variables: Mapping[str, str] = field(default_factory=dict)
    unserved: tuple[str, ...] = ()  # "GET /path: why"

    def match(self, verb: str, path: str) -> Match | None:
        """The method ``verb path`` (the path below the stage, as sent: ``%2F`` stays inside its
        segment) reaches, with its path parameters decoded."""
        segments = _segments(path)
        best: tuple[tuple[int, ...], int, Match] | None = None
        for method in self.methods:
            if method.verb not in (verb, ANY):
                continue
            bound = _bind(_segments(method.resource_path), segments)
            if bound is None:
                continue
            ranks, parameters = bound
            # A resource's own verb wins over its ANY.
            key = (ranks, 1 if method.verb == verb else 0, Match(method, parameters))
            if best is None or key[:2] > best[:2]:
                best = key
        return best[2] if best is not None else None


def _segments(path: str) -> list[str]:
    return [segment for segment in path.split("/") if segment]


def _bind(template: Sequence[str], segments: Sequence[str]) -> tuple[tuple[int, ...], dict[str, str]] | None:
    ranks: list[int] = []
    parameters: dict[str, str] = {}
    for index, part in enumerate(template):
        if part.startswith("{") and part.endswith("+}"):
            rest = segments[index:]
            if not rest:
                return None
            parameters[part[1:-2]] = urllib.parse.unquote("/".join(rest))
            return (*ranks, _GREEDY), parameters
        if index >= len(segments):
            return None
        if part.startswith("{") and part.endswith("}"):
            parameters[part[1:-1]] = urllib.parse.unquote(segments[index])
            ranks.append(_PARAMETER)
        elif part == urllib.parse.unquote(segments[index]):
            ranks.append(_LITERAL)
        else:
            return None
    if len(template) != len(segments):
        return None
    return tuple(ranks), parameters


# -- read through the API Gateway API -----------------------------------------------------------
def stages_of(apigateway: Any, rest_api_id: str) -> list[Stage]:
    """Each stage of the API, with the methods the engine serves and why it serves no others."""
    resources = [
        resource
        for page in apigateway.get_paginator("get_resources").paginate(
            restApiId=rest_api_id, embed=["methods"]
        )
        for resource in page["items"]
    ]
    methods: list[Method] = []
    unserved: list[str] = []
    for resource in resources:
        for verb, declared in sorted(resource.get("resourceMethods", {}).items()):
            method, why = _method(verb, resource, declared)
            if method is not None:
                methods.append(method)
            else:
                unserved.append(f"{verb} {resource['path']}: {why}")
    return [
        Stage(
            rest_api_id=rest_api_id,
            name=stage["stageName"],
            methods=tuple(methods),
            variables=dict(stage.get("variables") or {}),
            unserved=tuple(unserved),
        )
        for stage in apigateway.get_stages(restApiId=rest_api_id)["item"]
    ]


def _method(verb: str, resource: Mapping[str, Any], declared: Mapping[str, Any]) -> tuple[Method | None, str]:
    integration = declared.get("methodIntegration") or {}
    kind = str(integration.get("type", ""))
    if kind not in SERVED_INTEGRATION_TYPES:
        what = f"an {kind} integration" if kind else "no integration"
        return None, f"{what}; the engine runs AWS, AWS_PROXY and MOCK integrations"
    if kind != "MOCK":
        target = aws_target(str(integration.get("uri") or ""))
        if isinstance(target, str):
            return None, target
        if kind == "AWS_PROXY" and not target.function_arn:
            return None, "an AWS_PROXY integration that is not a Lambda function"
    responses = tuple(
        IntegrationResponse(
            status_code=str(status),
            selection_pattern=str(answer.get("selectionPattern") or ""),
            templates=dict(answer.get("responseTemplates") or {}),
            parameters=dict(answer.get("responseParameters") or {}),
        )
        for status, answer in sorted((integration.get("integrationResponses") or {}).items())
    )
    return Method(
        verb=verb,
        resource_path=str(resource["path"]),
        resource_id=str(resource["id"]),
        integration=Integration(
            type=kind,
            uri=str(integration.get("uri") or ""),
            http_method=str(integration.get("httpMethod") or "POST"),
            request_templates=dict(integration.get("requestTemplates") or {}),
            passthrough_behavior=str(integration.get("passthroughBehavior") or "WHEN_NO_MATCH"),
            responses=responses,
        ),
        method_responses={
            str(status): dict(answer.get("responseParameters") or {})
            for status, answer in (declared.get("methodResponses") or {}).items()
        },
    ), ""


def selected_response(responses: Sequence[IntegrationResponse], selector: str) -> IntegrationResponse | None:
    """The integration response whose pattern matches ``selector`` whole (a status code, or a
    Lambda error's message), else the default one (no pattern), as API Gateway selects it."""
    for response in responses:
        if response.selection_pattern and re.fullmatch(response.selection_pattern, selector, re.DOTALL):
            return response
    return next((response for response in responses if not response.selection_pattern), None)
