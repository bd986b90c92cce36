"""Bad IdempotentWorkflow props fail synth with a clear message."""

from __future__ import annotations

import json
import warnings
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template

from sfn_idempotency.cdk.idempotent_workflow import IdempotentWorkflow
from sfn_idempotency.cdk.lambda_code import RUNTIME
from sfn_idempotency.flow.redrive_fence import RedriveFenceWarning
from sfn_idempotency.flow.resources import IDEMPOTENCY_ASL, RELEASE_ASL
from sfn_idempotency.lambdas.compute_key.errors import ConfigurationError


def build(**props: Any) -> IdempotentWorkflow:
    stack = cdk.Stack(cdk.App(), "PropsTest")
    business = lambda_.Function(
        stack,
        "Business",
        runtime=RUNTIME,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(e, c): return e"),
    )
    return IdempotentWorkflow(
        stack, "Workflow", **{"business_function": business, "key_prefix": "orders", **props}
    )


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"key_prefix": ""}, "IDEMPOTENCY_KEY_PREFIX: String should have at least 1 character"),
        ({"event_key_jmespath": "orders[?"}, "JMESPath 'orders[?' does not compile"),
        ({"payload_validation_jmespath": "powertools_jsn(body)"}, "calls unknown function(s) powertools_jsn"),
        (
            {"hash_function": "md6"},
            "IDEMPOTENCY_HASH_FUNCTION: 'md6' is not a fixed-length hashlib algorithm",
        ),
        (
            {"business_timeout": cdk.Duration.minutes(16)},
            "business_timeout must be 1..900 s (a Lambda's range), got 960 s",
        ),
        (
            {"business_timeout": cdk.Duration.seconds(0)},
            "IDEMPOTENCY_TIMEOUT_SECONDS: Input should be greater than or equal to 1",
        ),
        (
            {"expires_after": cdk.Duration.seconds(10)},
            "IDEMPOTENCY_EXPIRES_AFTER_SECONDS (10) must be at least the lease",
        ),
        # 60 s is the step's timeout, but not its lease (every attempt and backoff): refused
        (
            {"expires_after": cdk.Duration.seconds(60)},
            "IDEMPOTENCY_EXPIRES_AFTER_SECONDS (60) must be at least the lease",
        ),
        (
            {"workflow_type": sfn.StateMachineType.EXPRESS, "release_abandoned_claims": True},
            "release_abandoned_claims needs a Standard workflow",
        ),
        (
            {"workflow_type": sfn.StateMachineType.EXPRESS, "business_timeout": cdk.Duration.minutes(6)},
            "an Express workflow runs at most 300 s",
        ),
    ],
)
def test_bad_props_fail_with_a_clear_message(props, message):
    with pytest.raises(ConfigurationError) as raised:
        build(**props)
    assert message in str(raised.value)
    assert str(raised.value).startswith("PropsTest/Workflow: ")


def test_good_props_build_the_settings_the_key_lambda_reads():
    workflow = build(
        event_key_jmespath="powertools_json(body).orderId", hash_function="sha256", raise_on_no_key=True
    )
    assert workflow.settings.event_key_jmespath == "powertools_json(body).orderId"
    assert workflow.settings.hash_function == "sha256"
    assert workflow.settings.raise_on_no_key is True


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (
            {"business_step": {"Resource": "arn:aws:states:::sqs:sendMessage"}},
            "give exactly one of business_function and business_step",
        ),
        ({"business_function": None}, "give exactly one of business_function and business_step"),
        ({"business_function": None, "business_step": {"Parameters": {}}}, "a business step needs Resource"),
        (
            {
                "business_function": None,
                "business_step": {"Resource": "arn:aws:states:::sqs:sendMessage", "Next": "X"},
            },
            "got ['Next']",
        ),
        (
            {
                "business_function": None,
                "business_step": {
                    "Resource": "arn:aws:states:::sqs:sendMessage",
                    "Parameters": {"QueueUrl": "${Queue}"},
                },
            },
            "placeholders ['ComputeKeyFunctionArn', 'DisabledWords', 'KeylessIdempotency', 'NoKeyWords', "
            "'ProvableKey', 'Queue', 'TableName'] do not match",
        ),
    ],
)
def test_business_step_props_fail_with_a_clear_message(props, message):
    with pytest.raises(ConfigurationError) as raised:
        build(**props)
    assert message in str(raised.value)


