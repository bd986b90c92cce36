"""How many ended executions the engine keeps: all of them unless the user sets a limit.

AWS keeps an ended Standard execution for 90 days, so the engine keeps every one by default: a test
may describe any execution it ran. A `serve` left running for days, or a long session, may set a
limit (``serve --retain-executions N``, ``LocalCloud(retain_executions=N)``): once more than ``N``
executions have ended, the oldest ended ones are forgotten, as AWS forgets an execution after its
90 days (DescribeExecution answers ``ExecutionDoesNotExist``). A running execution is never
forgotten, and neither is one that was redriven while its redrive runs.

Forgetting walks every machine's list, so it waits until a tenth more than the limit (at least
``SLACK_FLOOR``) have ended: each end then costs about the same, however many ran before.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from typing import Any

from sfn_idempotency.deployed.executions import TERMINAL_STATUSES
from sfn_idempotency.local.compat import execution_lookups

SLACK_FLOOR = 100  # executions ended beyond the limit before the oldest are forgotten


class ExecutionRetention:
    """The ended executions in the order they ended, and the limit on how many are kept."""

    def __init__(self) -> None:
        self.limit: int | None = None
        self._ended: deque[Any] = deque()
        self._lock = threading.Lock()

    def keep(self, limit: int | None) -> None:
        """Keep at most ``limit`` ended executions (None: every one)."""
        with self._lock:
            self.limit = limit
            self._ended.clear()

    def ended(self, execution: Any) -> None:
        """Called at each execution's end (sfn_idempotency.local.compat.execution_ends)."""
        if self.limit is None:
            return
        with self._lock:
            self._ended.append(execution)
            slack = max(SLACK_FLOOR, self.limit // 10)
            if len(self._ended) <= self.limit + slack:
                return
            forgotten = [self._ended.popleft() for _ in range(len(self._ended) - self.limit)]
        forget(forgotten)


def forget(executions: list[Any]) -> None:
    """Remove these executions from every machine's list (and version's) that holds them, unless
    one runs again (a redrive)."""
    gone = {id(execution) for execution in executions if str(execution.status) in TERMINAL_STATUSES}
    if not gone:
        return
    for machine in _machines():
        if not any(id(execution) in gone for execution in list(machine.executions)):
            continue  # its index stays
        # Executions that start meanwhile are appended past ``known``, and stay where they are.
        with execution_lookups.pruning(machine):
            known = len(machine.executions)
            machine.executions[:known] = [e for e in machine.executions[:known] if id(e) not in gone]


def _machines() -> Iterator[Any]:
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    for account in list(stepfunctions_parser_backends.values()):
        for backend in list(account.values()):
            for machine in list(backend.state_machines):
                yield machine
                yield from getattr(machine, "versions", {}).values()


retention = ExecutionRetention()
