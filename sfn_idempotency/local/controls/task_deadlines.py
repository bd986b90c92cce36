"""A Task's ``TimeoutSeconds`` runs on the engine's clock: moving ``cloud.clock`` past a running
Task's deadline times the Task out (``States.Timeout``) at once, as that much time passing would on
AWS. Leases and expiries already follow the clock; without this, a test that moved the clock past
a lease while a business step ran saw a step that outlived its own time-out.

moto's Task waits for its work on a ``threading.Event`` with the Task's timeout; in its module that
event is one whose wait also ends when the clock passes the deadline. A Task without a timeout of
its own runs its work in place (compat fix 63) and waits for nothing.
"""

from __future__ import annotations

import threading
from typing import Any

from sfn_idempotency.local.compat.evaluation import task_runs_in_place
from sfn_idempotency.local.compat.patching import CAPABILITY, Patch, apply_capability
from sfn_idempotency.local.controls import state_entry
from sfn_idempotency.local.controls.clock import MILLISECONDS_PER_SECOND, MovableClock

_EXECUTE_STATE_MODULE = "moto.stepfunctions.parser.asl.component.state.exec.execute_state"


class _Active:
    clock: MovableClock | None = None  # the running cloud's clock


active = _Active()


class _Entered(threading.local):
    execution: str = ""  # the execution whose state this thread entered last


_entered = _Entered()
_waits_lock = threading.Lock()
# id of a Task's event: (its execution, its deadline in epoch ms, or None until its wait begins)
_waits: dict[int, tuple[str, float | None]] = {}


def _remember_the_execution(state: Any, env: Any) -> bool:
    """The entry hook: which execution this thread's Task, if it waits, belongs to."""
    execution = env.states.context_object.context_object_data.get("Execution") or {}
    _entered.execution = str(execution.get("Id", ""))  # TestState's context may have none
    return True


def expiring(by_ms: float) -> set[str]:
    """The executions with a Task waiting on a deadline at or before ``by_ms`` (epoch ms): what
    moving the clock there times out."""
    with _waits_lock:
        return {
            execution for execution, deadline in _waits.values() if deadline is not None and deadline <= by_ms
        }


def starting(execution: str) -> bool:
    """Whether a Task of the execution has started its work and not yet begun to wait for it (its
    state's thread has yet to reach the wait): a moment that has not settled."""
    with _waits_lock:
        return any(waiting == execution and deadline is None for waiting, deadline in _waits.values())


class ClockDeadlineEvent:
    """``threading.Event`` as moto's Task uses it (``set``, ``is_set``, ``wait``), whose ``wait``
    also ends, answering False, when the engine's clock passes the deadline."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._set = False
        # Created as its Task starts (just before its work): the deadline counts from here, as the
        # Task's timeout counts from its start on AWS. A Task without a timeout waits for nothing.
        clock = active.clock
        self._started_ms = clock.now_ms() if clock is not None else 0
        if clock is not None and not task_runs_in_place():
            with _waits_lock:
                _waits[id(self)] = (_entered.execution, None)

    def set(self) -> None:
        with self._condition:
            self._set = True
            self._condition.notify_all()

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float | None = None) -> bool:
        clock = active.clock
        if clock is None or timeout is None:
            with _waits_lock:
                _waits.pop(id(self), None)
            with self._condition:
                return self._condition.wait_for(lambda: self._set, timeout)
        deadline_ms = (self._started_ms or clock.now_ms()) + timeout * MILLISECONDS_PER_SECOND
        stop_listening = clock.on_advance(self._look_again)
        with _waits_lock:
            _waits[id(self)] = (_entered.execution, deadline_ms)
        try:
            with self._condition:
                while not self._set:
                    remaining_ms = deadline_ms - clock.now_ms()
                    if remaining_ms <= 0:
                        return False
                    self._condition.wait(remaining_ms / MILLISECONDS_PER_SECOND)
                return True
        finally:
            stop_listening()
            with _waits_lock:
                _waits.pop(id(self), None)

    def _look_again(self) -> None:
        with self._condition:
            self._condition.notify_all()


class _ThreadingOnTheClock:
    """The ``threading`` module, as moto's Task module sees it: its ``Event`` is the clock's."""

    Event = ClockDeadlineEvent

    def __getattr__(self, name: str) -> Any:
        return getattr(threading, name)


PATCHES: tuple[Patch, ...] = (
    Patch(CAPABILITY, _EXECUTE_STATE_MODULE, "threading", lambda _original: _ThreadingOnTheClock()),
)


def install() -> None:
    apply_capability("Task time-outs on the engine's clock", PATCHES)
    state_entry.install()
    state_entry.hooks.add_engine_hook(_remember_the_execution)
