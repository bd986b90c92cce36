"""RedriveExecution: a Standard execution that FAILED, was ABORTED or TIMED_OUT resumes at the
state that did not succeed, with the input and the workflow variables that state had; the states
before it are not run again. Neither Step Functions Local nor LocalStack has it.

No recording covers redrive, so AWS's documentation is the oracle
(<https://docs.aws.amazon.com/step-functions/latest/dg/redrive-executions.html>):
- the execution keeps its ARN, definition and history; an ``ExecutionRedriven`` event (with the
  ``redriveCount``) follows its end, and the resumed state's events follow that;
- the state resumed is the one entered last and never left (the execution's failure, abort or
  timeout happened in it); a Parallel or inline Map state is run again whole (AWS re-runs only
  its branches and iterations that did not succeed: a known difference);
- it is refused for an Express execution (``InvalidArn``), one that did not end unsuccessfully
  or whose redrivable period (14 days from its end) is over (``ExecutionNotRedrivable``, worded
  as DescribeExecution's ``redriveStatusReason``);
- a request repeated with the same ``clientToken`` redrives once.

How it runs on moto: each top-level state, as it is entered, leaves its name, input and the
variables on the execution's environment (the resume point). A redrive gives the execution's own
worker a fresh environment that continues the same event history, and runs the parsed program
from the resume point instead of ``StartAt``.
"""

from __future__ import annotations

import copy
import datetime
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sfn_idempotency.local.compat.express import refuse_an_express_execution
from sfn_idempotency.local.compat.patching import CAPABILITY, Patch, add, apply_capability
from sfn_idempotency.local.compat.redrive_fields import (
    REDRIVE_COUNT,
    REDRIVE_DATE,
    not_redrivable_because,
    redrive_count,
    redrive_date,
)

_STATE = "moto.stepfunctions.parser.asl.component.state.state:CommonStateField"
_RESPONSES = "moto.stepfunctions.responses:StepFunctionResponse"
_RESUME_POINT = "_sfn_local_resume_point"
_CLIENT_TOKEN = "_sfn_local_redrive_client_token"
_redriving = threading.Lock()  # one redrive of an execution at a time


@dataclass(frozen=True)
class ResumePoint:
    """Where a redrive resumes: the top-level state entered last, as it was entered."""

    state_name: str
    state_input: Any
    variables: dict[str, Any]


def _remembers_the_resume_point(original: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    """Each state of the machine's own top level (not a Map iteration's, nor a branch's: those run
    in frames) records itself as the resume point before it runs."""

    def eval_body(self: Any, env: Any) -> None:
        if not env.is_frame():
            point = ResumePoint(
                state_name=self.name,
                state_input=env.states.get_input(),  # a copy already
                variables=copy.deepcopy(env.variable_store._inner_scope),
            )
            setattr(env, _RESUME_POINT, point)
        original(self, env)

    return eval_body


def _redrive_execution(self: Any) -> Any:
    """The RedriveExecution operation: ``redriveDate``, or AWS's refusal."""
    from moto.core.responses import ActionResult
    from moto.stepfunctions.parser.api import ExecutionNotRedrivable

    arn = str(self._get_param("executionArn") or "")
    refuse_an_express_execution(arn)
    execution = self.stepfunction_backend.describe_execution(arn)
    token = self._get_param("clientToken")
    with _redriving:
        if token is None or token != getattr(execution, _CLIENT_TOKEN, None):
            reason = not_redrivable_because(execution)
            if reason is not None:
                raise ExecutionNotRedrivable(reason)
            setattr(execution, _CLIENT_TOKEN, token)
            redrive(execution)
    return ActionResult({"redriveDate": redrive_date(execution)})


def redrive(execution: Any) -> None:
    """Run ``execution`` again from its resume point, in the background, as StartExecution does."""
    from moto.stepfunctions.parser.api import ExecutionStatus
    from moto.stepfunctions.parser.utils import TMP_THREADS

    worker = execution.exec_worker
    previous_env = worker.env
    setattr(execution, REDRIVE_COUNT, redrive_count(execution) + 1)
    setattr(execution, REDRIVE_DATE, datetime.datetime.now(tz=datetime.UTC))
    execution.exec_status = ExecutionStatus.RUNNING
    execution.stop_date = execution.error = execution.cause = execution.output = None
    resumed = threading.Thread(
        target=_resume, args=(worker, previous_env, redrive_count(execution)), daemon=True
    )
    TMP_THREADS.append(resumed)
    resumed.start()


def _resume(worker: Any, previous_env: Any, count: int) -> None:
    from moto.stepfunctions.parser.api import HistoryEventType
    from moto.stepfunctions.parser.asl.component.common.flow.start_at import StartAt
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventHistoryContext

    program = worker._get_evaluation_entrypoint()
    env = worker._get_evaluation_environment()  # the context says the redrive count and time
    env.event_manager = previous_env.event_manager  # the history goes on
    last_event_id = previous_env.event_manager.get_event_history()[-1]["id"]
    env.event_history_context = EventHistoryContext(previous_event_id=last_event_id)
    point: ResumePoint | None = getattr(previous_env, _RESUME_POINT, None)
    if point is not None:
        env.states.reset(point.state_input)
        env.variable_store._inner_scope.update(copy.deepcopy(point.variables))
    worker.env = env
    env.event_manager.add_event(
        context=env.event_history_context,
        event_type=HistoryEventType.ExecutionRedriven,
        event_details={"executionRedrivenEventDetails": {"redriveCount": count}},
    )
    from_the_resume_point = copy.copy(program)  # the parsed program is shared: change a copy
    if point is not None:
        from_the_resume_point.start_at = StartAt(point.state_name)
    from_the_resume_point.eval(env)
    worker._execution_communication.terminated()


PATCHES: tuple[Patch, ...] = (Patch(CAPABILITY, _STATE, "_eval_body", _remembers_the_resume_point),)


def install() -> None:
    """Record resume points, and answer RedriveExecution."""
    apply_capability("redrive", PATCHES)
    add(_RESPONSES, "redrive_execution", _redrive_execution)
