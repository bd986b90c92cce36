"""An execution's end: announced to what waits for it (fix 56, speed), at once (fix 68), and packed
(fixes 83 and 109, speed).

Every execution's end (SUCCEEDED, FAILED, TIMED_OUT, ABORTED; a sync one's too) is announced on one
condition, after moto has written the execution's status. Two waiters use it:
- a ``.sync`` or ``.sync:2`` Task waiting for its child execution: moto asked DescribeExecution
  every 0.5 s; its pause between two asks now ends as soon as any execution ends (and at 0.5 s at
  the latest, as before, for the integrations whose jobs are not executions);
- ``LocalCloud.wait`` (and so ``run``): it slept in 5 ms steps; it now wakes at the end.

68. [L41] StopExecution and an execution's TimeoutSeconds end the execution at once, as on AWS
    (moto marked it stopped, but wrote its end, reported its status and sent its status-change
    event only when the state that was running returned, a Lambda's answer included). The history
    ends with the first terminal event: a running Task's late answer, and anything else its run
    still writes, is dropped. A redrive continues the history in a manager of its own
    (``continued_history``), so an earlier run's late events cannot reach it. An ended status is
    written after the output, error and cause it goes with (moto wrote it first).
83. [speed] The history of an execution that SUCCEEDED is packed once its end is announced: nothing
    can add to it (it is sealed, and only an unsuccessful execution is redriven), and its events as
    dicts were most of the memory an ended execution kept.
109. [speed] So is its run: its worker is replaced by a slim record of what its readers use (the
    history, map runs and callbacks); its states' data, variables, locks and evaluation details
    are let go.
"""

from __future__ import annotations

import contextlib
import copy
import pickle
import threading
import weakref
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

from sfn_idempotency.local.compat.patching import Patch

_EXECUTION_MODULE = "moto.stepfunctions.parser.backend.execution"
_EVENT_MANAGER = "moto.stepfunctions.parser.asl.eval.event.event_manager:EventManager"
_ENVIRONMENT = "moto.stepfunctions.parser.asl.eval.environment:Environment"
_WORKER = "moto.stepfunctions.parser.backend.execution_worker:ExecutionWorker"
_CALLBACK_MODULE = (
    "moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_callback"
)


class ExecutionEnds:
    """Every execution's end: a count of the ends so far (a condition for the pauses that wait for
    any end), and for each execution someone waits for, an event of its own (so that an end wakes
    its own waiters only, however many executions are in flight)."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._ends = 0
        self._seen = threading.local()  # per pausing thread: the count when it last looked
        self._awaited: dict[int, threading.Event] = {}  # id of an execution: its waiters' event
        self._announced: weakref.WeakSet[Any] = weakref.WeakSet()  # executions whose end is announced
        self.listeners: list[Callable[[Any], None]] = []  # told of each end (a retention limit)

    def announce(self, execution: Any) -> None:
        with self._condition:
            with contextlib.suppress(TypeError):  # moto's executions can be weakly referenced
                self._announced.add(execution)
            self._ends += 1
            self._condition.notify_all()
            ended = self._awaited.pop(id(execution), None)
        if ended is not None:
            ended.set()

    def announced(self, execution: Any) -> bool:
        """Whether the execution's end is announced: after what its end sends (its status change
        event, and what that event starts) has been sent."""
        with self._condition:
            return execution in self._announced

    def wait_for_end(self, execution: Any, has_ended: Callable[[], bool], timeout: float) -> bool:
        """Block until ``execution`` ends (``has_ended()`` says whether it has) or ``timeout``
        seconds pass; whether it ended."""
        with self._condition:
            if has_ended():
                return True
            ended = self._awaited.setdefault(id(execution), threading.Event())
        return ended.wait(timeout) or has_ended()

    def sleep(self, seconds: float) -> None:
        """A pause between two looks at something an execution's end may change: returns at once
        if an execution ended since this thread's last pause, else at the next end or after
        ``seconds``. (The first pause of a thread returns at once: it cannot know what it missed.)"""
        with self._condition:
            seen = getattr(self._seen, "ends", -1)
            if seen == self._ends:
                self._condition.wait_for(lambda: self._ends != seen, seconds)
            self._seen.ends = self._ends


ends = ExecutionEnds()


class _WakingTime:
    """The ``time`` module as moto's callback Task sees it: ``sleep`` wakes at an execution's end."""

    def __init__(self, original: Any) -> None:
        self._original = original

    def sleep(self, seconds: float) -> None:
        ends.sleep(seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)


def _announced(original: Callable[[Any], None]) -> Callable[[Any], None]:
    def terminated(self: Any) -> None:
        try:
            original(self)
        finally:
            ends.announce(self.execution)
            _pack_a_succeeded_run(self.execution)
            for listener in list(ends.listeners):
                listener(self.execution)

    return terminated


# -- fix 83: an ended execution's history, packed ----------------------------------------------------
class PackedHistory(Sequence[dict[str, Any]]):
    """A final history (an execution that SUCCEEDED, which nothing redrives or extends) as one
    compressed pickle: about a tenth of the memory of its events as dicts. Each read unpacks it;
    moto's ``get_event_history`` deep-copies it into a list of its own, as it copied the list."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self._packed = zlib.compress(pickle.dumps(events, protocol=pickle.HIGHEST_PROTOCOL), 1)
        self._length = len(events)

    def unpacked(self) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = pickle.loads(zlib.decompress(self._packed))  # our own bytes
        return events

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        return self.unpacked()[index]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.unpacked())

    def __deepcopy__(self, memo: dict[int, Any]) -> list[dict[str, Any]]:
        return self.unpacked()

    def append(self, event: dict[str, Any]) -> None:
        raise RuntimeError("a packed history is final: fix 68 seals it before anything is appended")


