"""IdempotentStep: one Task of your own CDK state machine made idempotent inline (Standard or Express).

The chainable renders the same two states as ``sfn_idempotency.wrap.wrap_state`` (a one-branch
Parallel with the flow of idempotency.asl.json, then the Result pass), so a CDK chain and an ASL file
wrapped on the command line run the very same flow. When the state machine binds it, it grants the
machine's role exactly what the flow calls: the shared key Lambda, four item operations on the table
(and its key, if it has one), and the Task's own rights.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Duration, JsonNull, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from sfn_idempotency.cdk.idempotency_metrics import IdempotencyMetrics
from sfn_idempotency.cdk.idempotency_table import KMS_ITEM_ACTIONS
from sfn_idempotency.cdk.lambda_code import POWERTOOLS_LAYER_VERSION, key_function
from sfn_idempotency.flow.redrive_fence import fence_arn
from sfn_idempotency.lambdas.compute_key.errors import ConfigurationError
from sfn_idempotency.wrap import (
    JSONATA,
    JSONPATH,
    KEY_FUNCTION_PLACEHOLDER,
    SEPARATOR,
    TABLE_PLACEHOLDER,
    WrapError,
    inline_states,
    outer_error_names,
    step_settings,
)

DEFAULT_EXPIRES_AFTER = Duration.hours(1)
# The flow's item operations on the table: Claim, Read, Complete, Release.
FLOW_TABLE_ACTIONS = ("dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
_KEY_FUNCTION_ID = "IdempotencyKeyFunction"
PATH_FIELDS = ("InputPath", "ResultPath", "OutputPath")


class IdempotencyKeyFunction(Construct):
    """The key Lambda that serves every inline step (its settings come in each ComputeKey payload):
    no IDEMPOTENCY_* environment, no AWS rights beyond its logs and traces. ``of(scope)`` is the
    stack's one instance."""

    def __init__(
        self, scope: Construct, construct_id: str, *, powertools_layer_version: int = POWERTOOLS_LAYER_VERSION
    ) -> None:
        super().__init__(scope, construct_id)
        self.function = key_function(
            self,
            "Function",
            description="Idempotency keys for inline steps; each step's settings travel in its payload",
            log_group_id="Logs",
            powertools_layer_version=powertools_layer_version,
        )

    @classmethod
    def of(cls, scope: Construct) -> IdempotencyKeyFunction:
        """The stack's shared key function, created on first use."""
        stack = Stack.of(scope)
        existing = stack.node.try_find_child(_KEY_FUNCTION_ID)
        if isinstance(existing, IdempotencyKeyFunction):
            return existing
        return cls(stack, _KEY_FUNCTION_ID)


