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

import datetime
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from moto.core.exceptions import AWSError
from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

from sfn_idempotency.local.compat.patching import Patch, add, keep

_RESPONSE_CLASS = "moto.stepfunctions.responses:StepFunctionResponse"
_EXECUTE_STATE = "moto.stepfunctions.parser.asl.component.state.exec.execute_state:ExecutionState"
_TEST_STATE_NAME = "TestState"  # the name moto's TestState parser gives the state it runs
_STATES_WITHOUT_AWS_CALLS = frozenset({"Pass", "Wait", "Choice", "Succeed", "Fail"})
_TESTABLE = frozenset({*_STATES_WITHOUT_AWS_CALLS, "Task", "Map", "Parallel"})


class ValidationException(AWSError):  # type: ignore[misc]  # moto is not followed (pyproject)
    TYPE = "ValidationException"
    STATUS = 400


class InvalidDefinition(AWSError):  # type: ignore[misc]
    TYPE = "InvalidDefinition"
    STATUS = 400


@dataclass
class Request:
    """A TestState request, checked as AWS checks it."""

    state_name: str
    state: dict[str, Any]
    query_language: str
    input: Any
    variables: dict[str, Any]
    context: dict[str, Any]
    role_arn: str | None
    inspection_level: str
    mock: dict[str, Any] | None
    configuration: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, param: Callable[[str], Any]) -> Request:
        definition = _json(param("definition"), "definition", InvalidDefinition)
        if not isinstance(definition, dict):
            raise InvalidDefinition("Invalid State Machine Definition: 'the definition is a JSON object'")
        state_name = param("stateName")
        if "States" in definition:
            states = definition["States"]
            if not state_name:
                state_name = definition.get("StartAt")
            if not isinstance(states, dict) or state_name not in states:
                raise ValidationException(
                    f"State name '{state_name}' not found in the state machine definition"
                )
            state = states[state_name]
            language = state.get("QueryLanguage", definition.get("QueryLanguage", "JSONPath"))
        else:
            if state_name:
                raise ValidationException("stateName is only valid with a state machine definition")
            state, state_name = definition, _TEST_STATE_NAME
            language = state.get("QueryLanguage", "JSONPath")
        if state.get("Type") not in _TESTABLE:
            raise InvalidDefinition(
                f"Invalid State Machine Definition: 'unsupported state type {state.get('Type')!r}'"
            )
        mock = param("mock")
        role_arn = param("roleArn")
        if role_arn is None and mock is None and state.get("Type") not in _STATES_WITHOUT_AWS_CALLS:
            raise ValidationException("RoleArn must be specified when testing a Task state without a mock")
        if state.get("Type") in ("Map", "Parallel") and mock is None:
            raise ValidationException(f"A mock is required to test a {state['Type']} state")
        return cls(
            state_name=state_name,
            state=state,
            query_language=language,
            input=_json(param("input") or "{}", "input", ValidationException),
            variables=_json(param("variables") or "{}", "variables", ValidationException),
            context=_json(param("context") or "{}", "context", ValidationException),
            role_arn=role_arn,
            inspection_level=param("inspectionLevel") or "INFO",
            mock=mock,
            configuration=param("stateConfiguration") or {},
        )

    def one_state_definition(self) -> str:
        return json.dumps({**self.state, "QueryLanguage": self.query_language})


def _json(text: Any, what: str, error: type[AWSError]) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError) as invalid:
        raise error(f"Invalid {what}: {invalid}") from None


def _mocked_responses(request: Request) -> Any:
    """The request's mock as moto's mocked responses for the state (one per attempt)."""
    from moto.stepfunctions.parser.mocking.mock_config import (
        MockedResponseReturn,
        MockedResponseThrow,
        MockTestCase,
        StateMockedResponses,
    )

    if request.mock is None:
        return None
    if "errorOutput" in request.mock:
        failure = request.mock["errorOutput"]
        response: Any = MockedResponseThrow(0, 0, failure.get("error", ""), failure.get("cause", ""))
    else:
        response = MockedResponseReturn(
            0, 0, _json(request.mock.get("result"), "mock result", ValidationException)
        )
    mocked = StateMockedResponses(_TEST_STATE_NAME, "mock", [response])
    return MockTestCase("TestState", "TestState", [mocked])


