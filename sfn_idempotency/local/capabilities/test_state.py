"""TestState, offline (fix 29): one state of a definition, run on moto's interpreter with the
request's input, variables and context, its Task answered by the request's mock, and the answer AWS
gives: output, error and cause, the next state, the status (SUCCEEDED, FAILED, CAUGHT_ERROR) and at
DEBUG or TRACE the state's data flow (``inspectionData``).

The state runs through moto's own TestState program (its parser decorates each step of the data
flow to record it); this module adds what AWS's API has and moto's lacks: ``stateName`` in a whole
definition, ``mock``, ``variables``, ``context``, a role that is optional with a mock, the Catch
decision, and AWS's refusals.
"""

from __future__ import annotations

import copy
import datetime
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from moto.stepfunctions.parser.api import InvalidDefinition, ValidationException
from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

from sfn_idempotency.local.capabilities.http_task import forget_secrets_of, reveal_secrets_in
from sfn_idempotency.local.compat.definitions import STATE_TYPES, unknown_state_type
from sfn_idempotency.local.compat.patching import Patch, add, keep

_RESPONSE_CLASS = "moto.stepfunctions.responses:StepFunctionResponse"
_EXECUTE_STATE = "moto.stepfunctions.parser.asl.component.state.exec.execute_state:ExecutionState"
_ONE_STATE_NAME = "StateName"  # what AWS calls a state tested alone, in $$.State.Name (recorded)
_STATES_WITHOUT_AWS_CALLS = frozenset({"Pass", "Wait", "Choice", "Succeed", "Fail"})
_MOCKED_WHOLE = frozenset({"Map", "Parallel"})
_PATTERNS_NEEDING_A_MOCK = (".sync", ".sync:2", ".waitForTaskToken")
_TESTABLE = frozenset({*_STATES_WITHOUT_AWS_CALLS, "Task", *_MOCKED_WHOLE})
_STAND_IN_RESOURCE = "arn:aws:states:::lambda:invoke"  # never called: the mock answers
_INNER_WORK = frozenset(
    {
        "Branches",
        "ItemProcessor",
        "Iterator",
        "ItemsPath",
        "Items",
        "ItemSelector",
        "Parameters",
        "ItemReader",
        "ItemBatcher",
        "ResultWriter",
        "MaxConcurrency",
        "MaxConcurrencyPath",
        "ToleratedFailureCount",
        "ToleratedFailureCountPath",
        "ToleratedFailurePercentage",
        "ToleratedFailurePercentagePath",
        "Label",
    }
)


