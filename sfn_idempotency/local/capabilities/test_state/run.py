"""A TestState request run: its one state on moto's TestState program, with the request's
input, variables, context and mock, and the answer AWS gives (output, error and cause, the next
state, the status, and at DEBUG or TRACE the state's data flow)."""

from __future__ import annotations

import copy
import datetime
import json
import uuid
from dataclasses import dataclass
from typing import Any

from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

from sfn_idempotency.local.capabilities.http_task import forget_secrets_of, reveal_secrets_in
from sfn_idempotency.local.capabilities.test_state.request import (
    ONE_STATE_NAME,
    Request,
    mocked_responses,
    number_in,
)


def run_request(request: Request, account_id: str, region: str) -> dict[str, Any]:
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
    state_name = str((request.context.get("State") or {}).get("Name") or ONE_STATE_NAME)

    class Worker(TestStateExecutionWorker):  # type: ignore[misc]
        def _get_evaluation_entrypoint(self) -> Any:
            program = super()._get_evaluation_entrypoint()
            program.test_state.name = state_name  # $$.State.Name, and the name mocks are keyed by
            return _EndsWhenItsStateDid(program)

        def _get_evaluation_environment(self) -> Any:
            env = super()._get_evaluation_environment()
            env.mock_test_case = mocked_responses(request, state_name)
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


def frames_keep_the_given_context(original: Any) -> Any:
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
    """What the state decided on an error: the Retrier that matched (with attempts left: retried),
    the Catch that matched (index, its Next)."""

    retry_count: int = 0  # stateConfiguration.retrierRetryCount: the attempts already made
    matched_retry_index: int | None = None
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
    elif decisions.matched_retry_index is not None:  # a Retrier matched, its attempts all made
        inspection["errorDetails"] = {"retryIndex": decisions.matched_retry_index}
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
            value = number_in(
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


def _variables(env: Any) -> dict[str, Any]:
    store = env.variable_store
    scope: dict[str, Any] = {}
    for names in (getattr(store, "_outer_scope", {}), getattr(store, "_inner_scope", {})):
        scope.update(names)
    return scope
