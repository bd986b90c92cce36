"""Small, isolated fixes to moto's Step Functions interpreter. Each one has a test in tests/local and
names its row of the AWS fidelity ledger, docs/aws-fidelity.md (`[L7]` is `#l7` there; speed fixes
change no behaviour).

1. [speed] Task clients: moto builds a new boto3 client for every Task state it runs (most of the local
   overhead). We hand it one cached client per service and region, created from a session that
   carries our call hooks, so Lambda Invoke reaches our handlers and faults can be injected.
2. [L10] Retry waits: moto sleeps the real IntervalSeconds/backoff. The engine may scale the wait so
   that tests of Retry policies do not spend minutes sleeping; semantics (which errors retry,
   how many times) are untouched.
3. [L12] Execution output: AWS returns the output as JSON text, always; moto returns a string result
   unquoted and drops a null one. We store the output as its JSON text when the execution ends.
4. [L5] (Retired.) moto refuses a ``States.``-prefixed name re-thrown by a Fail state's ``ErrorPath``, as
   the States Language says ("MUST NOT begin with the prefix States."); the flows map such errors to
   names of their own instead, so the refusal stands.
5. [L12] Unnamed executions: AWS names an execution started without ``name`` with a fresh UUID; moto
   names it "None", so a second unnamed start fails with ExecutionAlreadyExists.
6. [L3] ``states:startExecution`` (and ``.sync``/``.sync:2``): AWS takes the API's parameters in
   PascalCase (``StateMachineArn``, ``Input``) and returns PascalCase (``ExecutionArn``,
   ``Output``, ``Error``, ``Cause``). moto's interpreter leaves both unconverted, so nesting failed.
   We convert them through the Step Functions API's own shapes, as the service does, with
   timestamps as epoch milliseconds.
7. [L7] EventBridge to Step Functions: a rule whose target is a state machine starts an execution
   with the matching event (or the target's InputTransformer output / Input) as its input. moto
   matches the rule but delivers only to SQS, Logs and other buses, and through DISABLED rules too.
8. [L8] DynamoDB conditional writes are atomic: "the write succeeds only if the condition holds" at the
   moment of writing. moto checks the condition and then writes without a lock, so two threads
   (two executions claiming one key) could both pass. We serialize moto's item writes.
9. [speed] Parsing: moto parses the definition with ANTLR at the start of every execution (~40 ms for
   ours, most of the local overhead after fix 1). We parse each definition once and share the
   parsed program: its components are declarations that evaluation never changes (executions keep
   their state in their own Environment), except a lazily drawn heap key per component, which we
   draw at parse time so that concurrent executions cannot race on it.
10. [L9] ``States.ALL`` "cannot catch the States.DataLimitExceeded terminal error or Runtime error
    types"; moto's wildcard matched them, so an oversized result was caught and released locally
    while on AWS it ends the execution (and the claim waits for its lease or the release workflow).
11. [speed] JSONPath parsing: jsonpath-ng builds a new PLY parser for every path it parses, and moto parses
    every path of every state each time it runs (~20 parser builds per execution of ours). Parsed
    paths are immutable, so we parse each distinct path once.
12. [speed] Request dispatch: moto lists a response class's methods with ``inspect.getmembers`` on every
    request it serves; we remember the list per class. Interpreter requests to the in-process
    backend go unsigned (moto takes region and account from the request's host and its defaults).
13. [L6] Execution status change events: Step Functions sends "Step Functions Execution Status Change"
    to the default event bus for every status change of a Standard workflow's execution (RUNNING,
    SUCCEEDED, FAILED, TIMED_OUT, ABORTED), and none for Express workflows; input and output are
    left out (``inputDetails.included: false``) when they would make the event too large. moto
    sends none, so rules on them (the claim release) never fired locally without a test's help.
14. [L14] StartSyncExecution: an Express workflow runs to its end within the request, which answers
    with status, output or error and cause; a Standard workflow is refused
    (StateMachineTypeNotSupported). moto has no such operation: we add it to the parser backend and
    the Step Functions responses, and route the ``sync-states`` host to them.
15. [L15, L16] JSONata and workflow variables: moto evaluates every JSONata expression, and every
    variable reference of a JSONPath state (``$name`` in Parameters, InputPath, Choice...), through
    a JSONata evaluator that is a stub (LocalStack's JVM bridge, not wired): any JSONata machine,
    and any variable read, failed with ``States.Runtime``. We evaluate with jsonata-python, a port
    of the same jsonata-java, plus the functions Step Functions adds (sfn_idempotency.local.stepfunctions_jsonata:
    moto declared $hash and $uuid as stubs and $random without a seed; $eval is refused as AWS
    refuses it). An expression that fails to evaluate fails its JSONata state with
    ``States.QueryEvaluationError`` as on AWS (moto: ``States.Runtime``), and a string value is
    escaped when moto hands variables and ``$states`` to the evaluator (a quote broke it).
16. [L16] Query-language scopes: moto's parser keeps the stack of QueryLanguage scopes in a class
    attribute that every parse shares. A definition refused mid-parse (a JSONPath state under a
    JSONata top level, refused as AWS refuses it) left its scopes behind, and every later JSONPath
    definition was then refused as a "downgrade from JSONata"; two parses at once shared one stack.
    Each parse gets its own.
17. [L17] CreateStateMachine is idempotent only for the same request: a second create with the same
    name and the same definition, role and type returns the existing machine; with another one AWS
    refuses it (StateMachineAlreadyExists). moto returned the old machine, so a redeployed
    definition silently kept running the old one.
"""