class EndedEnvironment:
    """Fix 109: what the readers of an ended run use (GetExecutionHistory, DescribeMapRun and
    ListMapRuns, a callback that comes too late, a second report of its end), and nothing else."""

    def __init__(self, env: Any) -> None:
        self.event_manager = env.event_manager
        self.map_run_record_pool_manager = env.map_run_record_pool_manager
        self.callback_pool_manager = env.callback_pool_manager
        setattr(self, _REPORTED, True)

    def is_running(self) -> bool:
        return False


class EndedRun:
    """Fix 109: an ended execution's worker, slim."""

    def __init__(self, worker: Any) -> None:
        self.env = EndedEnvironment(worker.env)
        self._execution_communication = worker._execution_communication

    def stop(self, stop_date: Any, error: str | None, cause: str | None) -> None:
        """An ended run has nothing to stop (StopExecution stops a RUNNING execution only)."""


def _pack_a_succeeded_run(execution: Any) -> None:
    from moto.stepfunctions.parser.backend.test_state.execution import TestStateExecution

    if getattr(getattr(execution, "exec_status", None), "value", None) != "SUCCEEDED":
        return  # a FAILED, ABORTED or TIMED_OUT execution may be redriven: its history grows
    manager: Any = getattr(getattr(execution.exec_worker, "env", None), "event_manager", None)
    events = getattr(manager, "_history_event_list", None)
    if manager is None or not isinstance(events, list) or not getattr(manager, _SEALED, False):
        return
    with manager._mutex:
        manager._history_event_list = PackedHistory(events)
    if not isinstance(execution, TestStateExecution):  # (TestState answers from its run's data)
        execution.exec_worker = EndedRun(execution.exec_worker)


# -- fix 68: an end at once ------------------------------------------------------------------------
_TERMINAL_EVENTS = frozenset(
    {"ExecutionSucceeded", "ExecutionFailed", "ExecutionAborted", "ExecutionTimedOut"}
)
_SEALED = "_sfn_local_history_sealed"  # on an EventManager: its run's end is written
_REPORTED = "_sfn_local_end_reported"  # on an Environment: its run's status is reported
DROPPED = "_sfn_local_events_dropped"  # on an EventManager: how many late events it dropped


def _history_ends_at_its_end(original: Callable[..., int]) -> Callable[..., int]:
    """An execution's history takes nothing after its first terminal event (its run's)."""

    def add_event(self: Any, context: Any, event_type: Any, *args: Any, **kwargs: Any) -> int:
        # No lock on the way of every event (one lock for every execution's events made their
        # threads queue for it): a terminal event seals with one atomic dict.setdefault, and
        # only the first to seal writes.
        fields = self.__dict__
        if fields.get(_SEALED, False) or (
            getattr(event_type, "value", event_type) in _TERMINAL_EVENTS  # an enum member
            and fields.setdefault(_SEALED, seal := object()) is not seal
        ):  # dropped: the run had ended
            with _sealing:
                fields[DROPPED] = fields.get(DROPPED, 0) + 1
            return int(context.last_published_event_id or 0)
        return original(self, context, event_type, *args, **kwargs)

    return add_event


_sealing = threading.Lock()


