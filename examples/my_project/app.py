#!/usr/bin/env python3
"""A user's CDK app: their own Lambda made idempotent with sfn_idempotency.cdk.IdempotentWorkflow,
the same Lambda as one idempotent step of their own Express chain (IdempotentStep), and as the
step of a Map that settles a batch of payments, each once; an alarm on failed payments."""

from pathlib import Path

import aws_cdk as cdk
from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from sfn_idempotency.cdk import RUNTIME, IdempotentStep, IdempotentWorkflow

FUNCTIONS_DIR = Path(__file__).resolve().parent / "functions"
CHARGE_TIMEOUT = Duration.seconds(20)
SETTLE_CONCURRENCY = 2  # payments settled at once


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
        payments = IdempotentWorkflow(
            self,
            "Payments",
            business_function=charge,
            key_prefix="payments",
            event_key_jmespath="paymentId",
            business_timeout=CHARGE_TIMEOUT,
        )
        # My own checkout chain, Express: only its Charge step runs once per paymentId. (express=True:
        # an Express machine started synchronously has no RedriveCount in its context.)
        step = IdempotentStep(
            self,
            "ChargeStep",
            state_name="Charge",
            task=tasks.LambdaInvoke(self, "InvokeCharge", lambda_function=charge, payload_response_only=True),
            table=payments.table,
            key_prefix="checkout",
            event_key_jmespath="paymentId",
            timeout=CHARGE_TIMEOUT,
            express=True,
        )
        step.add_retry(errors=["IdempotencyAlreadyInProgressError"], interval=Duration.seconds(2))
        sfn.StateMachine(
            self,
            "Checkout",
            definition_body=sfn.DefinitionBody.from_chainable(step.next(sfn.Succeed(self, "Done"))),
            state_machine_type=sfn.StateMachineType.EXPRESS,
        )
        # My own settlement run: a Map over a batch; each payment is charged once, across batches.
        settle = IdempotentStep(
            self,
            "SettleStep",
            state_name="Settle",
            task=tasks.LambdaInvoke(self, "InvokeSettle", lambda_function=charge, payload_response_only=True),
            table=payments.table,
            key_prefix="settlement",
            event_key_jmespath="paymentId",
            timeout=CHARGE_TIMEOUT,
        )
        settle.add_retry(errors=["IdempotencyAlreadyInProgressError"], interval=Duration.seconds(1))
        each_payment = sfn.Map(
            self, "EachPayment", items_path="$.payments", max_concurrency=SETTLE_CONCURRENCY
        )
        sfn.StateMachine(
            self,
            "Settlement",
            definition_body=sfn.DefinitionBody.from_chainable(each_payment.item_processor(settle)),
        )
        cloudwatch.Alarm(
            self,
            "PaymentsFailing",
            metric=payments.state_machine.metric_failed(),
            threshold=1,
            evaluation_periods=1,
        )


app = cdk.App()  # the output folder comes from CDK_OUTDIR (the cdk CLI sets it; default cdk.out)
PaymentsStack(app, "MyPayments")
app.synth()
