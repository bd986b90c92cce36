"""API Gateway from a stack: a REST API's methods, stages and account as CloudFormation creates
them on AWS (fixes 41 and 42), and an API from its OpenAPI ``Body`` (fix 79), so that the engine
can serve what a template declares.

moto's ``AWS::ApiGateway::Method`` kept an integration's type, URI and HTTP method, and dropped the
rest (credentials, mapping templates, passthrough behaviour, integration and method responses);
its CloudFormation had no ``AWS::ApiGateway::Stage`` or ``AWS::ApiGateway::Account``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from sfn_idempotency.local.compat.cloudformation import resource_model
from sfn_idempotency.local.compat.patching import Patch, add, after_first_import, keep

_METHOD = "moto.apigateway.models:Method"
_DEPLOYMENT = "moto.apigateway.models:Deployment"


def _backend(account_id: str, region_name: str) -> Any:
    from moto.apigateway.models import apigateway_backends

    return apigateway_backends[account_id][region_name]


# -- fix 41: a method's whole integration -------------------------------------------------------
def _method_with_integration(_original: Callable[..., Any]) -> Any:
    """moto's creation read ``IntegrationHttpMethod`` and ``Uri`` whatever the integration, so a MOCK
    method (CDK's ``add_method("ANY")``), which has neither, failed its stack; the method is made
    here as the API's PutMethod makes it, then its whole integration."""

    def create(
        cls: Any,
        /,
        resource_name: str,
        cloudformation_json: Any,
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> Any:
        properties = cloudformation_json["Properties"]
        backend = _backend(account_id, region_name)
        api, resource, verb = properties["RestApiId"], properties["ResourceId"], properties["HttpMethod"]
        method = backend.put_method(
            function_id=api,
            resource_id=resource,
            method_type=verb,
            authorization_type=properties.get("AuthorizationType", "NONE"),
            api_key_required=properties.get("ApiKeyRequired"),
            request_parameters=properties.get("RequestParameters"),
            request_models=properties.get("RequestModels"),
            operation_name=properties.get("OperationName"),
            authorizer_id=properties.get("AuthorizerId"),
            authorization_scopes=properties.get("AuthorizationScopes"),
            request_validator_id=properties.get("RequestValidatorId"),
        )
        integration = properties.get("Integration") or {}
        if integration:
            backend.put_integration(
                function_id=api,
                resource_id=resource,
                method_type=verb,
                integration_type=integration["Type"],
                uri=integration.get("Uri", ""),
                integration_method=integration.get("IntegrationHttpMethod", verb),
                credentials=integration.get("Credentials"),
                request_templates=integration.get("RequestTemplates"),
                passthrough_behavior=integration.get("PassthroughBehavior"),
                request_parameters=integration.get("RequestParameters"),
                timeout_in_millis=integration.get("TimeoutInMillis"),
                content_handling=integration.get("ContentHandling"),
            )
            for answer in integration.get("IntegrationResponses", []):
                backend.put_integration_response(
                    function_id=api,
                    resource_id=resource,
                    method_type=verb,
                    status_code=str(answer["StatusCode"]),
                    selection_pattern=answer.get("SelectionPattern", ""),
                    response_templates=answer.get("ResponseTemplates", {}),
                    response_parameters=answer.get("ResponseParameters", {}),
                    content_handling=answer.get("ContentHandling"),
                )
        for answer in properties.get("MethodResponses", []):
            backend.put_method_response(
                function_id=api,
                resource_id=resource,
                method_type=verb,
                response_code=str(answer["StatusCode"]),
                response_models=answer.get("ResponseModels", {}),
                response_parameters=answer.get("ResponseParameters", {}),
            )
        return method

    return classmethod(create)


# -- fix 79: an API from its OpenAPI body -------------------------------------------------------------
def _rest_api_with_body(_original: Callable[..., Any]) -> Any:
    """moto's creation read ``Name`` alone: an API defined by ``Body`` (what the SAM transform
    writes for a function's or state machine's ``Api`` event, as Swagger 2.0) failed its stack.
    On AWS the name is then the definition's title, and the definition's paths, methods and
    ``x-amazon-apigateway-integration`` become the API's resources, as ImportRestApi makes them."""

    def create(
        cls: Any,
        /,
        resource_name: str,
        cloudformation_json: Any,
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> Any:
        properties = cloudformation_json["Properties"]
        body = properties.get("Body") or {}
        info = body.get("info", {})
        backend = _backend(account_id, region_name)
        api = backend.create_rest_api(
            name=properties.get("Name") or info.get("title", resource_name),
            description=properties.get("Description") or info.get("description", ""),
            endpoint_configuration=properties.get("EndpointConfiguration"),
        )
        if body.get("paths"):
            backend.put_rest_api(api.id, _importable(body), fail_on_warnings=False, mode="merge")
        return api

    return classmethod(create)


def _importable(body: Mapping[str, Any]) -> dict[str, Any]:
    """The definition as moto's import reads it: its version marker aside (the import takes
    Swagger 2.0's paths alike), integration types in the API's spelling (``aws_proxy`` is
    ``AWS_PROXY``), and a MOCK integration (the OPTIONS method SAM's ``Cors`` adds) without a URI
    or backend method, which moto's import demanded of every integration."""
    paths = {
        path: {
            verb: (
                {
                    **operation,
                    "x-amazon-apigateway-integration": {
                        "uri": "",
                        "httpMethod": verb.upper(),
                        **operation["x-amazon-apigateway-integration"],
                        "type": str(operation["x-amazon-apigateway-integration"].get("type", "")).upper(),
                    },
                }
                if isinstance(operation, dict) and "x-amazon-apigateway-integration" in operation
                else operation
            )
            for verb, operation in methods.items()
            if verb.lower() != "parameters"
        }
        for path, methods in body["paths"].items()
    }
    return {"paths": paths}


# -- fix 42: stages and the account ---------------------------------------------------------------
def _create_stage(_name: str, properties: Mapping[str, Any], account_id: str, region_name: str) -> None:
    _backend(account_id, region_name).create_stage(
        function_id=properties["RestApiId"],
        stage_name=properties["StageName"],
        deploymentId=properties["DeploymentId"],
        variables={name: str(value) for name, value in (properties.get("Variables") or {}).items()},
        description=properties.get("Description", ""),
        tracing_enabled=properties.get("TracingEnabled"),
    )


def _delete_stage(_name: str, properties: Mapping[str, Any], account_id: str, region_name: str) -> None:
    _backend(account_id, region_name).delete_stage(properties["RestApiId"], properties["StageName"])


def _set_cloudwatch_role(
    _name: str, properties: Mapping[str, Any], account_id: str, region_name: str
) -> None:
    operation = {
        "op": "replace",
        "path": "/cloudwatchRoleArn",
        "value": str(properties.get("CloudWatchRoleArn", "")),
    }
    _backend(account_id, region_name).update_account([operation])


def _keep_the_account_setting(
    _name: str, properties: Mapping[str, Any], account_id: str, region_name: str
) -> None:
    """As on AWS: deleting the resource leaves the account's setting."""


@cache
def _models() -> tuple[type, type]:
    """``AWS::ApiGateway::Stage`` and ``AWS::ApiGateway::Account`` (moto's CloudFormation had neither)."""
    # A stage's Ref is its name (the invoke URL's last segment), as on AWS.
    stage = resource_model(
        "AWS::ApiGateway::Stage",
        apply=_create_stage,
        remove=_delete_stage,
        physical_id=lambda properties: str(properties["StageName"]),
    )
    account = resource_model(
        "AWS::ApiGateway::Account", apply=_set_cloudwatch_role, remove=_keep_the_account_setting
    )
    return stage, account


def install_models() -> None:
    """Make the two models known (the caller lists moto's models again afterwards), and give a
    deployment the physical id ``Ref`` answers on AWS, its id (moto's Ref gave the object)."""
    _models()
    after_first_import(_DEPLOYMENT.partition(":")[0], "a deployment's physical id", _deployment_id)


def _deployment_id() -> None:
    add(_DEPLOYMENT, "physical_resource_id", property(lambda deployment: deployment.id))


PATCHES: tuple[Patch, ...] = (
    Patch(41, _METHOD, "create_from_cloudformation_json", _method_with_integration),
    Patch(41, "moto.apigateway.models:APIGatewayBackend", "put_method", keep),
    Patch(41, "moto.apigateway.models:APIGatewayBackend", "put_integration_response", keep),
    Patch(41, "moto.apigateway.models:APIGatewayBackend", "put_method_response", keep),
    Patch(79, "moto.apigateway.models:RestAPI", "create_from_cloudformation_json", _rest_api_with_body),
    Patch(79, "moto.apigateway.models:APIGatewayBackend", "put_rest_api", keep),
    Patch(42, "moto.apigateway.models:APIGatewayBackend", "create_stage", keep),
    Patch(42, _DEPLOYMENT, "to_json", keep),
    Patch(42, "moto.apigateway.models:APIGatewayBackend", "update_account", keep),
)