def continued_history(previous: Any) -> Any:
    """A new run's event manager (a redrive's): the same history and event ids as ``previous``,
    which stays sealed, so the earlier run's late events are dropped rather than appended."""
    continued = object.__new__(type(previous))
    continued.__dict__.update(previous.__dict__)  # the same list, id generator and log session
    continued.__dict__.pop(_SEALED, None)
    continued.__dict__.pop(DROPPED, None)
    return continued


def _stopped_at_once(original: Callable[..., None]) -> Callable[..., None]:
    """StopExecution: the execution is ABORTED now, its ``ExecutionAborted`` written now (as moto's
    program writes it when it notices: no previous event), its status reported now."""

    def stop(self: Any, stop_date: Any, error: str | None, cause: str | None) -> None:
        from moto.stepfunctions.parser.api import ExecutionAbortedEventDetails, HistoryEventType
        from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
        from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped

        original(self, stop_date=stop_date, error=error, cause=cause)
        env = self.env
        if not isinstance(env.program_state(), ProgramStopped):
            return  # it had ended already
        env.event_history_context.source_event_id = 0
        env.event_manager.add_event(
            context=env.event_history_context,
            event_type=HistoryEventType.ExecutionAborted,
            event_details=EventDetails(
                executionAbortedEventDetails=ExecutionAbortedEventDetails(error=error, cause=cause)
            ),
        )
        self._execution_communication.terminated()

    return stop


def _timed_out_at_once(original: Callable[[Any], None]) -> Callable[[Any], None]:
    """An execution past its TimeoutSeconds: ``ExecutionTimedOut`` is written when it times out
    (its program's caller reports the status next), not when the running state returns."""

    def set_timed_out(self: Any) -> None:
        from moto.stepfunctions.parser.api import ExecutionTimedOutEventDetails, HistoryEventType
        from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
        from moto.stepfunctions.parser.asl.eval.program_state import ProgramTimedOut

        original(self)
        if self.is_frame() or not isinstance(self.program_state(), ProgramTimedOut):
            return
        self.event_manager.add_event(
            context=self.event_history_context,
            event_type=HistoryEventType.ExecutionTimedOut,
            event_details=EventDetails(executionTimedOutEventDetails=ExecutionTimedOutEventDetails()),
        )

    return set_timed_out


def _reported_once(original: Callable[[Any], None]) -> Callable[[Any], None]:
    """A run's status is reported once, when it ends: a stopped run's own late report, or one made
    after a redrive started the next run (which is still running), is not."""

    def terminated(self: Any) -> None:
        env = self.execution.exec_worker.env
        with _sealing:
            if env.is_running() or getattr(env, _REPORTED, False):
                return
            setattr(env, _REPORTED, True)
        original(self)

    return terminated


# What an ended execution says, in the order a reader must see it: the status last.
_STATUS_GOES_WITH = ("output", "error", "cause", "stop_date", "sync_execution_status")


def _status_written_last(original: Callable[[Any], None]) -> Callable[[Any], None]:
    """The status is written after the output, error and cause it goes with (moto wrote it first,
    then the output, which fix 3 then rewrote as JSON text): whoever sees an ended status (a
    waiter, DescribeExecution) sees what it ended with."""

    def reflect_execution_status(self: Any) -> None:
        execution = self.execution
        self.execution = shadow = copy.copy(execution)
        try:
            original(self)
        finally:
            self.execution = execution
        for attribute in _STATUS_GOES_WITH:
            if hasattr(shadow, attribute):
                setattr(execution, attribute, getattr(shadow, attribute))
        execution.exec_status = shadow.exec_status

    return reflect_execution_status


PATCHES: tuple[Patch, ...] = (
    Patch(56, f"{_EXECUTION_MODULE}:BaseExecutionWorkerCommunication", "terminated", _announced),
    Patch(56, _CALLBACK_MODULE, "time", _WakingTime),
    Patch(68, _EVENT_MANAGER, "add_event", _history_ends_at_its_end),
    Patch(68, _WORKER, "stop", _stopped_at_once),
    Patch(68, _ENVIRONMENT, "set_timed_out", _timed_out_at_once),
    # After fix 56's announcement in the table: the outermost, so a report skipped announces nothing.
    Patch(68, f"{_EXECUTION_MODULE}:BaseExecutionWorkerCommunication", "terminated", _reported_once),
    # After fix 3's JSON text in the table: the outermost, so the text is written before the status.
    Patch(
        68,
        f"{_EXECUTION_MODULE}:BaseExecutionWorkerCommunication",
        "_reflect_execution_status",
        _status_written_last,
    ),
)
