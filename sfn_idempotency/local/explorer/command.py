"""``sfn-idempotency check``: the explorer on the example app, on an ASL file with its functions, or
on a state machine of an app deployed from its SAM template or CDK cloud assembly."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import jmespath
from jsonpath_ng.ext.parser import parse as jsonpath_parse

from sfn_idempotency.flow.resources import COMPUTE_KEY_HANDLER
from sfn_idempotency.local.apps.deployed import (
    CloudAssemblyError,
    DeployedResource,
    DeployedStack,
    DeploymentError,
)
from sfn_idempotency.local.apps.sam_templates import TemplateError
from sfn_idempotency.local.engine.cloud import EngineError, LocalCloud
from sfn_idempotency.local.engine.lambdas import cold_start
from sfn_idempotency.local.engine.service import IdempotentService
from sfn_idempotency.local.explorer import DEFAULT_MAX_STEPS, DEFAULT_SCHEDULES, explore
from sfn_idempotency.local.explorer.report import Report
from sfn_idempotency.local.explorer.surface import states_of
from sfn_idempotency.local.explorer.target import EventBridgeDelivery, Invariant, Target, TargetError
from sfn_idempotency.settings import example_settings
from sfn_idempotency.wrap import KEY_FUNCTION_PLACEHOLDER, TABLE_PLACEHOLDER

EXAMPLE_ORDER = {"orderId": "o-1001", "amount": 42.5}
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


class CheckError(ValueError):
    """What the command was given cannot be checked (one line, exit 2)."""


@dataclass
class CheckRequest:
    """What ``sfn-idempotency check`` was asked: ``definition`` (None: the example app), its
    ``functions`` (name: ``module.function`` under ``code_dir``), ``substitutions``, the ``watch``ed
    functions (default: all of them), the ``request`` and its ``key``, and the exploration's
    ``schedules``, ``seed``, ``budget_seconds``, ``max_steps`` or ``replay``. The rest are
    ``ExplorationTarget``'s options, as the command line gives them: ``invariants`` (each
    ``module.function`` under ``code_dir``), ``helpers`` (state machines of the app; [] for none),
    ``via_eventbridge`` (an event's source and detail type) and ``large_results``."""

    definition: Path | None = None
    functions: dict[str, str] = field(default_factory=dict)
    code_dir: Path = Path()
    substitutions: dict[str, str] = field(default_factory=dict)
    tables: dict[str, str] = field(default_factory=dict)  # placeholder: partition key, made for it
    watch: Sequence[str] = ()
    request: Any = None
    key: str | None = None
    answer: str | None = None
    safe_errors: Sequence[str] = ()  # errors a client may retry, beyond the flow's and the injected
    record_tables: Sequence[str] | None = None  # the idempotency records' tables (default: by schema)
    invariants: Sequence[str] = ()
    helpers: Sequence[str] | None = None
    via_eventbridge: tuple[str, str] | None = None
    express: bool = False
    large_results: bool = False
    schedules: int = DEFAULT_SCHEDULES
    seed: int = 0
    budget_seconds: float | None = None
    max_steps: int = DEFAULT_MAX_STEPS
    replay: str | None = None
    app: AppSource | None = None


@dataclass
class AppSource:
    """An app to deploy and check instead of a definition: a SAM or CloudFormation ``template``
    (with its ``stack_name`` and ``parameters``) or a ``cdk_out`` cloud assembly (its ``stacks``),
    and which ``state_machine`` of it (a logical id or construct path; default: its only one)."""

    template: Path | None = None
    cdk_out: Path | None = None
    stacks: Sequence[str] = ()
    stack_name: str | None = None
    parameters: dict[str, str] = field(default_factory=dict)
    state_machine: str | None = None


def check(request: CheckRequest) -> Report:
    """Deploy what was asked on a fresh LocalCloud and explore it."""
    with LocalCloud() as cloud:
        if request.app is not None:
            target = _app(cloud, request, request.app)
        elif request.definition is not None:
            target = _definition(cloud, request)
        else:
            target = _example(cloud)
        try:
            return explore(
                target,
                schedules_to_run=request.schedules,
                seed=request.seed,
                budget_seconds=request.budget_seconds,
                max_steps=request.max_steps,
                replay=request.replay,
            )
        except ValueError as error:  # a replay token that is not one
            raise CheckError(str(error)) from None


def _example(cloud: LocalCloud) -> Target:
    """The example app as its stack deploys it: the workflow, its release workflow, place-order."""
    service = IdempotentService(cloud, example_settings({}))
    service.deploy_claim_release()
    return Target.of_service(service, [EXAMPLE_ORDER])


def _definition(cloud: LocalCloud, request: CheckRequest) -> Target:
    assert request.definition is not None
    try:
        text = request.definition.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CheckError(f"cannot read {request.definition}: {error}") from None
    if request.request is None:
        raise CheckError("--request is required with a definition: the input of one request, as JSON")
    if not request.functions:
        raise CheckError("name the definition's functions with --function NAME=module.handler")
    if request.helpers:
        raise CheckError("--helper names a state machine of an app: check it with --template or --cdk-out")
    substitutions = dict(request.substitutions)
    placeholders = set(_PLACEHOLDER.findall(text))
    for name, handler in request.functions.items():
        try:
            function = cloud.add_function(name, handler, code_dir=request.code_dir.resolve())
        except (EngineError, ImportError, AttributeError, SyntaxError) as error:
            raise CheckError(f"function {name}: cannot load {handler}: {error}") from None
        for placeholder in {name, f"{name}Arn", f"{name}FunctionArn"} & placeholders:
            substitutions.setdefault(placeholder, function.arn)
    for name, key in request.tables.items():
        table = _table(cloud, name, key)
        if name in placeholders:  # else a table the workflow reaches by name (a records table, say)
            substitutions[name] = table
    if {KEY_FUNCTION_PLACEHOLDER, TABLE_PLACEHOLDER} & placeholders:
        substitutions.update(cloud.idempotency_substitutions())
    missing = sorted(placeholders - set(substitutions))
    if missing:
        raise CheckError(
            f"no value for {', '.join('${' + m + '}' for m in missing)}: add --sub NAME=VALUE, or "
            "--table NAME=KEY for a table the workflow writes to"
        )
    try:
        arn = cloud.create_state_machine(
            request.definition.stem.replace(".", "-"),
            text,
            substitutions,
            workflow_type="EXPRESS" if request.express else "STANDARD",
        )
    except Exception as error:  # the API's refusal of the definition, in its words
        raise CheckError(f"{request.definition} is not a valid state machine: {error}") from None
    watch = list(request.watch) or list(request.functions)
    states = {name for name, _ in states_of(json.loads(text))}
    unknown = sorted(set(watch) - set(request.functions) - states)
    if unknown:
        raise CheckError(f"--watch {', '.join(unknown)}: neither a --function nor a state of this definition")
    if request.via_eventbridge is not None:  # the rule that an app would deploy with the machine
        source, detail_type = request.via_eventbridge
        pattern = {"source": [source], "detail-type": [detail_type]}
        cloud.create_rule(f"{request.definition.stem}-requests", pattern, arn)
    return _target(cloud, arn, request, watch, helpers=None if request.helpers is None else [])


def _app(cloud: LocalCloud, request: CheckRequest, app: AppSource) -> Target:
    """The app deployed as ``serve`` deploys it; its state machine, with the functions it calls
    watched (or those ``--watch`` names: a function's logical id or construct path, or a state)."""
    if request.request is None:
        raise CheckError("--request is required with an app: the input of one request, as JSON")
    try:
        if app.cdk_out is not None:
            stacks = list(cloud.deploy_cdk_out(app.cdk_out, app.stacks).stacks)
        else:
            assert app.template is not None
            stacks = [
                cloud.deploy_template(app.template, stack_name=app.stack_name, parameters=app.parameters)
            ]
    except (CloudAssemblyError, TemplateError, DeploymentError) as error:
        raise CheckError(str(error)) from None
    machine = _state_machine(stacks, app.state_machine)
    definition = json.loads(cloud.sfn.describe_state_machine(stateMachineArn=machine)["definition"])
    states = {name for name, _ in states_of(definition)}
    text = json.dumps(definition)
    called = sorted(
        resource.physical_id
        for stack in stacks
        for resource in stack.resources.values()
        if resource.resource_type == _FUNCTION_TYPE
        and resource.physical_id in text
        and not _is_the_key_lambda(cloud, resource.physical_id)
    )
    watch = [_watched(stacks, name, states) for name in request.watch] or called
    if not watch:
        raise CheckError(
            "the state machine calls none of the app's functions: name a side effect with --watch"
        )
    if (
        request.via_eventbridge is not None
        and not cloud.events.list_rule_names_by_target(TargetArn=machine)["RuleNames"]
    ):
        raise CheckError("--via-eventbridge: no EventBridge rule of the app starts its state machine")
    helpers = None if request.helpers is None else [_state_machine(stacks, name) for name in request.helpers]
    return _target(cloud, machine, request, watch, helpers)


def _target(
    cloud: LocalCloud, machine: str, request: CheckRequest, watch: list[str], helpers: list[str] | None = None
) -> Target:
    """The target of a definition or an app: the request, its key and answer, the errors a client
    may retry, the records' tables (each one named must exist), and the options only the Python
    API had: invariants of the user's own, the helper workflows, an EventBridge delivery."""
    existing = set(cloud.dynamodb.list_tables()["TableNames"])
    for table in request.record_tables or ():
        if table not in existing:
            raise CheckError(f"--records-table {table}: no such table (make it with --table {table}=id)")
    via = None if request.via_eventbridge is None else EventBridgeDelivery(*request.via_eventbridge)
    try:
        return Target(
            cloud,
            machine,
            [request.request],
            watch=watch,
            key=request.key,
            answer=_answer(request.answer),
            safe_errors=frozenset(request.safe_errors),
            tables=request.record_tables,
            helpers=helpers,
            invariants=[_invariant(request.code_dir, name) for name in request.invariants],
            via=via,
            large_results=request.large_results,
        )
    except TargetError as error:
        raise CheckError(str(error)) from None


_MACHINE_TYPE = "AWS::StepFunctions::StateMachine"
_FUNCTION_TYPE = "AWS::Lambda::Function"


def _is_the_key_lambda(cloud: LocalCloud, function: str) -> bool:
    """sfn-idempotency's own key Lambda: no side effect, and a replay may run it again by design
    (an event whose key is not provable); never watched unless named."""
    configuration = cloud.client("lambda").get_function_configuration(FunctionName=function)
    return bool(configuration.get("Handler") == COMPUTE_KEY_HANDLER)


def _state_machine(stacks: Sequence[DeployedStack], wanted: str | None) -> str:
    names = {
        arn: _machine_names(stack.name, logical_id, resource)
        for stack in stacks
        for logical_id, resource in stack.resources.items()
        if resource.resource_type == _MACHINE_TYPE and (arn := resource.arn)
    }
    listed = ", ".join(each[0] for each in names.values()) or "none"
    if wanted is not None:
        found = [arn for arn, each in names.items() if wanted in each]
        if len(found) != 1:
            raise CheckError(f"--state-machine {wanted}: not a state machine of the app ({listed})")
        return found[0]
    if len(names) != 1:
        raise CheckError(f"the app has {len(names)} state machines: name one with --state-machine ({listed})")
    return next(iter(names))


def _machine_names(stack: str, logical_id: str, resource: DeployedResource) -> tuple[str, ...]:
    """Every name a user may give a machine, the one its refusal lists first: a CDK construct's
    path (``cdk ls`` style, with its stack, and below it), else ``stack/logical id``; the logical
    id; the physical name; the ARN."""
    path = (resource.path or "").removesuffix("/Resource")
    by_path = (path, path.removeprefix(f"{stack}/")) if path else ()
    return (*by_path, f"{stack}/{logical_id}", logical_id, resource.physical_id, str(resource.arn))


def _watched(stacks: Sequence[DeployedStack], name: str, states: set[str]) -> str:
    """A function's name (by its logical id or construct path), or a state of the machine."""
    for stack in stacks:
        with contextlib.suppress(KeyError):
            found = stack.resource(name)
            if found.resource_type == _FUNCTION_TYPE:
                return found.physical_id
    if name in states:
        return name
    raise CheckError(f"--watch {name}: neither a function of the app nor a state of its state machine")


def _table(cloud: LocalCloud, name: str, key: str) -> str:
    """A table of the user's own, keyed by ``key`` (a string), named after its placeholder."""
    cloud.dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


def _answer(expression: str | None) -> Callable[[Any], Any]:
    """``Target``'s ``answer`` for ``--answer``: a JSONPath (``$.charge``) or a JMESPath
    (``charge``) into the output; none given, the whole output."""
    if expression is None:
        return _whole_output
    try:
        if expression.startswith("$"):
            path = jsonpath_parse(expression)

            def answer(output: Any) -> Any:
                found = [match.value for match in path.find(output)]
                return found[0] if len(found) == 1 else found or None

        else:
            compiled = jmespath.compile(expression)

            def answer(output: Any) -> Any:
                return compiled.search(output)

    except Exception as error:  # jsonpath-ng's and jmespath's parse errors share no base class
        raise CheckError(f"--answer {expression!r} is neither a JSONPath nor a JMESPath: {error}") from None
    return answer


def _invariant(code_dir: Path, name: str) -> Invariant:
    """A user's invariant, ``module.function`` under ``code_dir``: it raises AssertionError, whose
    message is the violation, over a schedule's outcome."""
    try:
        return cast(Invariant, cold_start(code_dir.resolve(), name, {}))
    except (OSError, ImportError, AttributeError, SyntaxError, ValueError) as error:
        raise CheckError(f"--invariant {name}: cannot load it: {error}") from None


def _whole_output(output: Any) -> Any:
    return output


def parse_request(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise CheckError(f"--request is not JSON: {error}") from None
