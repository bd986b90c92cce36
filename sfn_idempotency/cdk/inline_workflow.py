"""InlineWorkflow: a state machine from an ASL definition whose Tasks were wrapped with wrap_state."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from sfn_idempotency.cdk.idempotency_metrics import IdempotencyMetrics
from sfn_idempotency.cdk.idempotent_step import IdempotencyKeyFunction, inline_step_statements
from sfn_idempotency.cdk.state_machines import build_state_machine, state_machine_logs
from sfn_idempotency.flow.wrapped_steps import wrapped_steps
from sfn_idempotency.lambdas.compute_key.errors import ConfigurationError
from sfn_idempotency.wrap import KEY_FUNCTION_PLACEHOLDER, SEPARATOR, TABLE_PLACEHOLDER


class InlineWorkflow(Construct):
    """``definition`` is ASL text from ``wrap_state`` (or the ``sfn-idempotency wrap`` command);
    ``substitutions`` fill its own placeholders, ``policy_statements`` grant its own Tasks. The
    shared placeholders are the stack's key function (or ``key_function``) and ``table``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        definition: str,
        table: dynamodb.ITable,
        substitutions: Mapping[str, str] | None = None,
        policy_statements: Sequence[iam.PolicyStatement] = (),
        key_function: lambda_.IFunction | None = None,
        workflow_type: sfn.StateMachineType = sfn.StateMachineType.STANDARD,
        log_execution_data: bool = False,
        metrics: bool = True,
        dashboard: bool = True,
        alarms: bool = True,
    ) -> None:
        """``metrics``, ``dashboard``, ``alarms``: each wrapped step's outcomes (IdempotencyMetrics)."""
        super().__init__(scope, construct_id)
        steps = wrapped_steps(json.loads(definition))
        if not steps:
            raise ConfigurationError(
                f"{self.node.path}: the definition has no step wrapped by wrap_state; "
                "use build_state_machine for a plain one"
            )
        self.key_function = key_function or IdempotencyKeyFunction.of(self).function
        self.state_machine = build_state_machine(
            self,
            definition,
            {
                **(substitutions or {}),
                KEY_FUNCTION_PLACEHOLDER: self.key_function.function_arn,
                TABLE_PLACEHOLDER: table.table_name,
            },
            workflow_type=workflow_type,
            log_execution_data=log_execution_data,
            log_level=sfn.LogLevel.ALL if metrics else sfn.LogLevel.ERROR,
        )
        self.metrics = (
            IdempotencyMetrics.of(
                self,
                log_group=state_machine_logs(self),
                steps={prefix: f"{state}{SEPARATOR}" for state, prefix in steps.items()},
                key_function=self.key_function,
                dashboard=dashboard,
                alarms=alarms,
            )
            if metrics
            else None
        )
        for statement in [*inline_step_statements(table, self.key_function), *policy_statements]:
            self.state_machine.add_to_role_policy(statement)