from __future__ import annotations

import copy
import datetime
import functools
import importlib
import importlib.metadata
import json
import pkgutil
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3
import botocore.session
from botocore import UNSIGNED
from botocore.client import BaseClient
from botocore.config import Config
from moto.core.exceptions import AWSError
from moto.stepfunctions.parser.asl.jsonata.jsonata import JSONataException
from moto.stepfunctions.parser.utils import snake_to_camel_case

from sfn_idempotency.local import stepfunctions_jsonata
from sfn_idempotency.local.calls import CallInterceptor

# The moto releases the fixes were written and tested against; keep equal to pyproject's [local] pin.
SUPPORTED_MOTO = ">=5.2.5,<5.3"
_BOTO_CLIENT_MODULE = "moto.stepfunctions.parser.asl.utils.boto_client"
_COMPONENT_PACKAGE = "moto.stepfunctions.parser.asl.component"
_RETRIER_MODULE = "moto.stepfunctions.parser.asl.component.common.retry.retrier_decl"
_EXECUTION_MODULE = "moto.stepfunctions.parser.backend.execution"
_PARSER_MODELS_MODULE = "moto.stepfunctions.parser.models"
_SFN_TASK_MODULE = (
    "moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn"
)
_EVENTS_MODULE = "moto.events.models"
_EXECUTION_WORKER_MODULE = "moto.stepfunctions.parser.backend.execution_worker"
_PARSED_PROGRAMS_KEPT = 64
_ERROR_EQUALS_MODULE = "moto.stepfunctions.parser.asl.component.common.error_name.error_equals_decl"
_TERMINAL_ERRORS = frozenset({"States.DataLimitExceeded", "States.Runtime"})
_JSON_PATH_MODULES = (
    "moto.stepfunctions.parser.asl.utils.json_path",
    "moto.stepfunctions.parser.asl.component.common.path.result_path",
)
_PARSED_PATHS_KEPT = 4096
_STATUS_CHANGE = "Step Functions Execution Status Change"
_SYNC_STATES_URL = r"https?://sync-states\.(.+)\.amazonaws.com"
_SYNC_EXECUTIONS_KEPT = 256  # for LocalCloud.run_sync's history; AWS keeps none for Express
# Input and output together stay under this in a status change event (an event carries 256 KiB at
# most; the Step Functions developer guide's EventBridge page names 248 KiB for the data).
MAX_STATUS_EVENT_DATA_BYTES = 248 * 1024
_RESPONSES_MODULE = "moto.core.responses"
_JSONATA_MODULE = "moto.stepfunctions.parser.asl.jsonata.jsonata"
_STRING_EXPRESSION_MODULE = "moto.stepfunctions.parser.asl.component.common.string.string_expression"
_JSONATA_MODE = "JSONata"
_DYNAMODB_MODULE = "moto.dynamodb.models"
_ATOMIC_WRITES = ("put_item", "update_item", "delete_item", "transact_write_items")

