"""An execution as the engine holds it, read in process: what DescribeExecution and
GetExecutionHistory answer, without their serializers."""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from typing import Any

from sfn_idempotency.deployed.executions import entered_states, lambda_invocations
from sfn_idempotency.local.compat.evaluation import JSON_SCALARS


@dataclass(frozen=True)
class ExecutionResult:
    """One execution as it ended: ``status`` (``SUCCEEDED``, ``FAILED``...), ``output_json`` (the
    output as JSON text, or None) and ``output`` (parsed), ``error`` and ``cause``, its ``history``
    events, and ``states``, the states it entered in order."""

    arn: str
    status: str
    output_json: str | None
    error: str | None
    cause: str | None
    history: tuple[dict[str, Any], ...]

    @classmethod
    def of(cls, answer: dict[str, Any], history: tuple[dict[str, Any], ...]) -> ExecutionResult:
        """From a DescribeExecution or StartSyncExecution answer (the same fields) and its history."""
        return cls(
            arn=answer["executionArn"],
            status=answer["status"],
            output_json=answer.get("output"),
            error=answer.get("error"),
            cause=answer.get("cause"),
            history=history,
        )

    @property
    def output(self) -> Any:
        return None if self.output_json is None else json.loads(self.output_json)

    @property
    def states(self) -> list[str]:
        """The states entered, in order: the path the execution took."""
        return entered_states(self.history)

    def lambda_invocations(self, function_arn: str) -> int:
        """How many times this execution scheduled the function (retries included)."""
        return lambda_invocations(self.history, function_arn)


def ended_result(execution: Any, *, with_history: bool = True) -> ExecutionResult:
    """An ended execution as the engine holds it, read in process: what DescribeExecution and
    GetExecutionHistory answer, without their serializer (compat fix 56's companion: a waiter
    pays no HTTP encoding for what it already has)."""
    status = getattr(execution.exec_status, "value", execution.exec_status)
    return ExecutionResult(
        arn=execution.exec_arn,
        status=str(status),
        output_json=execution.output if status == "SUCCEEDED" else None,
        error=execution.error,
        cause=execution.cause,
        history=history_of(execution) if with_history else (),
    )


def history_of(execution: Any) -> tuple[dict[str, Any], ...]:
    """An execution's events so far, as GetExecutionHistory answers them through an SDK: moto holds
    each ``timestamp`` as ISO 8601 text (the SDK parses it to a datetime) and may hold members
    that are None (the API's answer leaves them out)."""
    return tuple(_as_answered(event) for event in _events(execution))


def states_entered(execution: Any) -> list[str]:
    """The states a (possibly running) execution has entered so far, read from the events moto
    holds: a name and a type need no copy of the history."""
    return entered_states(_events(execution))


def event_count(execution: Any) -> int:
    """How many events a (possibly running) execution has so far."""
    return len(_events(execution))


def _events(execution: Any) -> list[dict[str, Any]]:
    """The events moto holds, as they are: ``_as_answered`` copies each, so moto's own deep copy of
    the whole history (``to_history_output``) is not paid twice."""
    env = getattr(execution.exec_worker, "env", None)
    manager: Any = getattr(env, "event_manager", None)
    events = getattr(manager, "_history_event_list", None)
    if manager is None or events is None:
        return list(execution.to_history_output()["events"])
    with manager._mutex:
        return list(events)


def _as_answered(value: Any) -> Any:
    # A scalar member (most of the few hundred of an execution's events) is taken without a call.
    if isinstance(value, dict):
        answered = {
            name: member if type(member) in JSON_SCALARS else _as_answered(member)
            for name, member in value.items()
            if member is not None
        }
        if isinstance(answered.get("timestamp"), str):
            answered["timestamp"] = datetime.datetime.fromisoformat(answered["timestamp"])
        return answered
    if isinstance(value, list):
        return [item if type(item) in JSON_SCALARS else _as_answered(item) for item in value]
    return value
