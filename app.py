#!/usr/bin/env python3
"""CDK app: `make synth` or `npx cdk synth` (offline, no credentials, no Docker).

Context: `stackName` (default SfnIdempotency) and `tableRemovalPolicy` (`retain`, the default, or
`destroy`, which `make aws-check` uses for its short-lived stack)."""

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from sfn_idempotency.settings import example_settings
from stacks.service_stack import IdempotencyServiceStack

REMOVAL_POLICIES = {"retain": cdk.RemovalPolicy.RETAIN, "destroy": cdk.RemovalPolicy.DESTROY}

app = cdk.App()
IdempotencyServiceStack(
    app,
    app.node.try_get_context("stackName") or "SfnIdempotency",
    settings=example_settings(),
    table_removal_policy=REMOVAL_POLICIES[app.node.try_get_context("tableRemovalPolicy") or "retain"],
)
cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
app.synth()