@dataclass
class Request:
    """A TestState request, checked as AWS checks it."""

    state_name: str
    state: dict[str, Any]
    query_language: str
    input: Any
    variables: dict[str, Any]
    context: dict[str, Any]
    reveal_secrets: bool
    role_arn: str | None
    inspection_level: str
    mock: dict[str, Any] | None
    mocked_result: Any = None  # the mock's result, parsed once
    configuration: dict[str, Any] = field(default_factory=dict)
    context_given: bool = False  # a context was given (even "{}"): it is the whole context object

    @classmethod
    def of(cls, param: Callable[[str], Any]) -> Request:
        definition = _json(param("definition"), "definition", InvalidDefinition)
        if not isinstance(definition, dict):
            raise InvalidDefinition("Invalid State Machine Definition: 'the definition is a JSON object'")
        state_name = param("stateName")
        if "States" in definition:
            if not state_name:
                state_name = definition.get("StartAt")
            found = _find_state(definition, str(state_name), definition.get("QueryLanguage", "JSONPath"))
            if found is None:
                raise ValidationException("State not found in definition")
            state, language = found
        else:
            if state_name:
                raise ValidationException("stateName is only valid with a state machine definition")
            state, state_name = definition, _ONE_STATE_NAME
            language = state.get("QueryLanguage", "JSONPath")
        if "States" in definition and state.get("Type") not in STATE_TYPES:
            raise InvalidDefinition(unknown_state_type(f"/States/{state_name}").as_refusal())
        if state.get("Type") not in _TESTABLE:
            raise InvalidDefinition(
                f"Invalid State Machine Definition: 'unsupported state type {state.get('Type')!r}'"
            )
        mock = param("mock")
        resource = str(state.get("Resource", ""))
        if mock is None and resource.endswith(_PATTERNS_NEEDING_A_MOCK):
            raise ValidationException(
                "TestState does not support the .sync and .waitForTaskToken integration patterns "
                "without a mock"
            )
        role_arn = param("roleArn")
        if role_arn is None and mock is None and state.get("Type") == "Task":
            raise ValidationException("RoleArn must be specified when testing a Task state")
        configuration = param("stateConfiguration") or {}
        if state.get("Type") in _MOCKED_WHOLE and mock is None:
            if "mapIterationFailureCount" in configuration:
                raise ValidationException(
                    "TestState does not support MapIterationFailureCount when a mock is not specified."
                )
            raise InvalidDefinition(
                "TestState API does not support Map or Parallel states. Supported state types include: "
                "[Task, Wait, Pass, Succeed, Fail, Choice]"
            )
        if mock is not None and state.get("Type") in _STATES_WITHOUT_AWS_CALLS:
            raise ValidationException(
                f"State type '{state['Type']}' is not supported when a mock is specified"
            )
        if mock is not None and param("revealSecrets"):
            raise ValidationException("TestState does not support RevealSecrets when a mock is specified.")
        if state.get("Type") == "Parallel" and not state.get("Branches"):
            raise InvalidDefinition(
                "Invalid State Machine Definition: 'SCHEMA_VALIDATION_FAILED: Value cannot be empty at "
                f"/States/{state_name}/Branches'"
            )
        context = _json(param("context") or "{}", "context", ValidationException)
        _check_context(context)
        mocked = None
        if mock is not None and "result" in mock:
            try:
                mocked = json.loads(mock["result"])
            except (TypeError, ValueError):
                raise ValidationException("Mocked result must be valid JSON") from None
            _check_mocked_result(state, mocked, mock, configuration)
        return cls(
            state_name=state_name,
            state=state,
            query_language=language,
            input=_json(param("input") or "{}", "input", ValidationException),
            variables=_json(param("variables") or "{}", "variables", ValidationException),
            context=context,
            reveal_secrets=bool(param("revealSecrets")),
            role_arn=role_arn,
            inspection_level=param("inspectionLevel") or "INFO",
            mock=mock,
            mocked_result=mocked,
            configuration=configuration,
            context_given=param("context") is not None,
        )

    def one_state_definition(self) -> str:
        state = _as_mocked_task(self.state) if self.state.get("Type") in _MOCKED_WHOLE else self.state
        return json.dumps({**state, "QueryLanguage": self.query_language})


def _as_mocked_task(state: dict[str, Any]) -> dict[str, Any]:
    """A Map or Parallel is tested with a mock of its whole result or error (AWS requires one): its
    branches never run, so it is tested as a Task whose answer is the mock, with its own data flow,
    Retry and Catch."""
    kept = {name: value for name, value in state.items() if name not in _INNER_WORK}
    return {**kept, "Type": "Task", "Resource": _STAND_IN_RESOURCE}


# The context a test may set, field by field (recorded: the rest is refused by name).
_CONTEXT_FIELDS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "Execution": {
        "Id": str,
        "Input": (dict, list, str, int, float, bool),
        "Name": str,
        "RoleArn": str,
        "StartTime": str,
        "RedriveCount": int,
    },
    "State": {"EnteredTime": str, "Name": str, "RetryCount": int},
    "StateMachine": {"Id": str, "Name": str},
    "Task": {"Token": str},
}


def _check_context(context: Any) -> None:
    def refuse(why: str) -> ValidationException:
        return ValidationException(f"Invalid Context object provided: {why}")

    if not isinstance(context, dict):
        raise refuse("the context is a JSON object")
    for section, fields in context.items():
        if section == "Map":
            raise refuse("'Map' field is not supported when mocking a Context object")
        if section not in _CONTEXT_FIELDS:
            raise refuse(f"Field '{section}' is not allowed")
        allowed = _CONTEXT_FIELDS[section]
        for name, value in (fields or {}).items():
            if name not in allowed:
                raise refuse(f"Field '{name}' is not allowed")
            if not isinstance(value, allowed[name]) or (allowed[name] is int and isinstance(value, bool)):
                kind = "a string" if allowed[name] is str else "a number"
                raise refuse(f"{section}.{name} must be {kind}")


