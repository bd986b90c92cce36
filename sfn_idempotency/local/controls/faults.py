"""Faults injected into the calls the interpreter makes and into the functions it invokes."""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import boto3
from botocore import xform_name
from botocore.exceptions import ClientError

from sfn_idempotency.local.controls.calls import Reply


def _call_numbers(calls: int | Iterable[int] | None) -> frozenset[int] | None:
    if calls is None:
        return None
    numbers = frozenset([calls] if isinstance(calls, int) else calls)
    if not numbers or min(numbers) < 1:
        raise ValueError("calls are counted from 1")
    return numbers


@dataclass(frozen=True)
class _ApiFault:
    service: str
    operation: str
    code: str
    message: str
    status_code: int
    calls: frozenset[int] | None
    applied: bool = False


@dataclass(frozen=True)
class FunctionFailure:
    """What a function's invocation answers instead of its code's answer: an ``Unhandled``
    function error of this type, as if its code had raised it."""

    error_type: str
    message: str = ""


@dataclass(frozen=True)
class FunctionResult:
    """What a function's invocation answers instead of its code's answer: this result, as if its
    code had returned it."""

    value: Any


# A function call's answer, in the form its runtime gives it (a Reply, an Outcome).
Answer = TypeVar("Answer")
# Wraps every function invocation: ``(function name, event, run the code: whether it errored)``;
# may hold the call, skip the code, or answer a failure or a result instead (None: the code's own).
FunctionWrapper = Callable[[str, Any, Callable[[], bool]], "FunctionFailure | FunctionResult | None"]


@dataclass(frozen=True)
class _FunctionFault:
    function: str
    calls: frozenset[int] | None
    error_type: str | None = None
    message: str = ""
    delay_seconds: float = 0.0


class Pause:
    """An execution held as it enters a state (``FaultPlan.pause_before``): ``entered`` is set
    when it is held; ``release`` lets it go on (into the state, unless it ended meanwhile)."""

    def __init__(self, state_name: str, state_machine_arn: str | None, calls: frozenset[int] | None) -> None:
        self.state_name = state_name
        self.state_machine_arn = state_machine_arn
        self.calls = calls
        self.entered = threading.Event()
        self.execution_arn: str | None = None  # the execution it holds, once it holds one
        self._released = threading.Event()
        self._entries = 0  # the entries of its state it has seen (the plan's lock held)

    def takes(self, state_name: str, state_machine_arn: str) -> bool:
        """Whether this entry of ``state_name`` is one to hold (called under the plan's lock)."""
        if state_name != self.state_name or self.state_machine_arn not in (None, state_machine_arn):
            return False
        self._entries += 1
        return self._entries in self.calls if self.calls is not None else self._entries == 1

    def release(self) -> None:
        self._released.set()

    @property
    def holding(self) -> bool:
        """Whether it holds an execution now."""
        return self.entered.is_set() and not self._released.is_set()

    def hold(self, execution_arn: str) -> None:
        self.execution_arn = execution_arn
        self.entered.set()
        self._released.wait(PAUSE_DEADLINE_SECONDS)


PAUSE_DEADLINE_SECONDS = 60.0  # a pause no test released lets its execution go on


