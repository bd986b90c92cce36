"""The deployable service: the order workflows, their shared table, and what an operator needs."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from sfn_idempotency.cdk import (
    RUNTIME,
    EventTrigger,
    IdempotencyTable,
    IdempotentWorkflow,
    NestedWorkflow,
    handler_code,
    powertools_layer,
)
from sfn_idempotency.cdk.nag import acknowledge_lambda_findings
from sfn_idempotency.cdk.state_machines import LOG_RETENTION
from sfn_idempotency.lambdas.compute_key.settings import IdempotencySettings
from sfn_idempotency.patterns import load_pattern
from sfn_idempotency.resources import ORDER_PLACED_PATTERN, ORDER_WORKFLOW_ASL, SQS_BATCH_ASL
from sfn_idempotency.settings import ORDER_EVENT_KEY_JMESPATH, ORDER_MESSAGE_KEY_JMESPATH

BUSINESS_MEMORY_MB = 256


class IdempotencyServiceStack(Stack):
    """One table and one ``place_order`` Lambda behind three idempotent workflows that share keys
    (same prefix, same order id): direct starts keyed on ``orderId``, EventBridge events keyed on
    ``detail.orderId``, SQS records keyed on the body's ``orderId``. Plus the order pipeline and the
    SQS batch workflow that nest them."""

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
        self.settings = settings
        self.workflow_type = workflow_type
        self.table = IdempotencyTable(
            self, "Idempotency", removal_policy=table_removal_policy, encryption_key=table_encryption_key
        ).table
        self.place_order = self._build_place_order_function()
        self.workflow = self._build_workflow("OrderWorkflow", settings.event_key_jmespath)
        self.event_workflow = self._build_workflow("OrderEventsWorkflow", ORDER_EVENT_KEY_JMESPATH)
        self.message_workflow = self._build_workflow("OrderMessagesWorkflow", ORDER_MESSAGE_KEY_JMESPATH)
        EventTrigger(
            self,
            "OrderPlacedTrigger",
            pattern=load_pattern(ORDER_PLACED_PATTERN),
            target=self.event_workflow.state_machine,
        )
        pipeline = NestedWorkflow(
            self, "OrderPipeline", asl=ORDER_WORKFLOW_ASL, child=self.workflow.state_machine
        )
        batch = NestedWorkflow(self, "SqsBatch", asl=SQS_BATCH_ASL, child=self.message_workflow.state_machine)
        CfnOutput(self, "StateMachineArn", value=self.workflow.state_machine.state_machine_arn)
        CfnOutput(self, "EventStateMachineArn", value=self.event_workflow.state_machine.state_machine_arn)
        CfnOutput(self, "OrderPipelineArn", value=pipeline.state_machine.state_machine_arn)
        CfnOutput(self, "SqsBatchStateMachineArn", value=batch.state_machine.state_machine_arn)
        CfnOutput(self, "TableName", value=self.table.table_name)

    def _build_workflow(self, construct_id: str, event_key_jmespath: str) -> IdempotentWorkflow:
        settings = self.settings
        return IdempotentWorkflow(
            self,
            construct_id,
            business_function=self.place_order,
            key_prefix=settings.key_prefix,
            event_key_jmespath=event_key_jmespath,
            payload_validation_jmespath=settings.payload_validation_jmespath,
            expires_after=Duration.seconds(settings.expires_after_seconds),
            hash_function=settings.hash_function,
            raise_on_no_key=settings.raise_on_no_key,
            business_timeout=Duration.seconds(settings.timeout_seconds),
            workflow_type=self.workflow_type,
            table=self.table,
        )

    def _build_place_order_function(self) -> lambda_.Function:
        function = lambda_.Function(
            self,
            "PlaceOrderFunction",
            description="Example business step: places an order",
            runtime=RUNTIME,
            handler="place_order.handler.handler",
            code=handler_code("place_order"),
            layers=[powertools_layer(self)],
            # The Lambda's own timeout is the state's timeout: the lease never outlives the work.
            timeout=Duration.seconds(self.settings.timeout_seconds),
            memory_size=BUSINESS_MEMORY_MB,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=logs.LogGroup(self, "PlaceOrderLogs", retention=LOG_RETENTION),
        )
        acknowledge_lambda_findings(function)
        return function