def _check_mocked_result(
    state: dict[str, Any], result: Any, mock: dict[str, Any], configuration: dict[str, Any]
) -> None:
    """AWS's checks of a mocked result (recorded): its shape for a Map or Parallel, and for a Task
    the integration's answer schema, unless ``fieldValidationMode`` is NONE."""
    kind = state.get("Type")
    if kind == "Parallel":
        if not isinstance(result, list):
            raise ValidationException("Mocked result must be an array.")
        if len(result) != len(state.get("Branches") or []):
            raise ValidationException(
                "Mocked result must contain the same number of items as number of Parallel branches."
            )
    elif kind == "Map":
        if "ResultWriter" in state and not isinstance(result, dict):
            raise ValidationException("Mocked result must be a JSON object.")
        if "ResultWriter" not in state and not isinstance(result, list):
            raise ValidationException("Mocked result must be an array.")
        failures = configuration.get("mapIterationFailureCount")
        if isinstance(result, list) and failures is not None and failures > len(result):
            raise ValidationException(
                "Map iteration failure count must be less than or equal to the number of Map iterations"
            )
    elif kind == "Task" and mock.get("fieldValidationMode", "STRICT") != "NONE":
        shape = _answer_shape(str(state.get("Resource", "")))
        if shape is not None:
            strict = mock.get("fieldValidationMode", "STRICT") == "STRICT"
            problem = _schema_problem(result, shape, strict=strict)
            if problem is not None:
                raise ValidationException(f"Mock result schema validation error: {problem}")


def _answer_shape(resource: str) -> Any:
    """The API answer shape of a Task's integration, as botocore models it (None: not modelled, or
    a Lambda function called by its ARN, whose answer is the function's)."""
    from sfn_idempotency.local.compat.integrations import boto_name_of, operations_by_snake_name

    prefix = "arn:aws:states:::"
    if not resource.startswith(prefix):
        return None
    parts = resource[len(prefix) :].split(":")
    service, action = (
        (parts[1], parts[2]) if parts[0] == "aws-sdk" and len(parts) > 2 else (parts[0], parts[-1])
    )
    action = action.split(".")[0]  # .sync, .waitForTaskToken
    try:
        operation = operations_by_snake_name(boto_name_of(service))[_snake(action)]
    except Exception:  # a service or action botocore does not model
        return None
    return operation.output_shape


def _capitalized(member: str) -> str:
    return member[:1].upper() + member[1:]


def _snake(action: str) -> str:
    from botocore import xform_name

    return str(xform_name(action[:1].upper() + action[1:]))


def _schema_problem(value: Any, shape: Any, name: str = "", *, strict: bool = False) -> str | None:
    """The first way ``value`` breaks ``shape``, in AWS's words (members spelled with a capital).
    ``strict`` (fieldValidationMode STRICT, the default): every required member must be present
    too; PRESENT checks only the members there are. A member the API does not model is let be."""
    kind = shape.type_name
    field_name = f"Field '{name}'"
    if kind == "structure":
        if not isinstance(value, dict):
            return f"{field_name} must be an object" if name else None
        members = {_capitalized(member): member_shape for member, member_shape in shape.members.items()}
        missing = [m for m in map(_capitalized, shape.required_members) if strict and m not in value]
        if missing:
            return f"Required field '{missing[0]}' is missing"
        for member, item in value.items():
            if member in members and member != "Payload":  # a Lambda Payload is the function's JSON
                problem = _schema_problem(item, members[member], member, strict=strict)
                if problem is not None:
                    return problem
        return None
    if kind == "list":
        if not isinstance(value, list):
            return f"{field_name} must be an array"
        return next(
            (
                p
                for item in value
                if (p := _schema_problem(item, shape.member, name, strict=strict)) is not None
            ),
            None,
        )
    if kind == "map":
        if not isinstance(value, dict):
            return f"{field_name} must be an object"
        return next(
            (p for item in value.values() if (p := _schema_problem(item, shape.value, name, strict=strict))),
            None,
        )
    if kind in ("string", "blob", "timestamp"):
        if not isinstance(value, str):
            return f"{field_name} must be a string"
        if getattr(shape, "enum", None) and value not in shape.enum:
            return f"{field_name} is not an expected value"
        if len(value) < shape.metadata.get("min", 0):
            return f"{field_name} is smaller than the minimum length"
        return None
    if kind in ("integer", "long", "float", "double"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"{field_name} must be a number"
        if "min" in shape.metadata and value < shape.metadata["min"]:
            return f"{field_name} is less than the minimum value"
        if "max" in shape.metadata and value > shape.metadata["max"]:
            return f"{field_name} exceeds the maximum value"
        return None
    if kind == "boolean" and not isinstance(value, bool):
        return f"{field_name} must be a boolean"
    return None


def _find_state(scope: dict[str, Any], name: str, language: str) -> tuple[dict[str, Any], str] | None:
    """The state named ``name`` in ``scope`` or any scope inside it (Parallel branches, Map item
    processors), with the query language it runs in."""
    states = scope.get("States")
    if not isinstance(states, dict):
        return None
    for state_name, state in states.items():
        if not isinstance(state, dict):
            continue
        inner = state.get("QueryLanguage", language)
        if state_name == name:
            return state, inner
        nested = [*(state.get("Branches") or []), state.get("ItemProcessor"), state.get("Iterator")]
        for child in filter(lambda candidate: isinstance(candidate, dict), nested):
            found = _find_state(child, name, inner)
            if found is not None:
                return found
    return None


def _json(text: Any, what: str, error: type[Exception]) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError) as invalid:
        raise error(f"Invalid {what}: {invalid}") from None


