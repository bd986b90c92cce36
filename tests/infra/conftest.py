"""One CDK synth per test session: the service stack and a stack of two workflows sharing a table."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from sfn_idempotency.settings import example_settings
from stacks.idempotency_table import IdempotencyTable
from stacks.idempotent_workflow import IdempotentWorkflow
from stacks.lambda_code import RUNTIME, handler_code
from stacks.nag import acknowledge_lambda_findings
from stacks.service_stack import IdempotencyServiceStack

SERVICE_STACK = "SfnIdempotencyTest"
SHARED_TABLE_STACK = "SharedTableTest"


def build_shared_table_stack(app: cdk.App) -> cdk.Stack:
    """Two workflows, one of them Express, on one customer-managed-key table."""
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
