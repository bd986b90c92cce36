"""LocalCloud: one in-process AWS account for state machines, on moto's real interpreter."""

from __future__ import annotations

import copy
import datetime
import functools
import json
import logging
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from sfn_idempotency.deployed.executions import TERMINAL_STATUSES
from sfn_idempotency.flow import definitions
from sfn_idempotency.flow.resources import COMPUTE_KEY_HANDLER, LAMBDAS_DIR
from sfn_idempotency.lambdas.compute_key import clock as lambda_clock
from sfn_idempotency.local import compat, runtimes
from sfn_idempotency.local.apps import sam_templates
from sfn_idempotency.local.apps.cloud_assembly import AssemblyDeployer
from sfn_idempotency.local.apps.deployed import DeployedAssembly, DeployedStack, SkippedResourceWarning
from sfn_idempotency.local.capabilities import activities, mock_files, redrive, retention
from sfn_idempotency.local.capabilities.mock_files import MockConfigInput, MockConfigSource
from sfn_idempotency.local.compat import execution_ends
from sfn_idempotency.local.compat.express import express_execution, is_express_execution
from sfn_idempotency.local.compat.service_tasks import GatewayAnswer, GatewayRequest
from sfn_idempotency.local.controls import call_origins, state_entry, task_deadlines
from sfn_idempotency.local.controls.calls import CallCounter, interceptor
from sfn_idempotency.local.controls.clock import MovableClock
from sfn_idempotency.local.controls.faults import FaultPlan
from sfn_idempotency.local.engine import collector, lambdas, patches, results
from sfn_idempotency.local.engine.backends import Backend, InProcessBackend
from sfn_idempotency.local.engine.clients import local_client
from sfn_idempotency.local.engine.lambdas import Handler, LambdaRuntime, LocalFunction, cold_start
from sfn_idempotency.local.engine.results import ExecutionResult
from sfn_idempotency.local.http.request_guard import AccessPolicy
from sfn_idempotency.local.http.served_apis import IntegrationServices, ServedApis
from sfn_idempotency.local.http.server import stage_urls
from sfn_idempotency.local.observability import metric_filters, reports, task_failures
from sfn_idempotency.local.observability.log_groups import logging_to_own_group, own_log_group
from sfn_idempotency.local.observability.outcomes import outcome_counts, put_metric_filters
from sfn_idempotency.local.runtimes import code_folders
from sfn_idempotency.metrics import IdempotentSteps
from sfn_idempotency.wrap import KEY_FUNCTION_PLACEHOLDER, TABLE_PLACEHOLDER

LOG = logging.getLogger(__name__)
DEFAULT_REGION = "us-east-1"
MOTO_ACCOUNT = "123456789012"
DEFAULT_WAIT_SECONDS = 30.0
POLL_INTERVAL_SECONDS = 0.002
KEY_FUNCTION_TIMEOUT_SECONDS = 10  # as the constructs deploy it
INLINE_KEY_FUNCTION = "idempotency-key"  # what idempotency_substitutions() creates for inline steps
INLINE_TABLE = "idempotency-records"
# moto logs every failed execution with a stack trace; a failed execution is an outcome here.
_NOISY_LOGGERS = ("moto.stepfunctions", "moto.stepfunctions.parser")


class EngineError(RuntimeError):
    """The local engine was used wrongly (for example, two clouds at once)."""


def _without_metadata(answer: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in answer.items() if name != "ResponseMetadata"}