def test_an_express_workflow_refuses_a_sync_or_callback_business_step():
    for resource in (
        "arn:aws:states:::states:startExecution.sync:2",
        "arn:aws:states:::ecs:runTask.sync",
        "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
    ):
        with pytest.raises(ConfigurationError) as raised:
            build(
                business_function=None,
                business_step={"Resource": resource, "Parameters": {}},
                workflow_type=sfn.StateMachineType.EXPRESS,
            )
        assert f"cannot run the business step {resource!r}" in str(raised.value)


def test_an_express_workflow_releases_claims_by_lease_alone():
    workflow = build(workflow_type=sfn.StateMachineType.EXPRESS)
    assert workflow.claim_release is None
    assert build().claim_release is not None


SQS_STEP = {
    "Resource": "arn:aws:states:::sqs:sendMessage",
    "Parameters": {
        "QueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/orders",
        "MessageBody.$": "$.event",
    },
}


def test_a_business_step_the_redrive_fence_cannot_guard_warns_in_a_standard_workflow_only():
    # A Standard execution stopped in an SQS send and then redriven sends again: say so
    with pytest.warns(RedriveFenceWarning, match="sqs:sendMessage"):
        build(business_function=None, business_step=SQS_STEP)
    # An Express one cannot be redriven: nothing to warn about
    with warnings.catch_warnings():
        warnings.simplefilter("error", RedriveFenceWarning)
        build(business_function=None, business_step=SQS_STEP, workflow_type=sfn.StateMachineType.EXPRESS)


def _start_of(workflow: IdempotentWorkflow) -> str:
    """The machine's StartAt: its DefinitionString's, else (the ASL file staged as an asset) the file's."""
    template = Template.from_stack(cdk.Stack.of(workflow)).to_json()
    (properties,) = [
        resource["Properties"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::StepFunctions::StateMachine"
        and "DefinitionSubstitutions" in resource["Properties"]
        and "BusinessFunctionArn" in resource["Properties"]["DefinitionSubstitutions"]
    ]
    if "DefinitionString" not in properties:
        return str(json.loads(IDEMPOTENCY_ASL.read_text(encoding="utf-8"))["StartAt"])
    body = properties["DefinitionString"]
    text = (
        body
        if isinstance(body, str)
        else "".join(part for part in body["Fn::Join"][1] if isinstance(part, str))
    )
    return str(json.loads(text)["StartAt"])


def test_a_key_the_provable_key_can_never_compute_starts_at_the_key_lambda():
    # Given settings whose key JSONata cannot compute (a hash $hash lacks, an index), and provable ones
    # Then the first starts at ComputeKey, without Claim's two states; the other at Claim
    assert _start_of(build(hash_function="blake2b")) == "ComputeKey"
    assert _start_of(build(event_key_jmespath="items[0]")) == "ComputeKey"
    assert _start_of(build(event_key_jmespath="orderId")) == "Claim"


def _release_of(workflow: IdempotentWorkflow) -> tuple[set[str], dict[str, Any]]:
    """The release workflow's substitutions, and its definition (inline, else the ASL file)."""
    template = Template.from_stack(cdk.Stack.of(workflow)).to_json()
    (properties,) = [
        resource["Properties"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::StepFunctions::StateMachine"
        and resource["Properties"].get("StateMachineType") == "EXPRESS"
    ]
    if "DefinitionString" not in properties:
        return set(properties["DefinitionSubstitutions"]), json.loads(RELEASE_ASL.read_text(encoding="utf-8"))
    body = properties["DefinitionString"]
    text = body if isinstance(body, str) else "".join(p for p in body["Fn::Join"][1] if isinstance(p, str))
    return set(properties["DefinitionSubstitutions"]), json.loads(text)


def test_the_release_workflow_keys_by_the_expression_only_where_the_key_is_provable():
    # Given a workflow whose key is provable, and one whose hash $hash lacks
    provable_substitutions, provable = _release_of(build(event_key_jmespath="orderId"))
    never_substitutions, never = _release_of(build(hash_function="blake2b"))

    # Then the first releases through KeyedRelease, the expression written in; the other has no such
    # state (it would only fail over to ComputeKey every time), and every way to it leads to ComputeKey
    assert "KeyedRelease" in provable["States"]
    assert "ProvableKeyOfEndedExecution" in provable_substitutions
    assert "KeyedRelease" not in never["States"]
    assert "ProvableKeyOfEndedExecution" not in never_substitutions
    assert {never["States"][name]["Next"] for name in ("EndedRunIsThePrevious", "EndedRunIsTheLast")} == {
        "ComputeKey"
    }
