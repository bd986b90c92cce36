"""How moto's interpreter evaluates: its threads, its copies of a program's state, its timestamps
(fixes 59, 63, 65 and 66, speed: no behaviour changes).

59. moto ran every program (the machine's, each Map iteration's, each Parallel branch's) in a
    thread of its own and joined it, only to stop waiting at its TimeoutSeconds. A program without
    one is joined without a limit, so it runs in its caller's thread.
63. Likewise moto ran every Task's work in a thread of its own and waited for it up to the Task's
    TimeoutSeconds, which is 99999999 s when the state sets none (nor a heartbeat, which brings a
    default of 60 s). Waiting that long is waiting for the end, so such a Task's work runs in its
    state's thread; moto's code around it (what it returns, raises and assigns) is unchanged.
65. moto deep-copies a program's state at every state and every frame (a Map iteration opens
    one). A running or ended program's state holds a state's name and a field's name, text or
    None, so a copy of its attributes is a deep copy, without ``deepcopy``'s generic walk.
66. Every history event's timestamp was written with ``strftime``; ``isoformat`` writes the same
    text (milliseconds truncated, as ``[:-3]`` truncated microseconds) for a four-digit year.
"""

from __future__ import annotations

import datetime
import logging
import threading
from collections.abc import Callable
from typing import Any

from sfn_idempotency.local.compat.patching import Patch, add, keep

LOG = logging.getLogger(__name__)
_COMPONENT_PACKAGE = "moto.stepfunctions.parser.asl.component"
_EXECUTE_STATE_MODULE = f"{_COMPONENT_PACKAGE}.state.exec.execute_state"
_PROGRAM_STATE_MODULE = "moto.stepfunctions.parser.asl.eval.program_state"
_EVENT_MANAGER_MODULE = "moto.stepfunctions.parser.asl.eval.event.event_manager"
_NAMES_ONLY_PROGRAM_STATES = ("ProgramRunning", "ProgramEnded")  # attributes: str or None only
_FIRST_FOUR_DIGIT_YEAR = 1000  # strftime's %Y does not pad a shorter year; isoformat does


def _programs_without_a_timeout_run_in_place(
    original: Callable[[Any, Any], None],
) -> Callable[[Any, Any], None]:
    from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent

    def eval(self: Any, env: Any) -> None:
        if self.timeout_seconds is not None:
            original(self, env)
            return
        env.next_state_name = self.start_at.start_at_name
        try:
            EvalComponent.eval(self, env)
        except Exception:
            # What escaped the program's thread ended it, logged, not raised: so here too.
            LOG.exception("a program ended with an exception")

    return eval


class _TaskTimeouts(threading.local):
    unlimited = False  # whether the Task this thread is about to run has no timeout of its own


_task_timeouts = _TaskTimeouts()


def task_runs_in_place() -> bool:
    """Whether the Task this thread is about to start has no timeout of its own (fix 63: its work
    runs in this thread, and nothing waits for it)."""
    return _task_timeouts.unlimited


def _noting_a_task_without_a_timeout(original: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    from moto.stepfunctions.parser.asl.component.common.timeouts.timeout import TimeoutSeconds

    def evaluate_with_timeout(self: Any, env: Any) -> None:
        timeout = self.timeout
        _task_timeouts.unlimited = (
            type(timeout) is TimeoutSeconds
            and timeout.timeout_seconds == TimeoutSeconds.DEFAULT_TIMEOUT_SECONDS
        )
        original(self, env)  # it starts its Task's worker next: ``_tasks_without_a_timeout_run_in_place``

    return evaluate_with_timeout


class _InPlace:
    """A Task's work run by its caller at ``start``, as a thread that was joined at once."""

    def __init__(self, target: Callable[[], None]) -> None:
        self._target = target

    def start(self) -> None:
        self._target()  # moto's target catches everything, and hands it back through its own lists


def _tasks_without_a_timeout_run_in_place(original: type[threading.Thread]) -> Callable[..., Any]:
    def task_worker(*, target: Callable[[], None], daemon: bool) -> threading.Thread | _InPlace:
        if _task_timeouts.unlimited:
            _task_timeouts.unlimited = False  # the Task's own work may evaluate states of its own
            return _InPlace(target)
        return original(target=target, daemon=daemon)

    return task_worker


def _attributes_copied(self: Any, memo: dict[int, Any]) -> Any:
    copied = object.__new__(type(self))
    copied.__dict__.update(self.__dict__)
    return copied


def _written_without_strftime(original: Callable[[Any], str]) -> Callable[[Any], str]:
    def iso_8601_datetime_with_milliseconds(value: Any = None) -> str:
        if not isinstance(value, datetime.datetime) or value.year < _FIRST_FOUR_DIGIT_YEAR:
            return original(value)
        return value.isoformat(timespec="milliseconds")[:23] + "Z"  # its offset, if any, dropped

    return iso_8601_datetime_with_milliseconds


PATCHES: tuple[Patch, ...] = (
    Patch(
        59, f"{_COMPONENT_PACKAGE}.program.program:Program", "eval", _programs_without_a_timeout_run_in_place
    ),
    Patch(
        63,
        f"{_EXECUTE_STATE_MODULE}:ExecutionState",
        "_evaluate_with_timeout",
        _noting_a_task_without_a_timeout,
    ),
    Patch(63, _EXECUTE_STATE_MODULE, "Thread", _tasks_without_a_timeout_run_in_place),
    *(Patch(65, _PROGRAM_STATE_MODULE, state, keep) for state in _NAMES_ONLY_PROGRAM_STATES),
    Patch(66, _EVENT_MANAGER_MODULE, "iso_8601_datetime_with_milliseconds", _written_without_strftime),
)


def install_program_state_copies() -> None:
    """Fix 65: ``deepcopy`` uses a class's own ``__deepcopy__``, which these states lacked."""
    for state in _NAMES_ONLY_PROGRAM_STATES:
        add(f"{_PROGRAM_STATE_MODULE}:{state}", "__deepcopy__", _attributes_copied)
