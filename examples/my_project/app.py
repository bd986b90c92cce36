#!/usr/bin/env python3
"""A user's CDK app: their own Lambda made idempotent with sfn_idempotency.cdk.IdempotentWorkflow."""

from pathlib import Path

import aws_cdk as cdk
from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from sfn_idempotency.cdk import RUNTIME, IdempotentWorkflow

FUNCTIONS_DIR = Path(__file__).resolve().parent / "functions"
CHARGE_TIMEOUT = Duration.seconds(20)


class PaymentsStack(cdk.Stack):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        charge = lambda_.Function(
            self,
            "Charge",
            runtime=RUNTIME,
            handler="charge.handler.handler",
            code=lambda_.Code.from_asset(str(FUNCTIONS_DIR), exclude=["**/__pycache__"]),
            timeout=CHARGE_TIMEOUT,
        )
        IdempotentWorkflow(
            self,
            "Payments",
            business_function=charge,
            key_prefix="payments",
            event_key_jmespath="paymentId",
            business_timeout=CHARGE_TIMEOUT,
        )


app = cdk.App()  # the output folder comes from CDK_OUTDIR (the cdk CLI sets it; default cdk.out)
PaymentsStack(app, "MyPayments")
app.synth()
