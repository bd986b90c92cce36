"""One CDK synth per test session: the service stack and a stack of three workflows sharing a table."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from sfn_idempotency.cdk.idempotency_table import IdempotencyTable
from sfn_idempotency.cdk.idempotent_workflow import IdempotentWorkflow
from sfn_idempotency.cdk.lambda_code import RUNTIME, handler_code
from sfn_idempotency.cdk.nag import acknowledge_lambda_findings
from sfn_idempotency.settings import example_settings
from stacks.service_stack import IdempotencyServiceStack
from tests.business_steps import SQS_SEND_STEP

SERVICE_STACK = "SfnIdempotencyTest"
SHARED_TABLE_STACK = "SharedTableTest"


def build_shared_table_stack(app: cdk.App) -> cdk.Stack:
    """Three workflows on one customer-managed-key table: a Lambda one, an Express one, an SQS one."""
    stack = cdk.Stack(app, SHARED_TABLE_STACK)
    key = kms.Key(stack, "TableKey", enable_key_rotation=True)
    table = IdempotencyTable(
        stack, "Shared", removal_policy=cdk.RemovalPolicy.DESTROY, encryption_key=key
    ).table
    business = lambda_.Function(
        stack,
        "Business",
        runtime=RUNTIME,
        handler="place_order.handler.handler",
        code=handler_code("place_order"),
    )
    acknowledge_lambda_findings(business)
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


@dataclass(frozen=True)
class Synthesized:
    assembly_dir: Path
    service: Template
    shared: Template
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
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assembly = app.synth()  # raises when cdk-nag reports an unacknowledged finding
    return Synthesized(
        assembly_dir=outdir,
        service=Template.from_json(assembly.get_stack_by_name(SERVICE_STACK).template),
        shared=Template.from_json(assembly.get_stack_by_name(SHARED_TABLE_STACK).template),
        validation_report=json.loads((outdir / "validation-report.json").read_text()),
    )


@pytest.fixture(scope="session")
def service(synthesized: Synthesized) -> Template:
    return synthesized.service