def _mocked_responses(request: Request, state_name: str) -> Any:
    """The request's mock as moto's mocked responses for the state (one per attempt)."""
    from moto.stepfunctions.parser.mocking.mock_config import (
        MockedResponseReturn,
        MockedResponseThrow,
        MockTestCase,
        StateMockedResponses,
    )

    if request.mock is None:
        return None
    if _exceeds_tolerated_failures(request):
        response: Any = MockedResponseThrow(0, 0, _EXCEEDED_THRESHOLD, _EXCEEDED_THRESHOLD_CAUSE)
    elif "errorOutput" in request.mock:
        failure = request.mock["errorOutput"]
        response = MockedResponseThrow(0, 0, failure.get("error", ""), failure.get("cause", ""))
    else:
        response = MockedResponseReturn(0, 0, request.mocked_result)
    mocked = StateMockedResponses(state_name, "mock", [response])
    return MockTestCase("TestState", "TestState", [mocked])


_EXCEEDED_THRESHOLD = "States.ExceedToleratedFailureThreshold"
_EXCEEDED_THRESHOLD_CAUSE = "The specified tolerated failure threshold was exceeded"


def _exceeds_tolerated_failures(request: Request) -> bool:
    """``stateConfiguration.mapIterationFailureCount`` items of a mocked Map failed: past its
    ToleratedFailureCount or ToleratedFailurePercentage (both 0 unless set), the Map fails with
    States.ExceedToleratedFailureThreshold, which its Retry and Catch then decide on (recorded)."""
    failures = request.configuration.get("mapIterationFailureCount")
    if (
        request.state.get("Type") != "Map"
        or not failures
        or request.mock is None
        or "result" not in request.mock
    ):
        return False
    items = request.mocked_result
    total = len(items) if isinstance(items, list) else 0
    count = _number(request.state.get("ToleratedFailureCount"), request.input)
    percentage = _number(request.state.get("ToleratedFailurePercentage"), request.input)
    if count is None and percentage is None:
        return False  # no tolerance declared: no threshold to exceed (recorded)
    within_count = count is not None and failures <= count
    within_percentage = percentage is not None and total > 0 and failures * 100 / total <= percentage
    return not (within_count or within_percentage)


def _run(request: Request, account_id: str, region: str) -> dict[str, Any]:
    from moto.stepfunctions.parser.backend.state_machine import TestStateMachine
    from moto.stepfunctions.parser.backend.test_state.execution import TestStateExecution
    from moto.stepfunctions.parser.backend.test_state.execution_worker import TestStateExecutionWorker

    # As recorded: the state machine and the execution have names of their own, and the execution
    # is an Express one ("arn:...:express:<machine>:<execution>").
    name = f"TestState-{uuid.uuid4().hex[:12]}"
    machine_name = f"TestStateMachine-{uuid.uuid4().hex[:12]}"
    machine_arn = f"arn:aws:states:{region}:{account_id}:stateMachine:{machine_name}"
    machine = TestStateMachine(machine_name, machine_arn, request.one_state_definition(), request.role_arn)
    # $$.State.Name is "StateName" whatever state of a definition is tested (recorded, every TestState
    # recording but those whose context names the state).
    state_name = str((request.context.get("State") or {}).get("Name") or _ONE_STATE_NAME)

    class Worker(TestStateExecutionWorker):  # type: ignore[misc]
        def _get_evaluation_entrypoint(self) -> Any:
            program = super()._get_evaluation_entrypoint()
            program.test_state.name = state_name  # $$.State.Name, and the name mocks are keyed by
            return _EndsWhenItsStateDid(program)

        def _get_evaluation_environment(self) -> Any:
            env = super()._get_evaluation_environment()
            env.mock_test_case = _mocked_responses(request, state_name)
            reveal_secrets_in(env.inspection_data, request.reveal_secrets)  # an HTTP Task's TRACE
            for variable, value in request.variables.items():
                env.variable_store.set(variable, value)
            context = env.states.context_object.context_object_data
            if request.context_given:
                # The context given is the state's whole context object, as given (recorded: an
                # empty section stays empty, an empty context is empty).
                context = env.states.context_object.context_object_data = GivenContext(
                    request.context, context
                )
            token = (request.context.get("Task") or {}).get("Token")
            if token is not None:  # the task token the test gives, not a fresh one (recorded)
                env.states.context_object.update_task_token = lambda: _given_token(context, token)
            env.sfn_local_test_state = _Decisions(
                retry_count=int(request.configuration.get("retrierRetryCount", 0))
            )
            return env

    class Execution(TestStateExecution):  # type: ignore[misc]
        def _get_start_execution_worker(self) -> Any:
            worker = super()._get_start_execution_worker()
            worker.__class__ = Worker
            return worker

    execution = Execution(
        name=name,
        role_arn=request.role_arn,
        exec_arn=f"arn:aws:states:{region}:{account_id}:express:{machine_name}:{name}",
        account_id=account_id,
        region_name=region,
        state_machine=machine,
        start_date=datetime.datetime.now(tz=datetime.UTC),
        activity_store={},
        input_data=json.dumps(request.input),
    )
    execution.start()
    forget_secrets_of(execution.exec_worker.env.inspection_data)
    return _answer(request, execution)


