"""The deployable service: the order workflows, their shared table, and what an operator needs."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from sfn_idempotency.cdk import (
    RUNTIME,
    EventTrigger,
    IdempotencyTable,
    IdempotentHttpApi,
    IdempotentWorkflow,
    InlineWorkflow,
    NestedWorkflow,
    handler_code,
    powertools_layer,
)
from sfn_idempotency.cdk.event_trigger import dead_letter_queue
from sfn_idempotency.cdk.nag import acknowledge_lambda_findings
from sfn_idempotency.cdk.state_machines import LOG_RETENTION
from sfn_idempotency.flow import inline_workflows
from sfn_idempotency.flow.inline_workflows import BUSINESS_FUNCTION_PLACEHOLDER
from sfn_idempotency.flow.patterns import load_pattern
from sfn_idempotency.flow.resources import ORDER_PLACED_PATTERN, ORDER_WORKFLOW_ASL
from sfn_idempotency.lambdas.compute_key.settings import IdempotencySettings
from sfn_idempotency.settings import HTTP_KEY_PREFIX_SUFFIX, ORDER_ERROR_STATUSES, ORDER_EVENT_KEY_JMESPATH

BUSINESS_MEMORY_MB = 256
# Longer than an Express execution can run (5 min), so a batch in flight is never delivered twice.
ORDERS_VISIBILITY_TIMEOUT = Duration.minutes(6)
MAX_RECEIVES = 5
PIPE_BATCH_SIZE = 10


class IdempotencyServiceStack(Stack):
    """One table and one ``place_order`` Lambda behind every workflow, all sharing keys (same prefix,
    same order id): direct starts keyed on ``orderId``, EventBridge events keyed on
    ``detail.orderId``; the order pipeline nesting the direct workflow; the same pipeline with
    PlaceOrder wrapped inline (Express); and the SQS batch (Express, inline, keyed on the body's
    ``orderId``) behind an EventBridge pipe from the orders queue."""

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
        EventTrigger(
            self,
            "OrderPlacedTrigger",
            pattern=load_pattern(ORDER_PLACED_PATTERN),
            target=self.event_workflow.state_machine,
        )
        pipeline = NestedWorkflow(
            self, "OrderPipeline", asl=ORDER_WORKFLOW_ASL, child=self.workflow.state_machine
        )
        # The same pipeline with PlaceOrder wrapped inline, and the SQS batch: Express, no nesting.
        inline_pipeline = self._build_inline_workflow(
            "OrderPipelineInline", inline_workflows.order_pipeline(settings)
        )
        batch = self._build_inline_workflow("SqsBatch", inline_workflows.sqs_batch(settings))
        self.orders_queue = self._build_orders_pipe(batch.state_machine)
        # The HTTP front door: POST /orders with an Idempotency-Key header, keys of its own.
        http_api = IdempotentHttpApi(
            self,
            "OrdersHttpApi",
            business_function=self.place_order,
            table=self.table,
            key_prefix=f"{settings.key_prefix}{HTTP_KEY_PREFIX_SUFFIX}",
            timeout=Duration.seconds(settings.timeout_seconds),
            error_statuses=ORDER_ERROR_STATUSES,
        )
        CfnOutput(self, "StateMachineArn", value=self.workflow.state_machine.state_machine_arn)
        CfnOutput(self, "EventStateMachineArn", value=self.event_workflow.state_machine.state_machine_arn)
        CfnOutput(self, "OrderPipelineArn", value=pipeline.state_machine.state_machine_arn)
        CfnOutput(self, "OrderPipelineInlineArn", value=inline_pipeline.state_machine.state_machine_arn)
        CfnOutput(self, "SqsBatchStateMachineArn", value=batch.state_machine.state_machine_arn)
        CfnOutput(self, "OrdersQueueUrl", value=self.orders_queue.queue_url)
        CfnOutput(self, "OrdersApiUrl", value=http_api.url)
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

    def _build_inline_workflow(self, construct_id: str, definition: str) -> InlineWorkflow:
        """An Express workflow whose PlaceOrder is wrapped inline: the stack's shared key Lambda, the
        table and ``place_order`` (its records are the direct workflow's)."""
        return InlineWorkflow(
            self,
            construct_id,
            definition=definition,
            table=self.table,
            substitutions={BUSINESS_FUNCTION_PLACEHOLDER: self.place_order.function_arn},
            policy_statements=[
                iam.PolicyStatement(
                    actions=["lambda:InvokeFunction"], resources=[self.place_order.function_arn]
                )
            ],
            workflow_type=sfn.StateMachineType.EXPRESS,
        )

    def _build_orders_pipe(self, batch: sfn.StateMachine) -> sqs.Queue:
        """An SQS queue whose batches EventBridge Pipes hands to the batch workflow synchronously
        (REQUEST_RESPONSE, which needs an Express target): the workflow's batchItemFailures tell Pipes
        which messages to leave for redelivery; after MAX_RECEIVES they go to the dead-letter queue."""
        dead_letters = dead_letter_queue(self, "OrdersDeadLetters")
        queue = sqs.Queue(
            self,
            "Orders",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=ORDERS_VISIBILITY_TIMEOUT,
            dead_letter_queue=sqs.DeadLetterQueue(queue=dead_letters, max_receive_count=MAX_RECEIVES),
        )
        role = iam.Role(self, "OrdersPipeRole", assumed_by=iam.ServicePrincipal("pipes.amazonaws.com"))
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"],
                resources=[queue.queue_arn],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(actions=["states:StartSyncExecution"], resources=[batch.state_machine_arn])
        )
        pipes.CfnPipe(
            self,
            "OrdersPipe",
            role_arn=role.role_arn,
            source=queue.queue_arn,
            source_parameters=pipes.CfnPipe.PipeSourceParametersProperty(
                sqs_queue_parameters=pipes.CfnPipe.PipeSourceSqsQueueParametersProperty(
                    batch_size=PIPE_BATCH_SIZE
                )
            ),
            target=batch.state_machine_arn,
            target_parameters=pipes.CfnPipe.PipeTargetParametersProperty(
                step_function_state_machine_parameters=pipes.CfnPipe.PipeTargetStateMachineParametersProperty(
                    invocation_type="REQUEST_RESPONSE"
                )
            ),
        )
        return queue

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
