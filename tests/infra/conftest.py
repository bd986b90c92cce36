"""One CDK synth per test session: the service stack, a stack of three workflows sharing a table, and
a user's stack with inline idempotent steps."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from sfn_idempotency.cdk import IdempotentStep
from sfn_idempotency.cdk.idempotency_table import IdempotencyTable
from sfn_idempotency.cdk.idempotent_workflow import IdempotentWorkflow
from sfn_idempotency.cdk.lambda_code import RUNTIME, handler_code
from sfn_idempotency.cdk.nag import acknowledge_lambda_findings, acknowledge_state_machine_findings
from sfn_idempotency.settings import example_settings
from stacks.service_stack import IdempotencyServiceStack
from tests.business_steps import SQS_SEND_STEP

SERVICE_STACK = "SfnIdempotencyTest"
SHARED_TABLE_STACK = "SharedTableTest"
INLINE_STEP_STACK = "InlineStepTest"
REST_API_STACK = "RestApiTest"
REST_API_FUNCTIONS = Path(__file__).parent / "rest_api_functions"
IN_PROGRESS = "IdempotencyAlreadyInProgressError"


def place_order_function(stack: cdk.Stack) -> lambda_.Function:
    function = lambda_.Function(
        stack,
        "Business",
        runtime=RUNTIME,
        handler="place_order.handler.handler",
        code=handler_code("place_order"),
    )
    acknowledge_lambda_findings(function)
    return function


def build_shared_table_stack(app: cdk.App) -> cdk.Stack:
    """Three workflows on one customer-managed-key table: a Lambda one, an Express one, an SQS one."""
    stack = cdk.Stack(app, SHARED_TABLE_STACK)
    key = kms.Key(stack, "TableKey", enable_key_rotation=True)
    table = IdempotencyTable(
        stack, "Shared", removal_policy=cdk.RemovalPolicy.DESTROY, encryption_key=key
    ).table
    business = place_order_function(stack)
    IdempotentWorkflow(stack, "Payments", business_function=business, key_prefix="payments", table=table)
    orders = sqs.Queue(stack, "Orders", encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True)
    cdk.Validations.of(orders).acknowledge(
        cdk.Acknowledgment(
            id="AwsSolutions::AwsSolutions-SQS3", reason="A synth fixture; no consumer, no DLQ."
        )
    )
    IdempotentWorkflow(
        stack,
        "Shipments",
        key_prefix="shipments",
        business_step=SQS_SEND_STEP,
        business_step_substitutions={"OrdersQueueUrl": orders.queue_url},
        business_step_policy=[iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[orders.queue_arn])],
        table=table,
    )
    IdempotentWorkflow(
        stack,
        "Refunds",
        business_function=business,
        key_prefix="refunds",
        event_key_jmespath="refundId",
        table=table,
        workflow_type=sfn.StateMachineType.EXPRESS,
    )
    return stack


def _user_state_machine(
    stack: cdk.Stack,
    name: str,
    chain: sfn.IChainable,
    workflow_type: sfn.StateMachineType,
    query_language: sfn.QueryLanguage | None = None,
) -> sfn.StateMachine:
    """A state machine as a user would write it: logged and traced (cdk-nag asks for both)."""
    machine = sfn.StateMachine(
        stack,
        name,
        definition_body=sfn.DefinitionBody.from_chainable(chain),
        state_machine_type=workflow_type,
        query_language=query_language,
        tracing_enabled=True,
        logs=sfn.LogOptions(destination=logs.LogGroup(stack, f"{name}Logs"), level=sfn.LogLevel.ERROR),
    )
    acknowledge_state_machine_findings(machine)
    return machine


def build_inline_step_stack(app: cdk.App) -> cdk.Stack:
    """A user's own chains with one Task each made idempotent inline: a LambdaInvoke in a Standard
    machine (Catch and Retry on the step), and an SQS send given as ASL in an Express machine."""
    stack = cdk.Stack(app, INLINE_STEP_STACK)
    table = IdempotencyTable(stack, "Records", removal_policy=cdk.RemovalPolicy.DESTROY).table
    business = place_order_function(stack)
    invoke = tasks.LambdaInvoke(
        stack,
        "Invoke",
        lambda_function=business,
        payload=sfn.TaskInput.from_json_path_at("$.order"),
        result_selector={"confirmation.$": "$.Payload"},
        result_path="$.placed",
    )
    place = IdempotentStep(
        stack, "PlaceOrder", task=invoke, table=table, key_prefix="orders", event_key_jmespath="order.orderId"
    )
    place.add_retry(errors=[IN_PROGRESS], interval=cdk.Duration.seconds(2), max_attempts=3, backoff_rate=2)
    place.add_catch(sfn.Pass(stack, "Rejected"), errors=["InvalidOrderError"], result_path="$.rejection")
    prepare = sfn.Pass(stack, "Prepare", parameters={"order.$": "$"})
    standard = _user_state_machine(
        stack, "Standard", prepare.next(place).next(sfn.Pass(stack, "Confirm")), sfn.StateMachineType.STANDARD
    )
    # CDK's LambdaInvoke grants the function's versions and aliases too (ARN:*): the user's Task's own
    # rights, which the step passes on unchanged.
    cdk.Validations.of(standard).acknowledge(
        cdk.Acknowledgment(
            id=f"AwsSolutions::AwsSolutions-IAM5[Resource::<{stack.get_logical_id(business.node.default_child)}.Arn>:*]",
            reason="CDK's LambdaInvoke grants the business function's versions and aliases.",
        )
    )
    queue = sqs.Queue(stack, "Shipments", encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True)
    cdk.Validations.of(queue).acknowledge(
        cdk.Acknowledgment(
            id="AwsSolutions::AwsSolutions-SQS3", reason="A synth fixture; no consumer, no DLQ."
        )
    )
    ship = IdempotentStep(
        stack,
        "Ship",
        task={
            "Type": "Task",
            "Resource": "arn:aws:states:::sqs:sendMessage",
            "Parameters": {"QueueUrl": queue.queue_url, "MessageBody.$": "$"},
            "ResultSelector": {"messageId.$": "$.MessageId"},
            "TimeoutSeconds": 20,
        },
        task_policies=[iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[queue.queue_arn])],
        table=table,
        key_prefix="shipments",
        event_key_jmespath="shipmentId",
        express=True,  # its machine is Express
    )
    _user_state_machine(stack, "Express", ship, sfn.StateMachineType.EXPRESS)
    # A JSONata chain: the step gets the JSONata flow, one Parallel that unwraps its own result
    invoke_jsonata = tasks.LambdaInvoke.jsonata(
        stack, "InvokeJsonata", lambda_function=business, outputs="{% $states.result.Payload %}"
    )
    confirm = IdempotentStep(
        stack,
        "ConfirmStep",
        state_name="ConfirmOrder",
        task=invoke_jsonata,
        table=table,
        key_prefix="confirmations",
        event_key_jmespath="orderId",
    )
    jsonata = _user_state_machine(
        stack, "Jsonata", confirm, sfn.StateMachineType.EXPRESS, query_language=sfn.QueryLanguage.JSONATA
    )
    cdk.Validations.of(jsonata).acknowledge(
        cdk.Acknowledgment(
            id=f"AwsSolutions::AwsSolutions-IAM5[Resource::<{stack.get_logical_id(business.node.default_child)}.Arn>:*]",
            reason="CDK's LambdaInvoke grants the business function's versions and aliases.",
        )
    )
    return stack


def build_rest_api_stack(app: cdk.App) -> cdk.Stack:
    """A REST API as CDK's own constructs make it, as a user writes it: an Express workflow behind
    CDK's default Step Functions mapping templates on several verbs and a path parameter, a root
    ``ANY`` with CDK's default (MOCK) integration, and a Lambda proxy on a greedy path."""
    stack = cdk.Stack(app, REST_API_STACK)
    echo = sfn.StateMachine(
        stack,
        "Echo",
        definition_body=sfn.DefinitionBody.from_chainable(sfn.Pass(stack, "Answer")),
        state_machine_type=sfn.StateMachineType.EXPRESS,
    )
    api = apigateway.RestApi(stack, "Api")
    start = apigateway.StepFunctionsIntegration.start_execution(echo)
    orders = api.root.add_resource("orders")
    for verb in ("GET", "POST"):
        orders.add_method(verb, start)
    order = orders.add_resource("{orderId}")
    for verb in ("GET", "DELETE"):
        order.add_method(verb, start)
    api.root.add_method("ANY")
    proxy = lambda_.Function(
        stack,
        "Proxy",
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="proxy.handler",
        code=lambda_.Code.from_asset(str(REST_API_FUNCTIONS)),
    )
    api.root.add_resource("files").add_proxy(default_integration=apigateway.LambdaIntegration(proxy))
    return stack


