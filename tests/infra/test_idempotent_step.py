"""IdempotentStep in a user's own CDK chains (Standard and Express), and the service stack's inline
workflows: what synthesizes, what the roles may do, and that the synthesized definition runs."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Match, Template

from sfn_idempotency.cdk import IdempotencyTable, IdempotentStep
from sfn_idempotency.flow import inline_workflows
from sfn_idempotency.lambdas.compute_key.errors import ConfigurationError
from sfn_idempotency.local import LocalCloud
from sfn_idempotency.settings import example_settings
from tests.infra.test_service_stack import as_list, logical_id, role_statements

FLOW_ITEM_ACTIONS = ["dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]


def definition_parts(template: Template, path: str) -> list[Any]:
    machine = logical_id(template, "AWS::StepFunctions::StateMachine", path)
    definition = template.to_json()["Resources"][machine]["Properties"]["DefinitionString"]
    return definition["Fn::Join"][1] if isinstance(definition, dict) else [definition]


def rendered(template: Template, path: str, tokens: dict[str, str] | None = None) -> dict[str, Any]:
    """The state machine's definition, each CloudFormation reference replaced by ``tokens`` (by
    logical id) or by a marker."""

    def value(part: Any) -> str:
        if isinstance(part, str):
            return part
        target = part.get("Ref") or part["Fn::GetAtt"][0]
        return (tokens or {}).get(target, "aws" if target == "AWS::Partition" else f"<{target}>")

    document: dict[str, Any] = json.loads("".join(value(part) for part in definition_parts(template, path)))
    return document


def local_resources(template: Template, cloud: LocalCloud, business_arn: str) -> dict[str, str]:
    """The stack's key function, table and business function, by logical id, as the engine has them."""
    inline = cloud.idempotency_substitutions()
    return {
        logical_id(template, "AWS::Lambda::Function", "/IdempotencyKeyFunction/"): inline[
            "IdempotencyKeyFunctionArn"
        ],
        logical_id(template, "AWS::DynamoDB::Table", "/Records/"): inline["IdempotencyTableName"],
        logical_id(template, "AWS::Lambda::Function", "/Business/"): business_arn,
    }


def test_the_step_is_the_parallel_and_result_wrap_state_makes_with_its_nulls(synthesized):
    # Given the user's Standard chain: Prepare -> PlaceOrder (IdempotentStep) -> Confirm
    states = rendered(synthesized.inline, "/Standard/")["States"]

    # Then the step is wrap_state's pair of states, in the chain's place
    assert list(states) == ["Prepare", "PlaceOrder", "PlaceOrder.Result", "Confirm", "Rejected"]
    parallel, result = states["PlaceOrder"], states["PlaceOrder.Result"]
    assert (parallel["Type"], parallel["Next"], result["Next"]) == (
        "Parallel",
        "PlaceOrder.Result",
        "Confirm",
    )
    # And the nulls of ASL survived the trip through jsii (ResultPath null keeps the input)
    assert "ResultPath" in parallel
    assert parallel["ResultPath"] is None
    assert result["Assign"] == {"idempotent_PlaceOrder": None}
    branch = parallel["Branches"][0]["States"]
    assert branch["PlaceOrder.ClaimComputedKey"]["ResultPath"] is None
    assert branch["PlaceOrder.ClaimComputedKey"]["Catch"][0]["ResultPath"] is None
    # And Retry/Catch added to the step are the Parallel's; the LambdaInvoke's own retry stays inside
    assert parallel["Retry"] == [
        {
            "ErrorEquals": ["IdempotencyAlreadyInProgressError"],
            "IntervalSeconds": 2,
            "MaxAttempts": 3,
            "BackoffRate": 2,
        }
    ]
    assert parallel["Catch"] == [
        {"ErrorEquals": ["InvalidOrderError"], "ResultPath": "$.rejection", "Next": "Rejected"}
    ]
    assert "Lambda.ServiceException" in branch["PlaceOrder.Execute"]["Retry"][0]["ErrorEquals"]


def test_each_machine_may_call_only_the_key_function_the_table_and_its_own_task(synthesized):
    template = synthesized.inline
    table = logical_id(template, "AWS::DynamoDB::Table", "/Records/")
    key_function = logical_id(template, "AWS::Lambda::Function", "/IdempotencyKeyFunction/")
    for path, own_action in (("/Standard/", "lambda:InvokeFunction"), ("/Express/", "sqs:SendMessage")):
        statements = role_statements(template, logical_id(template, "AWS::IAM::Role", f"{path}Role/"))
        actions = sorted(
            {a for s in statements for a in as_list(s["Action"]) if not a.startswith(("logs:", "xray:"))}
        )
        assert actions == sorted({*FLOW_ITEM_ACTIONS, "lambda:InvokeFunction", own_action}), path
        (items,) = [s for s in statements if "dynamodb:PutItem" in as_list(s["Action"])]
        assert as_list(items["Resource"]) == [{"Fn::GetAtt": [table, "Arn"]}]
        invoked = [
            r for s in statements if s["Action"] == "lambda:InvokeFunction" for r in as_list(s["Resource"])
        ]
        assert {"Fn::GetAtt": [key_function, "Arn"]} in invoked


