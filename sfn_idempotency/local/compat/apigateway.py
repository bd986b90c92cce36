"""API Gateway from a stack: a REST API's methods, stages and account as CloudFormation creates
them on AWS (fixes 41 and 42), so that the engine can serve what a template declares.

moto's ``AWS::ApiGateway::Method`` kept an integration's type, URI and HTTP method, and dropped the
rest (credentials, mapping templates, passthrough behaviour, integration and method responses);
its CloudFormation had no ``AWS::ApiGateway::Stage`` or ``AWS::ApiGateway::Account``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from sfn_idempotency.local.compat.patching import Patch, add, keep

_METHOD = "moto.apigateway.models:Method"
_DEPLOYMENT = "moto.apigateway.models:Deployment"


def _backend(account_id: str, region_name: str) -> Any:
    from moto.apigateway.models import apigateway_backends

    return apigateway_backends[account_id][region_name]


# -- fix 41: a method's whole integration -------------------------------------------------------
def _method_with_integration(original: Callable[..., Any]) -> Any:
    def create(
        cls: Any,
        /,
        resource_name: str,
        cloudformation_json: Any,
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> Any:
        method = original(resource_name, cloudformation_json, account_id, region_name, **kwargs)
        properties = cloudformation_json["Properties"]
        backend = _backend(account_id, region_name)
        api, resource, verb = properties["RestApiId"], properties["ResourceId"], properties["HttpMethod"]
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


# -- fix 42: stages and the account ---------------------------------------------------------------
@cache
def _models() -> tuple[type, type]:
    """``AWS::ApiGateway::Stage`` and ``AWS::ApiGateway::Account`` (moto's CloudFormation had neither)."""
    from moto.core.common_models import CloudFormationModel

    class Stage(CloudFormationModel):  # type: ignore[misc]
        def __init__(self, api_id: str, name: str) -> None:
            self.api_id = api_id
            self.name = name

        @property
        def physical_resource_id(self) -> str:
            return self.name

        @staticmethod
        def cloudformation_name_type() -> str:
            return ""

        @staticmethod
        def cloudformation_type() -> str:
            return "AWS::ApiGateway::Stage"

        @classmethod
        def has_cfn_attr(cls, attr: str) -> bool:
            return False

        @classmethod
        def create_from_cloudformation_json(
            cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **_: Any
        ) -> Stage:
            properties = cloudformation_json["Properties"]
            _backend(account_id, region_name).create_stage(
                function_id=properties["RestApiId"],
                stage_name=properties["StageName"],
                deploymentId=properties["DeploymentId"],
                variables={name: str(value) for name, value in (properties.get("Variables") or {}).items()},
                description=properties.get("Description", ""),
                tracing_enabled=properties.get("TracingEnabled"),
            )
            return cls(properties["RestApiId"], properties["StageName"])

        @classmethod
        def update_from_cloudformation_json(
            cls,
            original_resource: Any,
            new_resource_name: str,
            cloudformation_json: Any,
            account_id: str,
            region_name: str,
        ) -> Stage:
            cls.delete_from_cloudformation_json(
                original_resource.name, cloudformation_json, account_id, region_name
            )
            return cls.create_from_cloudformation_json(
                new_resource_name, cloudformation_json, account_id, region_name
            )

        @classmethod
        def delete_from_cloudformation_json(
            cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
        ) -> None:
            properties = cloudformation_json["Properties"]
            _backend(account_id, region_name).delete_stage(properties["RestApiId"], properties["StageName"])

    class Account(CloudFormationModel):  # type: ignore[misc]
        def __init__(self, role_arn: str) -> None:
            self.role_arn = role_arn

        @property
        def physical_resource_id(self) -> str:
            return "account"

        @staticmethod
        def cloudformation_name_type() -> str:
            return ""

        @staticmethod
        def cloudformation_type() -> str:
            return "AWS::ApiGateway::Account"

        @classmethod
        def has_cfn_attr(cls, attr: str) -> bool:
            return False

        @classmethod
        def create_from_cloudformation_json(
            cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **_: Any
        ) -> Account:
            role = str(cloudformation_json["Properties"].get("CloudWatchRoleArn", ""))
            operation = {"op": "replace", "path": "/cloudwatchRoleArn", "value": role}
            _backend(account_id, region_name).update_account([operation])
            return cls(role)

        @classmethod
        def update_from_cloudformation_json(
            cls,
            original_resource: Any,
            new_resource_name: str,
            cloudformation_json: Any,
            account_id: str,
            region_name: str,
        ) -> Account:
            return cls.create_from_cloudformation_json(
                new_resource_name, cloudformation_json, account_id, region_name
            )

        @classmethod
        def delete_from_cloudformation_json(
            cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
        ) -> None:
            return  # as on AWS: deleting the resource leaves the account's setting

    return Stage, Account


def install_models() -> None:
    """Make the two models known (the caller lists moto's models again afterwards), and give a
    deployment the physical id ``Ref`` answers on AWS, its id (moto's Ref gave the object)."""
    _models()
    add(_DEPLOYMENT, "physical_resource_id", property(lambda deployment: deployment.id))


PATCHES: tuple[Patch, ...] = (
    Patch(41, _METHOD, "create_from_cloudformation_json", _method_with_integration),
    Patch(41, "moto.apigateway.models:APIGatewayBackend", "put_integration_response", keep),
    Patch(41, "moto.apigateway.models:APIGatewayBackend", "put_method_response", keep),
    Patch(42, "moto.apigateway.models:APIGatewayBackend", "create_stage", keep),
    Patch(42, _DEPLOYMENT, "to_json", keep),
    Patch(42, "moto.apigateway.models:APIGatewayBackend", "update_account", keep),
)
