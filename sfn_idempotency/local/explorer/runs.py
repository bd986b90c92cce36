"""The calls a schedule sees: every function invocation passes the explorer's wrapper, which holds
it, fails it as planned, and files each run of a watched side effect with what the records said
as it began."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sfn_idempotency.local.controls import call_origins
from sfn_idempotency.local.controls.calls import Reply
from sfn_idempotency.local.controls.faults import FunctionFailure, FunctionResult
from sfn_idempotency.local.explorer.schedules import FUNCTION_FAULTS, LARGE_RESULTS, Fault, large_result

GATE_DEADLINE_SECONDS = 60.0  # a gate the schedule never opened lets its call go on
HTTP_ERRORS_FROM = 300

# fates of a run
RUNNING, RETURNED, FAILED = "running", "returned", "failed"
UNACKNOWLEDGED = "unacknowledged"  # its code ran, and its caller was told it timed out
ABANDONED = "abandoned"  # its caller stopped waiting (stopped, timed out) while it ran


@dataclass
class Subject:
    """A target execution (one the schedule started): its label and ARN."""

    label: str
    arn: str


@dataclass
class EffectRun:
    """One run of a watched side effect: a call of a function, or the AWS call of a Task state."""

    order: int  # when it began, among every watched run of the schedule
    number: int  # which run of its function it is: "Email run 2" is the second Email
    function: str  # the function or the Task state
    execution: str  # its execution's label
    entered_ms: int
    claim_until_ms: int | None  # the lease of the claim that stood as it began, if one stood
    completed_before: bool  # a COMPLETED, unexpired record stood as it began
    epoch: int  # how many times a COMPLETED record had expired before it began
    fate: str = RUNNING
    interrupted: bool = False  # its execution was stopped or timed out after it began
    subject: Subject = field(default_factory=lambda: Subject("", ""))
    gate: Gate | None = None
    # a later run's order: whether this run was still awaited by its execution as that run began
    awaited_when: dict[int, bool] = field(default_factory=dict)

    @property
    def took_effect(self) -> bool:
        """Whether its code ran to the end without error (it may have been abandoned after)."""
        return self.fate in (RETURNED, UNACKNOWLEDGED, ABANDONED)

    @property
    def certain(self) -> bool:
        """Whether the protocol knew it took effect: its code returned to an execution that was
        waiting for it, and no stop or time-out of that execution came between it and its record."""
        return self.fate == RETURNED and not self.interrupted

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.number,
            "function": self.function,
            "execution": self.execution,
            "fate": self.fate,
            "interrupted": self.interrupted,
            "claimed": self.claim_until_ms is not None,
            "after_completed": self.completed_before,
        }


@dataclass
class Gate:
    """A call held inside a function until the schedule opens it."""

    function: str
    subject: Subject
    history_at_entry: int
    opened: threading.Event = field(default_factory=threading.Event)
    entered: threading.Event = field(default_factory=threading.Event)


@dataclass
class Armed:
    """What the step now running planned for function calls; used up as calls come."""

    hold_function: str = ""
    faults: list[Fault] = field(default_factory=list)

    def take_hold(self, function: str) -> bool:
        if self.hold_function == function:
            self.hold_function = ""
            return True
        return False

    def take_fault(self, function: str) -> Fault | None:
        for index, fault in enumerate(self.faults):
            if fault.service == "lambda" and fault.name == function:
                if fault.calls > 1:
                    self.faults[index] = Fault(fault.operation, fault.kind, fault.calls - 1)
                else:
                    del self.faults[index]
                return fault
        return None


@dataclass
class RunContext:
    """What the wrapper asks of the schedule's runner."""

    origin: Callable[[], Subject | None]  # the target execution making the call now, if one is
    history_length: Callable[[str], int]
    is_running: Callable[[str], bool]
    entry_facts: Callable[[], tuple[int, int | None, bool, int]]  # now, claim until, completed, epoch
    watched: frozenset[str]


class _Pending(threading.local):
    run: EffectRun | None = None  # a watched Task state's call this thread is making