def test_one_key_function_serves_every_step_of_the_stack_and_has_no_settings_or_table_rights(synthesized):
    template = synthesized.inline
    functions = [
        f for f in template.find_resources("AWS::Lambda::Function").values()
        if f["Properties"].get("Handler") == "compute_key.handler.handler"
    ]  # fmt: skip
    assert len(functions) == 1
    assert "IDEMPOTENCY_KEY_PREFIX" not in json.dumps(functions[0]["Properties"].get("Environment", {}))
    role = logical_id(template, "AWS::IAM::Role", "/IdempotencyKeyFunction/Function/ServiceRole/")
    assert not [
        a for s in role_statements(template, role) for a in as_list(s["Action"]) if a.startswith("dynamodb:")
    ]


def test_the_express_chain_is_an_express_machine_with_the_tasks_settings(synthesized):
    template = synthesized.inline
    template.has_resource_properties("AWS::StepFunctions::StateMachine", {"StateMachineType": "EXPRESS"})
    states = rendered(template, "/Express/")["States"]
    compute_key = states["Ship"]["Branches"][0]["States"]["Ship.ComputeKey"]
    settings = compute_key["Parameters"]["Payload"]["settings"]
    assert settings["IDEMPOTENCY_KEY_PREFIX"] == "shipments"
    assert settings["IDEMPOTENCY_TIMEOUT_SECONDS"] == "20"  # the Task's own TimeoutSeconds


def test_the_synthesized_definition_runs_on_the_local_engine(synthesized):
    # Given the Standard machine's definition as synthesized, its references resolved to local resources
    template = synthesized.inline
    with LocalCloud() as cloud:
        business = cloud.add_function("business", lambda event, context: {"placed": event["orderId"]})
        tokens = local_resources(template, cloud, business.arn)
        definition = json.dumps(rendered(template, "/Standard/", tokens))
        machine = cloud.create_state_machine("from-cdk", definition, {})

        # When the same order runs twice
        first, second = cloud.run(machine, {"orderId": "o-cdk"}), cloud.run(machine, {"orderId": "o-cdk"})

    # Then the parent's state is the plain Task's, replayed identically; the Lambda ran once
    assert first.status == "SUCCEEDED", first.cause
    assert first.output == {"order": {"orderId": "o-cdk"}, "placed": {"confirmation": {"placed": "o-cdk"}}}
    assert second.output_json == first.output_json
    assert "PlaceOrder.Replay" in second.states
    assert cloud.lambdas.invocations("business") == 1


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"key_prefix": " "}, "IDEMPOTENCY_KEY_PREFIX: must not be blank"),
        ({"hash_function": "nope"}, "IDEMPOTENCY_HASH_FUNCTION"),
        (
            {
                "task": {
                    "Type": "Task",
                    "Resource": "arn:aws:states:::sqs:sendMessage",
                    "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "X"}],
                }
            },
            "add catches to the IdempotentStep",
        ),
        (
            {
                "task": {
                    "Type": "Task",
                    "Resource": "arn:aws:states:::sqs:sendMessage",
                    "TimeoutSecondsPath": "$.t",
                }
            },
            "has TimeoutSecondsPath",
        ),
    ],
)
def test_bad_settings_fail_synth_naming_the_step(changes: dict[str, Any], message: str):
    stack = cdk.Stack(cdk.App(), "Bad")
    table = IdempotencyTable(stack, "Records").table
    props: dict[str, Any] = {
        "task": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage"},
        "key_prefix": "p",
    }
    with pytest.raises(ConfigurationError) as raised:
        IdempotentStep(stack, "Step", table=table, **{**props, **changes})
    assert message in str(raised.value)
    assert "Bad/Step" in str(raised.value)