@dataclass(frozen=True)
class Synthesized:
    assembly_dir: Path
    service: Template
    shared: Template
    inline: Template
    validation_report: dict[str, Any]

    def asset_file(self, name: str) -> Path:
        return self.assembly_dir / f"asset.{name}"


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    outdir = tmp_path_factory.mktemp("cdk.out")
    # Path metadata lets the tests find resources by construct path, never by hashed logical id.
    app = cdk.App(outdir=str(outdir), context={"aws:cdk:enable-path-metadata": True})
    IdempotencyServiceStack(app, SERVICE_STACK, settings=example_settings({}))
    build_shared_table_stack(app)
    build_inline_step_stack(app)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assembly = app.synth()  # raises when cdk-nag reports an unacknowledged finding
    return Synthesized(
        assembly_dir=outdir,
        service=Template.from_json(assembly.get_stack_by_name(SERVICE_STACK).template),
        shared=Template.from_json(assembly.get_stack_by_name(SHARED_TABLE_STACK).template),
        inline=Template.from_json(assembly.get_stack_by_name(INLINE_STEP_STACK).template),
        validation_report=json.loads((outdir / "validation-report.json").read_text()),
    )


@pytest.fixture(scope="session")
def rest_api_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The REST API app's cloud assembly (an app of its own: cdk-nag judges our stacks, not it)."""
    outdir = tmp_path_factory.mktemp("rest-api.cdk.out")
    app = cdk.App(outdir=str(outdir))
    build_rest_api_stack(app)
    app.synth()
    return outdir


@pytest.fixture(scope="session")
def service(synthesized: Synthesized) -> Template:
    return synthesized.service
