"""IdempotentWorkflow: make any business step run once per idempotency key."""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from sfn_idempotency.cdk.event_trigger import EventTrigger
from sfn_idempotency.cdk.idempotency_metrics import IdempotencyMetrics
from sfn_idempotency.cdk.idempotency_table import IdempotencyTable, grant_item_access
from sfn_idempotency.cdk.lambda_code import POWERTOOLS_LAYER_VERSION, key_function
from sfn_idempotency.cdk.nag import acknowledge_execution_wildcard
from sfn_idempotency.cdk.state_machines import build_state_machine, executions_of, state_machine_logs
from sfn_idempotency.flow.definitions import DefinitionError, with_business_step, with_lease
from sfn_idempotency.flow.patterns import load_pattern
from sfn_idempotency.flow.provable_key import keyed_as_settings_allow
from sfn_idempotency.flow.provable_key import substitutions as provable_key_substitutions
from sfn_idempotency.flow.redrive_fence import RedriveFenceWarning, fence_arn
from sfn_idempotency.flow.resources import EXECUTION_ENDED_PATTERN, IDEMPOTENCY_ASL, RELEASE_ASL
from sfn_idempotency.lambdas.compute_key.errors import ConfigurationError
from sfn_idempotency.lambdas.compute_key.settings import (
    IdempotencySettings,
    load_settings,
    settings_environment,
)
from sfn_idempotency.replays import ReplayOptionError, replay_options_applied

LAMBDA_MAX_TIMEOUT_SECONDS = 900
EXPRESS_MAX_DURATION_SECONDS = 300
DEFAULT_BUSINESS_TIMEOUT = Duration.seconds(60)
DEFAULT_EXPIRES_AFTER = Duration.hours(1)
EXPRESS_UNSUPPORTED_PATTERNS = (".sync", ".waitForTaskToken")


