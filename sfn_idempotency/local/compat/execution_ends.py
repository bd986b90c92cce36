"""Waiting for executions without polling (fix 56, speed: no behaviour changes).

Every execution's end (SUCCEEDED, FAILED, TIMED_OUT, ABORTED; a sync one's too) is announced on one
condition, after moto has written the execution's status. Two waiters use it:
- a ``.sync`` or ``.sync:2`` Task waiting for its child execution: moto asked DescribeExecution
  every 0.5 s; its pause between two asks now ends as soon as any execution ends (and at 0.5 s at
  the latest, as before, for the integrations whose jobs are not executions);
- ``LocalCloud.wait`` (and so ``run``): it slept in 5 ms steps; it now wakes at the end.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from sfn_idempotency.local.compat.patching import Patch

_EXECUTION_MODULE = "moto.stepfunctions.parser.backend.execution"
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

    def announce(self, execution: Any) -> None:
        with self._condition:
            self._ends += 1
            self._condition.notify_all()
            ended = self._awaited.pop(id(execution), None)
        if ended is not None:
            ended.set()

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

    return terminated


PATCHES: tuple[Patch, ...] = (
    Patch(56, f"{_EXECUTION_MODULE}:BaseExecutionWorkerCommunication", "terminated", _announced),
    Patch(56, _CALLBACK_MODULE, "time", _WakingTime),
)
