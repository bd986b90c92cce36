"""RedriveExecution: a Standard execution that FAILED, was ABORTED or TIMED_OUT resumes at the
state that did not succeed, with the input and the workflow variables that state had; the states
before it are not run again. Neither Step Functions Local nor LocalStack has it.

No recording covers redrive, so AWS's documentation is the oracle
(<https://docs.aws.amazon.com/step-functions/latest/dg/redrive-executions.html>, the
RedriveExecution API reference, and "Redriving Map Runs"):
- the execution keeps its ARN, definition and history; an ``ExecutionRedriven`` event (with the
  ``redriveCount``) follows its end, and the resumed state's events follow that;
- the state resumed is the one entered last and never left (the execution's failure, abort or
  timeout happened in it);
- a Parallel or inline Map state "reschedules and redrives only the iterations and branches that
  failed or aborted": a branch or iteration that succeeded keeps its result and does not run
  again, one that never started starts, and one that did not succeed is itself redriven: it resumes
  at *its* state that did not succeed, with that state's input and variables, at any depth. (The
  docs do not say where within a branch; this is the reading that is worse for idempotency, since
  it skips whatever the branch did before that state: docs/aws-fidelity.md, L39.)
- a redriven Distributed Map runs only its unsuccessful children, each redriven where it stopped
  (in a new map run: AWS redrives the same one, a known difference);
- it is refused for an Express execution (``InvalidArn``), one that did not end unsuccessfully
  or whose redrivable period (14 days from its end) is over (``ExecutionNotRedrivable``, worded
  as DescribeExecution's ``redriveStatusReason``);
- a request repeated with the same ``clientToken`` redrives once.

How it runs on moto: every run of an execution keeps a ``RunRecord``. Each *frame* (the machine's
top level, each Parallel branch, each inline Map iteration) has a key: ``()`` for the top level,
then ``(state, index)`` for each branch or iteration it runs in. As a state is entered, its frame
records it as the frame's resume point; a branch or iteration that ends successfully records its
result. A redrive gives the execution's own worker a fresh environment that continues the same
history, and runs the parsed program from the top level's resume point, with the earlier run's
record as its *plan*: when the resumed state opens branches or iterations, each takes its result
from the plan, or resumes at its own resume point, or starts afresh.
"""

from __future__ import annotations

import copy
import datetime
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sfn_idempotency.local.compat.evaluation import copied_json, state_input
from sfn_idempotency.local.compat.execution_ends import continued_history
from sfn_idempotency.local.compat.express import refuse_an_express_execution
from sfn_idempotency.local.compat.patching import CAPABILITY, Patch, add, apply_capability
from sfn_idempotency.local.compat.redrive_fields import (
    REDRIVE_COUNT,
    REDRIVE_DATE,
    not_redrivable_because,
    redrive_count,
    redrive_date,
)
from sfn_idempotency.local.controls import state_entry

_RESPONSES = "moto.stepfunctions.responses:StepFunctionResponse"
_ENVIRONMENT = "moto.stepfunctions.parser.asl.eval.environment:Environment"
_PARALLEL = "moto.stepfunctions.parser.asl.component.state.exec.state_parallel"
_MAP_ITERATION = "moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration"
_CLIENT_TOKEN = "_sfn_local_redrive_client_token"
_FRAME = "_sfn_local_redrive_frame"  # on an Environment: its Frame
_redriving = threading.Lock()  # one redrive of an execution at a time

FrameKey = tuple[Any, ...]  # () for the top level, then (state name, branch or item index) pairs


@dataclass(frozen=True)
class ResumePoint:
    """Where a frame resumes: the state it entered last, as it was entered."""

    state_name: str
    state_input: Any
    variables: dict[str, Any]


