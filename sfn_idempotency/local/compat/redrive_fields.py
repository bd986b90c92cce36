"""What every execution says about redrive, redriven or not (fix 48).

AWS's answers carry an execution's redrive fields: DescribeExecution's ``redriveCount``,
``redriveStatus`` (with ``redriveStatusReason`` when not redrivable) and ``redriveDate``;
ListExecutions' ``redriveCount`` (and ``redriveDate``) per item and its ``redriveFilter``; the
context object's ``$$.Execution.RedriveCount`` (and ``RedriveTime``). moto had none of them. The
RedriveExecution operation itself is a capability of the engine (``sfn_idempotency.local.capabilities.redrive``),
which records a redrive on the execution under the names below.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from typing import Any

from sfn_idempotency.local.compat.interpreter import aws_timestamp
from sfn_idempotency.local.compat.patching import Patch

_RESPONSES = "moto.stepfunctions.responses:StepFunctionResponse"
_EXECUTION_WORKER = "moto.stepfunctions.parser.backend.execution_worker:ExecutionWorker"

REDRIVE_COUNT = "_sfn_local_redrive_count"
REDRIVE_DATE = "_sfn_local_redrive_date"
REDRIVABLE_PERIOD = datetime.timedelta(days=14)  # from the execution's end (documented)
REDRIVABLE_STATUSES = frozenset({"FAILED", "ABORTED", "TIMED_OUT"})


class RedriveClock:
    """The time the redrivable period is judged by: real time unless a LocalCloud moves it (a test
    moves its clock past the 14 days instead of waiting)."""

    def __init__(self) -> None:
        self.now: Callable[[], float] = time.time  # epoch seconds

    def moment(self) -> datetime.datetime:
        return datetime.datetime.fromtimestamp(self.now(), tz=datetime.UTC)


redrive_clock = RedriveClock()


def redrive_count(execution: Any) -> int:
    return int(getattr(execution, REDRIVE_COUNT, 0))


def redrive_date(execution: Any) -> datetime.datetime | None:
    return getattr(execution, REDRIVE_DATE, None)


def not_redrivable_because(execution: Any) -> str | None:
    """Why RedriveExecution would refuse ``execution`` (None: it may be redriven), in the words
    DescribeExecution's ``redriveStatusReason`` uses (documented; the SUCCEEDED one recorded)."""
    status = str(execution.status)
    if status not in REDRIVABLE_STATUSES:
        return f"Execution is {status} and cannot be redriven"
    stopped = execution.stop_date
    if stopped is not None and redrive_clock.moment() - stopped > REDRIVABLE_PERIOD:
        return "Execution redrivable period exceeded"
    return None


def _described_with_redrive(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def describe_execution(self: Any) -> Any:
        answer = original(self)
        execution = self.stepfunction_backend.describe_execution(self._get_param("executionArn"))
        answer.result["redriveCount"] = redrive_count(execution)
        if redrive_date(execution) is not None:
            answer.result["redriveDate"] = redrive_date(execution)
        reason = not_redrivable_because(execution)
        answer.result["redriveStatus"] = "REDRIVABLE" if reason is None else "NOT_REDRIVABLE"
        if reason is not None:
            answer.result["redriveStatusReason"] = reason
        return answer

    return describe_execution


def _listed_with_redrive(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Each item says its ``redriveCount`` (recorded) and ``redriveDate``; ``redriveFilter``
    ``REDRIVEN`` lists the executions redriven at least once, ``NOT_REDRIVEN`` the others."""

    def list_executions(self: Any) -> Any:
        answer = original(self)
        wanted = self._get_param("redriveFilter")
        backend = self.stepfunction_backend
        items = []
        for item in answer.result["executions"]:
            execution = backend.describe_execution(item["executionArn"])
            count = redrive_count(execution)
            if (wanted == "REDRIVEN" and count == 0) or (wanted == "NOT_REDRIVEN" and count > 0):
                continue
            item["redriveCount"] = count
            if redrive_date(execution) is not None:
                item["redriveDate"] = redrive_date(execution)
            items.append(item)
        answer.result["executions"] = items
        return answer

    return list_executions


def _context_names_the_redrive(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``$$.Execution.RedriveCount`` (recorded: 0 for a first run) and, once redriven,
    ``$$.Execution.RedriveTime``; none in a synchronous Express execution, which cannot be
    redriven (recorded: its context object has neither)."""
    from moto.stepfunctions.parser.backend.execution import SyncExecution

    def get_evaluation_environment(self: Any) -> Any:
        env = original(self)
        execution = getattr(self._execution_communication, "execution", None)
        if isinstance(execution, SyncExecution):
            return env
        context = env.states.context_object.context_object_data["Execution"]
        context["RedriveCount"] = redrive_count(execution)
        redriven = redrive_date(execution)
        if redriven is not None:
            context["RedriveTime"] = aws_timestamp(redriven)
        return env

    return get_evaluation_environment


PATCHES: tuple[Patch, ...] = (
    Patch(48, _RESPONSES, "describe_execution", _described_with_redrive),
    Patch(48, _RESPONSES, "list_executions", _listed_with_redrive),
    Patch(48, _EXECUTION_WORKER, "_get_evaluation_environment", _context_names_the_redrive),
)