class IdempotentWorkflow(Construct):
    """The state machine of ``statemachines/idempotency.asl.json`` around a business step.

    The business step is a Lambda (``business_function``) or any Task (``business_step``: its
    ``Resource``, ``Parameters``, ``ResultSelector``, ``Retry``; its own placeholders in
    ``business_step_substitutions`` and its rights in ``business_step_policy``).
    Several workflows may share one ``table``: their key prefixes keep their records apart.
    Bad props fail synth with the key Lambda's own validation message.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        key_prefix: str,
        business_function: lambda_.IFunction | None = None,
        business_step: Mapping[str, Any] | None = None,
        business_step_substitutions: Mapping[str, str] | None = None,
        business_step_policy: Sequence[iam.PolicyStatement] = (),
        event_key_jmespath: str = "",
        payload_validation_jmespath: str = "",
        expires_after: Duration = DEFAULT_EXPIRES_AFTER,
        hash_function: str = "md5",
        raise_on_no_key: bool = False,
        business_timeout: Duration = DEFAULT_BUSINESS_TIMEOUT,
        workflow_type: sfn.StateMachineType = sfn.StateMachineType.STANDARD,
        table: dynamodb.ITable | None = None,
        log_execution_data: bool = False,
        release_abandoned_claims: bool | None = None,
        powertools_layer_version: int = POWERTOOLS_LAYER_VERSION,
        replay_marker: str | None = None,
        replay_hook: Any = None,
        wait_for_in_progress: bool = False,
        max_wait: Duration | None = None,
        metrics: bool = True,
        dashboard: bool = True,
        alarms: bool = True,
    ) -> None:
        """``release_abandoned_claims`` defaults to True for Standard workflows; an Express workflow
        cannot have it (no status change events: its claims end with their lease).
        ``replay_marker``, ``replay_hook``: what a replay tells its caller (sfn_idempotency.replays).
        ``wait_for_in_progress``: a duplicate waits for the first run (at most ``max_wait``, never
        past the lease) instead of failing with IdempotencyAlreadyInProgressError.
        ``metrics``: outcomes counted from the state machine's logs (level ALL, no execution data),
        with a ``dashboard`` and ``alarms`` (IdempotencyMetrics); each can be turned off."""
        super().__init__(scope, construct_id)
        if (business_function is None) == (business_step is None):
            raise ConfigurationError(
                f"{self.node.path}: give exactly one of business_function and business_step"
            )
        express = workflow_type == sfn.StateMachineType.EXPRESS
        if release_abandoned_claims is None:
            release_abandoned_claims = not express
        if express:
            self._refuse_what_express_cannot_run(business_step, release_abandoned_claims)
        definition = self._definition(business_step, express=express)
        try:
            if replay_marker is not None or replay_hook is not None:
                text = _definition_text(definition)
                definition = replay_options_applied(text, replay_marker, replay_hook, "JSONPath")
        except ReplayOptionError as error:
            raise ConfigurationError(f"{self.node.path}: {error}") from None
        self.settings = self._validated_settings(
            settings_environment(
                key_prefix=key_prefix,
                event_key_jmespath=event_key_jmespath,
                payload_validation_jmespath=payload_validation_jmespath,
                raise_on_no_key=raise_on_no_key,
                expires_after_seconds=int(expires_after.to_seconds()),
                hash_function=hash_function,
                timeout_seconds=int(business_timeout.to_seconds()),
                wait_for_in_progress=wait_for_in_progress,
                **({"max_wait_seconds": int(max_wait.to_seconds())} if max_wait else {}),
            ),
            definition,
            workflow_type,
            lambda_business_step=business_function is not None,
        )
        self.table = table or IdempotencyTable(self, "Table", removal_policy=RemovalPolicy.RETAIN).table
        self.compute_key_function = self._build_compute_key_function(powertools_layer_version)
        self.business_function = business_function
        self.state_machine = self._build_state_machine(
            definition,
            business_step_substitutions or {},
            workflow_type,
            log_execution_data,
            sfn.LogLevel.ALL if metrics else sfn.LogLevel.ERROR,
        )
        self.metrics = (
            IdempotencyMetrics.of(
                self,
                log_group=state_machine_logs(self),
                steps={key_prefix: ""},
                key_function=self.compute_key_function,
                dashboard=dashboard,
                alarms=alarms,
            )
            if metrics
            else None
        )
        self._grant_least_privilege(business_step_policy)
        self.claim_release = (
            ClaimRelease(self, "ClaimRelease", workflow=self) if release_abandoned_claims else None
        )

    def _refuse_what_express_cannot_run(
        self, business_step: Mapping[str, Any] | None, release_abandoned_claims: bool
    ) -> None:
        resource = str((business_step or {}).get("Resource", ""))
        if resource.endswith(EXPRESS_UNSUPPORTED_PATTERNS) or ".sync:" in resource:
            # CreateStateMachine refuses these service integration patterns in an Express workflow.
            raise ConfigurationError(
                f"{self.node.path}: an Express workflow cannot run the business step {resource!r}: "
                "the .sync and .waitForTaskToken integration patterns need a Standard workflow"
            )
        if release_abandoned_claims:
            raise ConfigurationError(
                f"{self.node.path}: release_abandoned_claims needs a Standard workflow: Step Functions "
                "sends execution status change events for Standard workflows only, so an Express "
                "workflow's abandoned claims end with their lease"
            )

    def _definition(self, business_step: Mapping[str, Any] | None, *, express: bool) -> Path | str:
        """The ASL file itself, or its text with ``business_step`` in place of the Lambda (an
        Express workflow cannot be redriven: a step the redrive fence cannot guard is safe there)."""
        if business_step is None:
            return IDEMPOTENCY_ASL
        try:
            with warnings.catch_warnings():
                if express:
                    warnings.simplefilter("ignore", RedriveFenceWarning)
                return with_business_step(IDEMPOTENCY_ASL.read_text(encoding="utf-8"), business_step)
        except DefinitionError as error:
            raise ConfigurationError(f"{self.node.path}: {error}") from None

    def _validated_settings(
        self,
        environment: dict[str, str],
        definition: Path | str,
        workflow_type: sfn.StateMachineType,
        *,
        lambda_business_step: bool,
    ) -> IdempotencySettings:
        text = _definition_text(definition)
        try:
            settings = load_settings(environment)
        except ConfigurationError as error:
            raise ConfigurationError(f"{self.node.path}: {error}") from None
        if lambda_business_step and settings.timeout_seconds > LAMBDA_MAX_TIMEOUT_SECONDS:
            raise ConfigurationError(
                f"{self.node.path}: business_timeout must be 1..{LAMBDA_MAX_TIMEOUT_SECONDS} s "
                f"(a Lambda's range), got {settings.timeout_seconds} s"
            )
        if (
            workflow_type == sfn.StateMachineType.EXPRESS
            and settings.timeout_seconds > EXPRESS_MAX_DURATION_SECONDS
        ):
            raise ConfigurationError(
                f"{self.node.path}: an Express workflow runs at most {EXPRESS_MAX_DURATION_SECONDS} s; "
                f"business_timeout is {settings.timeout_seconds} s"
            )
        try:
            settings = with_lease(settings, text)
        except ConfigurationError as error:
            raise ConfigurationError(f"{self.node.path}: {error}") from None
        return settings

    def _build_compute_key_function(self, layer_version: int) -> lambda_.Function:
        return key_function(
            self,
            "ComputeKeyFunction",
            description=f"Idempotency key for prefix {self.settings.key_prefix}; no AWS calls",
            log_group_id="ComputeKeyLogs",
            environment=self.settings.to_environment(),
            powertools_layer_version=layer_version,
        )

    def _build_state_machine(
        self,
        definition: Path | str,
        business_step_substitutions: Mapping[str, str],
        workflow_type: sfn.StateMachineType,
        log_execution_data: bool,
        log_level: sfn.LogLevel,
    ) -> sfn.StateMachine:
        text = _definition_text(definition)
        keyed = keyed_as_settings_allow(text, self.settings)
        if keyed != text:  # (else the file itself, as DefinitionBody.from_file reads it)
            definition = text = keyed
        substitutions = {
            "ComputeKeyFunctionArn": self.compute_key_function.function_arn,
            "TableName": self.table.table_name,
            **_escaped(provable_key_substitutions(self.settings, text)),
        }
        if self.business_function is not None:
            substitutions["BusinessFunctionArn"] = self.business_function.function_arn
        else:
            substitutions.update(business_step_substitutions)
        return build_state_machine(
            self,
            definition,
            substitutions,
            workflow_type=workflow_type,
            log_execution_data=log_execution_data,
            log_level=log_level,
        )

    def _grant_least_privilege(self, business_step_policy: Sequence[iam.PolicyStatement]) -> None:
        # The four item operations of the flow on this one table; the key Lambda gets no DynamoDB rights.
        grant_item_access(
            self.table,
            self.state_machine,
            "dynamodb:PutItem",
            "dynamodb:GetItem",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
        )
        # The ASL invokes the unqualified ARNs, and the key Lambda's $LATEST for the redrive fence
        # (the code the unqualified ARN runs, so no right beyond it): no version or alias wildcard
        # (grant_invoke adds ":*").
        functions = [self.compute_key_function, *([self.business_function] if self.business_function else [])]
        self.state_machine.add_to_role_policy(
            iam.PolicyStatement(
                actions=["lambda:InvokeFunction"],
                resources=[
                    *(f.function_arn for f in functions),
                    fence_arn(self.compute_key_function.function_arn),
                ],
            )
        )
        for statement in business_step_policy:
            self.state_machine.add_to_role_policy(statement)


class ClaimRelease(Construct):
    """Releases the claims of executions that ended where no Catch could see it (StopExecution,
    an execution timeout, an oversized result): a rule on the workflow's execution status changes
    starts ``statemachines/release_abandoned_claim.asl.json``. The lease stays the backstop, since
    status change events are best effort."""

    def __init__(self, scope: Construct, construct_id: str, *, workflow: IdempotentWorkflow) -> None:
        super().__init__(scope, construct_id)
        if _is_express(workflow.state_machine):
            raise ConfigurationError(
                f"{self.node.path}: Step Functions sends execution status change events for Standard "
                "workflows only; an Express workflow's claims end with their lease"
            )
        compute_key_arn = workflow.compute_key_function.function_arn
        text = RELEASE_ASL.read_text(encoding="utf-8")
        keyed = keyed_as_settings_allow(text, workflow.settings)
        self.state_machine = build_state_machine(
            self,
            RELEASE_ASL if keyed == text else keyed,
            {
                "ComputeKeyFunctionArn": compute_key_arn,
                "TableName": workflow.table.table_name,
                **_escaped(provable_key_substitutions(workflow.settings, keyed)),
            },
            workflow_type=sfn.StateMachineType.EXPRESS,
        )
        grant_item_access(workflow.table, self.state_machine, "dynamodb:DeleteItem")
        # Whether the ended execution runs again (redriven): a running run's claims are its own.
        workflow_name, executions = executions_of(workflow.state_machine)
        self.state_machine.add_to_role_policy(
            iam.PolicyStatement(actions=["states:DescribeExecution"], resources=[executions])
        )
        acknowledge_execution_wildcard(
            self.state_machine,
            workflow_name,
            "The release workflow reads the status and redrive count of the workflow's ended "
            "executions, whose names are generated: the resource is their ARN prefix with '*'.",
        )
        self.state_machine.add_to_role_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[compute_key_arn])
        )
        ended = load_pattern(
            EXECUTION_ENDED_PATTERN, {"stateMachineArn": [workflow.state_machine.state_machine_arn]}
        )
        EventTrigger(self, "ExecutionEnded", pattern=ended, target=self.state_machine)


def _escaped(substitutions: Mapping[str, str]) -> dict[str, str]:
    """CloudFormation substitutes text as it is: each value escaped for the JSON string it lands in."""
    return {name: json.dumps(value)[1:-1] for name, value in substitutions.items()}


def _definition_text(definition: Path | str) -> str:
    return definition.read_text(encoding="utf-8") if isinstance(definition, Path) else definition


def _is_express(state_machine: sfn.StateMachine) -> bool:
    resource = state_machine.node.default_child
    return isinstance(resource, sfn.CfnStateMachine) and resource.state_machine_type == "EXPRESS"