class _GrantingState(sfn.CustomState):
    """A state given as JSON that registers the rights it needs with the graph that binds it."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        state_json: Mapping[str, Any],
        policy_statements: Sequence[iam.PolicyStatement] = (),
    ) -> None:
        super().__init__(scope, construct_id, state_json=state_json)
        self._policy_statements = list(policy_statements)

    def bind_to_graph(self, graph: sfn.StateGraph) -> None:
        super().bind_to_graph(graph)
        for statement in self._policy_statements:
            graph.register_policy_statement(statement)


class IdempotentStep(sfn.StateMachineFragment):
    """``task`` (any Task: a ``sfn.TaskStateBase`` or its ASL as a dict) runs once per idempotency
    key. Chain it like the Task; add Catch and Retry to the step (``add_catch``, ``add_retry``), not
    to the Task: they see the business step's errors (after the claim was released) and the named
    idempotency errors, so ``add_retry(errors=["IdempotencyAlreadyInProgressError"])`` turns a
    concurrent duplicate into a replay. Bad settings fail synth with the key Lambda's own message.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        task: sfn.TaskStateBase | Mapping[str, Any],
        table: dynamodb.ITable,
        key_prefix: str,
        event_key_jmespath: str = "",
        payload_validation_jmespath: str = "",
        expires_after: Duration = DEFAULT_EXPIRES_AFTER,
        hash_function: str = "md5",
        raise_on_no_key: bool = False,
        timeout: Duration | None = None,
        key_function: lambda_.IFunction | None = None,
        task_policies: Sequence[iam.PolicyStatement] = (),
        state_name: str | None = None,
        query_language: str | None = None,
        replay_marker: str | None = None,
        replay_hook: Any = None,
        wait_for_in_progress: bool = False,
        max_wait: Duration | None = None,
        log_group: logs.ILogGroup | None = None,
        dashboard: bool = True,
        alarms: bool = True,
        express: bool = False,
    ) -> None:
        """``task_policies``: the rights of a Task given as a dict (a CDK Task brings its own).
        ``query_language``: the Task's, when its ASL does not say (a dict without QueryLanguage in a
        JSONata machine); a CDK Task says it itself, and Arguments or Output mean JSONata.
        ``replay_marker``, ``replay_hook``, ``wait_for_in_progress`` (at most ``max_wait``): as
        wrap_state's. ``log_group``: the group your state machine logs to at level ALL; given, the
        step's outcomes become metrics (IdempotencyMetrics), with a ``dashboard`` and ``alarms``.
        ``express``: your state machine is Express (as wrap_state's: a JSONPath step started with
        StartSyncExecution has no RedriveCount in its context to read)."""
        super().__init__(scope, construct_id)
        self.state_name = state_name or construct_id
        task_json, own_policies = self._task_json(task)
        self.key_function = key_function or IdempotencyKeyFunction.of(self).function
        self.table = table
        try:
            step = step_settings(
                task_json,
                self.state_name,
                key_prefix=key_prefix,
                event_key_jmespath=event_key_jmespath,
                payload_validation_jmespath=payload_validation_jmespath,
                expires_after_seconds=int(expires_after.to_seconds()),
                hash_function=hash_function,
                raise_on_no_key=raise_on_no_key,
                timeout_seconds=int(timeout.to_seconds()) if timeout else None,
                wait_for_in_progress=wait_for_in_progress,
                max_wait_seconds=int(max_wait.to_seconds()) if max_wait else None,
                replay_marker=replay_marker,
                replay_hook=replay_hook,
                query_language=query_language or _language_of(task_json),
                express=express,
            )
            states = inline_states(self.state_name, {**task_json, "End": True}, step)
        except WrapError as error:
            raise ConfigurationError(f"{self.node.path}: {error}") from None
        self.settings = step.settings
        # A CustomState is named by its construct id: the states keep wrap_state's names. A JSONPath
        # step is the Parallel and its Result pass; a JSONata one, the Parallel alone.
        placed = {name: self._placed(state) for name, state in states.items()}
        for state_json in placed.values():
            for field in ("Next", "End"):  # the chain decides where the step goes
                state_json.pop(field, None)
        (flow_name, flow_json), *rest = placed.items()
        self._flow = _GrantingState(
            self,
            flow_name,
            state_json=flow_json,
            policy_statements=[
                *inline_step_statements(table, self.key_function),
                *own_policies,
                *task_policies,
            ],
        )
        self._last: sfn.CustomState = self._flow
        for name, state_json in rest:
            following = sfn.CustomState(self, name, state_json=state_json)
            self._last.next(following)
            self._last = following
        self.metrics = (
            IdempotencyMetrics.of(
                self,
                log_group=log_group,
                steps={key_prefix: f"{self.state_name}{SEPARATOR}"},
                key_function=self.key_function,
                dashboard=dashboard,
                alarms=alarms,
            )
            if log_group is not None
            else None
        )

    @property
    def start_state(self) -> sfn.State:
        return self._flow

    @property
    def end_states(self) -> list[sfn.INextable]:
        return [self._last]

    def add_catch(
        self,
        handler: sfn.IChainable,
        *,
        errors: Sequence[str] = ("States.ALL",),
        result_path: str | None = None,
    ) -> IdempotentStep:
        """As ``Task.add_catch``; a ``States.Timeout`` of the business step arrives as
        BusinessStepTimeoutError (a state may not report ``States.*``), which is added for you."""
        self._flow.add_catch(handler, errors=outer_error_names(list(errors)), result_path=result_path)
        return self

    def add_retry(self, **retry: Any) -> IdempotentStep:
        """As ``Task.add_retry`` (``errors``, ``interval``, ``max_attempts``...), for the whole step:
        a retry computes the key again, so it may replay."""
        self._flow.add_retry(**retry)
        return self

    # -- helpers ---------------------------------------------------------------------------
    def _task_json(
        self, task: sfn.TaskStateBase | Mapping[str, Any]
    ) -> tuple[dict[str, Any], list[iam.PolicyStatement]]:
        if isinstance(task, sfn.TaskStateBase):
            # Unresolved: its tokens (ARNs...) stay strings that the definition resolves at synth.
            rendered = dict(task.to_state_json())
            policies = list(task._task_policies or [])
        else:
            rendered, policies = dict(task), []
        if rendered.get("Catch"):
            raise ConfigurationError(
                f"{self.node.path}: add catches to the IdempotentStep (add_catch), not to its Task: "
                "they must see the step's errors, after its claim was released"
            )
        for field in ("Catch", "Next", "End"):
            rendered.pop(field, None)
        for field in PATH_FIELDS:  # JsonPath.DISCARD is null in ASL; wrap_state reads it as None
            if rendered.get(field) == sfn.JsonPath.DISCARD:
                rendered[field] = None
        return rendered, policies

    def _placed(self, state: dict[str, Any]) -> dict[str, Any]:
        """``state`` with the shared placeholders replaced by this stack's key function and table."""
        values = {
            f"${{{KEY_FUNCTION_PLACEHOLDER}}}": self.key_function.function_arn,
            f"${{{TABLE_PLACEHOLDER}}}": self.table.table_name,
        }
        result: dict[str, Any] = _substituted(state, values)
        return result