class LocalCloud:
    """Start with ``with LocalCloud() as cloud:``; only one may run per process (moto is global)."""

    _active: LocalCloud | None = None

    def __init__(
        self,
        region: str = DEFAULT_REGION,
        retry_wait_scale: float = 1.0,
        backend: Backend | None = None,
        mock_config: MockConfigInput | MockConfigSource | None = None,
        api_port: int = 0,
        task_timeouts_on_clock: bool = False,
        retain_executions: int | None = None,
    ) -> None:
        """``mock_config``: Step Functions Local's mock file (a path, read again when it changes) or
        its content as a dict, for executions started as ``<stateMachineArn>#<TestCase>``.
        ``api_port``: the port of the first REST API stage a deployed stack serves (each next one
        takes the port after); 0, any free port. ``task_timeouts_on_clock``: moving ``clock`` past a
        running Task's ``TimeoutSeconds`` times it out at once (sfn_idempotency.local.controls.task_deadlines);
        off, a Task times out in real time only, and a test may hold a step past its lease.
        ``retain_executions``: keep at most this many ended executions, the oldest forgotten first
        (sfn_idempotency.local.capabilities.retention); None keeps every one, as AWS keeps them for 90 days."""
        patches.check()  # a moto whose internals moved fails here, not with a wrong result later
        self.region, self.account = region, MOTO_ACCOUNT
        self.retry_wait_scale = retry_wait_scale
        self.api_port = api_port
        self.task_timeouts_on_clock = task_timeouts_on_clock
        if retain_executions is not None and retain_executions < 0:
            raise EngineError(f"retain_executions must be 0 or more, not {retain_executions}")
        self.retain_executions = retain_executions
        self.clock = MovableClock()
        self.faults = FaultPlan(region)
        self.calls = CallCounter()
        self.lambdas = LambdaRuntime(region, self.account, self.faults)
        self.backend = backend or InProcessBackend()
        self._previous_clock: lambda_clock.Clock | None = None
        self._log_levels: dict[str, int] = {}
        self._inline_substitutions: dict[str, str] | None = None
        self._sfn_unprefixed: Any = None
        self._rest_apis: ServedApis | None = None
        self._own_clients: dict[str, Any] = {}
        self._own_clients_lock = threading.Lock()
        self.mock_config = (
            mock_config
            if mock_config is None or isinstance(mock_config, MockConfigSource)
            else MockConfigSource(mock_config)
        )
        if self.mock_config is not None and not isinstance(mock_config, MockConfigSource):
            self.mock_config.current()  # a bad file fails here, in the test that named it

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> Self:
        """Start moto and apply the engine's fixes (``with LocalCloud() as cloud`` calls it)."""
        if LocalCloud._active is not None:
            raise EngineError("a LocalCloud is already running in this process; close it first")
        patches.install()
        mock_files.install()
        mock_files.activate(self.mock_config)
        activities.install()
        redrive.install()
        metric_filters.install()
        reports.install()
        task_deadlines.install()
        call_origins.install()
        task_deadlines.active.clock = self.clock if self.task_timeouts_on_clock else None
        retention.retention.keep(self.retain_executions)
        patches.connect(
            now=self.clock.now_seconds,
            retry_wait_scale=self.retry_wait_scale,
            around_functions=lambdas.outcomes_through(self.faults),
            api_gateway=self._answer_api_invocation,
            execution_ended=retention.retention.ended,
        )
        self.backend.start()
        runtimes.endpoint_url = self.endpoint_url
        # Before it is active: a start that fails here leaves no engine marked as running.
        self.sfn, self.dynamodb = self.client("stepfunctions"), self.client("dynamodb")
        LocalCloud._active = self
        self._collector_thresholds = collector.widen()  # close() restores them: only once active
        interceptor.hooks[:] = [self.calls.hook, self.faults.api_hook, self.lambdas.hook]
        state_entry.hooks.cloud[:] = [self.faults.before_state]
        self._previous_clock = lambda_clock.install(self.clock)
        self._log_levels = {name: logging.getLogger(name).level for name in _NOISY_LOGGERS}
        for name in _NOISY_LOGGERS:
            logging.getLogger(name).setLevel(logging.CRITICAL)
        return self

    def close(self) -> None:
        """Stop running executions and moto, and undo what ``start`` changed; safe to call twice."""
        if LocalCloud._active is not self:
            return
        try:
            self.faults.release()
            self._stop_running_executions()
        finally:
            if self._rest_apis is not None:
                self._rest_apis.close()
                self._rest_apis = None
            self._own_clients.clear()  # a next start may serve another endpoint
            interceptor.hooks.clear()
            interceptor.answer_hooks.clear()
            state_entry.hooks.cloud.clear()
            patches.disconnect()
            code_folders.remove_all()
            runtimes.endpoint_url = None
            mock_files.activate(None)
            activities.forget()
            reports.forget_listeners()
            task_deadlines.active.clock = None
            retention.retention.keep(None)
            if self._previous_clock is not None:
                lambda_clock.install(self._previous_clock)
            self.backend.stop()  # first: a call still under way fails there, and moto would print it
            for name, level in self._log_levels.items():
                logging.getLogger(name).setLevel(level)
            collector.restore(self._collector_thresholds)
            LocalCloud._active = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def endpoint_url(self) -> str | None:
        return self.backend.endpoint_url

    @property
    def access_policy(self) -> AccessPolicy:
        """Who the endpoints this cloud serves answer (see sfn_idempotency.local.http.request_guard)."""
        return self.backend.access_policy

    def client(self, service: str, *, inject_host_prefix: bool = True) -> Any:
        """A boto3 client for this cloud (its credentials are fake and never leave the machine).
        ``inject_host_prefix=False`` for StartSyncExecution against a server endpoint (the SDK would
        send it to a "sync-" host that a loopback address does not have)."""
        return local_client(service, self.region, self.endpoint_url, inject_host_prefix=inject_host_prefix)

    def _own_client(self, service: str) -> Any:
        """One client per service for the engine's own set-up calls (a log group per machine...):
        each new boto3 client costs about 25 ms, several per machine a `serve` deploys. Users get
        a client of their own from ``client``, whose events they may register on."""
        with self._own_clients_lock:
            if service not in self._own_clients:
                self._own_clients[service] = self.client(service)
            return self._own_clients[service]

    # -- resources -------------------------------------------------------------------------
    def add_function(
        self,
        name: str,
        handler: str | Handler,
        *,
        code_dir: Path | None = None,
        environment: Mapping[str, str] | None = None,
        timeout_seconds: int = 60,
    ) -> LocalFunction:
        """A Lambda function: ``handler`` is ``"package.module.function"`` under ``code_dir`` (loaded
        with ``environment``, as a cold start) or a Python callable."""
        if isinstance(handler, str):
            if code_dir is None:
                raise EngineError(f"function {name}: a handler string needs code_dir")
            handler = cold_start(code_dir, handler, environment or {})
        return self.lambdas.add(name, handler, timeout_seconds)

    def items(self, table_name: str) -> list[dict[str, Any]]:
        """Every item of a table, as a Scan answers them (typed attribute values), read in process:
        what a test or the explorer reads often, without the API's round trip."""
        from moto.dynamodb.models import dynamodb_backends

        table = dynamodb_backends[self.account][self.region].get_table(table_name)
        return [item.to_json()["Attributes"] for item in table.all_items()]

    def restore_items(self, table_name: str, items: list[dict[str, Any]]) -> None:
        """Make a table hold exactly ``items`` (as ``items`` reads them), written in process through
        moto's DynamoDB, as DeleteItem and PutItem write (its streams see each write)."""
        from moto.dynamodb.models import dynamodb_backends

        backend = dynamodb_backends[self.account][self.region]
        keys = [key["AttributeName"] for key in backend.get_table(table_name).schema]
        for item in self.items(table_name):
            backend.delete_item(table_name, {name: item[name] for name in keys})
        for item in items:
            backend.put_item(table_name, copy.deepcopy(item))

    def create_table(self, name: str, *, ttl_attribute: str = "expiration") -> str:
        """A records table in Powertools' schema (partition key ``id``, TTL on ``ttl_attribute``);
        returns its name."""
        self.dynamodb.create_table(
            TableName=name,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        self.dynamodb.update_time_to_live(
            TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl_attribute}
        )
        return name

    def add_key_function(
        self, name: str, settings_environment: Mapping[str, str] | None = None
    ) -> LocalFunction:
        """The key Lambda (``compute_key``), quiet below warnings: with a standalone workflow's
        IDEMPOTENCY_* ``settings_environment``, or none for one that inline steps share."""
        return self.add_function(
            name,
            COMPUTE_KEY_HANDLER,
            code_dir=LAMBDAS_DIR,
            environment={**(settings_environment or {}), "POWERTOOLS_LOG_LEVEL": "WARNING"},
            timeout_seconds=KEY_FUNCTION_TIMEOUT_SECONDS,
        )

    def idempotency_substitutions(self) -> dict[str, str]:
        """The placeholders of a definition with inline idempotent steps (sfn_idempotency.wrap): one
        shared key Lambda (no settings of its own: each step's travel in its payload) and one table,
        created on first use, as ``IdempotencyKeyFunction`` and ``IdempotencyTable`` deploy them."""
        if self._inline_substitutions is None:
            function = self.add_key_function(INLINE_KEY_FUNCTION)
            self._inline_substitutions = {
                KEY_FUNCTION_PLACEHOLDER: function.arn,
                TABLE_PLACEHOLDER: self.create_table(INLINE_TABLE),
            }
        return dict(self._inline_substitutions)

    def create_state_machine(
        self,
        name: str,
        asl: Path | str,
        substitutions: Mapping[str, str],
        *,
        workflow_type: str = "STANDARD",
        metrics: IdempotentSteps | None = None,
    ) -> str:
        """``asl`` is an ASL file or its text, with ``${Name}`` placeholders for ``substitutions``.
        ``metrics``: the idempotent steps whose outcomes to count, by the metric filters the CDK
        constructs deploy (sfn_idempotency.metrics), on a log group of the machine's own
        (``/aws/vendedlogs/states/<name>``, level ALL; read them with :meth:`outcome_counts`)."""
        definition = definitions.render(asl, substitutions)
        logging_configuration: dict[str, Any] = {}
        if workflow_type == "EXPRESS" or metrics is not None:
            logging_configuration = logging_to_own_group(
                self._own_client("logs"),
                name,
                self.region,
                self.account,
                include_execution_data=workflow_type == "EXPRESS",
            )
        if metrics is not None:
            put_metric_filters(self._own_client("logs"), own_log_group(name), metrics)
        response = self.sfn.create_state_machine(
            name=name,
            definition=definition,
            roleArn=f"arn:aws:iam::{self.account}:role/{name}-role",
            type=workflow_type,
            **logging_configuration,
        )
        return str(response["stateMachineArn"])

    def outcome_counts(self, workflow: str, key_prefix: str) -> dict[str, int]:
        """Each outcome's count (sfn_idempotency.metrics.OUTCOMES) of one idempotent step of a
        machine created with ``metrics``, from CloudWatch."""
        return outcome_counts(self.client("cloudwatch"), workflow, key_prefix)

    def deploy_cdk_out(
        self, directory: Path | str, stacks: Sequence[str] = (), *, stand_in: Sequence[str] = ()
    ) -> DeployedAssembly:
        """Deploy the cloud assembly ``cdk synth`` left in ``directory`` (every stack, or those
        ``stacks`` name, globs allowed, with the stacks they depend on) through CloudFormation;
        again, to update the stacks in place. What the engine cannot run is skipped with a
        SkippedResourceWarning each (see sfn_idempotency.local.apps.cloud_assembly); ``stand_in``
        (logical ids or resource types, globs) are not deployed, and references to them resolve to
        the name and ARN they would have (sfn_idempotency.local.apps.stand_ins)."""
        deployer = AssemblyDeployer(
            self.client, self.account, self.region, mocked=self.mock_config is not None
        )
        deployed = deployer.deploy(Path(directory), stacks, stand_in)
        return DeployedAssembly(tuple(self._served_apis().of_stack(stack) for stack in deployed.stacks))

    def deploy_template(
        self,
        path: Path | str,
        *,
        stack_name: str | None = None,
        parameters: Mapping[str, str] | None = None,
        stand_in: Sequence[str] = (),
        state_machine_names: Mapping[str, str] | None = None,
    ) -> DeployedStack:
        """Deploy an AWS SAM or CloudFormation template (a file, or a folder's ``template.yaml``)
        as ``sam deploy`` would: local ``CodeUri`` and ``DefinitionUri`` packaged, the SAM
        transform applied by aws-sam-translator with ``parameters`` (``--parameter-overrides``),
        then through CloudFormation, again to update the stack in place. The stack is named
        ``stack_name``, or after the template's folder. ``state_machine_names`` (logical id ->
        name) names state machines as their ``Name`` property would, for a mock file's test cases.
        What the engine cannot run is skipped as for a CDK app (see ``deploy_cdk_out``)."""
        # read -> package and transform (SAM) -> plan -> deploy: every refusal before any change
        sam = sam_templates.transformed(
            Path(path),
            account=self.account,
            region=self.region,
            iam=self.client("iam"),
            stack_name=stack_name,
            parameters=parameters,
            state_machine_names=state_machine_names,
        )
        deployer = AssemblyDeployer(
            self.client, self.account, self.region, mocked=self.mock_config is not None
        )
        stack_plan = deployer.plan(sam.stack_name, sam.template, stand_in)
        deployer.publish(sam.artifacts)
        deployed = deployer.deploy_stack(sam.stack_name, stack_plan, parameters=sam.parameters)
        return self._served_apis().of_stack(deployed)

    def serve_rest_api(self, rest_api_id: str) -> dict[str, str]:
        """Serve a REST API made through the API Gateway API (a stack's are served as it deploys):
        each stage's local base URL by stage name, ``http://127.0.0.1:<port>/<stage>/``. Call it
        again after a change; a method the engine cannot run warns with a SkippedResourceWarning."""
        served, unserved = self._served_apis().serve([rest_api_id])
        for line in unserved:
            warnings.warn(f"not served: {line}", SkippedResourceWarning, stacklevel=2)
        return stage_urls(served, rest_api_id)

    def _answer_api_invocation(self, request: GatewayRequest) -> GatewayAnswer | None:
        """An apigateway:invoke Task's request (compat fix 93), answered as ``serve`` answers it."""
        return self._served_apis().answer_invocation(request, self._own_client("apigateway"))

    def _served_apis(self) -> ServedApis:
        if self._rest_apis is None:
            self._rest_apis = ServedApis(
                self.client,
                self.integration_services,
                self.access_policy,
                account=self.account,
                region=self.region,
                first_port=self.api_port,
            )
        return self._rest_apis

    def create_rule(self, name: str, pattern: Mapping[str, Any], target_arn: str) -> str:
        """An EventBridge rule on the default bus that starts ``target_arn`` with every event
        matching ``pattern`` (compat fix 7 delivers it)."""
        rule_arn = self.events.put_rule(Name=name, EventPattern=json.dumps(pattern))["RuleArn"]
        self.events.put_targets(
            Rule=name,
            Targets=[
                {
                    "Id": "StateMachine",
                    "Arn": target_arn,
                    "RoleArn": f"arn:aws:iam::{self.account}:role/{name}",
                }
            ],
        )
        return str(rule_arn)

    def put_event(self, source: str, detail_type: str, detail: Any) -> str:
        """Publish one event on the default bus; returns its id."""
        response = self.events.put_events(
            Entries=[{"Source": source, "DetailType": detail_type, "Detail": json.dumps(detail)}]
        )
        (entry,) = response["Entries"]
        return str(entry["EventId"])

    def executions(self, state_machine_arn: str) -> list[str]:
        """Every execution of the state machine, oldest first, read in process (an Express
        machine's too: AWS lists them nowhere but in their log group, compat fix 46)."""
        machine = self._backend().describe_state_machine(state_machine_arn)
        return [e.exec_arn for e in sorted(machine.executions, key=lambda e: e.start_date)]

    # -- executions ------------------------------------------------------------------------
    def start_execution(self, state_machine_arn: str, execution_input: Any, name: str | None = None) -> str:
        """StartExecution with ``execution_input`` as JSON; returns the execution ARN at once."""
        kwargs = {"name": name} if name else {}
        response = self.sfn.start_execution(
            stateMachineArn=state_machine_arn, input=json.dumps(execution_input), **kwargs
        )
        return str(response["executionArn"])

    def time_out(self, execution_arn: str) -> None:
        """End the running Standard execution as its ``TimeoutSeconds`` passing would, now: it is
        TIMED_OUT at once, its running state's late answer dropped (compat fix 68), and its status
        change event sent, without a test waiting for real time to pass."""
        execution = self._execution(execution_arn)
        env = execution.exec_worker.env
        if not env.is_running():
            raise EngineError(f"{execution_arn} is {execution.exec_status}, not running: nothing to time out")
        env.set_timed_out()
        execution.exec_worker._execution_communication.terminated()

    def wait(self, execution_arn: str, timeout: float = DEFAULT_WAIT_SECONDS) -> ExecutionResult:
        """Block until the execution ends (TimeoutError after ``timeout`` seconds); its result."""
        return results.ended_result(self._await_end(execution_arn, timeout))

    def _await_end(self, execution_arn: str, timeout: float) -> Any:
        """Watch moto's own execution object (it lives in this process, server or not) instead of
        polling DescribeExecution, whose serialization would compete with the execution itself."""
        execution = self._execution(execution_arn)
        ended = execution_ends.ends.wait_for_end(
            execution, lambda: execution.exec_status in TERMINAL_STATUSES, timeout
        )
        if not ended:
            raise TimeoutError(f"not reached within {timeout} s: {execution_arn} to end")
        return execution

    def _execution(self, execution_arn: str) -> Any:
        if is_express_execution(execution_arn):
            return express_execution(self._backend(), execution_arn)
        return self._backend().describe_execution(execution_arn)

    def _backend(self) -> Any:
        from moto.stepfunctions.parser.models import stepfunctions_parser_backends

        return stepfunctions_parser_backends[self.account][self.region]

    def wait_all(
        self, execution_arns: Iterable[str], timeout: float = DEFAULT_WAIT_SECONDS
    ) -> list[ExecutionResult]:
        """``wait`` for each execution, all within one ``timeout``; results in the same order."""
        deadline = time.monotonic() + timeout
        return [self.wait(arn, max(0.0, deadline - time.monotonic())) for arn in execution_arns]

    def run(
        self,
        state_machine_arn: str,
        execution_input: Any,
        name: str | None = None,
        timeout: float = DEFAULT_WAIT_SECONDS,
    ) -> ExecutionResult:
        """Start an execution of a Standard state machine and wait for its end."""
        return self.wait(self.start_execution(state_machine_arn, execution_input, name), timeout)

    def run_sync(
        self, state_machine_arn: str, execution_input: Any, name: str | None = None
    ) -> ExecutionResult:
        """StartSyncExecution of an Express state machine (compat fix 14): the call returns when the
        execution has ended. AWS keeps no history of it; the engine does, for ``states``."""
        kwargs = {"name": name} if name else {}
        response = self._unprefixed_sfn().start_sync_execution(
            stateMachineArn=state_machine_arn, input=json.dumps(execution_input), **kwargs
        )
        arn = response["executionArn"]
        with compat.sync_executions_lock:
            execution = compat.sync_executions.get(arn)
        events = results.history_of(execution) if execution is not None else ()
        return ExecutionResult.of(response, events)

    # -- AWS's unit-test APIs, offline ---------------------------------------------------------
    def test_state(self, **request: Any) -> dict[str, Any]:
        """TestState with AWS's arguments (``definition``, ``stateName``, ``input``, ``variables``,
        ``context``, ``mock``, ``inspectionLevel``, ``roleArn``...) and its answer (compat fix 29),
        the same as ``serve`` gives the AWS CLI: ``output``, ``status``, ``nextState``, ``error``,
        ``cause``, ``inspectionData``."""
        return _without_metadata(self._unprefixed_sfn().test_state(**request))

    def validate_state_machine_definition(self, **request: Any) -> dict[str, Any]:
        """ValidateStateMachineDefinition (compat fix 28): ``result``, ``diagnostics``, ``truncated``,
        from the same checks CreateStateMachine refuses a definition with."""
        return _without_metadata(self.sfn.validate_state_machine_definition(**request))

    @functools.cached_property
    def events(self) -> Any:
        """EventBridge's client, made when first used: most clouds never use it (a client, ~9 ms)."""
        return self.client("events")

    @functools.cached_property
    def integration_services(self) -> IntegrationServices:
        """How the REST APIs this cloud serves reach its services (sfn_idempotency.local.http)."""
        return IntegrationServices(self.client, self.region)

    def _unprefixed_sfn(self) -> Any:
        """TestState and StartSyncExecution go to AWS's "sync-" host, which a server endpoint lacks."""
        if self._sfn_unprefixed is None:
            self._sfn_unprefixed = self.client("stepfunctions", inject_host_prefix=False)
        return self._sfn_unprefixed

    def on_task_failure(self, listener: Callable[[task_failures.TaskFailure], None]) -> None:
        """Call ``listener`` with each failed Task attempt (its execution, state, error and cause) as
        its history records it, retried and caught attempts included, until the cloud closes."""
        task_failures.listeners.append(listener)

    def wait_until(
        self, condition: Callable[[], bool], timeout: float = DEFAULT_WAIT_SECONDS, what: str = ""
    ) -> None:
        """Poll ``condition`` until it holds, or fail after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() >= deadline:
                raise TimeoutError(f"not reached within {timeout} s: {what or condition}")
            time.sleep(POLL_INTERVAL_SECONDS)

    def snapshot(self, execution_arn: str, *, with_history: bool = True) -> ExecutionResult:
        """The execution as it is now, running or ended; ``with_history=False`` leaves its history
        out (an empty tuple), for a reader of its status, output and error alone."""
        return results.ended_result(self._execution(execution_arn), with_history=with_history)

    def status_of(self, execution_arn: str) -> str:
        """The execution's status now (RUNNING, SUCCEEDED...), read in process."""
        status = self._execution(execution_arn).exec_status
        return str(getattr(status, "value", status))

    def has_settled(self, execution_arn: str) -> bool:
        """Whether the execution has ended and everything its end sends (the status change event,
        the workflows that event starts) has been sent."""
        execution = self._execution(execution_arn)
        return execution.exec_status in TERMINAL_STATUSES and execution_ends.ends.announced(execution)

    def history_so_far(self, execution_arn: str) -> tuple[dict[str, Any], ...]:
        """The events of a (possibly running) execution so far."""
        return results.history_of(self._execution(execution_arn))

    def states_so_far(self, execution_arn: str) -> list[str]:
        """The states a (possibly running) execution has entered so far."""
        return results.states_entered(self._execution(execution_arn))

    def history_length(self, execution_arn: str) -> int:
        """How many events a (possibly running) execution has so far."""
        return results.event_count(self._execution(execution_arn))

    def _stop_running_executions(self) -> None:
        """Every execution still running, Express ones included, stopped as StopExecution would."""
        now = datetime.datetime.now(tz=datetime.UTC)
        for machine in self._backend().state_machines:
            for execution in machine.executions:
                if execution.exec_status == "RUNNING":
                    try:
                        execution.stop(stop_date=now, error=None, cause=None)
                    except Exception:
                        LOG.debug("could not stop %s", execution.exec_arn, exc_info=True)