interceptor = CallInterceptor()
_dynamodb_write_lock = threading.RLock()
_session_lock = threading.Lock()
_clients: dict[tuple[str, str, str | None], BaseClient] = {}
_session: boto3.Session | None = None


def _interpreter_session() -> boto3.Session:
    global _session
    if _session is None:
        session = boto3.Session(aws_access_key_id="ak", aws_secret_access_key="sk")
        session.events.register("before-parameter-build", interceptor.remember_params)
        session.events.register("before-call", interceptor.before_call)
        _session = session
    return _session


def cached_boto_client_for(region: str, service: str, state_credentials: Any = None) -> BaseClient:
    """Drop-in for moto's ``boto_client_for``; same endpoint and retry settings, built once."""
    from moto.core.models import botocore_stubber
    from moto.settings import moto_server_port

    endpoint_url = None if botocore_stubber.enabled else f"http://localhost:{moto_server_port()}"
    cache_key = (region, service, endpoint_url)
    client = _clients.get(cache_key)
    if client is None:
        with _session_lock:
            client = _clients.get(cache_key)
            if client is None:
                client = _interpreter_session().client(
                    service,
                    region_name=region,
                    endpoint_url=endpoint_url,
                    config=Config(
                        parameter_validation=False,
                        retries={"max_attempts": 0, "total_max_attempts": 1},
                        max_pool_connections=64,
                        # In process nothing checks a signature (fix 12); a server needs the
                        # credential scope to tell the region.
                        signature_version=UNSIGNED if endpoint_url is None else None,
                    ),
                )
                _clients[cache_key] = client
    return client


class _ScaledTime:
    """Stands in for the ``time`` module inside moto's retrier only."""

    scale = 1.0

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds * self.scale)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


retry_time = _ScaledTime()


def _emit_when_started(original: Callable[[Any], None]) -> Callable[[Any], None]:
    def start(self: Any) -> None:
        # Sent before the worker runs, so RUNNING precedes the terminal event as on AWS.
        _emit_status_change(self, status="RUNNING")
        original(self)

    return start


def _emit_when_ended(original: Callable[[Any], None]) -> Callable[[Any], None]:
    def terminated(self: Any) -> None:
        original(self)
        _emit_status_change(self.execution, status=None)

    return terminated


def _emit_status_change(execution: Any, status: str | None) -> None:
    """The status change event of a Standard workflow's execution, on its default event bus."""
    from moto.events.models import events_backends

    # moto keeps the workflow type on the state machine's `type` (its `sm_type` is always STANDARD).
    if execution.state_machine.type != "STANDARD":
        return
    detail = status_change_detail(_with_output_text(execution, execution.to_describe_output()), status)
    entry = {
        "Source": "aws.states",
        "DetailType": _STATUS_CHANGE,
        "Detail": json.dumps(detail),
        "Resources": [execution.exec_arn],
        "EventBusName": "default",
    }
    # Straight to the bus: PutEvents refuses the aws.* sources that only AWS services may send.
    events_backends[execution.account_id][execution.region_name].put_events([entry])


def status_change_detail(description: dict[str, Any], status: str | None = None) -> dict[str, Any]:
    """The ``detail`` of a status change event from a DescribeExecution output: dates in epoch
    milliseconds, input and output left out (with ``included: false``) once they pass the limit."""
    execution_input: str | None = description.get("input")
    output: str | None = description.get("output")
    input_size = len(execution_input.encode()) if execution_input is not None else 0
    input_fits = execution_input is not None and input_size <= MAX_STATUS_EVENT_DATA_BYTES
    room = MAX_STATUS_EVENT_DATA_BYTES - (input_size if input_fits else 0)
    output_fits = output is not None and len(output.encode()) <= room
    return {
        "executionArn": description["executionArn"],
        "stateMachineArn": description["stateMachineArn"],
        "name": description["name"],
        "status": status or str(getattr(description["status"], "value", description["status"])),
        "startDate": _epoch_ms(description.get("startDate")),
        "stopDate": None if status == "RUNNING" else _epoch_ms(description.get("stopDate")),
        "input": execution_input if input_fits else None,
        "inputDetails": {"included": input_fits},
        "output": output if output_fits else None,
        "outputDetails": {"included": output_fits} if output is not None else None,
        "error": description.get("error"),
        "cause": description.get("cause"),
    }


