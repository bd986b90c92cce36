"""The redrive fence of a business step given in place of the flow's own (sfn_idempotency.flow.redrive_fence):
the same expression as the flow file's Execute, around the step's own function, for every form a
Lambda Task takes; any other Task left as it is, with a warning."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sfn_idempotency.flow.redrive_fence import (
    BUSINESS_FUNCTION,
    RedriveFenceWarning,
    fence_jsonata,
    fence_jsonpath,
    payload_selector,
)
from sfn_idempotency.flow.resources import IDEMPOTENCY_FLOWS

FLOW = {
    language: json.loads(path.read_text(encoding="utf-8"))["States"]["Execute"]
    for language, path in IDEMPOTENCY_FLOWS.items()
}
JSONPATH_FENCE = FLOW["JSONPath"]["Parameters"]["FunctionName.$"]
JSONATA_FENCE = FLOW["JSONata"]["Arguments"]["FunctionName"]


def fenced_jsonpath(state: dict[str, Any]) -> dict[str, Any]:
    fence_jsonpath(state, FLOW["JSONPath"])
    return state


def test_the_flow_files_fence_name_the_business_function_once():
    assert JSONPATH_FENCE.count(BUSINESS_FUNCTION) == JSONATA_FENCE.count(BUSINESS_FUNCTION) == 1
    assert "$$.Execution.RedriveCount" in JSONPATH_FENCE
    assert "$states.context.Execution.RedriveCount" in JSONATA_FENCE


@pytest.mark.parametrize(
    ("function", "operand"),
    [
        ({"FunctionName": "${Charge}"}, "'${Charge}'"),
        (
            {"FunctionName": "arn:aws:lambda:us-east-1:1:function:charge"},
            "'arn:aws:lambda:us-east-1:1:function:charge'",
        ),
        ({"FunctionName": "${Token[TOKEN.12]}"}, "'${Token[TOKEN.12]}'"),  # a CDK token, kept whole
        ({"FunctionName.$": "$.function"}, "$.function"),
    ],
)
def test_an_invoke_task_calls_its_own_function_through_the_fence(function: dict[str, str], operand: str):
    state = fenced_jsonpath(
        {"Resource": "arn:aws:states:::lambda:invoke", "Parameters": {**function, "Payload.$": "$.order"}}
    )
    assert state["Parameters"] == {
        "FunctionName.$": JSONPATH_FENCE.replace(BUSINESS_FUNCTION, operand),
        "Payload.$": "$.order",
    }


def test_a_cdk_invoke_in_any_partition_is_fenced():
    state = fenced_jsonpath(
        {
            "Resource": "arn:${Token[AWS.Partition.3]}:states:::lambda:invoke",
            "Parameters": {"FunctionName": "f"},
        }
    )
    assert state["Parameters"]["FunctionName.$"] == JSONPATH_FENCE.replace(BUSINESS_FUNCTION, "'f'")


@pytest.mark.parametrize(
    ("parameters", "payload"),
    [(None, {"Payload.$": "$"}), ({"order.$": "$.order"}, {"Payload": {"order.$": "$.order"}})],
)
def test_a_function_as_the_resource_is_invoked_with_the_same_payload(
    parameters: dict[str, Any] | None, payload: dict[str, Any]
):
    state: dict[str, Any] = {"Resource": "${PlaceOrderFunctionArn}"}
    if parameters is not None:
        state["Parameters"] = parameters
    fenced_jsonpath(state)
    assert state["Resource"] == "arn:aws:states:::lambda:invoke"
    assert state["Parameters"] == {
        "FunctionName.$": JSONPATH_FENCE.replace(BUSINESS_FUNCTION, "'${PlaceOrderFunctionArn}'"),
        **payload,
    }


def test_a_result_selector_of_a_function_s_result_reads_the_invoke_payload():
    selector = {
        "id.$": "$.orderId",
        "all.$": "$",
        "first.$": "$[0]",
        "n": 1,
        "when.$": "$$.State.EnteredTime",
        "v.$": "$seen",
        "f.$": "States.Format('{}', $.orderId)",
    }
    assert payload_selector(selector) == {
        "value": {
            "id.$": "$.Payload.orderId",
            "all.$": "$.Payload",
            "first.$": "$.Payload[0]",
            "n": 1,
            "when.$": "$$.State.EnteredTime",
            "v.$": "$seen",
            "f.$": "States.Format('{}', $.Payload.orderId)",
        }
    }
    assert payload_selector(None) == {"value.$": "$.Payload"}


def test_a_jsonata_function_resource_keeps_its_payload_and_reads_its_result_from_the_payload():
    state = {
        "Resource": "${PlaceOrderFunctionArn}",
        "Arguments": "{% $states.input.order %}",
        "Output": "{% {'placed': $states.result, 'id': $states.result.orderId} %}",
    }
    fence_jsonata(state, FLOW["JSONata"])
    assert state == {
        "Resource": "arn:aws:states:::lambda:invoke",
        "Arguments": {
            "FunctionName": JSONATA_FENCE.replace(BUSINESS_FUNCTION, "'${PlaceOrderFunctionArn}'"),
            "Payload": "{% $states.input.order %}",
        },
        "Output": "{% {'placed': $states.result.Payload, 'id': $states.result.Payload.orderId} %}",
    }


def test_a_jsonata_invoke_s_function_expression_is_the_fence_s_operand():
    state = {
        "Resource": "arn:aws:states:::lambda:invoke",
        "Arguments": {"FunctionName": "{% $fn %}", "Payload": 1},
    }
    fence_jsonata(state, FLOW["JSONata"])
    assert state["Arguments"] == {
        "FunctionName": JSONATA_FENCE.replace(BUSINESS_FUNCTION, "($fn)"),
        "Payload": 1,
    }


@pytest.mark.parametrize("resource", ["arn:aws:states:::sqs:sendMessage", "arn:aws:states:::http:invoke"])
def test_another_task_is_left_as_it_is_with_a_warning(resource: str):
    state = {"Resource": resource, "Parameters": {"QueueUrl": "q"}}
    with pytest.warns(RedriveFenceWarning, match="not a Lambda function"):
        fenced_jsonpath(state)
    assert state == {"Resource": resource, "Parameters": {"QueueUrl": "q"}}
