"""A workflow that runs an idempotent workflow as a child with ``states:startExecution.sync:2``."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from sfn_idempotency.cdk.nag import acknowledge_execution_wildcard
from sfn_idempotency.cdk.state_machines import build_state_machine, executions_of
from sfn_idempotency.flow.definitions import NESTED_WORKFLOW_PLACEHOLDER

# Step Functions' managed rule that tells a .sync caller when its child has ended.
SYNC_EVENTS_RULE = "StepFunctionsGetEventsForStepFunctionsExecutionRule"


class NestedWorkflow(Construct):
    """``asl`` names the child as ``${IdempotencyStateMachineArn}`` (order_workflow, sqs_batch)."""

    def __init__(self, scope: Construct, construct_id: str, *, asl: Path, child: sfn.StateMachine) -> None:
        super().__init__(scope, construct_id)
        self.state_machine = build_state_machine(
            self, asl, {NESTED_WORKFLOW_PLACEHOLDER: child.state_machine_arn}
        )
        self._grant_sync_execution(child)

    def _grant_sync_execution(self, child: sfn.StateMachine) -> None:
        """The rights ``.sync`` needs, as documented: start the child, follow and stop its executions,
        and manage the events rule through which Step Functions learns that the child ended."""
        child_name, child_executions = executions_of(child)
        sync_rule = Stack.of(self).format_arn(
            service="events", resource="rule", resource_name=SYNC_EVENTS_RULE
        )
        for statement in (
            iam.PolicyStatement(actions=["states:StartExecution"], resources=[child.state_machine_arn]),
            iam.PolicyStatement(
                actions=["states:DescribeExecution", "states:StopExecution"], resources=[child_executions]
            ),
            iam.PolicyStatement(
                actions=["events:PutTargets", "events:PutRule", "events:DescribeRule"], resources=[sync_rule]
            ),
        ):
            self.state_machine.add_to_role_policy(statement)
        acknowledge_execution_wildcard(
            self.state_machine,
            child_name,
            "startExecution.sync follows and may stop the child's executions, whose names are "
            "generated: the documented resource is the child's execution ARN prefix with '*'.",
        )