def _with_output_text(execution: Any, answer: dict[str, Any]) -> dict[str, Any]:
    """moto's Describe/StartSync answers encode the output as JSON; after fix 3 it is JSON text
    already, so the answer takes it as it is (encoding it again would quote it twice)."""
    if "output" in answer:
        answer["output"] = execution.output
    return answer


def _epoch_ms(moment: datetime.datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp() * 1000)


class StateMachineTypeNotSupportedError(Exception):
    """Raised for a Standard state machine; answered as AWS's StateMachineTypeNotSupported."""


# Express executions started with StartSyncExecution, newest last: AWS offers no history for them,
# the local engine keeps the last few for LocalCloud.run_sync (tests read the states visited).
sync_executions: dict[str, Any] = {}
sync_executions_lock = threading.Lock()


def _start_sync_execution(
    self: Any, state_machine_arn: str, name: str | None = None, execution_input: str | None = None
) -> dict[str, Any]:
    """The parser backend's StartSyncExecution: run an Express execution to its end, inline."""
    from moto.stepfunctions.exceptions import InvalidExecutionInput
    from moto.stepfunctions.parser.backend.execution import SyncExecution

    state_machine = self.describe_state_machine(state_machine_arn)
    if state_machine.type != "EXPRESS":
        raise StateMachineTypeNotSupportedError(
            "This operation is not supported by this type of state machine"
        )
    input_data = "{}" if execution_input is None else execution_input
    try:
        json.loads(input_data)
    except ValueError as error:
        raise InvalidExecutionInput(str(error)) from None
    name = name or str(uuid.uuid4())
    arn = f"arn:{self.partition}:states:{self.region_name}:{self.account_id}:express:{state_machine.name}:{name}:{uuid.uuid4()}"
    snapshot = copy.deepcopy(
        state_machine, {id(state_machine.executions): [], id(state_machine.backend): state_machine.backend}
    )
    execution = SyncExecution(
        name=name,
        sm_type=snapshot.sm_type,
        role_arn=snapshot.roleArn,
        exec_arn=arn,
        account_id=self.account_id,
        region_name=self.region_name,
        state_machine=snapshot,
        start_date=datetime.datetime.now(tz=datetime.UTC),
        cloud_watch_logging_session=None,
        input_data=input_data,
        trace_header=None,
        activity_store={},
    )
    execution.start()  # the sync worker runs the program in this thread, to its end
    with sync_executions_lock:
        sync_executions[arn] = execution
        while len(sync_executions) > _SYNC_EXECUTIONS_KEPT:
            sync_executions.pop(next(iter(sync_executions)))
    return _with_output_text(execution, execution.to_start_sync_execution_output())


def _start_sync_execution_response(self: Any) -> Any:
    from moto.core.exceptions import JsonRESTError
    from moto.core.responses import ActionResult

    try:
        output = self.stepfunction_backend.start_sync_execution(
            self._get_param("stateMachineArn"), self._get_param("name"), self._get_param("input")
        )
    except StateMachineTypeNotSupportedError as error:
        raise JsonRESTError("StateMachineTypeNotSupported", str(error)) from None
    return ActionResult(output)


def _route_sync_states() -> None:
    """Requests to sync-states.<region>.amazonaws.com reach the Step Functions responses."""
    import re

    from moto import backend_index
    from moto.stepfunctions import urls

    if _SYNC_STATES_URL not in urls.url_bases:
        urls.url_bases.append(_SYNC_STATES_URL)
    if not any(pattern.pattern == _SYNC_STATES_URL for _, pattern in backend_index.backend_url_patterns):
        backend_index.backend_url_patterns.append(("stepfunctions", re.compile(_SYNC_STATES_URL)))


def _replace(owner: Any, attribute: str, build: Callable[[Any], Any]) -> None:
    """``owner.attribute = build(original)``; installing again rebuilds from the same original."""
    saved = f"_sfn_local_original_{attribute}"
    original = owner.__dict__.get(saved) or getattr(owner, attribute)
    setattr(owner, saved, original)
    setattr(owner, attribute, build(original))


