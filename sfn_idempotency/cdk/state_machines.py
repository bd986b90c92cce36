"""State machines from the ASL files in statemachines/: placeholders checked, logged, traced."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from aws_cdk import Arn, ArnFormat, Stack
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from sfn_idempotency.cdk.nag import acknowledge_state_machine_findings
from sfn_idempotency.flow.definitions import placeholders
from sfn_idempotency.flow.redrive_fence import RUN_PATH, for_express
from sfn_idempotency.lambdas.compute_key.errors import ConfigurationError

LOG_RETENTION = logs.RetentionDays.ONE_MONTH
LOG_GROUP_ID = "StateMachineLogs"


def build_state_machine(
    scope: Construct,
    definition: Path | str,
    substitutions: Mapping[str, str],
    *,
    workflow_type: sfn.StateMachineType = sfn.StateMachineType.STANDARD,
    log_execution_data: bool = False,
    log_level: sfn.LogLevel = sfn.LogLevel.ERROR,
) -> sfn.StateMachine:
    """``definition`` is an ASL file (the normal case: ``DefinitionBody.from_file``) or ASL text derived
    from one; an Express machine's reads no run from its context (redrive_fence.for_express). A placeholder without a substitution, or a substitution without a placeholder, fails synth.
    ``log_level`` ALL logs every state entered, which the idempotency metrics count (state_machine_logs
    finds the group)."""
    text = definition.read_text(encoding="utf-8") if isinstance(definition, Path) else definition
    if workflow_type == sfn.StateMachineType.EXPRESS and RUN_PATH in text:
        definition = text = for_express(text)  # no run in a synchronous Express context
    expected = placeholders(text)
    if expected != substitutions.keys():
        source = definition.name if isinstance(definition, Path) else "the definition"
        raise ConfigurationError(
            f"{scope.node.path}: {source} placeholders {sorted(expected)} do not match "
            f"the substitutions {sorted(substitutions)}"
        )
    body = (
        sfn.DefinitionBody.from_file(str(definition))
        if isinstance(definition, Path)
        else sfn.DefinitionBody.from_string(definition)
    )
    state_machine = sfn.StateMachine(
        scope,
        "StateMachine",
        definition_body=body,
        definition_substitutions=dict(substitutions),
        state_machine_type=workflow_type,
        tracing_enabled=True,
        logs=sfn.LogOptions(
            destination=logs.LogGroup(scope, LOG_GROUP_ID, retention=LOG_RETENTION),
            level=log_level,
            # Results may hold personal data: keep inputs and outputs out of the logs by default.
            include_execution_data=log_execution_data,
        ),
    )
    acknowledge_state_machine_findings(state_machine)
    return state_machine


def state_machine_logs(scope: Construct) -> logs.LogGroup:
    """The log group build_state_machine made in ``scope``."""
    group = scope.node.find_child(LOG_GROUP_ID)
    if not isinstance(group, logs.LogGroup):
        raise TypeError(f"{scope.node.path}/{LOG_GROUP_ID} is not the state machine's log group")
    return group


def executions_of(state_machine: sfn.IStateMachine) -> tuple[str, str]:
    """(the machine's name, the ARN pattern of its executions, ``execution:<name>:*``): what a role
    that follows executions it cannot name in advance is granted."""
    name = str(Arn.split(state_machine.state_machine_arn, ArnFormat.COLON_RESOURCE_NAME).resource_name)
    executions = Stack.of(state_machine).format_arn(
        service="states",
        resource="execution",
        resource_name=f"{name}:*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    return name, executions
