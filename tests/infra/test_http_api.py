"""The HTTP front door in the service stack: a REST API whose POST /orders integrates directly with
StartSyncExecution of its Express workflow, through the template files the local engine renders."""

from __future__ import annotations

import json

from aws_cdk.assertions import Match, Template

from sfn_idempotency.flow.resources import ORDERS_REQUEST_TEMPLATE, ORDERS_RESPONSE_TEMPLATE
from tests.infra.test_service_stack import as_list, logical_id, role_statements

WORKFLOW = "/OrdersHttpApi/Workflow/StateMachine/"


def test_post_orders_integrates_with_start_sync_execution_through_the_template_files(service: Template):
    role = logical_id(service, "AWS::IAM::Role", "/OrdersHttpApi/StartSyncExecutionRole/")
    service.has_resource_properties(
        "AWS::ApiGateway::Method",
        {
            "HttpMethod": "POST",
            "AuthorizationType": "AWS_IAM",
            "Integration": {
                "Type": "AWS",
                "IntegrationHttpMethod": "POST",
                "Uri": {
                    "Fn::Join": [
                        "",
                        Match.array_with(
                            [Match.string_like_regexp(":sync-states.states:action/StartSyncExecution")]
                        ),
                    ]
                },
                "Credentials": {"Fn::GetAtt": [role, "Arn"]},
                "PassthroughBehavior": "NEVER",
                "RequestTemplates": {"application/json": ORDERS_REQUEST_TEMPLATE.read_text(encoding="utf-8")},
                "IntegrationResponses": [
                    Match.object_like(
                        {
                            "StatusCode": "200",
                            "ResponseTemplates": {
                                "application/json": ORDERS_RESPONSE_TEMPLATE.read_text(encoding="utf-8")
                            },
                        }
                    )
                ],
            },
        },
    )
    service.has_resource_properties("AWS::ApiGateway::Resource", {"PathPart": "orders"})


def test_the_api_may_only_start_its_own_workflow_synchronously(service: Template):
    workflow = logical_id(service, "AWS::StepFunctions::StateMachine", WORKFLOW)
    statements = role_statements(
        service, logical_id(service, "AWS::IAM::Role", "/OrdersHttpApi/StartSyncExecutionRole/")
    )
    assert [(as_list(s["Action"]), s["Resource"]) for s in statements] == [
        (["states:StartSyncExecution"], {"Ref": workflow})
    ]


def test_the_workflow_is_express_with_the_step_wrapped_and_the_statuses_filled_in(service: Template):
    machine = service.to_json()["Resources"][
        logical_id(service, "AWS::StepFunctions::StateMachine", WORKFLOW)
    ]
    assert machine["Properties"]["StateMachineType"] == "EXPRESS"
    definition = json.loads(machine["Properties"]["DefinitionString"])
    assert definition["States"]["PlaceOrder"]["Type"] == "Parallel"
    configured = definition["States"]["Configure"]["Assign"]
    assert configured["httpSuccessStatus"] == 201
    assert configured["httpErrorStatuses"] == {"InvalidOrderError": 422, "PaymentGatewayTimeout": 504}
    assert configured["httpRetryAfterSeconds"] >= 30


def test_the_stage_logs_access_throttles_and_names_its_workflow(service: Template):
    workflow = logical_id(service, "AWS::StepFunctions::StateMachine", WORKFLOW)
    service.has_resource_properties(
        "AWS::ApiGateway::Stage",
        {
            "StageName": "api",
            "AccessLogSetting": {
                "DestinationArn": Match.any_value(),
                "Format": Match.string_like_regexp("requestId"),
            },
            "TracingEnabled": True,
            "MethodSettings": [
                Match.object_like(
                    {
                        "ThrottlingRateLimit": 100,
                        "ThrottlingBurstLimit": 200,
                        "DataTraceEnabled": False,
                        "LoggingLevel": "ERROR",
                    }
                )
            ],
            "Variables": {
                "stateMachineArn": {"Ref": workflow},
                "retryAfterSeconds": Match.string_like_regexp(r"^\d+$"),
            },
        },
    )