class GivenContext(dict[str, Any]):
    """A context object a TestState request gave, as the state sees it: only what was given. What
    the engine writes of its own (the state's entry, its retry count) it can read back, but the
    state does not see it; a task token may still be added."""

    _OWN = frozenset({"Execution", "StateMachine", "State"})

    def __init__(self, given: dict[str, Any], engine: dict[str, Any]) -> None:
        super().__init__(
            {
                key: _Kept(value, engine.get(key) or {}) if isinstance(value, dict) else value
                for key, value in given.items()
            }
        )
        self._engine: dict[str, Any] = {key: value for key, value in engine.items() if key in self._OWN}

    def __setitem__(self, key: str, value: Any) -> None:
        if key in self._OWN:
            self._engine[key] = value
        else:
            super().__setitem__(key, value)

    def __missing__(self, key: str) -> Any:
        return self._engine[key]

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self._engine

    def __deepcopy__(self, memo: dict[int, Any]) -> GivenContext:
        """A frame's copy (a Task's timeout, a Map iteration) sees and keeps the same."""
        copied = GivenContext.__new__(GivenContext)
        dict.update(copied, copy.deepcopy(dict(self), memo))
        copied._engine = copy.deepcopy(self._engine, memo)
        return copied


class _Kept(dict[str, Any]):
    """A section of a given context: as given; the engine's own fields and writes kept apart."""

    def __init__(self, given: dict[str, Any], engine: dict[str, Any]) -> None:
        super().__init__(given)
        self._engine: dict[str, Any] = dict(engine)

    def __setitem__(self, key: str, value: Any) -> None:
        self._engine[key] = value

    def __missing__(self, key: str) -> Any:
        return self._engine[key]

    def __deepcopy__(self, memo: dict[int, Any]) -> _Kept:
        return _Kept(copy.deepcopy(dict(self), memo), copy.deepcopy(self._engine, memo))


def _frames_keep_the_given_context(original: Any) -> Any:
    """``Environment.as_inner_frame_of``: a frame (a Task's timeout, an iteration) built its context
    anew from the parent's sections; under a given context it sees the same given context."""
    build = original.__func__

    def as_inner_frame_of(cls: Any, env: Any, *args: Any, **kwargs: Any) -> Any:
        frame = build(cls, env, *args, **kwargs)
        given = env.states.context_object.context_object_data
        if isinstance(given, GivenContext):
            frame.states.context_object.context_object_data = copy.deepcopy(given)
        return frame

    return classmethod(as_inner_frame_of)


class _EndsWhenItsStateDid:
    """moto's TestState program leaves a state with a ``Next`` running (it ends only on ``End``, a
    Choice or an error): the one state has run, so the test has ended."""

    def __init__(self, program: Any) -> None:
        self.program = program

    def eval(self, env: Any) -> None:
        self.program.eval(env)
        if env.is_running():
            env.set_ended()


def _given_token(context: dict[str, Any], token: str) -> str:
    context["Task"] = {"Token": token}
    return token