class CallObserver:
    """The explorer's function wrapper (FaultPlan.wrap_functions), and its watch on the AWS calls
    of Task states (``before_call``, ``after_call``: a watched state's call is a run)."""

    def __init__(self, context: RunContext) -> None:
        self._context = context
        self._pending = _Pending()
        self._lock = threading.Lock()
        self.armed = Armed()
        self.runs: list[EffectRun] = []
        self.gates: list[Gate] = []
        self.events: list[str] = []  # what happened in calls during the step now running

    def __call__(
        self, function: str, event: Any, run_code: Callable[[], bool]
    ) -> FunctionFailure | FunctionResult | None:
        subject = self._context.origin()
        if subject is None:
            return None  # a helper's call (the release workflow's): neither held nor failed
        with self._lock:
            hold = self.armed.take_hold(function)
            fault = self.armed.take_fault(function)
        run = self._file_run(function, subject) if function in self._context.watched else None
        abandoned = self._held(function, subject, run) if hold else False
        if fault is None or fault.kind in LARGE_RESULTS:
            errored = run_code()
            self._ended(run, FAILED if errored else ABANDONED if abandoned else RETURNED)
            if fault is None or errored:
                return None
            self._note(f"{function} answered a result of {fault.kind.removeprefix('answered ')}")
            return FunctionResult(large_result(fault.kind))
        error_type, code_runs_first = FUNCTION_FAULTS[fault.kind]
        if code_runs_first:
            run_code()
        self._ended(run, UNACKNOWLEDGED if code_runs_first else FAILED)
        self._note(f"{function} answered {error_type} ({fault.kind})")
        return FunctionFailure(error_type, f"Injected by the explorer: {fault.kind}")

    def before_call(self, service: str, operation: str, params: dict[str, Any]) -> Reply | None:
        """A Task state's AWS call begins: a run, if the state is watched (a Lambda Task's run is
        its function's, which the wrapper files). Never answers the call."""
        state = call_origins.calling_state()
        if service == "lambda" or state not in self._context.watched:
            return None
        subject = self._context.origin()
        if subject is not None:
            self._pending.run = self._file_run(state, subject)
        return None

    def after_call(self, service: str, operation: str, status: int) -> None:
        """The call's answer: a run that returned, or failed (an injected fault, or the service's
        refusal, such as a failed condition)."""
        run, self._pending.run = self._pending.run, None
        self._ended(run, RETURNED if status < HTTP_ERRORS_FROM else FAILED)

    def _file_run(self, function: str, subject: Subject) -> EffectRun:
        now_ms, claim_until, completed, epoch = self._context.entry_facts()
        with self._lock:
            others = [r for r in self.runs if r.fate == RUNNING]
        awaited = {other.order: self._awaited(other) for other in others}
        with self._lock:
            run = EffectRun(
                order=len(self.runs) + 1,
                number=1 + sum(1 for earlier in self.runs if earlier.function == function),
                function=function,
                execution=subject.label,
                entered_ms=now_ms,
                claim_until_ms=claim_until,
                completed_before=completed,
                epoch=epoch,
                subject=subject,
            )
            for other in others:
                other.awaited_when[run.order] = awaited[other.order]
            self.runs.append(run)
        self._note(f"{function} run {run.number} began" + ("" if claim_until else " without a claim"))
        return run

    def _held(self, function: str, subject: Subject, run: EffectRun | None) -> bool:
        """Hold the call until the schedule opens its gate; whether its caller stopped waiting."""
        gate = Gate(function, subject, self._context.history_length(subject.arn))
        if run is not None:
            run.gate = gate
        with self._lock:
            self.gates.append(gate)
        gate.entered.set()
        gate.opened.wait(GATE_DEADLINE_SECONDS)
        return not self.still_awaited(gate)

    def still_awaited(self, gate: Gate) -> bool:
        """Whether the held call's execution still waits for it: it runs, and has not moved on (a
        Task time-out or a stop writes events)."""
        arn = gate.subject.arn
        return self._context.is_running(arn) and self._context.history_length(arn) == gate.history_at_entry

    def _awaited(self, run: EffectRun) -> bool:
        if run.gate is not None:
            return not run.gate.opened.is_set() and self.still_awaited(run.gate)
        return self._context.is_running(run.subject.arn)

    def _ended(self, run: EffectRun | None, fate: str) -> None:
        if run is None:
            return
        run.fate = fate
        self._note(f"{run.function} run {run.number} {fate}")

    def _note(self, text: str) -> None:
        with self._lock:
            self.events.append(text)

    def take_events(self) -> list[str]:
        with self._lock:
            events, self.events = self.events, []
        return events

    def held_gates(self) -> list[Gate]:
        with self._lock:
            return [g for g in self.gates if g.entered.is_set() and not g.opened.is_set()]
