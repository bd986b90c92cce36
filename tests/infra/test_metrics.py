"""The constructs' metrics per outcome: metric filters on the state machine's logs (level ALL, no
execution data), a dashboard and alarms; each can be turned off."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Match, Template

from sfn_idempotency.cdk import IdempotencyTable, IdempotentStep, IdempotentWorkflow
from sfn_idempotency.cdk.lambda_code import RUNTIME
from sfn_idempotency.metrics import OUTCOMES, filter_pattern

VARIANTS: dict[str, dict[str, Any]] = {
    "Default": {},
    "NoMetrics": {"metrics": False},
    "NoDashboard": {"dashboard": False},
    "NoAlarms": {"alarms": False},
}


def business(stack: cdk.Stack) -> lambda_.Function:
    return lambda_.Function(
        stack,
        "Business",
        runtime=RUNTIME,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(e, c): return e"),
    )


@pytest.fixture(scope="module")
def templates() -> dict[str, Template]:
    app = cdk.App()
    stacks = {}
    for name, props in VARIANTS.items():
        stack = cdk.Stack(app, f"Metrics{name}")
        IdempotentWorkflow(stack, "Workflow", key_prefix="orders", business_function=business(stack), **props)
        stacks[name] = stack
    step_stack = cdk.Stack(app, "MetricsStep")
    table = IdempotencyTable(step_stack, "Records").table
    group = logs.LogGroup(step_stack, "MachineLogs")
    task = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {"FunctionName": business(step_stack).function_arn, "Payload.$": "$"},
        "ResultPath": "$.placed",
    }
    step = IdempotentStep(
        step_stack, "PlaceOrder", task=task, table=table, key_prefix="shop", log_group=group
    )
    IdempotentStep(step_stack, "Unwatched", task=task, table=table, key_prefix="other")
    sfn.StateMachine(
        step_stack,
        "Machine",
        definition_body=sfn.DefinitionBody.from_chainable(step),
        logs=sfn.LogOptions(destination=group, level=sfn.LogLevel.ALL),
    )
    stacks["Step"] = step_stack
    return {name: Template.from_stack(stack) for name, stack in stacks.items()}


def test_the_workflow_logs_every_state_without_execution_data(templates: dict[str, Template]):
    templates["Default"].has_resource_properties(
        "AWS::StepFunctions::StateMachine",
        {"LoggingConfiguration": Match.object_like({"Level": "ALL", "IncludeExecutionData": False})},
    )


@pytest.mark.parametrize("outcome", OUTCOMES, ids=lambda outcome: outcome.metric_name)
def test_each_outcome_is_a_metric_filter_on_the_workflow_s_logs(templates: dict[str, Template], outcome: Any):
    templates["Default"].has_resource_properties(
        "AWS::Logs::MetricFilter",
        {
            "FilterPattern": filter_pattern(outcome),
            "LogGroupName": {"Ref": Match.string_like_regexp("WorkflowStateMachineLogs")},
            "MetricTransformations": [
                {
                    "MetricName": outcome.metric_name,
                    "MetricNamespace": Match.string_like_regexp(r"^SfnIdempotency/.+/orders$"),
                    "MetricValue": "1",
                }
            ],
        },
    )


def test_alarms_watch_persistence_errors_and_the_rate_of_in_progress_refusals(templates: dict[str, Template]):
    template = templates["Default"]
    template.resource_count_is("AWS::CloudWatch::Alarm", 2)
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Metrics": [
                Match.object_like(
                    {
                        "MetricStat": Match.object_like(
                            {"Metric": Match.object_like({"MetricName": "PersistenceErrors"}), "Stat": "Sum"}
                        )
                    }
                )
            ],
            "Threshold": 1,
            "EvaluationPeriods": 1,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "TreatMissingData": "notBreaching",
        },
    )
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Metrics": Match.array_with(
                [Match.object_like({"Expression": Match.string_like_regexp("100 \\* refusals")})]
            ),
            "Threshold": 10,
            "EvaluationPeriods": 3,
            "ComparisonOperator": "GreaterThanThreshold",
        },
    )
    template.resource_count_is("AWS::CloudWatch::Dashboard", 1)


@pytest.mark.parametrize(
    ("variant", "filters", "dashboards", "alarms", "level"),
    [
        ("NoMetrics", 0, 0, 0, "ERROR"),
        ("NoDashboard", len(OUTCOMES), 0, 2, "ALL"),
        ("NoAlarms", len(OUTCOMES), 1, 0, "ALL"),
    ],
)
def test_each_part_can_be_turned_off(
    templates: dict[str, Template], variant: str, filters: int, dashboards: int, alarms: int, level: str
):
    template = templates[variant]
    template.resource_count_is("AWS::Logs::MetricFilter", filters)
    template.resource_count_is("AWS::CloudWatch::Dashboard", dashboards)
    template.resource_count_is("AWS::CloudWatch::Alarm", alarms)
    template.has_resource_properties(
        "AWS::StepFunctions::StateMachine", {"LoggingConfiguration": Match.object_like({"Level": level})}
    )


def test_an_inline_step_counts_on_the_log_group_it_is_given(templates: dict[str, Template]):
    # Given two steps, one given its machine's log group: only that one is counted, by its own states
    template = templates["Step"]
    template.resource_count_is("AWS::Logs::MetricFilter", len(OUTCOMES))
    replays = next(outcome for outcome in OUTCOMES if outcome.metric_name == "Replays")
    template.has_resource_properties(
        "AWS::Logs::MetricFilter",
        {
            "FilterPattern": filter_pattern(replays, "PlaceOrder."),
            "LogGroupName": {"Ref": Match.string_like_regexp("MachineLogs")},
        },
    )
    template.resource_count_is("AWS::CloudWatch::Dashboard", 1)


def test_the_dashboard_lists_each_outcome_s_key_from_both_log_groups(templates: dict[str, Template]):
    # The query reads the state machine's records and the key Lambda's, which both carry execution_arn
    body = json.dumps(templates["Default"].find_resources("AWS::CloudWatch::Dashboard"))
    assert "stats latest(idempotency_key) as key, latest(details.name) as outcome by execution_arn" in body
    assert "WorkflowComputeKeyLogs" in body
    assert "WorkflowStateMachineLogs" in body


def test_the_http_front_door_counts_its_place_order_step(service: Template):
    # The service stack's IdempotentHttpApi: an InlineWorkflow, its wrapped PlaceOrder counted
    replays = next(outcome for outcome in OUTCOMES if outcome.metric_name == "Replays")
    service.has_resource_properties(
        "AWS::Logs::MetricFilter",
        {
            "FilterPattern": filter_pattern(replays, "PlaceOrder."),
            "MetricTransformations": [
                Match.object_like(
                    {"MetricNamespace": Match.string_like_regexp(r"^SfnIdempotency/.*OrdersHttpApi.*/")}
                )
            ],
        },
    )