@dataclass
class _Decisions:
    """What the state decided on an error: the Catch that matched (index, its Next)."""

    retry_count: int = 0  # stateConfiguration.retrierRetryCount: the attempts already made
    retry_index: int | None = None
    retry_backoff_seconds: int | None = None
    catch_index: int | None = None
    catch_next: str | None = None
    error: str | None = None
    cause: str | None = None


def _answer(request: Request, execution: Any) -> dict[str, Any]:
    from moto.stepfunctions.parser.api import InspectionLevel

    answer: dict[str, Any] = dict(execution.to_test_state_output(InspectionLevel(request.inspection_level)))
    env = execution.exec_worker.env
    if "output" in answer:  # the state's output, as JSON text once (fix 3 stored it as text already)
        answer["output"] = to_json_str(env.states.get_input())
    decisions: _Decisions = env.sfn_local_test_state
    inspection = dict(answer.get("inspectionData") or {})
    if decisions.retry_index is not None:
        answer = {"status": "RETRIABLE", "error": decisions.error, "cause": decisions.cause}
        inspection["errorDetails"] = {
            "retryIndex": decisions.retry_index,
            "retryBackoffIntervalSeconds": decisions.retry_backoff_seconds,
        }
    elif decisions.catch_index is not None:
        answer["status"] = "CAUGHT_ERROR"
        answer["nextState"] = decisions.catch_next
        answer["error"], answer["cause"] = decisions.error, decisions.cause
        inspection["errorDetails"] = {"catchIndex": decisions.catch_index}
    elif (
        answer.get("status") == "SUCCEEDED"
        and "nextState" not in answer
        and isinstance(request.state.get("Next"), str)
    ):
        answer["nextState"] = request.state["Next"]
    if request.inspection_level == "INFO":
        answer.pop("inspectionData", None)
    else:
        inspection = _recorded_stages(request, inspection)
        if request.variables or env.variable_store.get_assigned_variables():
            inspection["variables"] = json.dumps(_variables(env), separators=(",", ":"))
        answer["inspectionData"] = inspection
    return {key: value for key, value in answer.items() if value is not None}


def _recorded_stages(request: Request, inspection: dict[str, Any]) -> dict[str, Any]:
    """The data-flow stages AWS reports for each kind of JSONPath state (recorded), where moto
    recorded only the fields the state declares: an undeclared InputPath, Parameters, ResultSelector
    or ResultPath passes its value on unchanged, so its stage equals the one before it."""
    kind = request.state.get("Type")
    if kind == "Map":
        kept: dict[str, Any] = {
            name: inspection[name] for name in ("input", "errorDetails") if name in inspection
        }
        for field_name, key in (
            ("MaxConcurrency", "maxConcurrency"),
            ("ToleratedFailureCount", "toleratedFailureCount"),
            ("ToleratedFailurePercentage", "toleratedFailurePercentage"),
        ):
            value = _number(
                request.state.get(field_name, 0 if key == "maxConcurrency" else None), request.input
            )
            if value is not None:
                kept[key] = float(value) if key == "toleratedFailurePercentage" else value
        kept.update(_map_item_stages(request, inspection))
        return kept
    if kind == "Parallel":
        # (recorded) a mocked Parallel reports its input, and in JSONPath what its result became
        kept = {name: inspection[name] for name in ("input", "errorDetails") if name in inspection}
        if request.query_language == "JSONPath" and "result" in inspection:
            kept["afterResultSelector"] = inspection.get("afterResultSelector", inspection["result"])
            kept["afterResultPath"] = inspection.get("afterResultPath", kept["afterResultSelector"])
        return kept
    if request.query_language != "JSONPath" or "input" not in inspection:
        return inspection
    stages = dict(inspection)
    if kind == "Pass" and "Result" in request.state:
        stages.pop("afterInputPath", None)
        stages.pop("afterParameters", None)
        stages.setdefault("afterResultSelector", stages.get("result"))
        stages.setdefault("afterResultPath", stages["afterResultSelector"])
        return stages
    stages.setdefault("afterInputPath", stages["input"])
    if kind in ("Pass", "Task"):
        stages.setdefault("afterParameters", stages["afterInputPath"])
        produced = stages.get("result", stages["afterParameters"] if kind == "Pass" else None)
        if produced is not None and "errorDetails" not in stages:
            stages.setdefault("afterResultSelector", produced)
            stages.setdefault("afterResultPath", stages["afterResultSelector"])
    return stages