def _route_task_clients() -> None:
    """Interpreter modules imported ``boto_client_for`` by name: point each at the cached one too."""
    original = importlib.import_module(_BOTO_CLIENT_MODULE)._sfn_local_original_boto_client_for
    for module in _interpreter_modules():
        if getattr(module, "boto_client_for", None) is original:
            module.boto_client_for = cached_boto_client_for


def _interpreter_modules() -> list[Any]:
    """Every interpreter module, imported now so that none keeps the original later."""
    package = importlib.import_module(_COMPONENT_PACKAGE)
    for info in pkgutil.walk_packages(package.__path__, prefix=f"{_COMPONENT_PACKAGE}."):
        importlib.import_module(info.name)
    return [module for name, module in list(sys.modules.items()) if name.startswith(_COMPONENT_PACKAGE)]


def _store_output_as_json_text(original: Callable[[Any], None]) -> Callable[[Any], None]:
    def reflect_execution_status(self: Any) -> None:
        original(self)
        if self.execution.exec_status == "SUCCEEDED":
            self.execution.output = json.dumps(self.execution.output, separators=(",", ":"))

    return reflect_execution_status


def _name_unnamed_executions(original: Callable[..., Any]) -> Callable[..., Any]:
    def start_execution(
        self: Any, state_machine_arn: str, name: str | None = None, *args: Any, **kwargs: Any
    ) -> Any:
        return original(self, state_machine_arn, name or str(uuid.uuid4()), *args, **kwargs)

    return start_execution


def _operation_shapes(task: Any, action: str | None) -> Any:
    operation = snake_to_camel_case(action or task._get_boto_service_action())
    return _stepfunctions_model().operation_model(operation)


@functools.cache
def _stepfunctions_model() -> Any:
    return botocore.session.get_session().get_service_model("stepfunctions")


def _pascal_case_request(original: Callable[..., None]) -> Callable[..., None]:
    def normalise_parameters(
        self: Any,
        parameters: dict[str, Any],
        boto_service_name: str | None = None,
        service_action_name: str | None = None,
    ) -> None:
        original(self, parameters, boto_service_name, service_action_name)
        self._to_boto_request(parameters, _operation_shapes(self, service_action_name).input_shape)

    return normalise_parameters


def _pascal_case_response(original: Callable[..., None]) -> Callable[..., None]:
    def normalise_response(
        self: Any, response: Any, boto_service_name: str | None = None, service_action_name: str | None = None
    ) -> None:
        original(self, response, boto_service_name, service_action_name)
        self._from_boto_response(response, _operation_shapes(self, service_action_name).output_shape)
        if isinstance(response, dict):
            # Step Functions renders the API's timestamps as epoch milliseconds in task results.
            for key, value in response.items():
                if isinstance(value, datetime.datetime):
                    response[key] = _epoch_ms(value)

    return normalise_response


def _deliver_to_state_machines(original: Callable[..., None]) -> Callable[..., None]:
    from moto.stepfunctions.responses import get_backend
    from moto.utilities.arns import parse_arn

    def is_state_machine(target: dict[str, Any]) -> bool:
        arn = parse_arn(target["Arn"])
        return (arn.service, arn.resource_type) == ("states", "stateMachine")

    def send_to_targets(self: Any, event: dict[str, Any], transform_input: bool = True) -> None:
        if self.state != "ENABLED":
            return  # a DISABLED rule delivers nothing, to any target (moto delivered anyway)
        others = [target for target in self.targets if not is_state_machine(target)]
        if others:
            # moto raises NotImplementedError on a target kind it does not know: hand it only its own.
            rule = copy.copy(self)
            rule.targets = others
            original(rule, event, transform_input)
        if not self.event_pattern.matches_event(event):
            return
        for target in filter(is_state_machine, self.targets):
            arn = parse_arn(target["Arn"])
            get_backend(arn.account, arn.region).start_execution(
                target["Arn"], None, _target_input(target, event)
            )

    return send_to_targets


