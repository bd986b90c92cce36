"""The project's idempotent workflow, deployed on a LocalCloud exactly as the CDK stack deploys it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from sfn_idempotency.deployed.records import plain
from sfn_idempotency.flow.definitions import NESTED_WORKFLOW_PLACEHOLDER, with_business_step, with_lease
from sfn_idempotency.flow.http_api import DEFAULT_SUCCESS_STATUS, ROUTE, http_workflow
from sfn_idempotency.flow.inline_workflows import BUSINESS_FUNCTION_PLACEHOLDER
from sfn_idempotency.flow.patterns import load_pattern
from sfn_idempotency.flow.provable_key import keyed_as_settings_allow
from sfn_idempotency.flow.provable_key import substitutions as provable_key_substitutions
from sfn_idempotency.flow.redrive_fence import for_express
from sfn_idempotency.flow.resources import (
    EXECUTION_ENDED_PATTERN,
    IDEMPOTENCY_FLOWS,
    LAMBDAS_DIR,
    ORDER_PLACED_PATTERN,
    ORDERS_REQUEST_TEMPLATE,
    ORDERS_RESPONSE_TEMPLATE,
    RELEASE_ASL,
)
from sfn_idempotency.lambdas.compute_key.computation import key_of
from sfn_idempotency.lambdas.compute_key.settings import IdempotencySettings
from sfn_idempotency.local.engine.cloud import DEFAULT_WAIT_SECONDS, EngineError, LocalCloud
from sfn_idempotency.local.engine.lambdas import Handler, LocalFunction
from sfn_idempotency.local.engine.results import ExecutionResult
from sfn_idempotency.local.http.rest_apis import Integration, IntegrationResponse, Method, Stage
from sfn_idempotency.local.http.server import LocalRestApi
from sfn_idempotency.metrics import IdempotentSteps
from sfn_idempotency.replays import replay_options_applied
from sfn_idempotency.settings import HTTP_KEY_PREFIX_SUFFIX, example_settings
from sfn_idempotency.wrap import (
    KEY_FUNCTION_PLACEHOLDER,
    RESULT_STATE,
    SEPARATOR,
    TABLE_PLACEHOLDER,
    settings_of_step,
    step_fields,
    wrap_state,
)

PLACE_ORDER_HANDLER = "place_order.handler.handler"
# The one Task of an inline service's machine.
INLINE_STEP = "Execute"


def inline_machine(timeout_seconds: int, query_language: str = "JSONPath") -> str:
    """A machine whose one Task calls the business Lambda by its ARN (the result is the function's
    return value, as the standalone flow and Powertools record it)."""
    task = {
        "Type": "Task",
        "Resource": "${BusinessFunctionArn}",
        "TimeoutSeconds": timeout_seconds,
        "End": True,
    }
    return json.dumps(
        {"QueryLanguage": query_language, "StartAt": INLINE_STEP, "States": {INLINE_STEP: task}}
    )


def _existing(cloud: LocalCloud, table_name: str) -> str:
    try:
        cloud.dynamodb.describe_table(TableName=table_name)
    except cloud.dynamodb.exceptions.ResourceNotFoundException:
        raise EngineError(
            f"table {table_name!r} does not exist in this LocalCloud: create it first "
            f"(cloud.create_table({table_name!r})), or leave table_name out and the service creates "
            f"a table of its own"
        ) from None
    return table_name


class IdempotentService:
    """Table, key Lambda, business Lambda and state machine, named like the stack names them."""

    def __init__(
        self,
        cloud: LocalCloud,
        settings: IdempotencySettings | None = None,
        *,
        name: str = "idempotency",
        business_handler: str | Handler = PLACE_ORDER_HANDLER,
        business_code_dir: Path = LAMBDAS_DIR,
        business_step: Mapping[str, Any] | None = None,
        business_substitutions: Mapping[str, str] | None = None,
        table_name: str | None = None,
        asl_path: Path | None = None,
        inline: bool = False,
        query_language: str = "JSONPath",
        replay_marker: str | None = None,
        replay_hook: Any = None,
        metrics: bool = True,
        workflow_type: str = "STANDARD",
    ) -> None:
        """The business Lambda is ``business_handler``: ``"package.module.function"`` under
        ``business_code_dir`` (default: the example ``place_order``) or a Python callable.
        ``business_step`` (a Task's Resource, Parameters...) replaces it, with
        ``business_substitutions`` for its own placeholders; see definitions.with_business_step.

        ``inline``: instead of the standalone workflow, a machine whose one Task (the business
        Lambda, by its ARN: the result is what the function returns, as Powertools records it) is
        wrapped inline by sfn_idempotency.wrap; the flow's states are then ``Execute.<name>``.
        ``query_language``: the flow's flavour, ``"JSONPath"`` or ``"JSONata"`` (the same states,
        records, outputs and error names; the JSONata flavour runs a business Lambda only).
        ``table_name``: the records' table, one that exists in ``cloud`` (``cloud.create_table``, or
        another service's ``table_name``: services sharing a table replay each other's records);
        by default the service creates ``<name>-table``. A table that does not exist is refused
        here, rather than failing every execution with IdempotencyPersistenceError.
        ``replay_marker``, ``replay_hook``: the standalone flow's, see sfn_idempotency.replays.
        ``metrics``: log every state and count the outcomes, as the construct does by default
        (:meth:`outcome_counts`); off, the machine does not log (faster).
        ``workflow_type``: ``"STANDARD"`` or ``"EXPRESS"`` (the definition made for Express as the
        constructs make it: an Express context has no redrive count)."""
        self.cloud = cloud
        self.inline = inline
        self.query_language = query_language
        settings = settings or example_settings()
        if query_language not in IDEMPOTENCY_FLOWS:
            raise EngineError(f"query_language is one of {sorted(IDEMPOTENCY_FLOWS)}, got {query_language!r}")
        if business_step is not None and (inline or query_language != "JSONPath"):
            raise EngineError(
                "business_step replaces the business Lambda of the standalone JSONPath flow only"
            )
        if inline and (replay_marker is not None or replay_hook is not None):
            raise EngineError("an inline step takes its replay options in wrap_state")
        if inline:
            machine = inline_machine(settings.timeout_seconds, query_language)
            definition = wrap_state(machine, INLINE_STEP, **step_fields(settings))
            # The wrapped step's own settings: the lease its flow needs, as wrap_state computed it; the
            # key Lambda's environment keeps only Powertools' switch (disabled) for inline steps.
            step = settings_of_step(definition, INLINE_STEP)
            self.settings = step.model_copy(update={"disabled": settings.disabled})
        else:
            definition = (asl_path or IDEMPOTENCY_FLOWS[query_language]).read_text(encoding="utf-8")
            if business_step is not None:
                definition = with_business_step(definition, business_step)
            definition = replay_options_applied(definition, replay_marker, replay_hook, query_language)
            # The lease covers every retry the definition allows, as the construct computes it.
            self.settings = with_lease(settings, definition)
            definition = keyed_as_settings_allow(definition, self.settings)
        self.name = name
        self.compute_key_function = f"{name}-compute-key"
        self.business_function = f"{name}-business"
        self.table_name = _existing(cloud, table_name) if table_name else cloud.create_table(f"{name}-table")
        self.compute_key = compute_key = cloud.add_key_function(
            self.compute_key_function, self.settings.to_environment()
        )
        substitutions = (
            {KEY_FUNCTION_PLACEHOLDER: compute_key.arn, TABLE_PLACEHOLDER: self.table_name}
            if inline
            else {
                "ComputeKeyFunctionArn": compute_key.arn,
                "TableName": self.table_name,
                **provable_key_substitutions(self.settings, definition),
            }
        )
        self.business: LocalFunction | None = None
        if business_step is None:
            self.business = cloud.add_function(
                self.business_function,
                business_handler,
                code_dir=business_code_dir,
                environment={"POWERTOOLS_LOG_LEVEL": "WARNING"},
                timeout_seconds=self.settings.timeout_seconds,
            )
            substitutions["BusinessFunctionArn"] = self.business.arn
        else:
            substitutions.update(business_substitutions or {})
        # Counted as the constructs count them: metric filters on the machine's own logs.
        self.metrics = (
            IdempotentSteps(
                workflow=name, steps={self.settings.key_prefix: f"{INLINE_STEP}{SEPARATOR}" if inline else ""}
            )
            if metrics
            else None
        )
        if workflow_type == "EXPRESS":
            definition = for_express(definition)  # as the constructs build it
        self.state_machine_arn = cloud.create_state_machine(
            name, definition, substitutions, workflow_type=workflow_type, metrics=self.metrics
        )

    # -- executions ------------------------------------------------------------------------
    def start(self, event: Any, name: str | None = None) -> str:
        """Start the workflow with ``event``; returns the execution ARN at once."""
        return self.cloud.start_execution(self.state_machine_arn, event, name)

    def run(
        self, event: Any, name: str | None = None, timeout: float = DEFAULT_WAIT_SECONDS
    ) -> ExecutionResult:
        """Run the workflow with ``event`` to its end."""
        return self.cloud.wait(self.start(event, name), timeout)

    def start_many(self, events: Iterable[Any]) -> list[str]:
        """Start one execution per event, without waiting; their ARNs in order."""
        return [self.start(event) for event in events]

    def outcome_counts(self) -> dict[str, int]:
        """How many executions ended in each outcome (sfn_idempotency.metrics), from CloudWatch."""
        if self.metrics is None:
            raise EngineError(f"service {self.name!r} counts no outcomes: it was made with metrics=False")
        return self.cloud.outcome_counts(self.metrics.workflow, self.settings.key_prefix)

    def flow_states(self, result: ExecutionResult) -> list[str]:
        """The states of the idempotency flow the execution visited, by their names in
        idempotency.asl.json (an inline step's are prefixed; its Parallel and Result are not the flow's)."""
        if not self.inline:
            return result.states
        prefix = f"{INLINE_STEP}{SEPARATOR}"
        flow = [state.removeprefix(prefix) for state in result.states if state.startswith(prefix)]
        return [state for state in flow if state != RESULT_STATE]

    @property
    def business_runs(self) -> int:
        """How many times the business Lambda's code ran, over all executions."""
        return self.cloud.lambdas.invocations(self._business_lambda().name)

    def business_runs_in(self, result: ExecutionResult) -> int:
        """How many times this one execution called the business Lambda (retries included)."""
        return result.lambda_invocations(self._business_lambda().arn)

    def _business_lambda(self) -> LocalFunction:
        if self.business is None:
            raise EngineError(f"{self.name} runs a custom business step, not a Lambda")
        return self.business

    def deploy_event_trigger(
        self, rule_name: str = "order-placed", pattern: Path = ORDER_PLACED_PATTERN
    ) -> str:
        """The EventBridge rule that starts this workflow with every matching event, as the stack has."""
        return self.cloud.create_rule(rule_name, load_pattern(pattern), self.state_machine_arn)

    def deploy_claim_release(self) -> str:
        """The release workflow (Express) and its rule on this workflow's ended executions, as the
        construct deploys them; returns the release state machine's ARN. The engine sends the status
        change events by itself, as Step Functions does for Standard workflows."""
        definition = keyed_as_settings_allow(RELEASE_ASL.read_text(encoding="utf-8"), self.settings)
        release = self.cloud.create_state_machine(
            f"{self.name}-release",
            definition,
            {
                "ComputeKeyFunctionArn": self.compute_key.arn,
                "TableName": self.table_name,
                **provable_key_substitutions(self.settings, definition),
            },
            workflow_type="EXPRESS",
        )
        watched = load_pattern(EXECUTION_ENDED_PATTERN, {"stateMachineArn": [self.state_machine_arn]})
        self.cloud.create_rule(f"{self.name}-execution-ended", watched, release)
        return release

    def deploy_inline(self, definition: str, name: str, *, workflow_type: str = "EXPRESS") -> str:
        """A workflow whose inline steps (sfn_idempotency.wrap) use this service's key Lambda, table and
        business Lambda (as ``${PlaceOrderFunctionArn}``), as the stack shares them."""
        substitutions = {
            KEY_FUNCTION_PLACEHOLDER: self.compute_key.arn,
            TABLE_PLACEHOLDER: self.table_name,
            BUSINESS_FUNCTION_PLACEHOLDER: self._business_lambda().arn,
        }
        if workflow_type == "EXPRESS":
            definition = for_express(definition)  # as the constructs build it
        return self.cloud.create_state_machine(name, definition, substitutions, workflow_type=workflow_type)

    def deploy_http_api(
        self,
        *,
        name: str = "http-orders",
        key_prefix: str | None = None,
        success_status: int = DEFAULT_SUCCESS_STATUS,
        error_statuses: Mapping[str, int] | None = None,
        port: int = 0,
    ) -> LocalRestApi:
        """The HTTP front door on this service's business Lambda (sfn_idempotency.flow.http_api): its
        Express workflow, and ``POST /orders`` on a loopback port rendering the same templates API
        Gateway renders; ``.start()`` it. Keys get ``key_prefix`` (default: this service's + "-http")."""
        prefix = key_prefix or f"{self.settings.key_prefix}{HTTP_KEY_PREFIX_SUFFIX}"
        definition, retry_after = http_workflow(
            self.settings.model_copy(update={"key_prefix": prefix}),
            success_status=success_status,
            error_statuses=error_statuses,
        )
        machine = self.deploy_inline(definition, name)
        # As the IdempotentHttpApi construct declares it: POST /orders, StartSyncExecution through
        # the templates in apis/, one default integration response.
        integration = Integration(
            type="AWS",
            uri=f"arn:aws:apigateway:{self.cloud.region}:states:action/StartSyncExecution",
            request_templates={"application/json": ORDERS_REQUEST_TEMPLATE.read_text(encoding="utf-8")},
            passthrough_behavior="NEVER",
            responses=(
                IntegrationResponse(
                    "200",
                    templates={"application/json": ORDERS_RESPONSE_TEMPLATE.read_text(encoding="utf-8")},
                ),
            ),
        )
        stage = Stage(
            rest_api_id=name,
            name="local",
            methods=(Method("POST", f"/{ROUTE}", integration, {"200": {}}),),
            variables={"stateMachineArn": machine, "retryAfterSeconds": str(retry_after)},
        )
        return LocalRestApi(
            stage,
            self.cloud.integration_services,
            account=self.cloud.account,
            region=self.cloud.region,
            port=port,
            access_policy=self.cloud.access_policy,
            stage_in_path=False,
            state_machine_arn=machine,
        )

    def nest_in(self, asl: Path, name: str) -> str:
        """A workflow (the order pipeline, the SQS batch) that runs this one with startExecution.sync:2."""
        return self.cloud.create_state_machine(
            name, asl, {NESTED_WORKFLOW_PLACEHOLDER: self.state_machine_arn}
        )

    # -- records ---------------------------------------------------------------------------
    def key_for(self, event: Any) -> str | None:
        """The key the key Lambda computes for ``event``."""
        key: str | None = key_of(event, self.settings)
        return key

    def record(self, key: str) -> dict[str, Any] | None:
        """The record as DynamoDB holds it (typed attribute values), or None."""
        item = self.cloud.dynamodb.get_item(
            TableName=self.table_name, Key={"id": {"S": key}}, ConsistentRead=True
        )
        record: dict[str, Any] | None = item.get("Item")
        return record

    def record_for(self, event: Any) -> dict[str, Any] | None:
        """The record of the key ``event`` maps to (as DynamoDB holds it), or None."""
        key = self.key_for(event)
        return None if key is None else self.record(key)

    def records(self) -> list[dict[str, Any]]:
        """Every record, as plain Python values."""
        pages = self.cloud.dynamodb.get_paginator("scan").paginate(
            TableName=self.table_name, ConsistentRead=True
        )
        return [plain(item) for page in pages for item in page["Items"]]

    def wait_for_claim(self, event: Any, timeout: float = DEFAULT_WAIT_SECONDS) -> None:
        """Block until some execution holds the key of ``event`` (to start a concurrent duplicate)."""
        self.cloud.wait_until(lambda: self.record_for(event) is not None, timeout, f"claim of {event!r}")