def _map_item_stages(request: Request, inspection: dict[str, Any]) -> dict[str, Any]:
    """(recorded) A JSONPath Map that takes its items from its input (no ItemReader) reports them
    after its InputPath and its ItemsPath, and on success its result's stages; AWS writes these as
    JSON text with spaces after commas and colons. A JSONata Map reports none of them."""
    from moto.stepfunctions.parser.asl.utils.json_path import extract_json

    items_path = str(request.state.get("ItemsPath", "$"))
    if request.query_language != "JSONPath" or "ItemReader" in request.state or items_path.startswith("$$"):
        return {}
    after_input = extract_json(str(request.state.get("InputPath", "$")), request.input)
    stages = {
        "afterInputPath": json.dumps(after_input),
        "afterItemsPath": json.dumps(extract_json(items_path, after_input)),
    }
    if "result" in inspection and "errorDetails" not in inspection:
        stages["afterResultSelector"] = inspection.get("afterResultSelector", inspection["result"])
        stages["afterResultPath"] = inspection.get("afterResultPath", stages["afterResultSelector"])
    return stages


def _number(value: Any, state_input: Any) -> int | float | None:
    """A Map's number field: a number, or a JSONata expression of the state's input."""
    from sfn_idempotency.local.capabilities import jsonata as stepfunctions_jsonata

    if isinstance(value, str) and value.startswith("{%") and value.endswith("%}"):
        states = json.dumps({"input": state_input})
        try:
            value = stepfunctions_jsonata.evaluate(f"($states:={states};{value[2:-2].strip()})")
        except stepfunctions_jsonata.JSONataEvaluationError:
            return None
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _variables(env: Any) -> dict[str, Any]:
    store = env.variable_store
    scope: dict[str, Any] = {}
    for names in (getattr(store, "_outer_scope", {}), getattr(store, "_inner_scope", {})):
        scope.update(names)
    return scope


def _retry_decisions(original: Callable[..., Any]) -> Callable[..., Any]:
    """In a TestState run the state is not retried: a Retrier that matches with attempts left makes
    the answer RETRIABLE, with that Retrier's index and the backoff it would wait."""

    def handle_retry(self: Any, env: Any, failure_event: Any) -> Any:
        decisions = getattr(env, "sfn_local_test_state", None)
        if decisions is None:
            return original(self, env, failure_event)
        from moto.stepfunctions.parser.asl.component.common.retry.retry_outcome import RetryOutcome

        index = _first_matching(self.retry.retriers, env, failure_event)
        if index is not None:
            retrier = self.retry.retriers[index]
            if decisions.retry_count < retrier.max_attempts.attempts:
                backoff = retrier.interval_seconds.seconds * retrier.backoff_rate.rate**decisions.retry_count
                decisions.retry_index = index
                decisions.retry_backoff_seconds = int(
                    min(backoff, retrier.max_delay_seconds.max_delays_seconds)
                )
                decisions.error, decisions.cause = _error_and_cause(self, failure_event)
        return RetryOutcome.CannotRetry

    return handle_retry


def _error_and_cause(state: Any, failure_event: Any) -> tuple[str | None, str | None]:
    error_output = state._construct_error_output_value(failure_event=failure_event)
    return error_output.get("Error"), error_output.get("Cause")


def _catch_decisions(original: Callable[..., Any]) -> Callable[..., Any]:
    """In a TestState run, remember which Catch matched (its index and Next): AWS answers them.
    A RETRIABLE state is not caught: the Retrier's decision comes first."""
    from moto.stepfunctions.parser.asl.component.common.catch.catch_outcome import CatchOutcome

    def handle_catch(self: Any, env: Any, failure_event: Any) -> Any:
        # In a Catch, $states is input, context and errorOutput: no result (recorded; moto had put
        # the error output there as the result too).
        env.states._states_data.pop("result", None)
        decisions = getattr(env, "sfn_local_test_state", None)
        if decisions is not None and decisions.retry_index is not None:
            env.stack.append(CatchOutcome.NotCaught)
            return None
        result = original(self, env, failure_event)
        if decisions is not None and env.stack and env.stack[-1] == CatchOutcome.Caught:
            index = _first_matching(self.catch.catchers, env, failure_event)
            if index is not None:
                decisions.catch_index = index
                decisions.catch_next = self.catch.catchers[index].next_decl.name
                decisions.error, decisions.cause = _error_and_cause(self, failure_event)
        return result

    return handle_catch


def _first_matching(handlers: list[Any], env: Any, failure_event: Any) -> int | None:
    """The first Retrier or Catcher whose ErrorEquals matches the failure, asked of moto's matcher."""
    for index, handler in enumerate(handlers):
        env.stack.append(failure_event.error_name)
        handler.error_equals.eval(env)
        if env.stack.pop():
            return index
    return None


