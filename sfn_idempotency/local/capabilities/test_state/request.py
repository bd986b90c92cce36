"""A TestState request, read and checked as AWS checks it: the state (alone, or by ``stateName``
in a whole definition), its input, variables, context and mock, and AWS's refusals."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from moto.stepfunctions.parser.api import InvalidDefinition, ValidationException

from sfn_idempotency.local.compat.definitions import STATE_TYPES, unknown_state_type

ONE_STATE_NAME = "StateName"  # what AWS calls a state tested alone, in $$.State.Name (recorded)
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
            state, state_name = definition, ONE_STATE_NAME
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
        if mock is not None and {"result", "errorOutput"} <= set(mock):
            # (recorded: test_state_mock_validation::test_both_mock_result_and_mock_error_output_are_set)
            raise ValidationException(
                "A test mock should have only one of the following fields: [result, errorOutput]."
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


def mocked_responses(request: Request, state_name: str) -> Any:
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
    count = number_in(request.state.get("ToleratedFailureCount"), request.input)
    percentage = number_in(request.state.get("ToleratedFailurePercentage"), request.input)
    if count is None and percentage is None:
        return False  # no tolerance declared: no threshold to exceed (recorded)
    within_count = count is not None and failures <= count
    within_percentage = percentage is not None and total > 0 and failures * 100 / total <= percentage
    return not (within_count or within_percentage)


def number_in(value: Any, state_input: Any) -> int | float | None:
    """A Map's number field: a number, or a JSONata expression of the state's input."""
    from sfn_idempotency.local.languages import jsonata as stepfunctions_jsonata

    if isinstance(value, str) and value.startswith("{%") and value.endswith("%}"):
        states = json.dumps({"input": state_input})
        try:
            value = stepfunctions_jsonata.evaluate(f"($states:={states};{value[2:-2].strip()})")
        except stepfunctions_jsonata.JSONataEvaluationError:
            return None
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None