class FaultPlan:
    """Which call fails how. Call numbers count from 1, per operation or per function."""

    def __init__(self, region: str = "us-east-1") -> None:
        self._region = region
        self._lock = threading.Lock()
        self._api_faults: list[_ApiFault] = []
        self._function_faults: list[_FunctionFault] = []
        self._api_calls: Counter[tuple[str, str]] = Counter()
        self._function_calls: Counter[str] = Counter()
        self._released = threading.Event()
        self._pauses: list[Pause] = []
        self._function_wrappers: list[FunctionWrapper] = []

    def api_error(
        self,
        service: str,
        operation: str,
        code: str,
        *,
        calls: int | Iterable[int] | None = None,
        message: str | None = None,
        status_code: int = 400,
        applied: bool = False,
    ) -> object:
        """Make ``service.operation`` (e.g. dynamodb PutItem) fail with error ``code``. With
        ``applied`` the call takes effect first and only its answer is the error: a 5xx or a timeout
        after the write landed, which the caller's Retry then repeats (in-process engine only). The
        answer is the fault, for ``withdraw``."""
        fault = _ApiFault(
            service,
            operation,
            code,
            message or f"Injected {code}",
            status_code,
            _call_numbers(calls),
            applied,
        )
        with self._lock:
            self._api_faults.append(fault)
        return fault

    def function_error(
        self, function: str, error_type: str, message: str = "", *, calls: int | Iterable[int] | None = None
    ) -> None:
        """Make the function fail as if its code raised ``error_type``."""
        with self._lock:
            self._function_faults.append(
                _FunctionFault(function, _call_numbers(calls), error_type=error_type, message=message)
            )

    def function_delay(
        self, function: str, seconds: float, *, calls: int | Iterable[int] | None = None
    ) -> None:
        """Hold the function for ``seconds`` before its code runs (past its timeout: a hang)."""
        with self._lock:
            self._function_faults.append(
                _FunctionFault(function, _call_numbers(calls), delay_seconds=seconds)
            )

    def pause_before(
        self,
        state_name: str,
        *,
        state_machine_arn: str | None = None,
        calls: int | Iterable[int] | None = None,
    ) -> Pause:
        """Hold an execution as it enters ``state_name`` (of ``state_machine_arn``'s executions, or
        any machine's; at the ``calls``-th such entries from now, or the next one), so that a test
        can stop it, time it out, or let it go there. The state has not begun: it runs after
        ``release`` only if the execution still runs."""
        pause = Pause(state_name, state_machine_arn, _call_numbers(calls))
        with self._lock:
            self._pauses.append(pause)
        return pause

    def before_state(self, state: Any, env: Any) -> bool:
        """The entry hook the engine calls before each state runs: holds it if a pause says so;
        whether the state then runs."""
        if not self._pauses:  # the common case, without the lock
            return True
        context = env.states.context_object.context_object_data
        machine = str(context["StateMachine"]["Id"])
        with self._lock:
            pause = next((p for p in self._pauses if p.takes(state.name, machine)), None)
        if pause is None:
            return True
        pause.hold(str(context["Execution"]["Id"]))
        return bool(env.is_running())

    def wrap_functions(self, wrapper: FunctionWrapper) -> Callable[[], None]:
        """Run every function invocation through ``wrapper`` (after the planned function faults):
        it sees the call, may hold it, answer a failure or a result of its own. The answer removes it
        (so does ``clear``)."""
        with self._lock:
            self._function_wrappers.append(wrapper)

        def unwrap() -> None:
            with self._lock:
                if wrapper in self._function_wrappers:
                    self._function_wrappers.remove(wrapper)

        return unwrap

    def withdraw(self, *planned: object) -> None:
        """Forget planned API faults and pauses that have not been used up; a pause that holds an
        execution is released."""
        withdrawn = {id(item) for item in planned}  # by identity: two equal faults are two faults
        with self._lock:
            self._api_faults = [f for f in self._api_faults if id(f) not in withdrawn]
            pauses = [p for p in self._pauses if id(p) in withdrawn]
            self._pauses = [p for p in self._pauses if id(p) not in withdrawn]
        for pause in pauses:
            pause.release()

    def calls_so_far(self, service: str, operation: str) -> int:
        """How many ``service.operation`` calls the interpreter has made: the next one is this + 1."""
        with self._lock:
            return self._api_calls[service, operation]

    def clear(self) -> None:
        """Forget every planned fault and release every pause (call counts are kept)."""
        with self._lock:
            self._api_faults.clear()
            self._function_faults.clear()
            self._function_wrappers.clear()
            pauses, self._pauses = self._pauses, []
        for pause in pauses:
            pause.release()

    def release(self) -> None:
        """Wake every delayed function and paused execution at once (the engine does this when it
        closes)."""
        self._released.set()
        with self._lock:
            pauses = list(self._pauses)
        for pause in pauses:
            pause.release()

    def api_hook(self, service: str, operation: str, params: dict[str, Any]) -> Reply | None:
        """Called by the engine before each AWS call a Task makes: the planned error, or None."""
        with self._lock:
            self._api_calls[service, operation] += 1
            number = self._api_calls[service, operation]
            fault = next(
                (
                    f
                    for f in self._api_faults
                    if (f.service, f.operation) == (service, operation)
                    and (f.calls is None or number in f.calls)
                ),
                None,
            )
        if fault is None:
            return None
        if fault.applied:
            self._apply(service, operation, params)
        return Reply.error(fault.code, fault.message, fault.status_code)

    def _apply(self, service: str, operation: str, params: dict[str, Any]) -> None:
        """Make the call for real, past the hooks: moto's in-process mock answers any new client."""
        client = boto3.client(
            service, region_name=self._region, aws_access_key_id="local", aws_secret_access_key="local"
        )
        # A call that fails on its own terms changes nothing; the injected error is the answer either way.
        with contextlib.suppress(ClientError):
            getattr(client, xform_name(operation))(**params)

    def call_function(
        self,
        function: str,
        event: Any,
        run: Callable[[], Answer],
        errored: Callable[[Answer], bool],
        instead: Callable[[FunctionFailure | FunctionResult], Answer],
    ) -> Answer:
        """One invocation of ``function``, whichever runtime runs it: the planned faults first (a
        delay, an error instead of the code), then the wrappers; ``run`` runs the code at most once."""
        failure = self._planned_function_fault(function)
        if failure is not None:
            return instead(failure)
        answers: list[Answer] = []

        def run_once() -> bool:
            if not answers:
                answers.append(run())
            return errored(answers[0])

        with self._lock:
            wrappers = list(self._function_wrappers)
        for wrapper in wrappers:
            answer = wrapper(function, event, run_once)
            if answer is not None:
                return instead(answer)
        run_once()
        return answers[0]

    def _planned_function_fault(self, function: str) -> FunctionFailure | None:
        with self._lock:
            self._function_calls[function] += 1
            number = self._function_calls[function]
            faults = [
                f
                for f in self._function_faults
                if f.function == function and (f.calls is None or number in f.calls)
            ]
        for fault in faults:
            if fault.delay_seconds:
                self._released.wait(fault.delay_seconds)
            if fault.error_type:
                return FunctionFailure(fault.error_type, fault.message)
        return None
