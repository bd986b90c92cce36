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
    """One condition, notified at every execution's end, with a count of the ends so far."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._ends = 0
        self._seen = threading.local()  # per waiting thread: the count when it last looked

    def announce(self) -> None:
        with self._condition:
            self._ends += 1
            self._condition.notify_all()

    def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Block until ``predicate()`` holds (checked at each end) or ``timeout`` seconds pass."""
        with self._condition:
            return self._condition.wait_for(predicate, timeout)

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
            ends.announce()

    return terminated


PATCHES: tuple[Patch, ...] = (
    Patch(56, f"{_EXECUTION_MODULE}:BaseExecutionWorkerCommunication", "terminated", _announced),
    Patch(56, _CALLBACK_MODULE, "time", _WakingTime),
)