# -- the service stack's own inline workflows ------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "wrapped"),
    [("/OrderPipelineInline/", inline_workflows.order_pipeline), ("/SqsBatch/", inline_workflows.sqs_batch)],
)
def test_the_inline_workflows_are_express_and_their_definition_is_the_wrapped_file(
    service: Template, path, wrapped
):
    machine = logical_id(service, "AWS::StepFunctions::StateMachine", f"{path}StateMachine/")
    properties = service.to_json()["Resources"][machine]["Properties"]
    assert properties["StateMachineType"] == "EXPRESS"
    assert json.loads(properties["DefinitionString"]) == json.loads(wrapped(example_settings({})))
    assert set(properties["DefinitionSubstitutions"]) == {
        "IdempotencyKeyFunctionArn",
        "IdempotencyTableName",
        "PlaceOrderFunctionArn",
    }
    statements = role_statements(service, logical_id(service, "AWS::IAM::Role", f"{path}StateMachine/Role/"))
    actions = sorted(
        {a for s in statements for a in as_list(s["Action"]) if not a.startswith(("logs:", "xray:"))}
    )
    assert actions == sorted({*FLOW_ITEM_ACTIONS, "lambda:InvokeFunction"})


def test_the_orders_queue_reaches_the_batch_through_a_synchronous_pipe(service: Template):
    batch = logical_id(service, "AWS::StepFunctions::StateMachine", "/SqsBatch/StateMachine/")
    queue = logical_id(service, "AWS::SQS::Queue", "/Orders/Resource")
    service.has_resource_properties(
        "AWS::Pipes::Pipe",
        {
            "Source": {"Fn::GetAtt": [queue, "Arn"]},
            "Target": {"Ref": batch},
            "TargetParameters": {
                "StepFunctionStateMachineParameters": {"InvocationType": "REQUEST_RESPONSE"}
            },
        },
    )
    service.has_resource_properties(
        "AWS::SQS::Queue",
        {"RedrivePolicy": Match.object_like({"maxReceiveCount": 5}), "VisibilityTimeout": 360},
    )
    statements = role_statements(service, logical_id(service, "AWS::IAM::Role", "/OrdersPipeRole/"))
    by_action = {a: s["Resource"] for s in statements for a in as_list(s["Action"])}
    assert by_action == {
        "sqs:ReceiveMessage": {"Fn::GetAtt": [queue, "Arn"]},
        "sqs:DeleteMessage": {"Fn::GetAtt": [queue, "Arn"]},
        "sqs:GetQueueAttributes": {"Fn::GetAtt": [queue, "Arn"]},
        "states:StartSyncExecution": {"Ref": batch},
    }


def test_a_step_can_be_built_in_an_express_chain_with_catch_and_retry():
    # Given an IdempotentStep chained after and before other states
    stack = cdk.Stack(cdk.App(context={"aws:cdk:enable-path-metadata": True}), "Chain")
    table = IdempotencyTable(stack, "Records").table
    step = IdempotentStep(
        stack,
        "Step",
        task={"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage"},
        key_prefix="p",
        table=table,
    )
    step.add_catch(sfn.Pass(stack, "Timeout"), errors=["States.Timeout"])
    sfn.StateMachine(
        stack,
        "Machine",
        definition_body=sfn.DefinitionBody.from_chainable(
            sfn.Pass(stack, "Before").next(step).next(sfn.Succeed(stack, "After"))
        ),
        state_machine_type=sfn.StateMachineType.EXPRESS,
    )
    # Then a Catch on States.Timeout also names what the flow reports a timeout as
    states = rendered(Template.from_stack(stack), "/Machine/")["States"]
    assert states["Step"]["Catch"][0]["ErrorEquals"] == ["States.Timeout", "BusinessStepTimeoutError"]
    assert states["Step.Result"]["Next"] == "After"


def test_a_jsonata_chain_gets_the_jsonata_flow_and_it_runs(synthesized):
    # Given the user's JSONata chain with a LambdaInvoke.jsonata step, as synthesized
    template = synthesized.inline
    definition = rendered(template, "/Jsonata/")
    assert definition["QueryLanguage"] == "JSONata"
    (step,) = definition["States"].values()
    assert step["Type"] == "Parallel"
    assert step["Output"] == "{% $states.result[0] %}"
    assert "ConfirmOrder.ClaimComputedKey" in step["Branches"][0]["States"]

    # When it runs on the local engine, twice with the same order
    with LocalCloud() as cloud:
        business = cloud.add_function("business", lambda event, context: {"confirmed": event["orderId"]})
        tokens = local_resources(template, cloud, business.arn)
        machine = cloud.create_state_machine(
            "jsonata-from-cdk",
            json.dumps(rendered(template, "/Jsonata/", tokens)),
            {},
            workflow_type="EXPRESS",
        )
        first, second = (
            cloud.run_sync(machine, {"orderId": "o-j"}),
            cloud.run_sync(machine, {"orderId": "o-j"}),
        )

    # Then the Task's own Output is the step's, replayed identically; the Lambda ran once
    assert first.status == "SUCCEEDED", first.cause
    assert first.output == {"confirmed": "o-j"}
    assert second.output_json == first.output_json
    assert "ConfirmOrder.Replay" in second.states
    assert cloud.lambdas.invocations("business") == 1