def inline_step_statements(
    table: dynamodb.ITable, key_function: lambda_.IFunction
) -> list[iam.PolicyStatement]:
    """What every inline step calls: the key Lambda (unqualified ARN, as the ASL invokes it, and its
    $LATEST for the redrive fence: no version or alias wildcard) and the flow's four item operations
    on the table, plus the table's key if it has one (DynamoDB refuses every item call of a
    principal that may not use it)."""
    statements = [
        iam.PolicyStatement(
            actions=["lambda:InvokeFunction"],
            resources=[key_function.function_arn, fence_arn(key_function.function_arn)],
        ),
        iam.PolicyStatement(actions=list(FLOW_TABLE_ACTIONS), resources=[table.table_arn]),
    ]
    if table.encryption_key is not None:
        statements.append(
            iam.PolicyStatement(actions=list(KMS_ITEM_ACTIONS), resources=[table.encryption_key.key_arn])
        )
    return statements


def _language_of(task_json: Mapping[str, Any]) -> str:
    if "QueryLanguage" in task_json:
        return str(task_json["QueryLanguage"])
    return JSONATA if {"Arguments", "Output"} & set(task_json) else JSONPATH


def _substituted(value: Any, values: Mapping[str, str]) -> Any:
    """``value`` with every placeholder in its strings replaced by its (token) value (a string that
    is one becomes the token; one inside a longer string, as the redrive fence's expression names the
    key Lambda, is joined in), and every null as CDK's JsonNull: a Python None crosses to CDK as
    "absent", which changes an ASL path's meaning (ResultPath null keeps the input; absent, the
    result replaces it)."""
    if value is None:
        return JsonNull.INSTANCE
    if isinstance(value, str):
        if value in values:
            return values[value]
        for placeholder, replacement in values.items():
            value = value.replace(placeholder, replacement)
        return value
    if isinstance(value, list):
        return [_substituted(item, values) for item in value]
    if isinstance(value, dict):
        return {key: _substituted(item, values) for key, item in value.items()}
    return value