def _run(request: Request, account_id: str, region: str) -> dict[str, Any]:
    from moto.stepfunctions.parser.backend.state_machine import TestStateMachine
    from moto.stepfunctions.parser.backend.test_state.execution import TestStateExecution
    from moto.stepfunctions.parser.backend.test_state.execution_worker import TestStateExecutionWorker

    name = f"TestState-{uuid.uuid4().hex[:12]}"
    machine_arn = f"arn:aws:states:{region}:{account_id}:stateMachine:{name}"
    machine = TestStateMachine(name, machine_arn, request.one_state_definition(), request.role_arn)

    class Worker(TestStateExecutionWorker):  # type: ignore[misc]
        def _get_evaluation_entrypoint(self) -> Any:
            return _EndsWhenItsStateDid(super()._get_evaluation_entrypoint())

        def _get_evaluation_environment(self) -> Any:
            env = super()._get_evaluation_environment()
            env.mock_test_case = _mocked_responses(request)
            for variable, value in request.variables.items():
                env.variable_store.set(variable, value)
            env.states.context_object.context_object_data.update(request.context)
            env.sfn_local_test_state = _Decisions()
            return env

    class Execution(TestStateExecution):  # type: ignore[misc]
        def _get_start_execution_worker(self) -> Any:
            worker = super()._get_start_execution_worker()
            worker.__class__ = Worker
            return worker

    execution = Execution(
        name=name,
        role_arn=request.role_arn,
        exec_arn=f"arn:aws:states:{region}:{account_id}:execution:{name}:{name}",
        account_id=account_id,
        region_name=region,
        state_machine=machine,
        start_date=datetime.datetime.now(tz=datetime.UTC),
        activity_store={},
        input_data=json.dumps(request.input),
    )
    execution.start()
    return _answer(request, execution)


class _EndsWhenItsStateDid:
    """moto's TestState program leaves a state with a ``Next`` running (it ends only on ``End``, a
    Choice or an error): the one state has run, so the test has ended."""

    def __init__(self, program: Any) -> None:
        self.program = program

    def eval(self, env: Any) -> None:
        self.program.eval(env)
        if env.is_running():
            env.set_ended()


@dataclass
class _Decisions:
    """What the state decided on an error: the Catch that matched (index, its Next)."""

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
    if decisions.catch_index is not None:
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
        if request.variables or env.variable_store.get_assigned_variables():
            inspection["variables"] = json.dumps(_variables(env), separators=(",", ":"))
        answer["inspectionData"] = inspection
    return {key: value for key, value in answer.items() if value is not None}


def _variables(env: Any) -> dict[str, Any]:
    store = env.variable_store
    scope: dict[str, Any] = {}
    for names in (getattr(store, "_outer_scope", {}), getattr(store, "_inner_scope", {})):
        scope.update(names)
    return scope


def _catch_decisions(original: Callable[..., Any]) -> Callable[..., Any]:
    """In a TestState run, remember which Catch matched (its index and Next): AWS answers them."""

    def handle_catch(self: Any, env: Any, failure_event: Any) -> Any:
        result = original(self, env, failure_event)
        decisions = getattr(env, "sfn_local_test_state", None)
        if decisions is not None:
            from moto.stepfunctions.parser.asl.component.common.catch.catch_outcome import CatchOutcome

            if env.stack and env.stack[-1] == CatchOutcome.Caught:
                index = _matching_catcher(self, env, failure_event)
                if index is not None:
                    error_output = self._construct_error_output_value(failure_event=failure_event)
                    decisions.catch_index = index
                    decisions.catch_next = self.catch.catchers[index].next_decl.name
                    decisions.error, decisions.cause = error_output.get("Error"), error_output.get("Cause")
        return result

    return handle_catch


def _matching_catcher(state: Any, env: Any, failure_event: Any) -> int | None:
    """The first catcher whose ErrorEquals matches the failure, asked of moto's own matcher."""
    for index, catcher in enumerate(state.catch.catchers):
        env.stack.append(failure_event.error_name)
        catcher.error_equals.eval(env)
        if env.stack.pop():
            return index
    return None


def _test_state(self: Any) -> Any:
    """The TestState operation of the Step Functions API."""
    from moto.core.responses import ActionResult

    request = Request.of(self._get_param)
    return ActionResult(_run(request, self.current_account, self.region))


def install_test_state() -> None:
    add(_RESPONSE_CLASS, "test_state", _test_state)


PATCHES: tuple[Patch, ...] = (
    Patch(29, _EXECUTE_STATE, "_handle_catch", _catch_decisions),
    Patch(
        29,
        "moto.stepfunctions.parser.backend.test_state.execution:TestStateExecution",
        "to_test_state_output",
        keep,
    ),
)