def _failure_events_pass_through(
    original: Callable[[Any, Any, Exception], Any],
) -> Callable[[Any, Any, Exception], Any]:
    """A service integration's failure event stays what it is: moto's DynamoDB integration (and
    others) renamed any exception it did not expect, a mocked failure included, to its catch-all
    (DynamoDB.AmazonDynamoDBException), so a mocked error never reached the state's Catch by name."""
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEventException

    def from_error(self: Any, env: Any, ex: Exception) -> Any:
        if isinstance(ex, FailureEventException):
            return ex.failure_event
        return original(self, env, ex)

    return from_error


def _test_state(self: Any) -> Any:
    """The TestState operation of the Step Functions API."""
    from moto.core.responses import ActionResult

    request = Request.of(self._get_param)
    return ActionResult(_run(request, self.current_account, self.region))


def _arguments_recorded(original: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A JSONata state's Arguments are a stage of its data flow too (``afterArguments``); moto's
    TestState parser recorded JSONPath's Parameters only."""

    def visit(self: Any, ctx: Any) -> Any:
        arguments = original(self, ctx)
        evaluate = arguments._eval_body

        def eval_body(env: Any) -> None:
            evaluate(env)
            if hasattr(env, "inspection_data"):
                env.inspection_data["afterArguments"] = to_json_str(env.stack[-1])

        arguments._eval_body = eval_body
        return arguments

    return visit


def _mocked_states_errors(original: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    """A mock may fail with a Step Functions error (``States.TaskFailed``, recorded); moto built every
    mocked error as a custom name, which refuses the ``States.`` prefix."""
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    def eval_mocked_response_throw(env: Any, mocked_response: Any) -> None:
        if not str(mocked_response.error).startswith("States."):
            original(env, mocked_response)
            return
        details = TaskFailedEventDetails(error=mocked_response.error, cause=mocked_response.cause)
        raise FailureEventException(
            failure_event=FailureEvent(
                env=env,
                error_name=StatesErrorName.from_name(mocked_response.error),
                event_type=HistoryEventType.TaskFailed,
                event_details=EventDetails(taskFailedEventDetails=details),
            )
        )

    return eval_mocked_response_throw


def install_test_state() -> None:
    add(_RESPONSE_CLASS, "test_state", _test_state)


_SERVICES = "moto.stepfunctions.parser.asl.component.state.exec.state_task.service"
_SERVICES_RENAMING_FAILURES = (
    "state_task_service_dynamodb:StateTaskServiceDynamoDB",
    "state_task_service_aws_sdk:StateTaskServiceAwsSdk",
    "state_task_service_lambda:StateTaskServiceLambda",
    "state_task_service_sfn:StateTaskServiceSfn",
    "state_task_service_sqs:StateTaskServiceSqs",
    "state_task_service_sns:StateTaskServiceSns",
    "state_task_service_events:StateTaskServiceEvents",
    "state_task_service_api_gateway:StateTaskServiceApiGateway",
)

_TEST_STATE_PREPROCESSOR = "moto.stepfunctions.parser.asl.parse.test_state.preprocessor:TestStatePreprocessor"

PATCHES: tuple[Patch, ...] = (
    Patch(
        29,
        "moto.stepfunctions.parser.asl.component.state.exec.state_task.mock_eval_utils",
        "_eval_mocked_response_throw",
        _mocked_states_errors,
    ),
    Patch(29, _TEST_STATE_PREPROCESSOR, "visitArguments_string_jsonata", _arguments_recorded),
    Patch(29, _TEST_STATE_PREPROCESSOR, "visitArguments_jsonata_template_value_object", _arguments_recorded),
    Patch(
        29,
        "moto.stepfunctions.parser.asl.eval.environment:Environment",
        "as_inner_frame_of",
        _frames_keep_the_given_context,
    ),
    Patch(29, _EXECUTE_STATE, "_handle_retry", _retry_decisions),
    Patch(29, _EXECUTE_STATE, "_handle_catch", _catch_decisions),
    *(
        Patch(29, f"{_SERVICES}.{service}", "_from_error", _failure_events_pass_through)
        for service in _SERVICES_RENAMING_FAILURES
    ),
    Patch(
        29,
        "moto.stepfunctions.parser.backend.test_state.execution:TestStateExecution",
        "to_test_state_output",
        keep,
    ),
)
