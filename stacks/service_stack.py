"""The deployable service: the example order workflow, its table, and what an operator needs."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from compute_key.settings import IdempotencySettings
from constructs import Construct

from stacks.idempotency_table import IdempotencyTable
from stacks.idempotent_workflow import LOG_RETENTION, IdempotentWorkflow
from stacks.lambda_code import RUNTIME, handler_code, powertools_layer
from stacks.nag import acknowledge_lambda_findings

BUSINESS_MEMORY_MB = 256


class IdempotencyServiceStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: IdempotencySettings,
        workflow_type: sfn.StateMachineType = sfn.StateMachineType.STANDARD,
        table_removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
        table_encryption_key: kms.IKey | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.table = IdempotencyTable(
            self, "Idempotency", removal_policy=table_removal_policy, encryption_key=table_encryption_key
        ).table
        self.place_order = self._build_place_order_function(settings)
        self.workflow = IdempotentWorkflow(
            self,
            "OrderWorkflow",
            business_function=self.place_order,
            key_prefix=settings.key_prefix,
            event_key_jmespath=settings.event_key_jmespath,
            payload_validation_jmespath=settings.payload_validation_jmespath,
            expires_after=Duration.seconds(settings.expires_after_seconds),
            hash_function=settings.hash_function,
            raise_on_no_key=settings.raise_on_no_key,
            business_timeout=Duration.seconds(settings.timeout_seconds),
            workflow_type=workflow_type,
            table=self.table,
        )
        CfnOutput(self, "StateMachineArn", value=self.workflow.state_machine.state_machine_arn)
        CfnOutput(self, "TableName", value=self.table.table_name)

    def _build_place_order_function(self, settings: IdempotencySettings) -> lambda_.Function:
        function = lambda_.Function(
            self,
            "PlaceOrderFunction",
            description="Example business step: places an order",
            runtime=RUNTIME,
            handler="place_order.handler.handler",
            code=handler_code("place_order"),
            layers=[powertools_layer(self)],
            # The Lambda's own timeout is the state's timeout: the lease never outlives the work.
            timeout=Duration.seconds(settings.timeout_seconds),
            memory_size=BUSINESS_MEMORY_MB,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=logs.LogGroup(self, "PlaceOrderLogs", retention=LOG_RETENTION),
        )
        acknowledge_lambda_findings(function)
        return function