@dataclass
class RunRecord:
    """What one run of an execution left behind, per frame: where each frame was last, and the
    result of each branch or iteration that succeeded."""

    resume: dict[FrameKey, ResumePoint] = field(default_factory=dict)
    succeeded: dict[FrameKey, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def entered(self, key: FrameKey, point: ResumePoint) -> None:
        with self._lock:
            self.resume[key] = point

    def ended_well(self, key: FrameKey, output: Any) -> None:
        with self._lock:
            self.succeeded[key] = copied_json(output)

    def started(self, key: FrameKey) -> None:
        """A frame starts (again, in a loop): what this run recorded of it and below it is stale.
        (A frame that ran entered a state, so one with no entry of its own has none below it.)"""
        with self._lock:
            if key not in self.resume and key not in self.succeeded:
                return
            for records in (self.resume, self.succeeded):
                for stale in [other for other in records if other[: len(key)] == key]:
                    del records[stale]


@dataclass
class Frame:
    """What redrive knows of one Environment: its key, its run's record, and the earlier run's
    record (the plan) while the frame is being redriven. ``unit`` frames are the top level and
    each branch or iteration; the others (a Map's worker frames) only pass the plan on."""

    key: FrameKey
    record: RunRecord
    plan: RunRecord | None = None
    resuming: str | None = None  # the state this frame resumes at, until it is left
    unit: bool = True


def _frame(env: Any) -> Frame | None:
    return getattr(env, _FRAME, None)


def _current_state(env: Any) -> str | None:
    state = env.states.context_object.context_object_data.get("State") or {}
    return state.get("Name")


def _frames_inherit(original: Callable[..., Any]) -> classmethod[Any, Any, Any]:
    """A frame opened by a state (a Parallel's branch, a Map's worker or iteration) belongs to its
    opener's run; it carries the plan on only while its opener is being redriven at that state."""

    def as_inner_frame_of(cls: Any, env: Any, *args: Any, **kwargs: Any) -> Any:
        frame = original(env, *args, **kwargs)
        opener = _frame(env)
        if opener is not None:
            redriven_here = opener.resuming is not None and opener.resuming == _current_state(env)
            plan = opener.plan if (redriven_here or not opener.unit) else None
            setattr(frame, _FRAME, Frame(key=opener.key, record=opener.record, plan=plan, unit=False))
        return frame

    return classmethod(as_inner_frame_of)


def remember_the_resume_point(state: Any, env: Any) -> bool:
    """An entry hook: each state records itself as its frame's resume point before it runs (an
    execution's first run gets its record at its first state)."""
    frame = _frame(env)
    if frame is None and not env.is_frame():
        frame = Frame(key=(), record=RunRecord())
        setattr(env, _FRAME, frame)
    if frame is not None and frame.unit:
        if frame.resuming is not None and frame.resuming != state.name:
            frame.resuming = None  # the resumed state was left: the plan is spent
        frame.record.entered(
            frame.key,
            ResumePoint(
                state_name=state.name,
                state_input=state_input(env),  # kept as is: a redrive resets the state to a copy
                variables=copied_json(env.variable_store._inner_scope),
            ),
        )
    return True


def _keyed(env: Any, state_name: str, index: int) -> tuple[Frame, ResumePoint | None, Any]:
    """Give the frame of a branch or iteration its key; what the plan says of it: (frame, where it
    resumes or None, its earlier result or ``_NOTHING``)."""
    inherited = _frame(env)
    assert inherited is not None
    key = (*inherited.key, state_name, index)
    frame = Frame(key=key, record=inherited.record, plan=inherited.plan)
    setattr(env, _FRAME, frame)
    frame.record.started(key)
    plan = frame.plan
    if plan is not None and key in plan.succeeded:
        return frame, None, plan.succeeded[key]
    point = plan.resume.get(key) if plan is not None else None
    if point is None:
        frame.plan = None  # it never ran: it starts afresh
    else:
        frame.resuming = point.state_name
    return frame, point, _NOTHING


_NOTHING = object()


def _resume_at(program: Any, env: Any, point: ResumePoint) -> Any:
    """A copy of ``program`` (the parsed program is shared) that starts at ``point``, with ``env``
    holding the point's input and variables."""
    from moto.stepfunctions.parser.asl.component.common.flow.start_at import StartAt

    env.states.reset(point.state_input)
    env.variable_store._inner_scope.update(copied_json(point.variables))
    resumed = copy.copy(program)
    resumed.start_at = StartAt(point.state_name)
    return resumed


# -- Parallel branches -------------------------------------------------------------------------------
class _Branches(threading.local):
    programs: list[Any] | None = None  # the branches of the Parallel this thread is starting


_branches = _Branches()


def _branches_known(original: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    def eval_body(self: Any, env: Any) -> None:
        _branches.programs = self.programs
        original(self, env)

    return eval_body


def _branch_keyed(original: Callable[..., None]) -> Callable[..., None]:
    """A branch's worker: its frame keyed by the Parallel and the branch's place; a branch the plan
    saw succeed keeps its result, one it saw fail resumes where it was."""

    def __init__(self: Any, branch_worker_comm: Any, program: Any, env: Any) -> None:
        self._sfn_local_kept = _NOTHING
        if _frame(env) is not None and _branches.programs is not None:
            index = next(i for i, branch in enumerate(_branches.programs) if branch is program)
            frame, point, kept = _keyed(env, str(_current_state(env)), index)
            if kept is not _NOTHING:
                self._sfn_local_kept = kept
                frame.record.ended_well(frame.key, kept)
            elif point is not None:
                program = _resume_at(program, env, point)
        original(self, branch_worker_comm=branch_worker_comm, program=program, env=env)

    return __init__


def _branch_runs_or_keeps(original: Callable[[Any], None]) -> Callable[[Any], None]:
    def start(self: Any) -> None:
        if self._sfn_local_kept is _NOTHING:
            original(self)
            return
        self.env.states.reset(copied_json(self._sfn_local_kept))
        self._branch_worker_comm.on_terminated(env=self.env)

    return start


def _branch_result_recorded(original: Callable[[Any], None]) -> Callable[[Any], None]:
    def thread_routine(self: Any) -> None:
        from moto.stepfunctions.parser.asl.eval.program_state import ProgramEnded

        original(self)
        frame = _frame(self.env)
        if frame is not None and frame.unit and isinstance(self.env.program_state(), ProgramEnded):
            frame.record.ended_well(frame.key, self.env.states.get_input())

    return thread_routine


# -- inline Map iterations ---------------------------------------------------------------------------
_POINT = "_sfn_local_redrive_point"  # on an iteration's Environment: where it resumes


def _jobs_keyed(
    count_kept: Callable[[Any], None] | None = None, *, failed_leaves_none: bool = False
) -> Callable[[Any], Any]:
    """A Map's job (an inline iteration, a Distributed Map's child): keyed by the Map and the item's
    index; the plan keeps its result (``count_kept`` counts it) or resumes it where it stopped; a
    result is recorded when it succeeds (a job that failed leaves an exception, or with
    ``failed_leaves_none`` None, as a Distributed Map's child does)."""

    def build(original: Callable[[Any, Any, Any], None]) -> Callable[[Any, Any, Any], None]:
        def eval_job(self: Any, env: Any, job: Any) -> None:
            if _frame(env) is None:
                original(self, env, job)
                return
            frame, point, kept = _keyed(env, self._work_name, job.job_index)
            if kept is not _NOTHING:
                if count_kept is not None:
                    count_kept(self)
                job.job_output = copied_json(kept)
                frame.record.ended_well(frame.key, kept)
                return
            if point is not None:
                job.job_program = _resume_at(job.job_program, env, point)
                setattr(env, _POINT, point)
            original(self, env, job)
            failed = isinstance(job.job_output, Exception) or (failed_leaves_none and job.job_output is None)
            if not failed:
                frame.record.ended_well(frame.key, job.job_output)

        return eval_job

    return build


def _resumed_input(original: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    """A resumed iteration's input is its resumed state's, not the item (selected) again."""

    def eval_input(self: Any, env_frame: Any) -> None:
        original(self, env_frame)
        point: ResumePoint | None = getattr(env_frame, _POINT, None)
        if point is not None:
            env_frame.states.reset(point.state_input)
            env_frame.variable_store._inner_scope.update(copied_json(point.variables))

    return eval_input


# -- Distributed Map children ------------------------------------------------------------------------
def _counted_as_succeeded(worker: Any) -> None:
    """A Distributed Map child whose result a redriven map run keeps counts as succeeded in it. (A
    redriven map run runs only its unsuccessful children, "Redriving Map Runs"; moto's parser takes
    Standard children only, and those are redriven where they stopped.)"""
    record = worker._map_run_record
    for counter in (record.item_counter, record.execution_counter):
        for kind in (counter.total, counter.succeeded, counter.results_written):
            kind.count()


# -- the operation ------------------------------------------------------------------------------------
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
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventHistoryContext

    program = worker._get_evaluation_entrypoint()
    env = worker._get_evaluation_environment()  # the context says the redrive count and time
    env.event_manager = continued_history(previous_env.event_manager)
    last_event_id = env.event_manager.get_event_history()[-1]["id"]
    env.event_history_context = EventHistoryContext(previous_event_id=last_event_id)
    previous = _frame(previous_env)
    plan = previous.record if previous is not None else RunRecord()
    frame = Frame(key=(), record=RunRecord(), plan=plan)
    setattr(env, _FRAME, frame)
    point = plan.resume.get(())
    worker.env = env
    env.event_manager.add_event(
        context=env.event_history_context,
        event_type=HistoryEventType.ExecutionRedriven,
        event_details={"executionRedrivenEventDetails": {"redriveCount": count}},
    )
    if point is not None:
        frame.resuming = point.state_name
        program = _resume_at(program, env, point)
    program.eval(env)
    worker._execution_communication.terminated()


PATCHES: tuple[Patch, ...] = (
    Patch(CAPABILITY, _ENVIRONMENT, "as_inner_frame_of", _frames_inherit),
    Patch(CAPABILITY, f"{_PARALLEL}.branches_decl:BranchesDecl", "_eval_body", _branches_known),
    Patch(CAPABILITY, f"{_PARALLEL}.branch_worker:BranchWorker", "__init__", _branch_keyed),
    Patch(CAPABILITY, f"{_PARALLEL}.branch_worker:BranchWorker", "start", _branch_runs_or_keeps),
    Patch(CAPABILITY, f"{_PARALLEL}.branch_worker:BranchWorker", "_thread_routine", _branch_result_recorded),
    Patch(CAPABILITY, f"{_MAP_ITERATION}.iteration_worker:IterationWorker", "_eval_job", _jobs_keyed()),
    Patch(
        CAPABILITY,
        f"{_MAP_ITERATION}.itemprocessor.inline_item_processor_worker:InlineItemProcessorWorker",
        "_eval_input",
        _resumed_input,
    ),
    Patch(
        CAPABILITY,
        f"{_MAP_ITERATION}.itemprocessor.distributed_item_processor_worker:DistributedItemProcessorWorker",
        "_eval_job",
        _jobs_keyed(count_kept=_counted_as_succeeded, failed_leaves_none=True),
    ),
    Patch(
        CAPABILITY,
        f"{_MAP_ITERATION}.iterator.inline_iterator_worker:InlineIteratorWorker",
        "_eval_input",
        _resumed_input,
    ),
)


def install() -> None:
    """Record resume points, and answer RedriveExecution."""
    state_entry.install()
    state_entry.hooks.add_engine_hook(remember_the_resume_point)
    apply_capability("redrive", PATCHES)
    add(_RESPONSES, "redrive_execution", _redrive_execution)