def _target_input(target: dict[str, Any], event: dict[str, Any]) -> str:
    """What EventBridge sends the target: its constant Input, its InputTransformer's output, or the event."""
    from moto.events.utils import EventTemplateParser
    from moto.utilities.arns import parse_arn

    if "Input" in target:
        return str(target["Input"])
    transformer = target.get("InputTransformer")
    if transformer is None:
        return json.dumps(_as_delivered(event, parse_arn(target["Arn"]).account))
    delivered = EventTemplateParser.parse(
        input_template=transformer.get("InputTemplate"),
        input_paths_map=transformer.get("InputPathsMap", {}),
        event=event,
    )
    return delivered if isinstance(delivered, str) else json.dumps(delivered)


def _as_delivered(event: dict[str, Any], account: str) -> dict[str, Any]:
    """The envelope as EventBridge delivers it: every field, ``time`` as ISO 8601 UTC."""
    moment = event.get("time")
    if isinstance(moment, int | float):
        moment = datetime.datetime.fromtimestamp(moment, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    envelope = {
        "version": "0",
        "id": event.get("id"),
        "detail-type": event.get("detail-type"),
        "source": event.get("source"),
    }
    envelope.update({"account": event.get("account", account), "time": moment, "region": event.get("region")})
    envelope.update({"resources": event.get("resources", []), "detail": event.get("detail", {})})
    return envelope


def _atomic(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def write(*args: Any, **kwargs: Any) -> Any:
        with _dynamodb_write_lock:
            return original(*args, **kwargs)

    return write


def _parse_once(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    @functools.lru_cache(maxsize=_PARSED_PROGRAMS_KEPT)
    def parsed(definition: str) -> Any:
        from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

        return _draw_heap_keys(AmazonStateLanguageParser.parse(definition)[0])

    parsing = threading.Lock()  # executions starting together parse their definition once

    def get_evaluation_entrypoint(self: Any) -> Any:
        with parsing:
            return parsed(self._evaluation_details.state_machine_details.definition)

    return get_evaluation_entrypoint


def _draw_heap_keys(program: Any) -> Any:
    """Touch ``heap_key`` on every component of the program, once, before anyone shares it."""
    from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent

    seen: set[int] = set()
    pending = [program]
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, EvalComponent):
            _ = node.heap_key
        if isinstance(node, dict):
            pending.extend(node.values())
        elif isinstance(node, list | tuple | set | frozenset):
            pending.extend(node)
        elif hasattr(node, "__dict__") and type(node).__module__.startswith("moto.stepfunctions"):
            pending.extend(vars(node).values())
    return program


def _wildcard_spares_terminal_errors(original: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    def eval_body(self: Any, env: Any) -> None:
        error_name = env.stack[-1]
        if (
            self._STATE_ALL_ERROR in self.error_names
            and getattr(error_name, "error_name", None) in _TERMINAL_ERRORS
        ):
            env.stack.pop()
            env.stack.append(False)
            return
        original(self, env)

    return eval_body


def _parse_path_once(original: Callable[[str], Any]) -> Callable[[str], Any]:
    return functools.lru_cache(maxsize=_PARSED_PATHS_KEPT)(original)


def _evaluate_jsonata(_stub: Any) -> Callable[[str], Any]:
    def evaluate(expression: str) -> Any:
        try:
            return stepfunctions_jsonata.evaluate(expression)
        except stepfunctions_jsonata.JSONataEvaluationError as error:
            raise JSONataException("UNKNOWN", str(error)) from error

    return evaluate


def _no_declared_functions(_original: Any) -> Callable[..., str]:
    """moto declares Step Functions' JSONata functions in JSONata itself, $hash and $uuid as stubs
    and $random without its seed; the evaluator provides them all natively instead."""
    return lambda variable_references: ""


def _escaped_declarations(_original: Any) -> Callable[[dict[str, Any]], str]:
    return stepfunctions_jsonata.encode_declarations


def _query_evaluation_errors(original: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    """A JSONata expression that fails to evaluate fails its state with States.QueryEvaluationError
    (as AWS does), not States.Runtime; a JSONPath state's variable read stays States.Runtime."""

    def eval_body(self: Any, env: Any) -> None:
        try:
            original(self, env)
        except JSONataException as error:
            mode = getattr(self, "query_language_mode", None)  # StringJSONata has none: always JSONata
            if mode is not None and mode.name != _JSONATA_MODE:
                raise
            raise _query_evaluation_failure(env, self.expression, error.details) from error

    return eval_body


class StateMachineAlreadyExists(AWSError):  # type: ignore[misc]  # moto is not followed (pyproject)
    TYPE = "StateMachineAlreadyExists"
    STATUS = 400


def _refuse_a_different_machine_under_a_taken_name(original: Callable[..., Any]) -> Callable[..., Any]:
    def create_state_machine(self: Any, name: str, definition: str, roleArn: str, **kwargs: Any) -> Any:
        existing = next((machine for machine in self.state_machines if machine.name == name), None)
        requested = (definition, roleArn, kwargs.get("sm_type") or "STANDARD")
        if existing is not None and (existing.definition, existing.roleArn, existing.type) != requested:
            raise StateMachineAlreadyExists(f"State Machine Already Exists: '{existing.arn}'")
        return original(self, name, definition, roleArn, **kwargs)

    return create_state_machine


def _own_query_language_scopes(original: Callable[..., None]) -> Callable[..., None]:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self._query_language_per_scope = []

    return __init__


def _query_evaluation_failure(env: Any, expression: str, details: str | None) -> Exception:
    from moto.stepfunctions.parser.api import EvaluationFailedEventDetails, HistoryEventType
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    error_name = StatesErrorName(typ=StatesErrorNameType.StatesQueryEvaluationError)
    cause = f"The JSONata expression '{expression}' threw an error during evaluation: {details}"
    failure: Exception = FailureEventException(
        failure_event=FailureEvent(
            env=env,
            error_name=error_name,
            event_type=HistoryEventType.EvaluationFailed,
            event_details=EventDetails(
                evaluationFailedEventDetails=EvaluationFailedEventDetails(
                    cause=cause, error=error_name.error_name
                )
            ),
        )
    )
    return failure


class IncompatibleMotoError(RuntimeError):
    """The installed moto lacks an internal that a fix patches: results would be wrong, so refuse."""


@dataclass(frozen=True)
class _Patch:
    """``owner.attribute = build(original)``; ``owner`` is ``module`` or ``module:Class``."""

    fix: int
    owner: str
    attribute: str
    build: Callable[[Any], Any]

    def resolve_owner(self) -> Any:
        module_name, _, class_name = self.owner.partition(":")
        owner = importlib.import_module(module_name)
        return getattr(owner, class_name) if class_name else owner


def _keep(original: Any) -> Any:
    return original


# Every moto internal the engine touches, by fix number; attributes only read use `_keep`.
_PATCHES: tuple[_Patch, ...] = (
    _Patch(1, _BOTO_CLIENT_MODULE, "boto_client_for", lambda _original: cached_boto_client_for),
    _Patch(1, "moto.core.models", "botocore_stubber", _keep),
    _Patch(2, _RETRIER_MODULE, "time", lambda _original: retry_time),
    _Patch(
        3,
        f"{_EXECUTION_MODULE}:BaseExecutionWorkerCommunication",
        "_reflect_execution_status",
        _store_output_as_json_text,
    ),
    _Patch(
        5, f"{_PARSER_MODELS_MODULE}:StepFunctionsParserBackend", "start_execution", _name_unnamed_executions
    ),
    _Patch(5, _PARSER_MODELS_MODULE, "stepfunctions_parser_backends", _keep),
    _Patch(6, f"{_SFN_TASK_MODULE}:StateTaskServiceSfn", "_normalise_parameters", _pascal_case_request),
    _Patch(6, f"{_SFN_TASK_MODULE}:StateTaskServiceSfn", "_normalise_response", _pascal_case_response),
    _Patch(6, f"{_SFN_TASK_MODULE}:StateTaskServiceSfn", "_to_boto_request", _keep),
    _Patch(6, f"{_SFN_TASK_MODULE}:StateTaskServiceSfn", "_from_boto_response", _keep),
    _Patch(7, f"{_EVENTS_MODULE}:Rule", "send_to_targets", _deliver_to_state_machines),
    _Patch(7, _EVENTS_MODULE, "events_backends", _keep),
    _Patch(7, "moto.events.utils", "EventTemplateParser", _keep),
    *(_Patch(8, f"{_DYNAMODB_MODULE}:DynamoDBBackend", operation, _atomic) for operation in _ATOMIC_WRITES),
    _Patch(9, f"{_EXECUTION_WORKER_MODULE}:ExecutionWorker", "_get_evaluation_entrypoint", _parse_once),
    _Patch(9, "moto.stepfunctions.parser.asl.parse.asl_parser", "AmazonStateLanguageParser", _keep),
    _Patch(10, f"{_ERROR_EQUALS_MODULE}:ErrorEqualsDecl", "_eval_body", _wildcard_spares_terminal_errors),
    *(_Patch(11, json_path_module, "parse", _parse_path_once) for json_path_module in _JSON_PATH_MODULES),
    _Patch(12, _RESPONSES_MODULE, "method_names_from_class", functools.cache),
    _Patch(13, f"{_EXECUTION_MODULE}:Execution", "start", _emit_when_started),
    _Patch(13, f"{_EXECUTION_MODULE}:BaseExecutionWorkerCommunication", "terminated", _emit_when_ended),
    _Patch(14, f"{_EXECUTION_MODULE}:SyncExecution", "to_start_sync_execution_output", _keep),
    _Patch(14, "moto.stepfunctions.urls", "url_bases", _keep),
    _Patch(14, "moto.backend_index", "backend_url_patterns", _keep),
    _Patch(15, _JSONATA_MODULE, "_eval_jsonata", _evaluate_jsonata),
    _Patch(15, _STRING_EXPRESSION_MODULE, "get_intrinsic_functions_declarations", _no_declared_functions),
    *(
        _Patch(15, module, "encode_jsonata_variable_declarations", _escaped_declarations)
        for module in (
            _JSONATA_MODULE,
            "moto.stepfunctions.parser.asl.eval.variable_store",
            "moto.stepfunctions.parser.asl.eval.states",
        )
    ),
    _Patch(15, f"{_STRING_EXPRESSION_MODULE}:StringJSONata", "_eval_body", _query_evaluation_errors),
    _Patch(15, f"{_STRING_EXPRESSION_MODULE}:StringVariableSample", "_eval_body", _query_evaluation_errors),
    _Patch(
        15,
        "moto.stepfunctions.parser.asl.component.common.error_name.failure_event",
        "FailureEventException",
        _keep,
    ),
    _Patch(
        15,
        "moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type:StatesErrorNameType",
        "StatesQueryEvaluationError",
        _keep,
    ),
    _Patch(
        16,
        "moto.stepfunctions.parser.asl.parse.preprocessor:Preprocessor",
        "__init__",
        _own_query_language_scopes,
    ),
    _Patch(
        17,
        "moto.stepfunctions.models:StepFunctionBackend",
        "create_state_machine",
        _refuse_a_different_machine_under_a_taken_name,
    ),
)


def incompatibilities() -> list[str]:
    """What each fix needs from moto and this moto lacks (empty: every fix applies)."""
    problems = []
    for patch in _PATCHES:
        try:
            owner = patch.resolve_owner()
        except (ImportError, AttributeError) as error:
            problems.append(f"fix {patch.fix}: {patch.owner} is missing ({error})")
            continue
        if not hasattr(owner, patch.attribute):
            problems.append(f"fix {patch.fix}: {patch.owner}.{patch.attribute} is missing")
    return problems


def check() -> None:
    """Refuse a moto whose internals moved, naming its version and the fixes that cannot apply."""
    problems = incompatibilities()
    if problems:
        raise IncompatibleMotoError(
            f"moto {importlib.metadata.version('moto')} is not supported by the local engine "
            f"(tested range {SUPPORTED_MOTO}): {'; '.join(problems)}. "
            f"Install a supported one: pip install 'moto{SUPPORTED_MOTO}'"
        )


def install() -> None:
    """Apply every fix; idempotent, and safe before or after moto's modules were imported."""
    check()
    _interpreter_modules()
    for patch in _PATCHES:
        if patch.build is not _keep:
            _replace(patch.resolve_owner(), patch.attribute, patch.build)
    _route_task_clients()
    # Fix 14 adds an operation moto lacks, rather than replacing one.
    importlib.import_module(
        _PARSER_MODELS_MODULE
    ).StepFunctionsParserBackend.start_sync_execution = _start_sync_execution
    importlib.import_module(
        "moto.stepfunctions.responses"
    ).StepFunctionResponse.start_sync_execution = _start_sync_execution_response
    _route_sync_states()
